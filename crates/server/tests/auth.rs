//! `serve --auth`: every scope against the routes that need it, every way clients send a
//! token, 401/403 and their shapes, a revoked token refused without a restart, and the
//! real `influx` CLI with `-username/-password`.
//!
//! `influx_cli_writes_with_a_token` prints SKIPPED when `/usr/bin/influx` is absent;
//! `scripts/test` installs it where it can and otherwise leaves it out by name.

mod support;

use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::TestServer;
use tickertape_backend::TokenStore;
use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};
use tickertape_reference::MemoryTokens;
use tickertape_server::auth::{AuthSetupError, Authenticator};
use tickertape_server::ServerConfig;

const READ: &str = "tt_read_000000000000000000000000000000000000000000";
const WRITE: &str = "tt_write_00000000000000000000000000000000000000000";
const ADMIN: &str = "tt_admin_00000000000000000000000000000000000000000";
const READ_WRITE: &str = "tt_rw_000000000000000000000000000000000000000000000";

fn record(secret: &str, scopes: &[Scope]) -> TokenRecord {
    TokenRecord {
        name: secret.into(),
        scopes: Scopes::new(scopes.iter().copied()).unwrap(),
        hash: TokenHash::of(secret),
        created: 0,
    }
}

/// A server whose store holds the four tokens above; also the token store, to change.
async fn server() -> (TestServer, Arc<MemoryTokens>) {
    let tokens = Arc::new(MemoryTokens::default());
    for (secret, scopes) in [
        (READ, &[Scope::Read][..]),
        (WRITE, &[Scope::Write]),
        (ADMIN, &[Scope::Admin]),
        (READ_WRITE, &[Scope::Read, Scope::Write]),
    ] {
        tokens.add_token(record(secret, scopes)).await.unwrap();
    }
    let auth = Authenticator::load(tokens.clone()).await.unwrap();
    let config = ServerConfig {
        auth: Some(Arc::new(auth)),
        ..ServerConfig::default()
    };
    (TestServer::start_with("", config).await, tokens)
}

/// How a request carries its token.
#[derive(Clone, Copy, Debug)]
enum Sent<'a> {
    Nothing,
    Bearer(&'a str),
    Token(&'a str),
    /// Grafana's data source and Prometheus' `basic_auth`: any user, the token as password.
    Basic(&'a str),
    /// InfluxDB 1.x's query parameters.
    UserPassword(&'a str),
}

async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    body: &str,
    sent: Sent<'_>,
) -> (u16, Value, Option<String>) {
    let client = support::client();
    let url = format!("{}{path}", server.url);
    let mut request = match method {
        "GET" => client.get(&url),
        _ => client.post(&url).body(body.to_string()),
    };
    request = match sent {
        Sent::Nothing => request,
        Sent::Bearer(t) => request.bearer_auth(t),
        Sent::Token(t) => request.header("Authorization", format!("Token {t}")),
        Sent::Basic(t) => request.basic_auth("grafana", Some(t)),
        Sent::UserPassword(t) => request.query(&[("u", "telegraf"), ("p", t)]),
    };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, json, challenge)
}

const LINE: &str = "cpu,host=a usage=1 1700000000000000000";

#[tokio::test]
async fn each_scope_opens_its_routes_and_no_other() {
    let (server, _) = server().await;
    // (method, path, body, the scope it needs; None: open)
    let routes: [(&str, &str, &str, Option<Scope>); 12] = [
        ("GET", "/health", "", None),
        ("GET", "/ping", "", None),
        ("POST", "/write?db=tickertape", LINE, Some(Scope::Write)),
        (
            "POST",
            "/api/v2/write?bucket=tickertape",
            LINE,
            Some(Scope::Write),
        ),
        (
            "GET",
            "/api/v1/query?measurement=cpu&field=usage",
            "",
            Some(Scope::Read),
        ),
        ("GET", "/api/v1/measurements", "", Some(Scope::Read)),
        ("GET", "/prometheus/api/v1/labels", "", Some(Scope::Read)),
        ("GET", "/metrics", "", Some(Scope::Read)),
        ("POST", "/api/v1/admin/compact", "", Some(Scope::Admin)),
        ("GET", "/api/v1/databases", "", Some(Scope::Read)),
        (
            "POST",
            "/api/v1/admin/databases?name=d",
            "",
            Some(Scope::Admin),
        ),
        (
            "GET",
            "/prometheus/db/d/api/v1/labels",
            "",
            Some(Scope::Read),
        ),
    ];
    for (method, path, body, needed) in routes {
        let (status, answer, challenge) = call(&server, method, path, body, Sent::Nothing).await;
        match needed {
            None => assert!(status < 300, "{path} open: {status} {answer}"),
            Some(_) => {
                assert_eq!(status, 401, "{path} without a token: {answer}");
                let challenge = challenge.unwrap_or_default();
                assert!(challenge.starts_with("Basic realm="), "{path}: {challenge}");
            }
        }
        for (secret, scopes) in [
            (READ, vec![Scope::Read]),
            (WRITE, vec![Scope::Write]),
            (ADMIN, vec![Scope::Admin]),
            (READ_WRITE, vec![Scope::Read, Scope::Write]),
        ] {
            let scopes = Scopes::new(scopes).unwrap();
            let allowed = needed.is_none_or(|n| scopes.allow(n));
            let (status, answer, _) = call(&server, method, path, body, Sent::Bearer(secret)).await;
            if allowed {
                assert!(status < 300, "{path} with {scopes}: {status} {answer}");
            } else {
                assert_eq!(status, 403, "{path} with {scopes}: {answer}");
                let message = answer["error"].as_str().unwrap_or_default();
                assert!(message.contains("scope"), "{path}: {message}");
            }
        }
    }
    server.stop().await;
}

/// `/query` needs read, but its `CREATE DATABASE` and `DROP DATABASE` need admin, as in
/// InfluxDB 1.x: refused per statement, the others answered.
#[tokio::test]
async fn influxql_database_statements_need_admin() {
    let (server, _) = server().await;
    let q = "/query?q=CREATE+DATABASE+app%3B+SHOW+DATABASES";
    let (status, answer, _) = call(&server, "GET", q, "", Sent::Bearer(READ)).await;
    assert_eq!(status, 200, "{answer}");
    let refusal = answer["results"][0]["error"].as_str().unwrap_or_default();
    assert!(refusal.contains("admin scope"), "{answer}");
    assert_eq!(
        answer["results"][1]["series"][0]["values"],
        serde_json::json!([["tickertape"]])
    );
    let (_, answer, _) = call(&server, "GET", q, "", Sent::Bearer(ADMIN)).await;
    assert_eq!(
        answer["results"][1]["series"][0]["values"],
        serde_json::json!([["app"], ["tickertape"]]),
        "{answer}"
    );
    let drop = "/query?q=DROP+DATABASE+app";
    let (_, answer, _) = call(&server, "GET", drop, "", Sent::Bearer(READ_WRITE)).await;
    assert!(answer["results"][0]["error"].is_string(), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_token_is_taken_from_every_place_clients_put_it() {
    let (server, _) = server().await;
    for sent in [
        Sent::Bearer(WRITE),
        Sent::Token(WRITE),
        Sent::Basic(WRITE),
        Sent::UserPassword(WRITE),
    ] {
        let (status, answer, _) = call(&server, "POST", "/write?db=tickertape", LINE, sent).await;
        assert_eq!(status, 204, "{sent:?}: {answer}");
    }
    for sent in [Sent::Bearer(READ), Sent::Token(READ), Sent::Basic(READ)] {
        let (status, answer, _) = call(
            &server,
            "GET",
            "/api/v1/query?measurement=cpu&field=usage",
            "",
            sent,
        )
        .await;
        assert_eq!(status, 200, "{sent:?}: {answer}");
        assert_eq!(answer["series"][0]["points"][0][1], 1.0, "{answer}");
    }
    // InfluxDB 1.x's `u`/`p` on its own read route.
    let (status, answer, _) = call(
        &server,
        "GET",
        "/query?q=SHOW+DATABASES",
        "",
        Sent::UserPassword(READ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // An unknown token is 401 (and asks again), whatever way it comes.
    for sent in [
        Sent::Bearer("tt_nope"),
        Sent::Basic("tt_nope"),
        Sent::UserPassword("tt_nope"),
    ] {
        let (status, answer, challenge) = call(&server, "POST", "/write", LINE, sent).await;
        assert_eq!(status, 401, "{sent:?}: {answer}");
        assert!(challenge.is_some());
        assert!(
            answer["error"].as_str().unwrap().contains("not known"),
            "{answer}"
        );
    }
    server.stop().await;
}

/// Prometheus' API answers in its own error shape, so Grafana shows the message.
#[tokio::test]
async fn prometheus_routes_refuse_in_prometheus_shape() {
    let (server, _) = server().await;
    let (status, answer, _) = call(
        &server,
        "GET",
        "/prometheus/api/v1/query?query=up",
        "",
        Sent::Nothing,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(answer["status"], "error", "{answer}");
    assert_eq!(answer["errorType"], "unauthorized", "{answer}");
    let (status, answer, _) = call(
        &server,
        "GET",
        "/prometheus/api/v1/query?query=up",
        "",
        Sent::Basic(WRITE),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(answer["errorType"], "forbidden", "{answer}");
    let (status, answer, _) = call(
        &server,
        "GET",
        "/prometheus/api/v1/query?query=up",
        "",
        Sent::Basic(READ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    server.stop().await;
}

/// The dashboard's page and assets need read; a browser gets the Basic challenge.
#[tokio::test]
async fn the_dashboard_asks_the_browser_and_opens_with_a_read_token() {
    let (server, _) = server().await;
    let (status, _, challenge) = call(&server, "GET", "/", "", Sent::Nothing).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().contains("Basic"));
    let (status, page, _) = call(&server, "GET", "/", "", Sent::Basic(READ)).await;
    assert_eq!(status, 200);
    assert!(
        page.as_str().unwrap_or_default().contains("<html"),
        "{page}"
    );
    server.stop().await;
}

/// A token revoked while the server runs is refused within a second or so; one added is
/// accepted as soon.
#[tokio::test]
async fn tokens_change_without_a_restart() {
    let (server, tokens) = server().await;
    let (status, ..) = call(&server, "POST", "/write", LINE, Sent::Bearer(WRITE)).await;
    assert_eq!(status, 204);
    tokens
        .revoke_token(TokenHash::of(WRITE).id())
        .await
        .unwrap();
    const NEW: &str = "tt_new_0000000000000000000000000000000000000000000";
    tokens
        .add_token(record(NEW, &[Scope::Write]))
        .await
        .unwrap();
    let changed = Instant::now();
    let deadline = changed + Duration::from_secs(5);
    loop {
        let (old, ..) = call(&server, "POST", "/write", LINE, Sent::Bearer(WRITE)).await;
        let (new, ..) = call(&server, "POST", "/write", LINE, Sent::Bearer(NEW)).await;
        if old == 401 && new == 204 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still old {old}, new {new} after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // RELOAD_EVERY is 1 s; the margin is for a loaded machine.
    assert!(
        changed.elapsed() < Duration::from_secs(3),
        "{:?}",
        changed.elapsed()
    );
    server.stop().await;
}

#[tokio::test]
async fn auth_without_any_token_refuses_to_start_and_says_how_to_make_one() {
    let error = Authenticator::load(Arc::new(MemoryTokens::default()))
        .await
        .unwrap_err();
    assert!(matches!(error, AuthSetupError::NoTokens));
    assert!(
        error.to_string().contains("tickertape admin token create"),
        "{error}"
    );
}

const INFLUX: &str = "/usr/bin/influx";

/// The `influx` CLI (Debian's influxdb-client) with `-username/-password`: the token as
/// password writes; a wrong one is refused with the server's message.
#[tokio::test(flavor = "multi_thread")]
async fn influx_cli_writes_with_a_token() {
    if !std::path::Path::new(INFLUX).exists() {
        eprintln!("SKIPPED: {INFLUX} not found — install Debian's influxdb-client (scripts/influx-test-deps)");
        return;
    }
    let (server, _) = server().await;
    let port = server.url.rsplit(':').next().unwrap().to_string();
    // Blocking calls: the multi-threaded runtime serves meanwhile.
    let influx = |password: &str| {
        support::run_bounded(
            INFLUX,
            &[
                "-host",
                "127.0.0.1",
                "-port",
                &port,
                "-username",
                "telegraf",
                "-password",
                password,
                "-database",
                "telegraf",
                "-precision",
                "s",
                "-execute",
                "INSERT cpu,host=cli usage=2.5 1700000000",
            ],
            Duration::from_secs(30),
        )
    };
    // Writes to a database that does not exist are refused, as by InfluxDB: an admin
    // makes it first.
    let create = "/api/v1/admin/databases?name=telegraf";
    let (status, answer, _) = call(&server, "POST", create, "", Sent::Bearer(ADMIN)).await;
    assert_eq!(status, 201, "{answer}");
    let (ok, out) = influx(READ_WRITE);
    assert!(ok, "{out}");
    // The CLI prints the refusal (and exits 0 after a failed INSERT); the point is not
    // stored, as the query below shows.
    let (_, out) = influx("tt_wrong");
    assert!(out.contains("not known"), "{out}");
    let (status, answer, _) = call(
        &server,
        "GET",
        "/api/v1/query?measurement=cpu&field=usage&tag=host%3Acli&db=telegraf",
        "",
        Sent::Basic(READ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["series"][0]["points"],
        serde_json::json!([[1_700_000_000_000_000_000i64, 2.5]])
    );
    server.stop().await;
}
