//! A real OpenTelemetry SDK against tickertape: the Python SDK records a gauge, a counter
//! and a histogram and its OTLP/HTTP exporter (protobuf, gzip) sends them to
//! `/opentelemetry/v1/metrics` on 127.0.0.1; PromQL over the stored series must answer
//! what the SDK recorded (`tests/otel/export.py` prints it from the SDK's own data).
//!
//! Needs the SDK in a virtualenv: `scripts/otel-test-deps` installs it (PyPI) and prints
//! its python, which `scripts/test` passes as `TICKERTAPE_OTEL_PYTHON`; where it cannot,
//! `scripts/test` leaves `otel_sdk_exports` out by name and counts it as skipped. Run on
//! its own without the variable, the test fails and says what is missing.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use support::TestServer;

/// The export script's bound: it sends one request to a server in this process.
const SCRIPT_LIMIT: Duration = Duration::from_secs(120);

fn python() -> String {
    std::env::var("TICKERTAPE_OTEL_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TICKERTAPE_OTEL_PYTHON is not set: run scripts/test (which installs the \
             OpenTelemetry Python SDK, or skips this test with a loud message where it \
             cannot), or set it to the python that scripts/otel-test-deps prints"
        )
    })
}

/// Runs the export script against `endpoint`: what it printed, as JSON.
async fn export_with_the_sdk(endpoint: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel/export.py");
    let mut command = tokio::process::Command::new(python());
    command
        .arg(script)
        .arg(endpoint)
        // Loopback only: no proxy from the environment.
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .kill_on_drop(true);
    let output = tokio::time::timeout(SCRIPT_LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the export script did not finish within {SCRIPT_LIMIT:?}"))
        .expect("run the export script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "export script failed ({}): {stdout}\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// An instant query's series: labels and value.
async fn query(
    server: &TestServer,
    expr: &str,
    time_s: f64,
) -> Vec<(BTreeMap<String, String>, f64)> {
    let (status, json) = server
        .get(
            "/prometheus/api/v1/query",
            &[("query", expr), ("time", &time_s.to_string())],
        )
        .await;
    assert_eq!(status, 200, "{expr}: {json}");
    json["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{expr}: {json}"))
        .iter()
        .map(|r| {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(r["metric"].clone()).unwrap();
            (labels, r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}

/// The one value `expr` has at `time_s`.
async fn value(server: &TestServer, expr: &str, time_s: f64) -> f64 {
    let series = query(server, expr, time_s).await;
    assert_eq!(series.len(), 1, "{expr}: {series:?}");
    series[0].1
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otel_sdk_exports() {
    let server = TestServer::start().await;
    let exported = export_with_the_sdk(&format!("{}/opentelemetry/v1/metrics", server.url)).await;
    assert_eq!(exported["result"], "SUCCESS", "{exported}");
    let recorded = exported["recorded"].as_array().expect("recorded points");
    let count = |name: &str| recorded.iter().filter(|p| p["name"] == name).count();
    // Two rooms, two methods, one route: what the script records, as the SDK reports it.
    assert_eq!(
        (
            count("room.temperature"),
            count("http.requests"),
            count("request.duration")
        ),
        (2, 2, 1),
        "{exported}"
    );

    let identity = r#"job="shop/checkout",instance="i-1""#;
    for point in recorded {
        let at = point["time_unix_nano"].as_u64().unwrap() as f64 / 1e9 + 1.0;
        let attrs = &point["attributes"];
        match text(&point["name"]) {
            "room.temperature" => {
                let expr = format!(
                    r#"room_temperature_celsius{{room="{}",{identity}}}"#,
                    text(&attrs["room"])
                );
                assert_eq!(
                    value(&server, &expr, at).await,
                    point["value"].as_f64().unwrap()
                );
            }
            "http.requests" => {
                let expr = format!(
                    r#"http_requests_total{{method="{}",{identity}}}"#,
                    text(&attrs["method"])
                );
                assert_eq!(
                    value(&server, &expr, at).await,
                    point["value"].as_f64().unwrap()
                );
            }
            "request.duration" => {
                let selector = format!(r#"route="{}",{identity}"#, text(&attrs["route"]));
                let total = point["count"].as_f64().unwrap();
                let sum = format!("request_duration_seconds_sum{{{selector}}}");
                assert_eq!(
                    value(&server, &sum, at).await,
                    point["sum"].as_f64().unwrap()
                );
                let count = format!("request_duration_seconds_count{{{selector}}}");
                assert_eq!(value(&server, &count, at).await, total);
                let bounds = point["bounds"].as_array().unwrap();
                let counts = point["bucket_counts"].as_array().unwrap();
                assert_eq!(counts.len(), bounds.len() + 1);
                let mut cumulative = 0.0;
                for (bound, n) in bounds.iter().zip(counts) {
                    cumulative += n.as_f64().unwrap();
                    let le = bound.as_f64().unwrap().to_string();
                    let bucket =
                        format!(r#"request_duration_seconds_bucket{{{selector},le="{le}"}}"#);
                    assert_eq!(value(&server, &bucket, at).await, cumulative, "{bucket}");
                }
                let inf = format!(r#"request_duration_seconds_bucket{{{selector},le="+Inf"}}"#);
                assert_eq!(value(&server, &inf, at).await, total);
                // Five observations 0.05, 0.2, 0.3, 0.7, 2.0 in buckets ≤0.1, ≤0.5, ≤1:
                // the median (the 2.5th) lies in (0.1, 0.5]: 0.1 + 0.4 * 1.5/2.
                let median = format!(
                    "histogram_quantile(0.5, request_duration_seconds_bucket{{{selector}}})"
                );
                let got = value(&server, &median, at).await;
                assert!((got - 0.4).abs() < 1e-12, "{median} = {got}");
            }
            other => panic!("the SDK recorded an unexpected metric {other}: {exported}"),
        }
    }

    // The SDK's resource attributes besides the service: `target_info`.
    let at = recorded[0]["time_unix_nano"].as_u64().unwrap() as f64 / 1e9 + 1.0;
    let info = query(&server, &format!("target_info{{{identity}}}"), at).await;
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].0["telemetry_sdk_language"], "python", "{info:?}");
    server.stop().await;
}
