//! The round trip with a real Prometheus (Debian's 2.42, the version whose semantics the
//! PromQL support follows): a Prometheus scrapes itself every second and remote-writes to
//! tickertape; once tickertape holds ~40 s of it, the same `query_range` queries — the
//! kinds Grafana dashboards send — are asked of both over a window that ended 15 s ago, and
//! must agree: labels exact, values within 1e-9 relative. Then a second Prometheus that
//! only remote-reads from tickertape must answer them the same.
//!
//! Skipped (with a message) when `/usr/bin/prometheus` is absent; `scripts/test` installs it
//! where it can. The Prometheus processes are this test's children, killed by PID when it
//! ends (even by a panic).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{Labels, TestServer};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// The data tickertape must hold before the comparison, and how long that may take
/// (Prometheus' start included).
const DATA_SPAN: Duration = Duration::from_secs(40);
const DATA_WAIT: Duration = Duration::from_secs(90);

/// The window ends this long ago, so that every sample in it has been remote-written.
const SETTLE: Duration = Duration::from_secs(15);

const RELATIVE_TOLERANCE: f64 = 1e-9;

/// The queries asked of every server: the raw samples first (a difference there explains
/// any below), then what dashboards ask.
const QUERIES: &[&str] = &[
    "up",
    "rate(prometheus_http_requests_total[30s])",
    "sum by (job) (rate(prometheus_http_requests_total[30s]))",
    "histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[30s])))",
    "topk(3, rate(prometheus_http_requests_total[30s]))",
    "process_resident_memory_bytes / 1024 + 1",
];

/// Requests per traffic round (one round, then a 200 ms pause, until the data is in) to
/// three of Prometheus' own endpoints, so that `prometheus_http_requests_total` has series
/// with rates in the ratio 3:5:7, each above the scrapes' 1/s while a round takes under
/// 3 s: `topk(3, …)` then picks them with no ties to break differently.
const TRAFFIC: &[(&str, usize)] = &[
    ("/api/v1/status/buildinfo", 3),
    ("/api/v1/labels", 5),
    ("/api/v1/status/flags", 7),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_round_trip() {
    if !Path::new(PROMETHEUS).exists() {
        eprintln!(
            "SKIPPED: prometheus binary not found — install Debian's prometheus package \
             (scripts/test does)"
        );
        return;
    }
    // Declared first, dropped last: the Prometheus processes are killed before it goes.
    let dir = tempfile::tempdir().unwrap();
    let tickertape = TestServer::start().await;
    let writer = Prometheus::start(dir.path(), "writer", |own| {
        scraping_config(own, &tickertape.url)
    })
    .await;
    let first_ms = wait_for_data(&tickertape, &writer).await;

    let end_s = (now_ms() - SETTLE.as_millis() as i64) / 1000;
    // The window starts inside the data; `up` is compared from 30 s earlier, so that the
    // rates' ranges are covered too.
    let start_s = (first_ms / 1000 + 5).min(end_s - 10);
    eprintln!(
        "window [{start_s}, {end_s}] s, tickertape data from {} ms",
        first_ms
    );
    let mut answers = Vec::new();
    for query in QUERIES {
        let from = if *query == "up" {
            start_s - 30
        } else {
            start_s
        };
        let range = Range {
            start: from,
            end: end_s,
        };
        let expected = writer.query_range(query, &range).await;
        let got = query_range(
            &tickertape.client,
            &tickertape.url,
            "/prometheus",
            query,
            &range,
        )
        .await;
        assert_same(query, "tickertape", &expected, &got);
        answers.push((query, range, expected));
    }

    let reader = Prometheus::start(dir.path(), "reader", |_| reading_config(&tickertape.url)).await;
    for (query, range, expected) in &answers {
        let got = reader.query_range(query, range).await;
        assert_same(
            query,
            "Prometheus remote-reading from tickertape",
            expected,
            &got,
        );
    }
    drop(reader);
    drop(writer);
    tickertape.stop().await;
}

/// `serve --auth` with a real Prometheus: one `remote_write` block with `basic_auth`, one
/// with an `authorization` block (Bearer), both with a write token, and one with a
/// read-only token; each labels its samples `via`. The first two arrive, the third is
/// refused (403) and nothing of it is stored; a Prometheus remote-reading with a read
/// token through `basic_auth` gets the samples back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_round_trip_with_tokens() {
    if !Path::new(PROMETHEUS).exists() {
        eprintln!(
            "SKIPPED: prometheus binary not found — install Debian's prometheus package \
             (scripts/test does)"
        );
        return;
    }
    use std::sync::Arc;
    use tickertape_backend::TokenStore;
    use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};
    const WRITE: &str = "tt_prometheus_write_0000000000000000000000000000000";
    const READ: &str = "tt_prometheus_read_00000000000000000000000000000000";
    let tokens = Arc::new(tickertape_reference::MemoryTokens::default());
    for (secret, scope) in [(WRITE, Scope::Write), (READ, Scope::Read)] {
        let record = TokenRecord {
            name: secret.into(),
            scopes: Scopes::new([scope]).unwrap(),
            hash: TokenHash::of(secret),
            created: 0,
        };
        tokens.add_token(record).await.unwrap();
    }
    let config = tickertape_server::ServerConfig {
        auth: Some(Arc::new(
            tickertape_server::auth::Authenticator::load(tokens)
                .await
                .unwrap(),
        )),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let tickertape = TestServer::start_with("", config).await;
    let url = tickertape.url.clone();
    let writer = Prometheus::start(dir.path(), "writer", |own| {
        format!(
            "global:
  scrape_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['{own}']
remote_write:
  - url: {url}/prometheus/api/v1/write
    basic_auth: {{username: prometheus, password: {WRITE}}}
    write_relabel_configs: [{{target_label: via, replacement: basic}}]
    queue_config: {{batch_send_deadline: 200ms}}
  - url: {url}/prometheus/api/v1/write
    authorization: {{credentials: {WRITE}}}
    write_relabel_configs: [{{target_label: via, replacement: bearer}}]
    queue_config: {{batch_send_deadline: 200ms}}
  - url: {url}/prometheus/api/v1/write
    authorization: {{credentials: {READ}}}
    write_relabel_configs: [{{target_label: via, replacement: readonly}}]
    queue_config: {{batch_send_deadline: 200ms}}
"
        )
    })
    .await;
    let count_via = |via: &'static str| {
        let (client, url) = (tickertape.client.clone(), tickertape.url.clone());
        async move {
            let answer: Value = client
                .get(format!("{url}/api/v1/query"))
                .bearer_auth(READ)
                .query(&[
                    ("measurement", "up"),
                    ("tag", &format!("via:{via}")),
                    ("start", "0"),
                ])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer["series"]
                .get(0)
                .and_then(|s| s["points"].as_array())
                .map_or(0, |p| p.len())
        }
    };
    let deadline = Instant::now() + DATA_WAIT;
    loop {
        let (basic, bearer) = (count_via("basic").await, count_via("bearer").await);
        if basic >= 5 && bearer >= 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "basic {basic}, bearer {bearer} samples of `up` after {DATA_WAIT:?}; Prometheus' log:\n{}",
            writer.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(count_via("readonly").await, 0, "a read token wrote");
    let log = writer.log_tail();
    assert!(log.contains("403"), "Prometheus logged no refusal:\n{log}");

    let reader = Prometheus::start(dir.path(), "reader", |_| {
        format!(
            "remote_read:
  - url: {url}/prometheus/api/v1/read
    read_recent: true
    basic_auth: {{username: grafana, password: {READ}}}
"
        )
    })
    .await;
    let end_s = now_ms() / 1000;
    let range = Range {
        start: end_s - 60,
        end: end_s,
    };
    let read_back = reader.query_range("up{via=\"basic\"}", &range).await;
    assert!(
        !read_back.is_empty(),
        "remote read with basic_auth answered nothing"
    );
    drop(reader);
    drop(writer);
    tickertape.stop().await;
}

/// A Prometheus that scrapes itself (`own` is its own address) every second and
/// remote-writes to tickertape with a short batch deadline, so that samples arrive fast.
fn scraping_config(own: &str, tickertape: &str) -> String {
    format!(
        "global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['{own}']
remote_write:
  - url: {tickertape}/prometheus/api/v1/write
    queue_config:
      batch_send_deadline: 200ms
      max_samples_per_send: 2000
"
    )
}

/// A Prometheus with no targets that reads everything from tickertape.
fn reading_config(tickertape: &str) -> String {
    format!(
        "remote_read:
  - url: {tickertape}/prometheus/api/v1/read
    read_recent: true
"
    )
}

/// Drives traffic to `writer` until tickertape holds `DATA_SPAN` of its `up` samples;
/// the first one's time in milliseconds. Panics after `DATA_WAIT`.
async fn wait_for_data(tickertape: &TestServer, writer: &Prometheus) -> i64 {
    let deadline = Instant::now() + DATA_WAIT;
    let rounds = DATA_WAIT.as_millis() / 200;
    let mut span = None;
    for _ in 0..rounds {
        writer.traffic().await;
        span = up_span_ms(tickertape).await;
        if let Some((first, last)) = span {
            if last - first >= DATA_SPAN.as_millis() as i64 {
                return first;
            }
        }
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "tickertape did not receive {DATA_SPAN:?} of samples within {DATA_WAIT:?} \
         (`up` first and last times held, ms: {span:?}); Prometheus' log:\n{}",
        writer.log_tail()
    );
}

/// The first and last time (ms) of the `up` samples tickertape holds, from its own API.
async fn up_span_ms(tickertape: &TestServer) -> Option<(i64, i64)> {
    let end = (now_ms() + 1000) * 1_000_000;
    let (status, body) = tickertape
        .get(
            "/api/v1/query",
            &[
                ("measurement", "up"),
                ("start", "0"),
                ("end", &end.to_string()),
            ],
        )
        .await;
    if status != 200 {
        return None;
    }
    let points = body["series"].get(0)?["points"].as_array()?;
    let ms = |p: &Value| p[0].as_i64().map(|ns| ns / 1_000_000);
    Some((ms(points.first()?)?, ms(points.last()?)?))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A `query_range` window, whole seconds, at a 1 s step.
struct Range {
    start: i64,
    end: i64,
}

/// A `query_range` answer: each series' labels and its (ms, value) points.
type Matrix = BTreeMap<Labels, Vec<(i64, f64)>>;

/// `GET {base}{prefix}/api/v1/query_range`; panics unless it succeeds with a matrix.
async fn query_range(
    client: &reqwest::Client,
    base: &str,
    prefix: &str,
    query: &str,
    range: &Range,
) -> Matrix {
    let url = format!("{base}{prefix}/api/v1/query_range");
    let (start, end) = (range.start.to_string(), range.end.to_string());
    let params = [
        ("query", query),
        ("start", &start),
        ("end", &end),
        ("step", "1"),
    ];
    let response = client.get(&url).query(&params).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    let body: Value = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{url} {query}: HTTP {status}, not JSON: {text}"));
    assert_eq!(body["status"], "success", "{url} {query}: {body}");
    assert_eq!(
        body["data"]["resultType"], "matrix",
        "{url} {query}: {body}"
    );
    matrix(&body["data"]["result"]).unwrap_or_else(|e| panic!("{url} {query}: {e}: {body}"))
}

fn matrix(result: &Value) -> Result<Matrix, String> {
    let mut out = Matrix::new();
    for series in result.as_array().ok_or("result is not an array")? {
        let labels = series["metric"]
            .as_object()
            .ok_or("a series without its metric")?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        let mut points = Vec::new();
        for p in series["values"]
            .as_array()
            .ok_or("a series without values")?
        {
            let t = p[0].as_f64().ok_or("a time that is not a number")?;
            let v = p[1].as_str().ok_or("a value that is not a string")?;
            let v: f64 = v.parse().map_err(|_| format!("value {v:?}"))?;
            points.push(((t * 1000.0).round() as i64, v));
        }
        if out.insert(labels, points).is_some() {
            return Err("a series twice".into());
        }
    }
    Ok(out)
}

/// `got` (from `who`) against Prometheus' own answer `expected`.
fn assert_same(query: &str, who: &str, expected: &Matrix, got: &Matrix) {
    // An empty answer on both sides would agree without testing anything.
    assert!(
        expected.values().any(|points| points.len() >= 5),
        "{query}: Prometheus itself answered (almost) nothing: {expected:?}"
    );
    let missing: Vec<_> = expected.keys().filter(|l| !got.contains_key(*l)).collect();
    let extra: Vec<_> = got.keys().filter(|l| !expected.contains_key(*l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{query}: {who} differs from Prometheus in its series: missing {missing:?}, extra {extra:?}"
    );
    for (labels, want) in expected {
        let have = &got[labels];
        let times = |p: &[(i64, f64)]| p.iter().map(|&(t, _)| t).collect::<Vec<_>>();
        assert_eq!(
            times(have),
            times(want),
            "{query} {labels:?}: {who}'s steps differ from Prometheus'"
        );
        for (&(t, a), &(_, b)) in want.iter().zip(have) {
            assert!(
                close(a, b),
                "{query} {labels:?} at {t} ms: Prometheus {a}, {who} {b}"
            );
        }
    }
    eprintln!("{query}: {who} agrees ({} series)", expected.len());
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan())
        || a == b
        || (a - b).abs() <= RELATIVE_TOLERANCE * a.abs().max(b.abs())
}

/// A Prometheus this test started; killed (by its PID) when dropped.
struct Prometheus {
    child: Child,
    url: String,
    log: PathBuf,
    client: reqwest::Client,
}

impl Prometheus {
    /// Starts `/usr/bin/prometheus` with the configuration `config(own address)`, data and
    /// log under `dir/name`, on a free loopback port, and waits until it is ready. A port
    /// taken between choosing and binding it costs one more try (three at most).
    async fn start(dir: &Path, name: &str, config: impl Fn(&str) -> String) -> Self {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let mut last_log = String::new();
        for attempt in 0..3 {
            let addr = free_loopback_addr();
            let config_path = home.join("prometheus.yml");
            std::fs::write(&config_path, config(&addr)).unwrap();
            let log = home.join(format!("log-{attempt}"));
            let out = std::fs::File::create(&log).unwrap();
            let child = Command::new(PROMETHEUS)
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    home.join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .expect("start prometheus");
            let mut p = Prometheus {
                child,
                url: format!("http://{addr}"),
                log,
                client: support::client(),
            };
            if p.wait_ready().await {
                return p;
            }
            last_log = p.log_tail();
        }
        panic!("prometheus ({name}) did not become ready; its log:\n{last_log}");
    }

    /// Polls `/-/ready` for up to 30 s; false when the process exits first or time runs out.
    async fn wait_ready(&mut self) -> bool {
        for _ in 0..300 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return false;
            }
            let ready = self
                .client
                .get(format!("{}/-/ready", self.url))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    async fn query_range(&self, query: &str, range: &Range) -> Matrix {
        query_range(&self.client, &self.url, "", query, range).await
    }

    /// One round of `TRAFFIC`.
    async fn traffic(&self) {
        for (path, times) in TRAFFIC {
            for _ in 0..*times {
                let _ = self.client.get(format!("{}{path}", self.url)).send().await;
            }
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // Only this child, by its PID; then reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address with a port free a moment ago.
fn free_loopback_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}
