//! Scraping through the real server: a test exporter on a loopback port (its answer
//! changed by the test), a tickertape server scraping it every second as a Prometheus
//! configuration file says, and what PromQL then answers.

mod support;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::TestServer;
use tickertape_server::scrape::ScrapeOptions;

/// What the exporter answers: a body, its content type, gzip or not.
#[derive(Clone)]
struct Exposition {
    body: String,
    content_type: &'static str,
    gzip: bool,
}

const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

struct Exporter {
    address: String,
    answer: Arc<Mutex<Exposition>>,
    /// The `Authorization` header of the last scrape.
    authorization: Arc<Mutex<Option<String>>>,
}

impl Exporter {
    async fn start(body: &str) -> Self {
        let answer = Arc::new(Mutex::new(Exposition {
            body: body.to_string(),
            content_type: TEXT,
            gzip: false,
        }));
        let authorization = Arc::new(Mutex::new(None));
        let (shared, seen) = (Arc::clone(&answer), Arc::clone(&authorization));
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let answer = shared.lock().unwrap().clone();
                *seen.lock().unwrap() = headers
                    .get(header::AUTHORIZATION)
                    .map(|v| v.to_str().unwrap().to_string());
                async move {
                    if answer.gzip {
                        let mut encoder =
                            flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                        encoder.write_all(answer.body.as_bytes()).unwrap();
                        let bytes = encoder.finish().unwrap();
                        (
                            [
                                (header::CONTENT_TYPE, answer.content_type),
                                (header::CONTENT_ENCODING, "gzip"),
                            ],
                            bytes,
                        )
                            .into_response()
                    } else {
                        ([(header::CONTENT_TYPE, answer.content_type)], answer.body).into_response()
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Exporter {
            address,
            answer,
            authorization,
        }
    }

    fn answer(&self, body: &str, content_type: &'static str, gzip: bool) {
        *self.answer.lock().unwrap() = Exposition {
            body: body.to_string(),
            content_type,
            gzip,
        };
    }
}

fn write_config(dir: &Path, yaml: &str) -> std::path::PathBuf {
    let path = dir.join("prometheus.yml");
    std::fs::write(&path, yaml).unwrap();
    path
}

async fn scraping(config: &Path) -> TestServer {
    TestServer::start_scraping(ScrapeOptions {
        config_path: config.to_path_buf(),
        database: None,
    })
    .await
}

/// The instant query's result at now.
async fn query(server: &TestServer, expr: &str) -> Vec<Value> {
    let (status, body) = server
        .get("/prometheus/api/v1/query", &[("query", expr)])
        .await;
    assert_eq!(status, 200, "{expr}: {body}");
    body["data"]["result"].as_array().unwrap().clone()
}

/// Polls `expr` until `done` holds of its result, for at most 20 s (scrapes are 1 s
/// apart); the last result either way.
async fn until(server: &TestServer, expr: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut result = Vec::new();
    for _ in 0..100 {
        result = query(server, expr).await;
        if done(&result) {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result
}

fn value(sample: &Value) -> f64 {
    sample["value"][1].as_str().unwrap().parse().unwrap()
}

const FAMILIES: &str = r#"# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="200",job="inner"} 10
requests_total{code="500"} 2
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 3
latency_seconds_bucket{le="+Inf"} 5
latency_seconds_sum 1.5
latency_seconds_count 5
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.2
rpc_seconds_sum 4
rpc_seconds_count 9
# TYPE go_goroutines gauge
go_goroutines 12
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_families_are_stored_with_the_targets_labels() {
    let exporter = Exporter::start(FAMILIES).await;
    exporter.answer(FAMILIES, TEXT, true);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            r#"
global: {{scrape_interval: 1s}}
scrape_configs:
  - job_name: app
    authorization: {{credentials: sesame}}
    static_configs:
      - targets: ['{}']
        labels: {{env: test}}
    metric_relabel_configs:
      - {{source_labels: [__name__], regex: 'go_.*', action: drop}}
"#,
            exporter.address
        ),
    );
    let server = scraping(&config).await;
    let up = until(&server, "up", |r| !r.is_empty()).await;
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(value(&up[0]), 1.0);
    assert_eq!(up[0]["metric"]["job"], "app");
    assert_eq!(up[0]["metric"]["instance"], exporter.address.as_str());
    assert_eq!(up[0]["metric"]["env"], "test");

    // Without honor_labels the target's job wins and the exposed one is kept aside.
    let requests = query(&server, r#"requests_total{code="200"}"#).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["metric"]["job"], "app");
    assert_eq!(requests[0]["metric"]["exported_job"], "inner");
    assert_eq!(value(&requests[0]), 10.0);
    let buckets = query(&server, "latency_seconds_bucket").await;
    assert_eq!(buckets.len(), 2);
    assert_eq!(
        query(&server, r#"rpc_seconds{quantile="0.5"}"#).await.len(),
        1
    );
    let median = value(&query(&server, "histogram_quantile(0.5, latency_seconds_bucket)").await[0]);
    assert!((median - 0.1 * 2.5 / 3.0).abs() < 1e-12, "{median}");
    // metric_relabel_configs dropped the gauge.
    assert!(query(&server, "go_goroutines").await.is_empty());
    assert_eq!(
        value(&query(&server, "scrape_samples_scraped").await[0]),
        10.0
    );
    assert_eq!(
        value(&query(&server, "scrape_samples_post_metric_relabeling").await[0]),
        9.0
    );
    assert!(value(&query(&server, "scrape_duration_seconds").await[0]) > 0.0);
    assert_eq!(
        exporter.authorization.lock().unwrap().as_deref(),
        Some("Bearer sesame")
    );

    let (status, targets) = server.get("/prometheus/api/v1/targets", &[]).await;
    assert_eq!(status, 200);
    let active = &targets["data"]["activeTargets"][0];
    assert_eq!(active["health"], "up");
    assert_eq!(active["scrapePool"], "app");
    assert_eq!(
        active["scrapeUrl"],
        format!("http://{}/metrics", exporter.address)
    );
    assert_eq!(active["labels"]["env"], "test");
    assert_eq!(
        active["discoveredLabels"]["__address__"],
        exporter.address.as_str()
    );
    assert_eq!(active["scrapeInterval"], "1s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_series_and_removed_targets_go_stale_at_once() {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let exporter = Exporter::start(&format!("kept 1\nvanishing 2\ntimed 3 {now_ms}\n")).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = |targets: &str| {
        format!(
            "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: app\n    static_configs: [{{targets: [{targets}]}}]\n"
        )
    };
    let config = write_config(dir.path(), &yaml(&format!("'{}'", exporter.address)));
    let server = scraping(&config).await;
    assert_eq!(
        until(&server, "vanishing", |r| !r.is_empty()).await.len(),
        1
    );

    // The series leaves the exposition: PromQL stops returning it after the next scrape,
    // not after the 5-minute lookback.
    exporter.answer("kept 1\n", TEXT, false);
    assert!(until(&server, "vanishing", |r| r.is_empty())
        .await
        .is_empty());
    assert_eq!(query(&server, "kept").await.len(), 1);
    // A series that gave its own time gets no stale marker, as in Prometheus: its time
    // is not the scrape's.
    assert_eq!(query(&server, "timed").await.len(), 1);

    // The target leaves the configuration: all its series and `up` go stale on reload.
    write_config(dir.path(), &yaml(""));
    let (status, body) = server.post("/-/reload", "").await;
    assert_eq!(status, 200, "{body}");
    assert!(query(&server, "kept").await.is_empty());
    assert!(query(&server, "up").await.is_empty());

    // A file the server cannot take is refused, naming the key, and changes nothing.
    write_config(
        dir.path(),
        "scrape_configs: [{job_name: x, scrape_intervall: 1s}]\n",
    );
    let (status, body) = server.post("/-/reload", "").await;
    assert_eq!(status, 500);
    let text = body.as_str().unwrap();
    assert!(
        text.contains("scrape_intervall") && text.contains("\"x\""),
        "{text}"
    );
}

/// Each job's last error, by job, from `/targets`.
async fn errors_by_job(server: &TestServer) -> std::collections::BTreeMap<String, String> {
    let (_, targets) = server.get("/prometheus/api/v1/targets", &[]).await;
    targets["data"]["activeTargets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let job = t["scrapePool"].as_str().unwrap().to_string();
            (job, t["lastError"].as_str().unwrap().to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_scrape_is_down_and_stores_nothing_of_the_body() {
    let exporter = Exporter::start("a 1\nb{label=\"long value\"} 2\nc 3\n").await;
    let dir = tempfile::tempdir().unwrap();
    let job = |name: &str, limit: &str| {
        format!(
            "  - job_name: {name}\n    {limit}\n    static_configs: [{{targets: ['{}']}}]\n",
            exporter.address
        )
    };
    let yaml = [
        "global: {scrape_interval: 1s}\nscrape_configs:\n".to_string(),
        job("samples", "sample_limit: 2"),
        job("labels", "label_limit: 3"),
        job("names", "label_name_length_limit: 4"),
        job("values", "label_value_length_limit: 5"),
        job("body", "body_size_limit: 10B"),
        job("fine", "sample_limit: 3"),
    ]
    .concat();
    let server = scraping(&write_config(dir.path(), &yaml)).await;
    let up = until(&server, "up", |r| r.len() == 6).await;
    let up: std::collections::BTreeMap<String, f64> = up
        .iter()
        .map(|s| (s["metric"]["job"].as_str().unwrap().to_string(), value(s)))
        .collect();
    let errors = errors_by_job(&server).await;
    let expected = [
        ("samples", "sample limit exceeded"),
        // b has __name__, label, instance, job: 4 labels.
        ("labels", "label_limit exceeded"),
        ("names", "label_name_length_limit exceeded"),
        ("values", "label_value_length_limit exceeded"),
        ("body", "body size limit exceeded"),
    ];
    for (job, error) in expected {
        assert_eq!(up[job], 0.0, "{job}: {errors:?}");
        assert!(errors[job].contains(error), "{job}: {errors:?}");
    }
    assert_eq!(up["fine"], 1.0, "{errors:?}");
    // Only the job within its limits stored samples.
    let stored = query(&server, "a").await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["metric"]["job"], "fine");
    let (_, targets) = server
        .get("/prometheus/api/v1/targets", &[("state", "active")])
        .await;
    assert!(targets["data"].get("droppedTargets").is_none());

    // A body that does not parse fails the scrape too, naming the line.
    exporter.answer("a 1\nb{ 2\n", TEXT, false);
    let mut last = String::new();
    for _ in 0..50 {
        last = errors_by_job(&server).await["fine"].clone();
        if last.starts_with("line 2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(last.starts_with("line 2"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openmetrics_file_sd_and_relabeled_targets() {
    let exporter = Exporter::start("").await;
    exporter.answer(
        "# TYPE jobs counter\njobs_total{kind=\"x\"} 3 # {trace_id=\"a\"} 1 1.5\njobs_created{kind=\"x\"} 1.6e9\n# EOF\n",
        OPENMETRICS,
        false,
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("targets.json"),
        format!(
            r#"[{{"targets": ["{}"], "labels": {{"team": "a"}}}}, {{"targets": ["dropped:1"]}}]"#,
            exporter.address
        ),
    )
    .unwrap();
    let config = write_config(
        dir.path(),
        r#"
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: files
    file_sd_configs: [{files: ['*.json']}]
    relabel_configs:
      - {source_labels: [__address__], regex: 'dropped:.*', action: drop}
      - {source_labels: [__meta_filepath], regex: '.*/(.*)', target_label: source}
"#,
    );
    let server = scraping(&config).await;
    let jobs = until(&server, "jobs_total", |r| !r.is_empty()).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["metric"]["team"], "a");
    assert_eq!(jobs[0]["metric"]["source"], "targets.json");
    assert_eq!(value(&jobs[0]), 3.0);
    assert_eq!(query(&server, "jobs_created").await.len(), 1);
    let (_, targets) = server.get("/prometheus/api/v1/targets", &[]).await;
    let dropped = targets["data"]["droppedTargets"].as_array().unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0]["discoveredLabels"]["__address__"], "dropped:1");

    // The file changes: its new target is scraped without a reload (checked every 5 s).
    std::fs::write(dir.path().join("targets.json"), "[]").unwrap();
    let gone = until(&server, "up", |r| r.is_empty()).await;
    assert!(gone.is_empty(), "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_database_holds_its_samples() {
    let exporter = Exporter::start("in_db 1\n").await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: app\n    database: infra\n    static_configs: [{{targets: ['{}']}}]\n",
        exporter.address
    );
    let config = write_config(dir.path(), &yaml);
    // The database must exist: refused, naming it, while it does not.
    let server = TestServer::start().await;
    let refused = tickertape_server::scrape::Scraping::start(
        server.engine.clone(),
        ScrapeOptions {
            config_path: config.clone(),
            database: None,
        },
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(refused.contains("\"infra\""), "{refused}");
    server.engine.create_database("infra").await.unwrap();
    let scraping = tickertape_server::scrape::Scraping::start(
        server.engine.clone(),
        ScrapeOptions {
            config_path: config,
            database: None,
        },
    )
    .await
    .unwrap();
    let (mut found, mut status) = (Value::Null, 0);
    for _ in 0..100 {
        (status, found) = server
            .get("/prometheus/db/infra/api/v1/query", &[("query", "in_db")])
            .await;
        if found["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status, 200);
    assert_eq!(
        found["data"]["result"].as_array().unwrap().len(),
        1,
        "{found}"
    );
    assert!(query(&server, "in_db").await.is_empty());
    scraping.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_with_ca_file_server_name_or_no_check() {
    let certs = support::certs::Certificates::make();
    let tls = tickertape_server::listen::Tls::from_pem_files(&certs.cert(), &certs.key())
        .expect("TLS configuration");
    let config = tickertape_server::ServerConfig {
        tls: Some(tls),
        ..tickertape_server::ServerConfig::default()
    };
    // A tickertape serving HTTPS is the target: its own /metrics.
    let target = TestServer::start_with_config(config, support::client()).await;
    let ca = certs.ca().display().to_string();
    let address = target.addr.to_string();
    let job = |name: &str, tls: &str| {
        format!("  - job_name: {name}\n    scheme: https\n    tls_config: {{{tls}}}\n    static_configs: [{{targets: ['{address}']}}]\n")
    };
    let yaml = [
        "global: {scrape_interval: 1s}\nscrape_configs:\n".to_string(),
        job("ca", &format!("ca_file: '{ca}'")),
        job(
            "named",
            &format!("ca_file: '{ca}', server_name: tickertape.test"),
        ),
        job(
            "misnamed",
            &format!("ca_file: '{ca}', server_name: other.test"),
        ),
        job("untrusted", ""),
        job("unchecked", "insecure_skip_verify: true"),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let server = scraping(&write_config(dir.path(), &yaml)).await;
    let up = until(&server, "up", |r| r.len() == 5).await;
    let by_job: std::collections::BTreeMap<String, f64> = up
        .iter()
        .map(|s| (s["metric"]["job"].as_str().unwrap().to_string(), value(s)))
        .collect();
    let expected: std::collections::BTreeMap<String, f64> = [
        ("ca", 1.0),
        ("misnamed", 0.0),
        ("named", 1.0),
        ("unchecked", 1.0),
        ("untrusted", 0.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let (_, targets) = server.get("/prometheus/api/v1/targets", &[]).await;
    assert_eq!(by_job, expected, "{targets}");
    assert!(
        query(&server, r#"tickertape_series{job="named"}"#)
            .await
            .len()
            == 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_reads_its_password_file_at_each_scrape() {
    use base64::Engine as _;
    let exporter = Exporter::start("a 1\n").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("password"), "first\n").unwrap();
    let yaml = format!(
        "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: app\n    basic_auth: {{username: scraper, password_file: password}}\n    static_configs: [{{targets: ['{}']}}]\n",
        exporter.address
    );
    let server = scraping(&write_config(dir.path(), &yaml)).await;
    let basic = |password: &str| {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("scraper:{password}"));
        format!("Basic {encoded}")
    };
    until(&server, "up", |r| !r.is_empty()).await;
    assert_eq!(
        exporter.authorization.lock().unwrap().clone(),
        Some(basic("first"))
    );
    // A rotated password is used from the next scrape on, without a reload.
    std::fs::write(dir.path().join("password"), "second").unwrap();
    let mut seen = None;
    for _ in 0..50 {
        seen = exporter.authorization.lock().unwrap().clone();
        if seen == Some(basic("second")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, Some(basic("second")));
}
