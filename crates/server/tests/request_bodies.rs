//! Request bodies at the edge: each route takes its protocol's `Content-Encoding` (plain,
//! gzip or x-gzip for line protocol, OTLP and forms; snappy for Prometheus' remote
//! protocols) and answers any other 415 naming what it takes, storing nothing; a body
//! over `--max-body-bytes` is 413 in the API's own error shape; a form route refuses a
//! body that is not a form. And times: InfluxDB's whole range on a measurement without a
//! bucket layout, the early limit only with one.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use support::TestServer;
use tickertape_server::ServerConfig;

const T: i64 = 1_700_000_000;

/// A POST of `body` to `path` with `headers`: status and JSON body.
async fn post(
    server: &TestServer,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Value) {
    let mut request = server.client.post(format!("{}{path}", server.url));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let r = request.body(body).send().await.expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(raw).expect("compress");
    encoder.finish().expect("compress")
}

/// The values of `measurement` in the default database, by the own query API.
async fn values(server: &TestServer, measurement: &str) -> Vec<f64> {
    let (status, body) = server
        .get("/api/v1/query", &[("measurement", measurement)])
        .await;
    assert_eq!(status, 200, "{body}");
    body["series"]
        .as_array()
        .expect("series")
        .iter()
        .flat_map(|s| s["points"].as_array().cloned().unwrap_or_default())
        .map(|p| p[1].as_f64().unwrap_or(f64::NAN))
        .collect()
}

#[tokio::test]
async fn each_route_takes_its_encodings_and_refuses_the_others_with_415() {
    let server = TestServer::start().await;
    let line = format!("enc v=1 {T}000000000\n");
    for encoding in ["br", "deflate", "compress", "snappy"] {
        let (status, body) = post(
            &server,
            "/write",
            &[("Content-Encoding", encoding)],
            line.clone().into_bytes(),
        )
        .await;
        assert_eq!(status, 415, "{encoding}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("Content-Encoding \"{encoding}\" is not supported"))
                && message.contains("gzip, x-gzip or identity"),
            "{message}"
        );
    }
    assert_eq!(
        values(&server, "enc").await,
        Vec::<f64>::new(),
        "nothing stored"
    );
    for (encoding, v) in [("x-gzip", 1.0), ("gzip", 2.0), ("identity", 3.0)] {
        let line = format!("enc_{v} v={v} {T}000000000\n");
        let body = match encoding {
            "identity" => line.into_bytes(),
            _ => gzip(line.as_bytes()),
        };
        let (status, answer) =
            post(&server, "/write", &[("Content-Encoding", encoding)], body).await;
        assert_eq!(status, 204, "{encoding}: {answer}");
        assert_eq!(
            values(&server, &format!("enc_{v}")).await,
            [v],
            "{encoding}"
        );
    }
    // OTLP: its failure shape (`google.rpc.Status` as JSON).
    let (status, body) = post(
        &server,
        "/opentelemetry/v1/metrics",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "br"),
        ],
        br#"{"resourceMetrics":[]}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"br\""),
        "{body}"
    );
    // Remote read: snappy only.
    let (status, body) = post(
        &server,
        "/prometheus/api/v1/read",
        &[("Content-Encoding", "br")],
        b"whatever".to_vec(),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("snappy"),
        "{body}"
    );
    // A form: gzip taken, others refused.
    let form = "q=CREATE+DATABASE+zipped";
    let form_type = ("Content-Type", "application/x-www-form-urlencoded");
    let (status, body) = post(
        &server,
        "/query",
        &[form_type, ("Content-Encoding", "br")],
        form.as_bytes().to_vec(),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    let (status, body) = post(
        &server,
        "/query",
        &[form_type, ("Content-Encoding", "gzip")],
        gzip(form.as_bytes()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = server.get("/api/v1/databases", &[]).await;
    assert_eq!(body["databases"], json!(["tickertape", "zipped"]), "{body}");
    // A body on a form route that is not a form: refused, not ignored.
    let (status, body) = post(
        &server,
        "/prometheus/api/v1/admin/tsdb/delete_series",
        &[("Content-Type", "application/json")],
        br#"{"match[]": "enc_1"}"#.to_vec(),
    )
    .await;
    assert_eq!(
        (status, &body["errorType"]),
        (415, &json!("bad_data")),
        "{body}"
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("application/x-www-form-urlencoded"),
        "{body}"
    );
    assert_eq!(values(&server, "enc_1").await, [1.0], "nothing deleted");
    server.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_in_the_api_s_shape() {
    let config = ServerConfig {
        max_body_bytes: 1_000,
        ..ServerConfig::default()
    };
    let server = TestServer::start_with("", config).await;
    let says = json!("request body exceeds the limit of 1000 bytes (--max-body-bytes)");
    let big = format!("big v=1 {T}000000000\n").repeat(100).into_bytes();
    let (status, body) = post(&server, "/write", &[], big.clone()).await;
    assert_eq!((status, &body["error"]), (413, &says), "{body}");
    // Small when sent, large once decoded.
    let (status, body) = post(
        &server,
        "/write",
        &[("Content-Encoding", "gzip")],
        gzip(&big),
    )
    .await;
    assert_eq!((status, &body["error"]), (413, &says), "{body}");
    assert_eq!(values(&server, "big").await, Vec::<f64>::new());
    // A form on Prometheus' API: its shape.
    let query = format!("query={}", "x".repeat(2_000));
    let (status, body) = post(
        &server,
        "/prometheus/api/v1/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        query.into_bytes(),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(
        (&body["status"], &body["errorType"], &body["error"]),
        (&json!("error"), &json!("bad_data"), &says),
        "{body}"
    );
    // InfluxQL's `/query` and OTLP.
    let q = format!("q={}", "x".repeat(2_000));
    let (status, body) = post(
        &server,
        "/query",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        q.into_bytes(),
    )
    .await;
    assert_eq!((status, &body["error"]), (413, &says), "{body}");
    let (status, body) = post(
        &server,
        "/opentelemetry/v1/metrics",
        &[("Content-Type", "application/json")],
        vec![b' '; 2_000],
    )
    .await;
    assert_eq!((status, &body["message"]), (413, &says), "{body}");
    server.stop().await;
}

/// 1677-09-21T00:12:43.145224194Z, the earliest time InfluxDB takes, and 1700-01-01.
const EARLIEST: i64 = -9_223_372_036_854_775_806;
const IN_1700: i64 = -8_520_336_000_000_000_000;

#[tokio::test]
async fn times_before_1737_are_taken_unless_the_measurement_has_buckets() {
    let schema = "[measurements.bk]\nlayout = \"buckets\"\ninterval = \"10s\"\n\n\
                  [measurements.with_rollups]\nrollups = [\"1m\", \"1h\", \"1d\"]\n";
    let server = TestServer::start_with_schema(schema).await;
    let body = format!(
        "early v=1 {EARLIEST}\nearly v=2 {IN_1700}\nwith_rollups v=3 {EARLIEST}\nwith_rollups v=4 {IN_1700}\n"
    );
    let (status, answer) = post(&server, "/write", &[], body.into_bytes()).await;
    assert_eq!(status, 204, "{answer}");
    assert_eq!(values(&server, "early").await, [1.0, 2.0]);
    assert_eq!(values(&server, "with_rollups").await, [3.0, 4.0]);
    // Read back through the rollup path too: 1-day windows from the first point on.
    for measurement in ["early", "with_rollups"] {
        let (status, body) = server
            .get(
                "/api/v1/query",
                &[
                    ("measurement", measurement),
                    ("start", &EARLIEST.to_string()),
                    ("end", &(IN_1700 + 1).to_string()),
                    ("step", "1d"),
                    ("agg", "sum"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let sums: Vec<f64> = body["series"][0]["points"]
            .as_array()
            .expect("points")
            .iter()
            .filter_map(|p| p[1].as_f64())
            .collect();
        assert_eq!(
            sums.iter().sum::<f64>(),
            values(&server, measurement).await.iter().sum::<f64>(),
            "{body}"
        );
    }
    // InfluxQL over the early day.
    let (status, body) = server
        .get(
            "/query",
            &[
                (
                    "q",
                    "SELECT count(v) FROM early WHERE time >= '1677-09-21T00:12:43.145224194Z' \
                 AND time < '1677-09-23T00:00:00Z' GROUP BY time(1d)",
                ),
                ("epoch", "ns"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let counted: f64 = body["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("values in {body}"))
        .iter()
        .filter_map(|row| row[1].as_f64())
        .sum();
    assert_eq!(counted, 1.0, "{body}");
    // A bucket layout cannot hold them: refused, naming why.
    let (status, answer) = post(
        &server,
        "/write",
        &[],
        format!("bk v=1 {IN_1700}\nbk v=2 {T}000000000\n").into_bytes(),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("1737-07-09") && message.contains("bucket layout"),
        "{answer}"
    );
    assert_eq!(values(&server, "bk").await, [2.0], "the other line stored");
    server.stop().await;
}
