//! Databases through the binary: two databases holding a measurement of the same name stay
//! apart through `import`, `query`, `plot`, `export`, `admin delete` and
//! `admin database list|create|drop`, on an embedded store and on MongoDB; and through `import`, `query`
//! and `plot` with `--url`, against a `tickertape serve` of the test's own.

mod support;

use std::path::Path;
use std::process::{Child, Command, Output};
use support::{serve, text};

/// `tickertape ARGS --store STORE`, with `TICKERTAPE_DB` set to `db` (or unset).
fn run_in(store: &str, db_env: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tickertape"));
    command
        .args(args)
        .args(["--store", store])
        .env("TICKERTAPE_LOG", "warn")
        .env_remove("TICKERTAPE_DB");
    if let Some(db) = db_env {
        command.env("TICKERTAPE_DB", db);
    }
    command.output().expect("run tickertape")
}

fn run(store: &str, args: &[&str]) -> Output {
    run_in(store, None, args)
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "stdout {}\nstderr {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn failed(out: Output) -> String {
    assert!(!out.status.success(), "succeeded: {}", text(&out.stdout));
    text(&out.stderr)
}

/// `cpu,host=a usage=V T` for each (T in seconds, V).
fn lines(points: &[(i64, f64)]) -> String {
    points
        .iter()
        .map(|(t, v)| format!("cpu,host=a usage={v} {t}\n"))
        .collect()
}

fn import(store: &str, dir: &Path, db: Option<&str>, points: &[(i64, f64)]) -> Output {
    let file = dir.join(format!("{}.lp", db.unwrap_or("default")));
    std::fs::write(&file, lines(points)).unwrap();
    let mut args = vec!["import", file.to_str().unwrap(), "--precision", "s"];
    if let Some(db) = db {
        args.extend(["--db", db]);
    }
    run(store, &args)
}

fn csv(store: &str, db: Option<&str>) -> String {
    let mut args = vec!["query", "-m", "cpu", "--format", "csv"];
    if let Some(db) = db {
        args.extend(["--db", db]);
    }
    ok(run(store, &args))
}

const T: i64 = 1_700_000_000;

#[test]
fn two_databases_with_one_measurement_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    two_databases_in(store.to_str().unwrap(), dir.path());
}

/// The same on MongoDB, in a database of this test's own on the test server.
#[test]
fn two_databases_with_one_measurement_stay_apart_on_mongodb() {
    let uri = std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    });
    let base = uri.split('?').next().unwrap_or(&uri).trim_end_matches('/');
    let store = format!("{base}/tt_cli_databases_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    two_databases_in(&store, dir.path());
}

fn two_databases_in(store: &str, dir: &Path) {
    let err = failed(import(store, dir, Some("app"), &[(T, 1.0)]));
    assert!(
        err.contains("--db app: database not found")
            && err.contains("tickertape admin database create app"),
        "{err}"
    );
    let err = failed(run(store, &["admin", "database", "create", "no/slash"]));
    assert!(err.contains("invalid database name \"no/slash\""), "{err}");

    assert_eq!(
        ok(run(store, &["admin", "database", "create", "app"])),
        format!("created database app in {}\n", store)
    );
    assert!(ok(run(store, &["admin", "database", "create", "app"])).contains("already exists"));
    ok(run(store, &["admin", "database", "create", "telegraf"]));
    assert_eq!(
        ok(run(store, &["admin", "database", "list"])),
        "app\ntelegraf\ntickertape (default)\n"
    );

    ok(import(store, dir, None, &[(T, 100.0)]));
    ok(import(store, dir, Some("app"), &[(T, 1.0), (T + 60, 2.0)]));
    ok(import(store, dir, Some("telegraf"), &[(T, 10.0)]));

    let row = |v: &str| format!("cpu{{host=a}}#usage,2023-11-14T22:13:20Z,{v}\n");
    assert_eq!(
        csv(store, None),
        format!("series,time,value\n{}", row("100"))
    );
    assert_eq!(csv(store, Some("tickertape")), csv(store, None));
    assert_eq!(
        csv(store, Some("app")),
        format!(
            "series,time,value\n{}cpu{{host=a}}#usage,2023-11-14T22:14:20Z,2\n",
            row("1")
        )
    );
    assert_eq!(
        csv(store, Some("telegraf")),
        format!("series,time,value\n{}", row("10"))
    );
    let via_env = ok(run_in(
        store,
        Some("telegraf"),
        &["query", "-m", "cpu", "--format", "csv"],
    ));
    assert_eq!(via_env, format!("series,time,value\n{}", row("10")));
    let err = failed(run(store, &["query", "-m", "cpu", "--db", "nope"]));
    assert!(err.contains("--db nope: database not found"), "{err}");

    let export = |db: &str| ok(run(store, &["admin", "export", "--db", db]));
    let ns = |t: i64| t * 1_000_000_000;
    assert_eq!(
        export("app"),
        format!(
            "cpu,host=a usage=1.0 {}\ncpu,host=a usage=2.0 {}\n",
            ns(T),
            ns(T + 60)
        )
    );
    assert_eq!(
        export("telegraf"),
        format!("cpu,host=a usage=10.0 {}\n", ns(T))
    );
    assert_eq!(
        export("tickertape"),
        format!("cpu,host=a usage=100.0 {}\n", ns(T))
    );

    let chart = dir.join("app.svg");
    let out = run(
        store,
        &[
            "plot",
            "-m",
            "cpu",
            "--db",
            "app",
            "-o",
            chart.to_str().unwrap(),
        ],
    );
    ok(out);
    assert!(std::fs::read_to_string(&chart).unwrap().contains("<svg"));

    let deleted = ok(run(store, &["admin", "delete", "--db", "app", "-m", "cpu"]));
    assert!(
        deleted.contains("of 1 series of cpu in database app; 1 series"),
        "{deleted}"
    );
    assert_eq!(csv(store, Some("app")), "series,time,value\n");
    assert_eq!(
        csv(store, Some("telegraf")),
        format!("series,time,value\n{}", row("10"))
    );
    assert_eq!(
        csv(store, None),
        format!("series,time,value\n{}", row("100"))
    );
    let err = failed(run(
        store,
        &[
            "plot",
            "-m",
            "cpu",
            "--db",
            "app",
            "-o",
            chart.to_str().unwrap(),
        ],
    ));
    assert!(err.contains("no points"), "{err}");

    let err = failed(run(store, &["admin", "database", "drop", "telegraf"]));
    assert!(
        err.contains("--yes") && err.contains("nothing was deleted"),
        "{err}"
    );
    assert_eq!(
        csv(store, Some("telegraf")),
        format!("series,time,value\n{}", row("10"))
    );
    let err = failed(run(store, &["admin", "database", "drop", "nope", "--yes"]));
    assert!(err.contains("database not found"), "{err}");
    assert_eq!(
        ok(run(
            store,
            &["admin", "database", "drop", "telegraf", "--yes"]
        )),
        format!("dropped database telegraf in {}: 1 series removed\n", store)
    );
    assert_eq!(
        ok(run(store, &["admin", "database", "list"])),
        "app\ntickertape (default)\n"
    );
    let err = failed(run(store, &["query", "-m", "cpu", "--db", "telegraf"]));
    assert!(err.contains("database not found"), "{err}");
    assert_eq!(
        csv(store, None),
        format!("series,time,value\n{}", row("100"))
    );

    // Created again, it starts empty: the drop took its series.
    ok(run(store, &["admin", "database", "create", "telegraf"]));
    assert_eq!(csv(store, Some("telegraf")), "series,time,value\n");
}

/// The server process, killed (by its PID, through its handle) when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `tickertape ARGS --url URL`, `TICKERTAPE_DB` unset.
fn remote(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args(args)
        .args(["--url", url])
        .env("TICKERTAPE_LOG", "warn")
        .env_remove("TICKERTAPE_DB")
        .output()
        .expect("run tickertape")
}

#[test]
fn with_url_the_database_is_sent_as_db() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Made before the server opens the store (it holds an embedded store's file).
    ok(run(
        store.to_str().unwrap(),
        &["admin", "database", "create", "app"],
    ));
    let (child, url) = serve(&store);
    let _server = Server(child);

    let file = dir.path().join("points.lp");
    std::fs::write(&file, lines(&[(T, 1.0), (T + 60, 2.0)])).unwrap();
    let file = file.to_str().unwrap();
    ok(remote(
        &url,
        &["import", file, "--precision", "s", "--db", "app"],
    ));
    std::fs::write(dir.path().join("points.lp"), lines(&[(T, 100.0)])).unwrap();
    ok(remote(&url, &["import", file, "--precision", "s"]));

    let query = |db: Option<&str>| {
        let mut args = vec!["query", "-m", "cpu", "--format", "csv"];
        args.extend(db.map(|db| ["--db", db]).iter().flatten());
        ok(remote(&url, &args))
    };
    let row = |t: &str, v: &str| format!("cpu{{host=a}}#usage,2023-11-14T22:1{t}Z,{v}\n");
    assert_eq!(
        query(Some("app")),
        format!(
            "series,time,value\n{}{}",
            row("3:20", "1"),
            row("4:20", "2")
        )
    );
    assert_eq!(
        query(None),
        format!("series,time,value\n{}", row("3:20", "100"))
    );
    assert_eq!(query(Some("tickertape")), query(None));

    let err = failed(remote(&url, &["query", "-m", "cpu", "--db", "nope"]));
    assert!(
        err.contains("404") && err.contains("database not found"),
        "{err}"
    );
    let err = failed(remote(
        &url,
        &["import", file, "--precision", "s", "--db", "nope"],
    ));
    assert!(
        err.contains("404") && err.contains("database not found"),
        "{err}"
    );
    assert_eq!(
        query(None),
        format!("series,time,value\n{}", row("3:20", "100"))
    );

    let chart = dir.path().join("app.png");
    let chart = chart.to_str().unwrap();
    ok(remote(
        &url,
        &["plot", "-m", "cpu", "--db", "app", "-o", chart],
    ));
    let err = failed(remote(
        &url,
        &["plot", "-m", "jobs", "--db", "app", "-o", chart],
    ));
    assert!(err.contains("no points"), "{err}");
}
