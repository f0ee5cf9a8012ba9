//! PromQL past the raw retention, through the real server: a measurement keeping 1h
//! rollups for two years and raw points for seven days, written for thirty days and its
//! retention applied, answers a 30-day `query_range` at every hour — from the rollup
//! slots where the raw points are gone (equal to the own API's hourly answers), from raw
//! points where they are kept (equal to a store that dropped nothing).

mod support;

use std::collections::HashMap;
use support::TestServer;

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
const STEP: i64 = 600;

const KEEP_RAW_7D: &str = r#"
[measurements.cpu]
rollups = ["1h"]
retention = { raw = "7d", "1h" = "2y" }
[measurements.net]
rollups = ["1h"]
retention = { raw = "7d", "1h" = "2y" }
"#;

const KEEP_ALL: &str = r#"
[measurements.cpu]
rollups = ["1h"]
[measurements.net]
rollups = ["1h"]
"#;

/// Thirty days to `end` (s) at one point per 10 minutes: a gauge `cpu usage` of two
/// hosts, and a counter `net bytes_total` rising 6 per point.
fn body(end: i64) -> Vec<String> {
    let times: Vec<i64> = (0..30 * DAY / STEP)
        .map(|i| end - 30 * DAY + i * STEP)
        .collect();
    times
        .chunks(500)
        .map(|chunk| {
            let mut lines = String::new();
            for &t in chunk {
                for host in 0..2i64 {
                    let v = ((t / STEP * 7919 + host * 104_729) % 1000) as f64 / 8.0;
                    lines.push_str(&format!("cpu,host=h{host} usage={v} {t}\n"));
                }
                let total = (t - (end - 30 * DAY)) / STEP * 6;
                lines.push_str(&format!("net,host=h0 bytes_total={total} {t}\n"));
            }
            lines
        })
        .collect()
}

/// `query_range` over `[start, end]` at an hour's step: each series' values by time
/// (s), keyed by its `host` label.
async fn range(
    server: &TestServer,
    query: &str,
    start: i64,
    end: i64,
) -> HashMap<String, HashMap<i64, f64>> {
    let (status, body) = server
        .get(
            "/prometheus/api/v1/query_range",
            &[
                ("query", query),
                ("start", &start.to_string()),
                ("end", &end.to_string()),
                ("step", &HOUR.to_string()),
            ],
        )
        .await;
    assert_eq!(status, 200, "{query}: {body}");
    let mut out = HashMap::new();
    for series in body["data"]["result"].as_array().expect("a matrix") {
        let host = series["metric"]["host"].as_str().unwrap_or("").to_string();
        let values = series["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|pair| {
                let value: f64 = pair[1]
                    .as_str()
                    .expect("a value")
                    .parse()
                    .expect("a number");
                (pair[0].as_f64().expect("a time") as i64, value)
            })
            .collect();
        out.insert(host, values);
    }
    out
}

/// The own API's hourly averages of `host` over `[start, end)` (s), by window start.
async fn hourly_avg(server: &TestServer, host: &str, start: i64, end: i64) -> HashMap<i64, f64> {
    let (status, body) = server
        .get(
            "/api/v1/query",
            &[
                ("measurement", "cpu"),
                ("field", "usage"),
                ("tag", &format!("host:{host}")),
                ("start", &(start * 1_000_000_000).to_string()),
                ("end", &(end * 1_000_000_000).to_string()),
                ("step", "1h"),
                ("agg", "avg"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let points: Vec<(i64, f64)> =
        serde_json::from_value(body["series"][0]["points"].clone()).expect("points");
    points
        .into_iter()
        .map(|(t, v)| (t / 1_000_000_000, v))
        .collect()
}

#[tokio::test]
async fn promql_answers_from_rollups_past_the_raw_retention() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs() as i64;
    let end = now / STEP * STEP;
    let trimmed = TestServer::start_with_schema(KEEP_RAW_7D).await;
    let whole = TestServer::start_with_schema(KEEP_ALL).await;
    for chunk in body(end) {
        trimmed.write_seconds(chunk.clone()).await;
        whole.write_seconds(chunk).await;
    }
    for server in [&trimmed, &whole] {
        let (status, answer) = server.post("/api/v1/admin/compact", "").await;
        assert_eq!(status, 204, "{answer}");
    }
    let report = trimmed
        .engine
        .apply_retention(false)
        .await
        .expect("retention");
    assert!(report.dropped.len() >= 40, "{report:?}");

    let start = (end - 30 * DAY) / HOUR * HOUR + HOUR;
    let last = end / HOUR * HOUR;
    let steps = ((last - start) / HOUR + 1) as usize;
    // Surely past the raw points' horizon (now - 7d, to the hour), or surely after it.
    let past = |t: i64| t < now - 7 * DAY - HOUR;
    let raw = |t: i64| t - 2 * HOUR > now - 7 * DAY + HOUR;

    // Every step answers, not only the last 7 days'.
    for query in [
        "avg_over_time(cpu_usage[1h])",
        "max_over_time(cpu_usage[1h])",
        "min_over_time(cpu_usage[1h])",
        "count_over_time(cpu_usage[1h])",
        "sum_over_time(cpu_usage[1h])",
        "last_over_time(cpu_usage[1h])",
        "cpu_usage",
        "rate(net_bytes_total[1h])",
        "sum(rate(net_bytes_total[20m]))",
    ] {
        let answer = range(&trimmed, query, start, last).await;
        for (host, values) in &answer {
            assert!(
                values.len() >= steps - 1,
                "{query} {host}: {} of {steps} steps",
                values.len()
            );
        }
        // Where raw points are kept, the answer is the raw one, bit for bit.
        let reference = range(&whole, query, start, last).await;
        for (host, values) in &answer {
            for (t, v) in values.iter().filter(|(t, _)| raw(**t)) {
                assert_eq!(
                    v.to_bits(),
                    reference[host][t].to_bits(),
                    "{query} {host} at {t}"
                );
            }
        }
    }

    // Past the raw retention, each hour's mean is the own API's for the hour before.
    let avg = range(&trimmed, "avg_over_time(cpu_usage[1h])", start, last).await;
    for host in ["h0", "h1"] {
        let own = hourly_avg(&trimmed, host, start - HOUR, last).await;
        let mut compared = 0;
        for (t, v) in avg[host].iter().filter(|(t, _)| past(**t)) {
            assert_eq!(v.to_bits(), own[&(t - HOUR)].to_bits(), "{host} at {t}");
            compared += 1;
        }
        assert!(compared > 500, "{compared}");
    }
    // A counter's rate from the slots' first and last points: 6 per 600 s.
    let rate = range(&trimmed, "rate(net_bytes_total[1h])", start, last).await;
    for (t, v) in rate["h0"]
        .iter()
        .filter(|(t, _)| past(**t) && **t > start + 2 * HOUR)
    {
        assert!((v - 0.01).abs() < 1e-9, "at {t}: {v}");
    }
    // A selector at whole hours sees the point of that hour, as raw points would.
    let trimmed_cpu = range(&trimmed, "cpu_usage", start, last).await;
    let whole_cpu = range(&whole, "cpu_usage", start, last).await;
    assert_eq!(trimmed_cpu, whole_cpu);
    trimmed.stop().await;
    whole.stop().await;
}
