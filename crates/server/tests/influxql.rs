//! InfluxQL on `/query` over HTTP, as clients send it: GET and POST form, `epoch=` and
//! RFC 3339 times, `pretty=true`, CSV with `Accept: application/csv`, several statements,
//! the 400 of a statement that does not parse, the per-statement error of one outside the
//! subset, and the engine's query limits. (Answers against a real InfluxDB:
//! `influxql_vs_influxdb.rs`.)

mod support;

use serde_json::{json, Value};
use std::sync::Arc;
use support::TestServer;
use tickertape_engine::{Engine, QueryLimits};

const DATA: &str = "cpu,host=a,region=eu usage=1.5 1596240000\n\
                    cpu,host=a,region=eu usage=2.5 1596240010\n\
                    cpu,host=b,region=us usage=4 1596240000\n";
const BOUNDS: &str = "time >= 1596240000000ms AND time <= 1596240060000ms";

async fn loaded() -> TestServer {
    let server = TestServer::start().await;
    // As Telegraf does before it writes.
    let (status, _) = server
        .get("/query", &[("q", "CREATE DATABASE telegraf")])
        .await;
    assert_eq!(status, 200);
    let r = server
        .client
        .post(format!("{}/write?db=telegraf&precision=s", server.url))
        .body(DATA)
        .send()
        .await
        .expect("write");
    assert_eq!(r.status().as_u16(), 204);
    server
}

#[tokio::test]
async fn grafanas_query_answers_in_influxdbs_shape_with_rfc3339_or_epoch_times() {
    let server = loaded().await;
    let q = format!(
        "SELECT mean(\"usage\") FROM \"cpu\" WHERE {BOUNDS} GROUP BY time(1m), \"host\" fill(null)"
    );
    let (status, answer) = server.get("/query", &[("db", "telegraf"), ("q", &q)]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"results": [{"statement_id": 0, "series": [
            {"name": "cpu", "tags": {"host": "a"}, "columns": ["time", "mean"],
             "values": [["2020-08-01T00:00:00Z", 2.0], ["2020-08-01T00:01:00Z", null]]},
            {"name": "cpu", "tags": {"host": "b"}, "columns": ["time", "mean"],
             "values": [["2020-08-01T00:00:00Z", 4.0], ["2020-08-01T00:01:00Z", null]]}
        ]}]})
    );
    let (_, answer) = server
        .get("/query", &[("db", "telegraf"), ("q", &q), ("epoch", "s")])
        .await;
    assert_eq!(
        answer["results"][0]["series"][0]["values"][1][0],
        json!(1596240060)
    );
    let (status, answer) = server.get("/query", &[("q", &q), ("epoch", "x")]).await;
    assert_eq!(status, 400, "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn post_form_several_statements_pretty_and_csv() {
    let server = loaded().await;
    let q = format!(
        "SHOW TAG VALUES FROM cpu WITH KEY = host; SELECT count(usage) FROM cpu WHERE {BOUNDS}"
    );
    let response = server
        .client
        .post(format!("{}/query?pretty=true", server.url))
        .form(&[("db", "telegraf"), ("q", q.as_str()), ("epoch", "ms")])
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.expect("body");
    assert!(text.contains("\n  "), "pretty: {text}");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        answer["results"][0]["series"][0]["values"],
        json!([["host", "a"], ["host", "b"]])
    );
    assert_eq!(answer["results"][1]["statement_id"], json!(1));
    assert_eq!(
        answer["results"][1]["series"][0]["values"],
        json!([[1596240000000i64, 3]])
    );
    let csv = server
        .client
        .get(format!("{}/query", server.url))
        .query(&[
            ("db", "telegraf"),
            ("q", "SELECT usage FROM cpu WHERE host = 'a'"),
        ])
        .header("Accept", "application/csv")
        .send()
        .await
        .expect("GET csv");
    assert_eq!(csv.headers()["content-type"], "application/csv");
    assert_eq!(
        csv.text().await.expect("body"),
        "name,tags,time,usage\ncpu,,1596240000000000000,1.5\ncpu,,1596240010000000000,2.5\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn errors_in_influxdbs_shape() {
    let server = loaded().await;
    // Does not parse: 400 for the whole request, naming where and what was expected.
    let (status, answer) = server.get("/query", &[("q", "SELECT FROM cpu")]).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["error"],
        json!("error parsing query: found FROM, expected identifier, string, number, bool at line 1, char 8")
    );
    // Parses, but is outside the subset: that statement's error, the others answered.
    // GROUP BY time() without bounds: from the first point to now, in 1 s windows, is
    // more windows than a statement may build.
    let q = "SELECT integral(usage) FROM cpu; SELECT mean(usage) FROM cpu GROUP BY time(1s); \
             SELECT last(usage) FROM cpu";
    let params = [("db", "telegraf"), ("q", q), ("epoch", "s")];
    let (status, answer) = server.get("/query", &params).await;
    assert_eq!(status, 200, "{answer}");
    let results = &answer["results"];
    assert!(
        results[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("integral"),
        "{answer}"
    );
    assert!(
        results[1]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("max-select-buckets"),
        "{answer}"
    );
    assert_eq!(
        results[2]["series"][0]["values"],
        json!([[1596240010, 2.5]])
    );
    let (status, _) = server.get("/query", &[("q", "DROP MEASUREMENT cpu")]).await;
    assert_eq!(status, 400);
    server.stop().await;
}

/// `GROUP BY time()` without a lower bound starts at the window of the first point, as
/// InfluxDB's does.
#[tokio::test]
async fn group_by_time_without_a_lower_bound_starts_at_the_data() {
    let server = loaded().await;
    let q = "SELECT count(usage) FROM cpu WHERE time < 1596240030s GROUP BY time(20s)";
    let params = [("db", "telegraf"), ("q", q), ("epoch", "s")];
    let (status, answer) = server.get("/query", &params).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["results"][0]["series"][0]["values"],
        json!([[1596240000, 3], [1596240020, 0]]),
        "{answer}"
    );
    server.stop().await;
}

/// `--max-query-series` holds for InfluxQL as for the own API, named in the error.
#[tokio::test]
async fn the_engines_query_limits_hold() {
    let backend = Arc::new(tickertape_reference::ReferenceBackend::new(64).expect("capacity"));
    let limits = QueryLimits {
        max_series: 1,
        ..QueryLimits::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let engine = Engine::new(backend).with_query_limits(limits);
    let server = tokio::spawn(tickertape_server::serve(
        listener,
        engine,
        tickertape_server::ServerConfig::default(),
        std::future::pending(),
    ));
    let client = support::client();
    let r = client
        .post(format!("{url}/write?precision=s"))
        .body(DATA)
        .send()
        .await
        .expect("write");
    assert_eq!(r.status().as_u16(), 204);
    let answer = |q: String| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let r = client
                .get(format!("{url}/query"))
                .query(&[("q", q)])
                .send()
                .await;
            r.expect("query").json::<Value>().await.expect("JSON")
        }
    };
    let all = answer(format!(
        "SELECT mean(usage) FROM cpu WHERE {BOUNDS} GROUP BY time(1m)"
    ))
    .await;
    let error = all["results"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("--max-query-series"), "{all}");
    let one = answer(format!(
        "SELECT mean(usage) FROM cpu WHERE host = 'a' AND {BOUNDS} GROUP BY time(1m)"
    ))
    .await;
    assert_eq!(
        one["results"][0]["series"][0]["values"][0][1],
        json!(2.0),
        "{one}"
    );
    server.abort();
}
