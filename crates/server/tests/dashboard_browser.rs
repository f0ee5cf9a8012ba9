//! The dashboard (`GET /`) in a real browser: a server on the embedded store, filled with
//! a few hours of cpu data (four hosts in two regions) and a counter, then
//! `tests/browser/dashboard.test.mjs` drives Debian's chromium through playwright-core
//! against it (what it checks is listed there), and `tests/browser/series-view.test.mjs`
//! the Series (cardinality) view (and `targets-view.test.mjs` the Targets view, on a
//! server that scrapes); then `tests/browser/axes.test.mjs` checks the time axis'
//! ticks around summer-time changes in node. `dashboard_in_a_browser_with_auth` runs the
//! same data behind `serve --auth`: the page refused without a token, and with a read
//! token as the Basic password the page, its charts and the Series view.
//! `dashboard_in_a_browser_with_databases` runs `tests/browser/databases.test.mjs` on the
//! same data alone (the database picker hidden), then with a second database `app` holding
//! a `cpu` of its own (the picker, `db` in the URL and in every request, the Series view
//! per database).
//!
//! Needs `node` and playwright-core: scripts/test installs them (scripts/browser-test-deps)
//! and sets `TICKERTAPE_NODE` and `TICKERTAPE_PLAYWRIGHT_DIR`; where it cannot, it leaves
//! these tests out by name (`--skip dashboard_in_a_browser`, which matches both) and
//! counts them as skipped. Run on their own without them, they fail and say what is missing. The page's and assets'
//! headers are also checked without a browser (`dashboard_page_and_assets_are_served`).

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::TestServer;
use tickertape_backend::TokenStore;
use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};
use tickertape_reference::MemoryTokens;
use tickertape_server::auth::Authenticator;
use tickertape_server::ServerConfig;

/// One browser script's run; dashboard.test.mjs takes about 30 s on a quiet machine.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(240);

/// The tokens of the server with `--auth`: the browser reads, the test writes the data.
const READ_TOKEN: &str = "tt_dashboard_read_0000000000000000000000000000000000";
const WRITE_TOKEN: &str = "tt_dashboard_write_000000000000000000000000000000000";

const SCHEMA: &str = "[defaults]
retention = { raw = \"7d\" }

[measurements.http_requests]
layout = \"buckets\"
interval = \"10s\"
kind = \"counter\"
";

const HOSTS: [(&str, &str); 4] = [
    ("host_0", "eu"),
    ("host_1", "eu"),
    ("host_2", "us"),
    ("host_3", "us"),
];

/// Three hours up to now, every 10 s: cpu usage per host (line protocol, seconds).
fn cpu_lines(now_s: i64) -> String {
    let mut body = String::new();
    for (i, (host, region)) in HOSTS.iter().enumerate() {
        for k in 0..1080 {
            let t = now_s - 3 * 3600 + k * 10;
            let user = 20.0 + 10.0 * i as f64 + 5.0 * ((k as f64) / 40.0).sin();
            let system = user / 4.0;
            let idle = 100.0 - user - system;
            body.push_str(&format!(
                "cpu,hostname={host},region={region} usage_user={user:.2},usage_system={system:.2},usage_idle={idle:.2} {t}\n"
            ));
        }
    }
    body
}

/// A counter of requests per host over the same hours (written with `mode=inc`).
fn request_lines(now_s: i64) -> String {
    let mut body = String::new();
    for (i, (host, _)) in HOSTS.iter().enumerate() {
        for k in 0..1080 {
            let t = now_s - 3 * 3600 + k * 10;
            body.push_str(&format!(
                "http_requests,hostname={host} count={} {t}\n",
                10 + i as i64 * 5 + k % 7
            ));
        }
    }
    body
}

/// `POST /write?{query}`, with `token` as Bearer when the server runs with `--auth`.
async fn write(server: &TestServer, query: &str, body: String, token: Option<&str>) {
    let mut request = server
        .client
        .post(format!("{}/write?{query}", server.url))
        .body(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("POST /write");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    assert_eq!(status, 204, "writing the test data: {text}");
}

/// `name` from the environment, or a failure that says how to get it.
fn required_env(name: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not set: this test needs node and playwright-core. Run scripts/test \
             (which installs them, or skips this test with a loud message where it cannot), or \
             set TICKERTAPE_NODE and TICKERTAPE_PLAYWRIGHT_DIR (see scripts/browser-test-deps)"
            )
        })
}

/// The cpu and counter data of three hours up to now (see the top of this file).
async fn fill(server: &TestServer, token: Option<&str>) {
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs() as i64;
    let now_s = now_s - now_s % 10;
    write(server, "precision=s", cpu_lines(now_s), token).await;
    write(server, "precision=s&mode=inc", request_lines(now_s), token).await;
}

/// What a browser run needs: node, playwright-core's directory, the browser.
struct BrowserEnv {
    node: String,
    playwright_dir: String,
    chromium: String,
}

impl BrowserEnv {
    fn required() -> Self {
        let chromium =
            std::env::var("TICKERTAPE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        assert!(
            PathBuf::from(&chromium).exists(),
            "no browser at {chromium}: install Debian's chromium (scripts/test does, as root)"
        );
        Self {
            node: required_env("TICKERTAPE_NODE"),
            playwright_dir: required_env("TICKERTAPE_PLAYWRIGHT_DIR"),
            chromium,
        }
    }

    /// Runs `tests/browser/{script}` with `args` and asserts that all its checks passed.
    async fn run(&self, script: &str, args: &[&str]) {
        let mut command = Command::new(&self.node);
        command
            .arg(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/browser")
                    .join(script),
            )
            .args(args)
            .env("TICKERTAPE_PLAYWRIGHT_DIR", &self.playwright_dir)
            .env("TICKERTAPE_CHROMIUM", &self.chromium)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let node = self.node.clone();
        let (status, stdout, stderr) = tokio::task::spawn_blocking(move || {
            let child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {node}: {e}"));
            wait_bounded(child, BROWSER_TIMEOUT)
        })
        .await
        .expect("the browser run's thread");
        println!("{script}:\n{stdout}");
        eprintln!("{stderr}");
        assert!(
            status == Some(0),
            "{script} failed (exit {status:?}, None = killed after {BROWSER_TIMEOUT:?}):\n{stderr}"
        );
        assert!(
            stdout.contains("checks passed"),
            "{script} ended without its summary line:\n{stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_browser() {
    let browser = BrowserEnv::required();
    let server = TestServer::start_with_schema(SCHEMA).await;
    fill(&server, None).await;
    browser.run("dashboard.test.mjs", &[&server.url]).await;
    browser.run("series-view.test.mjs", &[&server.url]).await;
    server.stop().await;

    // The time axis around summer-time changes, in node: the browser's zone above has none.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let child = Command::new(&browser.node)
        .arg(manifest.join("tests/browser/axes.test.mjs"))
        .arg(manifest.join("assets/dashboard"))
        .env("TZ", "Europe/Berlin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let (status, stdout, stderr) = wait_bounded(child, Duration::from_secs(60));
    println!("{stdout}");
    assert!(
        status == Some(0) && stdout.contains("checks passed"),
        "the time-axis test failed (exit {status:?}):\n{stdout}\n{stderr}"
    );
}

fn token(secret: &str, scope: Scope) -> TokenRecord {
    TokenRecord {
        name: secret.into(),
        scopes: Scopes::new([scope]).expect("one scope"),
        hash: TokenHash::of(secret),
        created: 0,
    }
}

/// The dashboard behind `serve --auth`, with a read token given as a browser gives it:
/// Basic auth after the page's 401 (what series-view.test.mjs checks with a token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_browser_with_auth() {
    let browser = BrowserEnv::required();
    let tokens = Arc::new(MemoryTokens::default());
    for record in [
        token(READ_TOKEN, Scope::Read),
        token(WRITE_TOKEN, Scope::Write),
    ] {
        tokens.add_token(record).await.expect("add a token");
    }
    let auth = Authenticator::load(tokens).await.expect("the tokens");
    let config = ServerConfig {
        auth: Some(Arc::new(auth)),
        ..ServerConfig::default()
    };
    let server = TestServer::start_with(SCHEMA, config).await;
    let (status, _) = server.get("/", &[]).await;
    assert_eq!(status, 401, "the page without a token");
    fill(&server, Some(WRITE_TOKEN)).await;
    browser
        .run("series-view.test.mjs", &[&server.url, READ_TOKEN])
        .await;
    server.stop().await;
}

/// `app`'s data: cpu's usage_user of app_0 and app_1, and jobs' waiting of queue q1, over
/// the last hour (3 series; databases.test.mjs counts them).
fn app_lines(now_s: i64) -> String {
    let mut body = String::new();
    for k in 0..360 {
        let t = now_s - 3600 + k * 10;
        for (i, host) in ["app_0", "app_1"].iter().enumerate() {
            let usage = 60.0 + 10.0 * i as f64;
            body.push_str(&format!("cpu,hostname={host} usage_user={usage} {t}\n"));
        }
        body.push_str(&format!("jobs,queue=q1 waiting={} {t}\n", k % 5));
    }
    body
}

/// The dashboard's databases: first with the default database alone, then with `app`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_browser_with_databases() {
    let browser = BrowserEnv::required();
    let server = TestServer::start_with_schema(SCHEMA).await;
    fill(&server, None).await;
    browser
        .run("databases.test.mjs", &[&server.url, "single"])
        .await;

    // InfluxQL's CREATE DATABASE, as an InfluxDB 1.x user makes one, keeping raw
    // points 3 days (the default database keeps the config's 7).
    let created = server
        .client
        .post(format!("{}/query", server.url))
        .form(&[("q", "CREATE DATABASE app WITH DURATION 3d")])
        .send()
        .await
        .expect("POST /query");
    let status = created.status().as_u16();
    let text = created.text().await.unwrap_or_default();
    assert!(
        status == 200 && !text.contains("error"),
        "creating the database app: {status} {text}"
    );
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs() as i64;
    write(
        &server,
        "db=app&precision=s",
        app_lines(now_s - now_s % 10),
        None,
    )
    .await;
    browser.run("databases.test.mjs", &[&server.url]).await;
    server.stop().await;
}

/// Without a browser: the page and its assets, their content types and cache headers, and
/// a 404 for another version's assets (a page loaded before an upgrade).
#[tokio::test]
async fn dashboard_page_and_assets_are_served() {
    let server = TestServer::start().await;
    let page = server
        .client
        .get(format!("{}/", server.url))
        .send()
        .await
        .expect("GET /");
    assert_eq!(page.status().as_u16(), 200);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert!(header(&page, "content-type").starts_with("text/html"));
    assert_eq!(header(&page, "cache-control"), "no-cache");
    assert!(header(&page, "content-security-policy").contains("default-src 'self'"));
    let html = page.text().await.expect("the page");
    let script = html
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page names its script");
    assert!(
        script.starts_with("/assets/") && script.ends_with("/app.js"),
        "{script}"
    );

    for (path, content_type) in [
        (script.to_string(), "text/javascript"),
        (script.replace("app.js", "chart.js"), "text/javascript"),
        (script.replace("app.js", "style.css"), "text/css"),
    ] {
        let asset = server
            .client
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .expect("GET an asset");
        assert_eq!(asset.status().as_u16(), 200, "{path}");
        assert!(
            header(&asset, "content-type").starts_with(content_type),
            "{path}"
        );
        assert!(
            header(&asset, "cache-control").contains("immutable"),
            "{path}"
        );
    }
    for path in [
        "/assets/0000000000000000/app.js",
        &script.replace("app.js", "nope.js"),
    ] {
        let missing = server
            .client
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .expect("GET a missing asset");
        assert_eq!(missing.status().as_u16(), 404, "{path}");
    }
    server.stop().await;
}

/// Waits for `child` at most `limit`, killing it (this child, by its handle) after that;
/// its exit code (None when killed or ended by a signal), stdout and stderr.
fn wait_bounded(mut child: std::process::Child, limit: Duration) -> (Option<i32>, String, String) {
    use std::io::Read;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    // Read both pipes while waiting, so that a chatty child never blocks on a full pipe.
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait().expect("wait for node") {
            Some(status) => break status.code(),
            None if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    (
        status,
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

/// The Targets view against a server scraping two targets: an exporter in this test (up)
/// and a closed port (down), once each has been scraped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_browser_targets_view() {
    let browser = BrowserEnv::required();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async { "browser_test_metric 1\n" }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: up-job\n    static_configs: [{{targets: ['{up}']}}]\n  - job_name: down-job\n    static_configs: [{{targets: ['{down}']}}]\n"
        ),
    )
    .unwrap();
    let server = TestServer::start_scraping(tickertape_server::scrape::ScrapeOptions {
        config_path: config,
        database: None,
    })
    .await;
    for _ in 0..50 {
        let (_, targets) = server.get("/prometheus/api/v1/targets", &[]).await;
        let scraped = targets["data"]["activeTargets"]
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t["health"] != "unknown"));
        if scraped {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let up_url = format!("http://{up}/metrics");
    let down_url = format!("http://{down}/metrics");
    browser
        .run("targets-view.test.mjs", &[&server.url, &up_url, &down_url])
        .await;
}
