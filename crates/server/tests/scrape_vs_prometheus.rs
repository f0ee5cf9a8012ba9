//! Scraping compared with Prometheus itself (Debian's 2.42): both scrape the same targets
//! every second with the same configuration file — exporters in this test (the text format
//! with every metric type and a conflicting `job` label; OpenMetrics with exemplars, and
//! one with an exemplar where none may be),
//! Debian's node exporter and a pushgateway holding a pushed histogram and summary when
//! installed, tickertape's own `/metrics`, a target that is down — through
//! `relabel_configs` (`replace`, `hashmod` + `keep`) and `metric_relabel_configs`. The two
//! stores must then hold the same series (names and labels exactly), the same `up` for
//! each target, and the same `scrape_samples_*` counts for the targets whose exposition
//! does not change.
//!
//! Skipped (with a message) when `/usr/bin/prometheus` is absent; `scripts/test` installs
//! it and the exporters where it can. Every process is this test's child, killed by PID.

mod support;

use axum::http::header;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::TestServer;
use tickertape_server::scrape::ScrapeOptions;

const PROMETHEUS: &str = "/usr/bin/prometheus";
const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";
const PUSHGATEWAY: &str = "/usr/bin/prometheus-pushgateway";

/// Scrapes each store makes of each target before the comparison (one a second).
const SCRAPES: u64 = 8;

const FAMILIES: &str = r#"# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="200",job="inner",instance="inside"} 10
requests_total{code="500",empty=""} 2
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 3
latency_seconds_bucket{le="+Inf"} 5
latency_seconds_sum 1.5
latency_seconds_count 5
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.2
rpc_seconds{quantile="0.99"} NaN
rpc_seconds_sum 4
rpc_seconds_count 9
# TYPE go_goroutines gauge
go_goroutines 12
odd_untyped{path="C:\\DIR",msg="a \"quoted\"\nline"} -Inf
temperature_celsius{room="Kitchen"} 21.5
"#;

const OPENMETRICS: &str = "# TYPE jobs counter
# HELP jobs Jobs run.
jobs_total{kind=\"x\"} 3 # {trace_id=\"a\"} 1 1.5
jobs_created{kind=\"x\"} 1.6e9
# TYPE size_bytes gauge
# UNIT size_bytes bytes
size_bytes 1024
# TYPE info_thing info
info_thing_info{version=\"1.2\"} 1
# EOF
";

/// Refused by both: an exemplar on a gauge fails the whole scrape.
const BAD_OPENMETRICS: &str = "# TYPE wrong gauge\nwrong 1 # {a=\"b\"} 1\nfine_total 1\n# EOF\n";

const PUSHED: &str = "# TYPE pushed_latency histogram
pushed_latency_bucket{le=\"1\"} 2
pushed_latency_bucket{le=\"+Inf\"} 3
pushed_latency_sum 2.5
pushed_latency_count 3
# TYPE pushed_rpc summary
pushed_rpc{quantile=\"0.9\"} 0.7
pushed_rpc_sum 10
pushed_rpc_count 20
";

/// A process started by this test, killed by its PID when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(program: &str, args: &[String], log: &Path) -> Process {
    let out = std::fs::File::create(log).unwrap();
    Process(
        Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}")),
    )
}

fn free_loopback_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// An exporter answering `body` as `content_type` on `/metrics`.
async fn static_exporter(body: &'static str, content_type: &'static str) -> String {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// Waits until `url` answers 200, for at most 30 s.
async fn wait_ready(client: &reqwest::Client, url: &str) {
    for _ in 0..300 {
        if client
            .get(url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} did not answer");
}

/// The shared configuration. Pushgateway's job keeps the pushed `job` (`honor_labels`).
fn config(targets: &BTreeMap<&str, String>) -> String {
    let mut yaml =
        String::from("global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n");
    let static_job = |name: &str, address: &str, extra: &str| {
        format!("  - job_name: {name}\n    static_configs: [{{targets: ['{address}']}}]\n{extra}")
    };
    let families = &targets["families"];
    yaml.push_str(&format!(
        r#"  - job_name: families
    static_configs:
      - targets: ['{families}']
        labels: {{group: one}}
      - targets: ['{families}']
        labels: {{group: two, shard_key: b}}
      - targets: ['{families}']
        labels: {{group: three, shard_key: c}}
      - targets: ['{families}']
        labels: {{group: four, shard_key: d}}
    relabel_configs:
      - {{source_labels: [__address__], regex: '([^:]+):.*', target_label: host, replacement: 'h-$1'}}
      - {{source_labels: [group], target_label: instance, replacement: '${{1}}-instance'}}
      - {{source_labels: [shard_key], modulus: 2, target_label: __tmp_shard, action: hashmod}}
      - {{source_labels: [__tmp_shard], regex: '0', action: keep}}
    metric_relabel_configs:
      - {{source_labels: [__name__], regex: 'go_.*', action: drop}}
      - {{source_labels: [room], target_label: room, action: lowercase}}
      - {{regex: 'code', replacement: 'status_$0', action: labelmap}}
"#
    ));
    yaml.push_str(&static_job("openmetrics", &targets["openmetrics"], ""));
    yaml.push_str(&static_job(
        "badopenmetrics",
        &targets["badopenmetrics"],
        "",
    ));
    yaml.push_str(&static_job("down", &targets["down"], ""));
    if let Some(node) = targets.get("node") {
        yaml.push_str(&static_job("node", node, ""));
    }
    if let Some(gateway) = targets.get("pushgateway") {
        yaml.push_str(&static_job(
            "pushgateway",
            gateway,
            "    honor_labels: true\n",
        ));
    }
    if let Some(own) = targets.get("tickertape") {
        yaml.push_str(&static_job("tickertape", own, ""));
    }
    yaml
}

/// Every series a store holds over `[start, end]` (seconds), as label maps.
async fn series(
    client: &reqwest::Client,
    base: &str,
    start: f64,
    end: f64,
) -> BTreeSet<BTreeMap<String, String>> {
    let response: Value = client
        .get(format!("{base}/api/v1/series"))
        .query(&[
            ("match[]", "{__name__=~\".+\"}"),
            ("start", &start.to_string()),
            ("end", &end.to_string()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = response["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{base}: {response}"));
    data.iter()
        .map(|s| {
            s.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .collect()
}

/// `expr` at `time`: each result's labels (the name included) and value.
async fn instant(
    client: &reqwest::Client,
    base: &str,
    expr: &str,
    time: f64,
) -> BTreeMap<BTreeMap<String, String>, String> {
    let response: Value = client
        .get(format!("{base}/api/v1/query"))
        .query(&[("query", expr), ("time", &time.to_string())])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let result = response["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{base}: {response}"));
    result
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (labels, s["value"][1].as_str().unwrap().to_string())
        })
        .collect()
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn describe(set: &BTreeSet<BTreeMap<String, String>>) -> String {
    set.iter().take(20).map(|s| format!("  {s:?}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_as_prometheus_does() {
    if !Path::new(PROMETHEUS).exists() {
        eprintln!("SKIPPED: prometheus binary not found — install Debian's prometheus package (scripts/test does)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = support::client();
    let mut processes = Vec::new();
    let mut targets: BTreeMap<&str, String> = BTreeMap::new();
    targets.insert(
        "families",
        static_exporter(FAMILIES, "text/plain; version=0.0.4").await,
    );
    targets.insert(
        "openmetrics",
        static_exporter(
            OPENMETRICS,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
        .await,
    );
    targets.insert(
        "badopenmetrics",
        static_exporter(
            BAD_OPENMETRICS,
            "application/openmetrics-text; version=1.0.0",
        )
        .await,
    );
    targets.insert("down", free_loopback_addr());
    if Path::new(NODE_EXPORTER).exists() {
        let address = free_loopback_addr();
        // A few collectors whose series do not come and go between scrapes.
        let args = [
            "--collector.disable-defaults",
            "--collector.cpu",
            "--collector.meminfo",
            "--collector.loadavg",
            "--collector.uname",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--web.listen-address={address}")])
        .collect::<Vec<_>>();
        processes.push(spawn(NODE_EXPORTER, &args, &dir.path().join("node.log")));
        wait_ready(&client, &format!("http://{address}/metrics")).await;
        targets.insert("node", address);
    } else {
        eprintln!("note: {NODE_EXPORTER} absent; the node target is left out");
    }
    if Path::new(PUSHGATEWAY).exists() {
        let address = free_loopback_addr();
        let args = vec![
            format!("--web.listen-address={address}"),
            format!(
                "--persistence.file={}",
                dir.path().join("push.db").display()
            ),
        ];
        processes.push(spawn(PUSHGATEWAY, &args, &dir.path().join("push.log")));
        wait_ready(&client, &format!("http://{address}/metrics")).await;
        let pushed = client
            .put(format!(
                "http://{address}/metrics/job/batch/instance/worker-1"
            ))
            .body(PUSHED)
            .send()
            .await
            .unwrap();
        assert!(pushed.status().is_success(), "push: {}", pushed.status());
        targets.insert("pushgateway", address);
    } else {
        eprintln!("note: {PUSHGATEWAY} absent; the pushgateway target is left out");
    }

    // tickertape starts without itself (its port is not known yet), then reloads.
    let own_config = dir.path().join("tickertape.yml");
    std::fs::write(&own_config, config(&targets)).unwrap();
    let server = TestServer::start_scraping(ScrapeOptions {
        config_path: own_config.clone(),
        database: None,
    })
    .await;
    targets.insert("tickertape", server.addr.to_string());
    let yaml = config(&targets);
    std::fs::write(&own_config, &yaml).unwrap();
    let (status, body) = server.post("/-/reload", "").await;
    assert_eq!(status, 200, "{body}");

    let prometheus_address = free_loopback_addr();
    let prometheus_config = dir.path().join("prometheus.yml");
    std::fs::write(&prometheus_config, &yaml).unwrap();
    let args = vec![
        format!("--config.file={}", prometheus_config.display()),
        format!(
            "--storage.tsdb.path={}",
            dir.path().join("prometheus-data").display()
        ),
        format!("--web.listen-address={prometheus_address}"),
    ];
    let prometheus_log = dir.path().join("prometheus.log");
    processes.push(spawn(PROMETHEUS, &args, &prometheus_log));
    let prometheus = format!("http://{prometheus_address}");
    wait_ready(&client, &format!("{prometheus}/-/ready")).await;
    let start = now_seconds();
    tokio::time::sleep(Duration::from_secs(SCRAPES + 1)).await;
    // The window ends a second ago: both have stored every scrape in it.
    let end = now_seconds() - 1.0;

    let ours = format!("{}/prometheus", server.url);
    let theirs = series(&client, &prometheus, start, end).await;
    let mine = series(&client, &ours, start, end).await;
    let log = std::fs::read_to_string(&prometheus_log).unwrap_or_default();
    assert!(
        !theirs.is_empty(),
        "Prometheus stored nothing; its log:\n{log}"
    );
    let their_targets: Value = client
        .get(format!("{prometheus}/api/v1/targets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let their_errors: Vec<String> = their_targets["data"]["activeTargets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{}: {}", t["scrapePool"], t["lastError"]))
        .collect();
    let only_theirs: BTreeSet<_> = theirs.difference(&mine).cloned().collect();
    let only_mine: BTreeSet<_> = mine.difference(&theirs).cloned().collect();
    assert!(
        only_theirs.is_empty() && only_mine.is_empty(),
        "{} series in both; only in Prometheus ({}):\n{}only in tickertape ({}):\n{}Prometheus' targets: {their_errors:?}",
        theirs.intersection(&mine).count(),
        only_theirs.len(),
        describe(&only_theirs),
        only_mine.len(),
        describe(&only_mine),
    );
    eprintln!("{} series, the same in both stores", mine.len());

    let up_theirs = instant(&client, &prometheus, "up", end).await;
    let up_mine = instant(&client, &ours, "up", end).await;
    assert_eq!(up_mine, up_theirs);
    assert_eq!(
        up_mine.values().filter(|v| *v == "0").count(),
        2,
        "{up_mine:?}"
    );
    for expr in [
        r#"scrape_samples_scraped{job=~"families|openmetrics|pushgateway"}"#,
        r#"scrape_samples_post_metric_relabeling{job=~"families|openmetrics|pushgateway"}"#,
        r#"requests_total"#,
        r#"count by (job) ({__name__=~".+"})"#,
    ] {
        let theirs = instant(&client, &prometheus, expr, end).await;
        let mine = instant(&client, &ours, expr, end).await;
        if expr.starts_with("count") {
            // Series counts per job: tickertape's own /metrics may grow between the two
            // stores' scrapes; the others must match.
            let strip = |m: BTreeMap<BTreeMap<String, String>, String>| -> BTreeMap<_, _> {
                m.into_iter()
                    .filter(|(k, _)| k.get("job").is_some_and(|j| j != "tickertape"))
                    .collect()
            };
            assert_eq!(strip(mine), strip(theirs), "{expr}");
        } else {
            assert_eq!(mine, theirs, "{expr}");
        }
    }
    drop(processes);
}
