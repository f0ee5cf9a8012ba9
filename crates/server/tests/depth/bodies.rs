//! OTLP bodies nested past the decoders' limits, and regexes past the `regex` crate's.

use super::influxql::influxql;
use super::promql::promql;
use super::support::TestServer;
use super::{loaded, nest, runtime, still_serving};

const OTLP: &str = "/opentelemetry/v1/metrics";

async fn post(server: &TestServer, path: &str, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let r = server
        .client
        .post(format!("{}{path}", server.url))
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    still_serving(server).await;
    (status, text)
}

/// An OTLP/JSON export of one gauge point whose attribute `a` is `value`.
fn otlp_json(value: &str) -> Vec<u8> {
    format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{{"name":"g","gauge":{{"dataPoints":[
            {{"timeUnixNano":"1596240000000000000","asDouble":1,
              "attributes":[{{"key":"a","value":{value}}}]}}]}}}}]}}]}}]}}"#
    )
    .into_bytes()
}

fn nested_json_array_value(levels: usize) -> String {
    nest(
        r#"{"arrayValue":{"values":["#,
        r#"{"intValue":"1"}"#,
        "]}}",
        levels,
    )
}

#[test]
fn otlp_json_nested_past_serde_jsons_limit_is_a_400() {
    let rt = runtime();
    rt.block_on(async {
        let server = TestServer::start().await;
        // Three JSON levels an array level, under serde_json's limit of 128 in all.
        let (status, text) = post(
            &server,
            OTLP,
            "application/json",
            otlp_json(&nested_json_array_value(30)),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let body = otlp_json(&nested_json_array_value(10_000));
        let (status, text) = post(&server, OTLP, "application/json", body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("recursion limit exceeded"), "{text}");
        // An unknown field is skipped by a loop, not by recursion: any depth is harmless.
        let unknown_field = format!(
            r#"{{"resourceMetrics":[],"x":{}}}"#,
            nest("[", "", "]", 100_000)
        );
        let (status, text) = post(&server, OTLP, "application/json", unknown_field.into()).await;
        assert_eq!(status, 200, "{text}");
        // Refused at the first bracket: not even a request's shape.
        let body = nest("[", "", "]", 100_000).into_bytes();
        let (status, text) = post(&server, OTLP, "application/json", body).await;
        assert_eq!(status, 400, "{text}");
    });
}

/// Protobuf field `field` of wire type 2 holding `bytes`.
fn field(field: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, u64::from(field << 3 | 2));
    varint(&mut out, bytes.len() as u64);
    out.extend_from_slice(bytes);
    out
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// An `ExportMetricsServiceRequest` whose resource has one attribute, an `AnyValue`
/// holding an array holding an array… `levels` deep (written by hand from the message
/// definitions: `AnyValue.array_value = 5`, `ArrayValue.values = 1`,
/// `KeyValue { key = 1, value = 2 }`, `Resource.attributes = 1`,
/// `ResourceMetrics.resource = 1`, `ExportMetricsServiceRequest.resource_metrics = 1`).
fn otlp_protobuf(levels: usize) -> Vec<u8> {
    // AnyValue { int_value = 3: 1 }
    let mut value = vec![3 << 3, 1];
    for _ in 0..levels {
        value = field(5, &field(1, &value));
    }
    let key_value = [field(1, b"a"), field(2, &value)].concat();
    field(1, &field(1, &field(1, &key_value)))
}

#[test]
fn otlp_protobuf_nested_past_prosts_limit_is_a_400() {
    let rt = runtime();
    rt.block_on(async {
        let server = TestServer::start().await;
        let protobuf = "application/x-protobuf";
        let (status, text) = post(&server, OTLP, protobuf, otlp_protobuf(30)).await;
        assert_eq!(status, 200, "{text}");
        let (status, text) = post(&server, OTLP, protobuf, otlp_protobuf(10_000)).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("recursion limit reached"), "{text}");
    });
}

#[test]
fn regexes_nested_too_deep_or_compiled_too_large_are_refused() {
    let rt = runtime();
    rt.block_on(async {
        let server = loaded().await;
        let deep = nest("(", "h1", ")", 10_000);
        let huge = "h1{1000}{1000}";
        for pattern in [deep.as_str(), huge] {
            let q = format!("SELECT v FROM load WHERE host =~ /{pattern}/");
            let (status, body) = influxql(&server, &q).await;
            // Refused with the query, as InfluxDB refuses it while parsing.
            let error = body["error"].as_str().unwrap_or_default();
            let refused = "error parsing query: invalid regex";
            assert!(status == 400 && error.starts_with(refused), "{status}");
            let query = format!(r#"load_v{{host=~"{pattern}"}}"#);
            let (status, body) = promql(&server, &query).await;
            assert_eq!(status, 400, "{body}");
            assert_eq!(body["errorType"], "bad_data", "{body}");
        }
        // The own API's tag selectors, in a URL (so 1,000 levels, past the regex crate's
        // limit of 250 all the same).
        let deep = nest("(", "h1", ")", 1000);
        for pattern in [deep.as_str(), huge] {
            let tag = format!("host=~{pattern}");
            let params = [
                ("measurement", "load"),
                ("field", "v"),
                ("tag", tag.as_str()),
            ];
            let (status, body) = server.get("/api/v1/query", &params).await;
            assert_eq!(status, 400, "{body}");
            still_serving(&server).await;
        }
    });
}
