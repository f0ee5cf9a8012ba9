//! One budget per query, through the real server, in every language: the widest shapes
//! of each (InfluxQL's `fill(0)` over tiny windows, a PromQL range query with a tiny
//! step, the own API over everything, remote read of everything, a big CSV or JSON
//! answer) are refused with 422 naming the flag, and the server keeps serving; a query
//! under the budget answers exactly as before. And a query whose client has gone stops
//! using CPU.

mod support;

use serde_json::{json, Value};
use support::TestServer;
use tickertape_engine::QueryLimits;

/// 2023-11-14T22:13:20Z in seconds: the first point of every series.
const T0: i64 = 1_700_000_000;
const HOSTS: usize = 20;
/// Points per series, one a second.
const POINTS: i64 = 100;

/// `load,host=hNN v=i` at `T0 + i` s for i in 0..POINTS, for HOSTS hosts.
async fn loaded(limits: QueryLimits) -> TestServer {
    let server = TestServer::start_with_limits(limits).await;
    let mut body = String::new();
    for h in 0..HOSTS {
        for i in 0..POINTS {
            body.push_str(&format!("load,host=h{h:02} v={i} {}\n", T0 + i));
        }
    }
    server.write_seconds(body).await;
    server
}

fn limits(max_points: usize, max_response_bytes: usize) -> QueryLimits {
    QueryLimits {
        max_points,
        max_response_bytes,
        ..QueryLimits::default()
    }
}

/// `/query` with `q` (and `epoch=s`), `accept` as the Accept header: status, body text.
async fn influxql(server: &TestServer, q: &str, accept: &str) -> (u16, String) {
    let r = server
        .client
        .get(format!("{}/query", server.url))
        .query(&[("q", q), ("epoch", "s")])
        .header("Accept", accept)
        .send()
        .await
        .expect("query");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

fn error_of(body: &str) -> String {
    let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    json["error"].as_str().unwrap_or_default().to_string()
}

/// InfluxQL: `fill(0)` over 1 ms windows makes 100,000 windows per series; refused at
/// the budget with the flag named, while the same query over 10 s windows answers every
/// window's mean exactly.
#[tokio::test]
async fn influxql_fill_over_tiny_windows_is_refused_naming_the_flag() {
    let server = loaded(limits(20_000, QueryLimits::DEFAULT_MAX_RESPONSE_BYTES)).await;
    let range = format!("time >= {T0}s AND time < {}s", T0 + POINTS);
    let wide = format!("SELECT mean(v) FROM load WHERE {range} GROUP BY time(1ms), * fill(0)");
    let (status, body) = influxql(&server, &wide, "application/json").await;
    assert_eq!(status, 422, "{body}");
    let error = error_of(&body);
    assert!(
        error.contains("--max-query-points") && error.contains("20000"),
        "{body}"
    );
    // The server keeps serving, and a query under the budget answers as before.
    let narrow = format!("SELECT mean(v) FROM load WHERE {range} GROUP BY time(10s), * fill(0)");
    let (status, body) = influxql(&server, &narrow, "application/json").await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    let series: Vec<Value> = (0..HOSTS)
        .map(|h| {
            let values: Vec<Value> = (0..10)
                .map(|k| json!([T0 + 10 * k, 10.0 * k as f64 + 4.5]))
                .collect();
            json!({
                "name": "load",
                "tags": {"host": format!("h{h:02}")},
                "columns": ["time", "mean"],
                "values": values,
            })
        })
        .collect();
    assert_eq!(
        answer,
        json!({"results": [{"statement_id": 0, "series": series}]})
    );
    server.stop().await;
}

/// InfluxQL's answer, JSON or CSV, stops at `--max-response-bytes`.
#[tokio::test]
async fn influxql_answers_stop_at_the_byte_budget() {
    let server = loaded(limits(QueryLimits::DEFAULT_MAX_POINTS, 10_000)).await;
    let all = format!(
        "SELECT v FROM load WHERE time >= {T0}s AND time < {}s",
        T0 + POINTS
    );
    for accept in ["application/json", "application/csv"] {
        let (status, body) = influxql(&server, &all, accept).await;
        assert_eq!(status, 422, "{accept}: {body}");
        assert!(
            error_of(&body).contains("--max-response-bytes"),
            "{accept}: {body}"
        );
    }
    let one = format!(
        "SELECT v FROM load WHERE host = 'h00' AND time >= {T0}s AND time < {}s",
        T0 + 10
    );
    let (status, body) = influxql(&server, &one, "application/csv").await;
    assert_eq!(status, 200, "{body}");
    let mut want = String::from("name,tags,time,v\n");
    for i in 0..10 {
        // Floats as InfluxQL's CSV has always written them.
        want.push_str(&format!("load,,{},{i}.0\n", T0 + i));
    }
    assert_eq!(body, want);
    server.stop().await;
}

/// PromQL: a range query over every series with a 10 ms step holds 20 × 9,901 values,
/// refused at the budget (Prometheus' `execution` error, 422); a step finer than 11,000
/// points per series is refused before anything is read; a query under the budget
/// answers exactly.
#[tokio::test]
async fn promql_range_queries_stop_at_the_budget() {
    let server = loaded(limits(30_000, QueryLimits::DEFAULT_MAX_RESPONSE_BYTES)).await;
    let range = |query: &'static str, step: &'static str| range_query(&server, query, step);
    let (status, body) = range("load_v", "0.01").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errorType"], "execution", "{body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("--max-query-points"), "{body}");
    let (status, body) = range("load_v", "0.001").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("11,000 points per timeseries"),
        "{body}"
    );
    // 2,000 samples read and 20 series × 991 steps fit; count_values of them makes a series of 991 steps per
    // distinct value (100), which does not.
    let (status, body) = range("load_v", "0.1").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = range("count_values(\"x\", load_v)", "0.1").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errorType"], "execution", "{body}");
    let (status, body) = range("load_v{host=\"h00\"}", "10").await;
    assert_eq!(status, 200, "{body}");
    let values: Vec<Value> = (0..10)
        .map(|k| json!([T0 + 10 * k, (10 * k).to_string()]))
        .collect();
    assert_eq!(
        body["data"],
        json!({"resultType": "matrix", "result": [
            {"metric": {"__name__": "load_v", "host": "h00"}, "values": values}
        ]})
    );
    server.stop().await;
}

/// PromQL subqueries: their inner steps count in the budget, so one of a hostile size is
/// refused with 422 before it takes memory — whether it selects series or none, as an
/// instant or a range query — and the server keeps answering; a subquery under the
/// budget answers exactly.
#[tokio::test]
async fn promql_subqueries_of_a_hostile_size_are_refused() {
    let server = loaded(QueryLimits::default()).await;
    let at = (T0 + 50).to_string();
    for query in [
        // 86,400,000,000 inner steps of 20 series.
        "max_over_time(load_v[1000d:1ms])",
        // No series at all: the inner steps alone.
        "max_over_time(rate(nothing_here[5m])[1000d:1ms])",
        "sum_over_time(vector(1)[1000d:1ms])",
        // Nested: the inner subquery of each outer step.
        "max_over_time(max_over_time(load_v[1d:1ms])[1d:1h])",
    ] {
        let (status, body) = server
            .get(
                "/prometheus/api/v1/query",
                &[("query", query), ("time", at.as_str())],
            )
            .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["errorType"], "execution", "{query}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains("--max-query-points"), "{query}: {body}");
        let (status, body) = range_query(&server, query, "10").await;
        assert_eq!(status, 422, "{query} as a range query: {body}");
    }
    let (status, _) = server.get("/health", &[]).await;
    assert_eq!(status, 200);
    // Under the budget: the peak over the last 10 s, in 1 s steps, of host h00's
    // values 0, 1, 2, … a second.
    let (status, body) = server
        .get(
            "/prometheus/api/v1/query",
            &[
                ("query", "max_over_time(load_v{host=\"h00\"}[10s:1s])"),
                ("time", at.as_str()),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"resultType": "vector", "result": [
            {"metric": {"host": "h00"}, "value": [T0 + 50, "50"]}
        ]})
    );
    server.stop().await;
}

/// `query_range` of `query` over the loaded points, every `step` seconds.
async fn range_query(server: &TestServer, query: &str, step: &str) -> (u16, Value) {
    let (start, end) = (T0.to_string(), (T0 + POINTS - 1).to_string());
    server
        .get(
            "/prometheus/api/v1/query_range",
            &[
                ("query", query),
                ("start", start.as_str()),
                ("end", end.as_str()),
                ("step", step),
            ],
        )
        .await
}

/// The own API: every point of every series is over the budget; one series is not, and
/// its answer is exact; an answer over the byte budget is refused naming that flag.
#[tokio::test]
async fn own_api_queries_stop_at_the_budget() {
    let server = loaded(limits(1_000, 1_500)).await;
    let s = |t: i64| (t * 1_000_000_000).to_string();
    let (start_ns, end_ns) = (s(T0), s(T0 + POINTS));
    let base = vec![
        ("measurement", "load"),
        ("start", start_ns.as_str()),
        ("end", end_ns.as_str()),
    ];
    let (status, body) = server.get("/api/v1/query", &base).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("--max-query-points"),
        "{body}"
    );
    let mut one = base.clone();
    one.push(("tag", "host:h00"));
    // 100 points of one series: under 1,000 points, over 1,500 bytes.
    let (status, body) = server.get("/api/v1/query", &one).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("--max-response-bytes"),
        "{body}"
    );
    let mut windows = one.clone();
    windows.extend([("step", "10s"), ("agg", "avg")]);
    let (status, body) = server.get("/api/v1/query", &windows).await;
    assert_eq!(status, 200, "{body}");
    let points: Vec<Value> = (0..10)
        .map(|k| json!([(T0 + 10 * k) * 1_000_000_000, 10.0 * k as f64 + 4.5]))
        .collect();
    assert_eq!(
        body,
        json!({"series": [{"measurement": "load", "tags": {"host": "h00"}, "field": "v", "points": points}]})
    );
    server.stop().await;
}

/// Remote read of every series is over the budget; of one series, answered.
#[tokio::test]
async fn remote_read_stops_at_the_budget() {
    use tickertape_prometheus::remote::{
        decode_read_response, encode_request, LabelMatcher, MatchType, Query, ReadRequest,
        MAX_DECODED_BYTES,
    };
    let server = loaded(limits(1_000, QueryLimits::DEFAULT_MAX_RESPONSE_BYTES)).await;
    let read = |matchers: Vec<LabelMatcher>| {
        let request = ReadRequest {
            queries: vec![Query {
                start_timestamp_ms: T0 * 1000,
                end_timestamp_ms: (T0 + POINTS) * 1000,
                matchers,
                ..Query::default()
            }],
            ..ReadRequest::default()
        };
        let body = encode_request(&request).expect("encode");
        server
            .client
            .post(format!("{}/prometheus/api/v1/read", server.url))
            .body(body)
            .send()
    };
    let name = LabelMatcher {
        r#type: MatchType::Eq as i32,
        name: "__name__".into(),
        value: "load_v".into(),
    };
    let r = read(vec![name.clone()]).await.expect("read");
    assert_eq!(r.status().as_u16(), 422);
    let body: Value = r.json().await.expect("JSON");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("--max-query-points"),
        "{body}"
    );
    let host = LabelMatcher {
        r#type: MatchType::Eq as i32,
        name: "host".into(),
        value: "h00".into(),
    };
    let r = read(vec![name, host]).await.expect("read");
    assert_eq!(r.status().as_u16(), 200);
    let response =
        decode_read_response(&r.bytes().await.expect("body"), MAX_DECODED_BYTES).expect("decode");
    let samples: Vec<(i64, f64)> = response.results[0].timeseries[0]
        .samples
        .iter()
        .map(|s| (s.timestamp, s.value))
        .collect();
    let want: Vec<(i64, f64)> = (0..POINTS).map(|i| ((T0 + i) * 1000, i as f64)).collect();
    assert_eq!(samples, want);
    server.stop().await;
}
