//! Credentials and TLS from the MongoDB URI (`docs/format/mongodb.md`, "Security"): each
//! test starts its own secantusdb through `scripts/mongo-test-server` — with `--auth`, or
//! speaking TLS only with a certificate the test makes with the `openssl` CLI — so neither
//! needs `TICKERTAPE_MONGODB_URI`. The servers are stopped by PID when the test ends,
//! passed or failed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{append, key, read_all};
use mongodb::bson::doc;
use tickertape_backend::{Backend, BackendError, SeriesCatalog, ValueStore};
use tickertape_mongodb::{uri_with_database, MongoBackend, MongoOptions};

/// The admin user the script creates (role `root`); the password has characters a URI must
/// percent-encode, which the script does.
const ADMIN: &str = "tt_admin";
const ADMIN_PASSWORD: &str = "s3cret:p@ss/word";
/// Short, so that the failures below come back quickly; ample for a server on loopback.
/// The actions on its database that `docs/format/mongodb.md`, "Security", lists as all
/// tickertape needs outside `admin shard` (and `drop_database`, for tests and benchmarks).
const LEAST_ACTIONS: [&str; 10] = [
    "find",
    "insert",
    "update",
    "remove",
    "createCollection",
    "createIndex",
    "dropCollection",
    "listCollections",
    "dbStats",
    "collStats",
];
const SELECTION_TIMEOUT: Duration = Duration::from_secs(3);

/// A test server this test started; dropping it kills the server by its PID and removes
/// `cleanup` (the TLS files), so a failed assertion leaves nothing running.
struct Server {
    pid: u32,
    uri: String,
    cleanup: Option<PathBuf>,
}

impl Server {
    /// Runs `scripts/mongo-test-server` with `env` and reads the `PID URI` it prints.
    fn start(env: &[(&str, &str)], cleanup: Option<PathBuf>) -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mongo-test-server");
        let mut command = Command::new(&script);
        for (name, value) in env {
            command.env(name, value);
        }
        // stderr stays the test's: the script says there why a server did not start.
        let output = command
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let started = stdout
            .trim()
            .split_once(' ')
            .and_then(|(pid, uri)| Some((pid.parse::<u32>().ok()?, uri.to_owned())));
        match started {
            Some((pid, uri)) if output.status.success() => Server { pid, uri, cleanup },
            _ => {
                if let Some(dir) = cleanup {
                    let _ = std::fs::remove_dir_all(dir);
                }
                panic!(
                    "scripts/mongo-test-server failed ({}), printed {stdout:?}",
                    output.status
                )
            }
        }
    }

    /// The server's URI with database `db`.
    fn uri(&self, db: &str) -> String {
        uri_with_database(&self.uri, db)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        if let Some(dir) = &self.cleanup {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn options(uri: String) -> MongoOptions {
    let mut options = MongoOptions::new(uri);
    options.block_points = 4;
    options.fold_every = Duration::from_secs(3600);
    options.superseded_grace = Duration::from_secs(1);
    options.server_selection_timeout = SELECTION_TIMEOUT;
    options
}

/// Registers a series, appends points, reads them back; with `full`, also `stats` and
/// `compact` (which folds, deletes superseded documents and lists collections).
async fn round_trip(backend: &MongoBackend, full: bool) {
    let series = backend
        .resolve_series(&[key("cpu", "a", "user")])
        .await
        .expect("resolve_series")[0];
    backend
        .append(vec![append(series, 1..=10)])
        .await
        .expect("append");
    assert_eq!(read_all(backend, series).await, common::points(1..=10));
    if full {
        backend.compact().await.expect("compact");
        assert_eq!(read_all(backend, series).await, common::points(1..=10));
        let stats = backend.stats().await.expect("stats");
        assert_eq!(stats.series, 1);
    }
}

/// `user:password@` in place of the URI's credentials (or added), its options kept.
fn with_credentials(uri: &str, user: &str, password: &str) -> String {
    let (scheme, rest) = uri.split_once("://").expect("a mongodb:// URI");
    let hosts = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    format!("{scheme}://{user}:{password}@{hosts}")
}

/// The URI without its credentials and `authSource`.
fn without_credentials(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").expect("a mongodb:// URI");
    let hosts = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    let hosts = hosts.split_once('?').map_or(hosts, |(base, _)| base);
    format!("{scheme}://{hosts}")
}

#[tokio::test]
async fn credentials_in_the_uri_authenticate_and_a_wrong_or_missing_password_is_refused() {
    let server = Server::start(
        &[("TT_MONGO_AUTH", &format!("{ADMIN}:{ADMIN_PASSWORD}"))],
        None,
    );
    assert!(
        server.uri.contains("authSource=admin"),
        "URI {} has no authSource",
        server.uri
    );

    // The admin user (authSource=admin) from the script's URI.
    let backend = MongoBackend::connect(options(server.uri("tt_sec_admin")))
        .await
        .unwrap_or_else(|e| panic!("connect with credentials: {e}"));
    round_trip(&backend, true).await;

    // The least privileges docs/format/mongodb.md names, each for a user defined in the
    // store's own database (so its URI needs no authSource): the built-in `readWrite`, and
    // a custom role with exactly the actions listed there. `stats` and `compact` run too.
    let admin = admin_client(&server.uri).await;
    let app_password = "app-pw-0123";
    for (db, user, role) in [
        ("tt_sec_rw", "tt_rw", "readWrite"),
        ("tt_sec_custom", "tt_custom", "tickertape"),
    ] {
        let database = admin.database(db);
        if role == "tickertape" {
            database
                .run_command(doc! {
                    "createRole": role,
                    "privileges": [{
                        "resource": { "db": db, "collection": "" },
                        "actions": LEAST_ACTIONS.to_vec(),
                    }],
                    "roles": [],
                })
                .await
                .expect("createRole");
        }
        database
            .run_command(doc! {
                "createUser": user,
                "pwd": app_password,
                "roles": [{ "role": role, "db": db }],
            })
            .await
            .unwrap_or_else(|e| panic!("createUser {user}: {e}"));
        let uri = uri_with_database(
            &with_credentials(&without_credentials(&server.uri), user, app_password),
            db,
        );
        let app = MongoBackend::connect(options(uri))
            .await
            .unwrap_or_else(|e| panic!("connect as {user} (role {role}): {e}"));
        round_trip(&app, true).await;
        app.shutdown().await;
    }

    // A wrong password: refused at connect, quickly, and the message names the server but
    // not the password (neither the wrong one nor the right one).
    let wrong_password = "wrong-pw-4711";
    let started = Instant::now();
    let err = MongoBackend::connect(options(uri_with_database(
        &with_credentials(&server.uri, ADMIN, wrong_password),
        "tt_sec_wrong",
    )))
    .await
    .err()
    .expect("a wrong password must be refused");
    assert!(
        matches!(err, BackendError::Invalid(_)),
        "wrong credentials are the caller's to fix, not a server to retry: {err:?}"
    );
    let message = err.to_string();
    assert!(
        started.elapsed() < SELECTION_TIMEOUT + Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        message.contains("uthentication"),
        "error does not say authentication failed: {message}"
    );
    assert!(
        !message.contains(wrong_password) && !message.contains("s3cret"),
        "error shows a password: {message}"
    );
    assert!(
        message.contains("127.0.0.1"),
        "error names no server: {message}"
    );

    // No credentials: the server answers a ping, but refuses the first write (connect
    // records the layout document), so connect fails and nothing is stored.
    let err = MongoBackend::connect(options(uri_with_database(
        &without_credentials(&server.uri),
        "tt_sec_anonymous",
    )))
    .await
    .err()
    .expect("writes without credentials must be refused");
    let message = err.to_string();
    assert!(
        message.contains("requires authentication") || message.contains("Unauthorized"),
        "unexpected error without credentials: {message}"
    );
    backend.drop_database().await.expect("drop_database");
    backend.shutdown().await;
}

/// A driver client as the admin user, for what tickertape itself never does (createUser).
async fn admin_client(uri: &str) -> mongodb::Client {
    mongodb::Client::with_uri_str(uri)
        .await
        .expect("admin client")
}

/// A CA and a server certificate for 127.0.0.1 signed by it (`ca.pem`, `cert.pem`,
/// `key.pem`), made with the `openssl` CLI in a fresh directory.
fn make_certificates() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tt-mongo-tls-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("create TLS directory");
    // rustls refuses a CA certificate as a server's own (CaUsedAsEndEntity), so the
    // server gets a leaf certificate with CA:FALSE and the address in subjectAltName.
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write ext.cnf");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let steps: [Vec<&str>; 3] = [
        [
            &["req", "-x509", "-new"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat()
        .into_iter()
        .chain(["-days", "2", "-subj", "/CN=tickertape test CA"])
        .collect(),
        [
            &["req", "-new"][..],
            &ec,
            &["-keyout", "key.pem", "-out", "server.csr"],
        ]
        .concat()
        .into_iter()
        .chain(["-subj", "/CN=127.0.0.1"])
        .collect(),
        vec![
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "2",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
    ];
    for args in steps {
        let output = Command::new("openssl")
            .args(&args)
            .current_dir(&dir)
            .output();
        match output {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                let _ = std::fs::remove_dir_all(&dir);
                panic!(
                    "openssl {}: {}\n{}",
                    args.join(" "),
                    o.status,
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                panic!("the TLS test makes its certificate with the openssl CLI: {e}");
            }
        }
    }
    dir
}

#[tokio::test]
async fn tls_with_the_ca_file_works_and_plaintext_to_a_tls_port_fails_fast() {
    let dir = make_certificates();
    let dir_str = dir.to_str().expect("UTF-8 temp path").to_owned();
    let server = Server::start(&[("TT_MONGO_TLS_DIR", &dir_str)], Some(dir));
    assert!(
        server.uri.contains("tls=true") && server.uri.contains("tlsCAFile="),
        "URI {} has no TLS options",
        server.uri
    );

    let backend = MongoBackend::connect(options(server.uri("tt_sec_tls")))
        .await
        .unwrap_or_else(|e| panic!("connect over TLS: {e}"));
    round_trip(&backend, false).await;
    backend.drop_database().await.expect("drop_database");
    backend.shutdown().await;

    // Plaintext to the TLS port: no answer the driver understands, so server selection
    // gives up after its timeout: an error, not a hang.
    let plain = uri_with_database(
        server
            .uri
            .split_once('?')
            .map_or(&*server.uri, |(base, _)| base),
        "tt_sec_plain",
    );
    let started = Instant::now();
    let connect =
        tokio::time::timeout(SELECTION_TIMEOUT * 4, MongoBackend::connect(options(plain)))
            .await
            .expect("connect without tls=true hung past 4 × the server selection timeout");
    let elapsed = started.elapsed();
    match connect {
        Err(BackendError::Unavailable(message)) => {
            assert!(message.contains("127.0.0.1"), "{message}")
        }
        Err(other) => panic!("expected Unavailable, got {other:?}"),
        Ok(_) => panic!("a plaintext connection to a TLS-only server must fail"),
    }
    assert!(
        elapsed < SELECTION_TIMEOUT + Duration::from_secs(5),
        "took {elapsed:?}"
    );
}
