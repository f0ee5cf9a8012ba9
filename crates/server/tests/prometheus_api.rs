//! Prometheus' query API over HTTP, on data written as line protocol: the mapping of
//! measurement/field to metric names, PromQL answers, the listing endpoints and the error
//! shape. (Remote write and read have their own tests; a real Prometheus is in
//! `prometheus_e2e.rs`.)

mod support;

use serde_json::{json, Value};
use support::TestServer;

/// The test server, spoken to as a line-protocol client and a Prometheus API client.
struct Server(TestServer);

impl Server {
    /// A server over a fresh embedded store.
    async fn start() -> Self {
        Self(TestServer::start().await)
    }

    async fn write(&self, body: &str) {
        let url = format!("{}/write?precision=s", self.0.url);
        let r = self
            .0
            .client
            .post(url)
            .body(body.to_string())
            .send()
            .await
            .expect("write");
        assert_eq!(
            r.status().as_u16(),
            204,
            "{}",
            r.text().await.unwrap_or_default()
        );
    }

    /// `GET /prometheus{path}` (`path` with its query string, already encoded).
    async fn get(&self, path: &str) -> (u16, Value) {
        self.0.get(&format!("/prometheus{path}"), &[]).await
    }

    async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let url = format!("{}/prometheus{path}", self.0.url);
        let r = self
            .0
            .client
            .post(url)
            .form(form)
            .send()
            .await
            .expect("post");
        let status = r.status().as_u16();
        (status, r.json().await.expect("json"))
    }
}

/// Two hosts' cpu counters and a `value` gauge, one point every 15 s for 10 minutes.
async fn loaded() -> Server {
    let s = Server::start().await;
    let mut body = String::new();
    for i in 0..=40 {
        let t = 1_700_000_000 + i * 15;
        body.push_str(&format!(
            "cpu,host=a,region=eu usage_user={},usage_system=1 {t}\n",
            i * 30
        ));
        body.push_str(&format!(
            "cpu,host=b,region=us usage_user={},usage_system=2 {t}\n",
            i * 15
        ));
        body.push_str(&format!("temp,host=a value=20.5 {t}\n"));
    }
    s.write(&body).await;
    s
}

const AT: &str = "1700000600";

#[tokio::test]
async fn grafanas_save_and_test_gets_a_scalar() {
    let s = Server::start().await;
    let (status, body) = s.get("/api/v1/query?query=1%2B1&time=4").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"status": "success", "data": {"resultType": "scalar", "result": [4, "2"]}})
    );
    let (status, body) = s
        .post_form("/api/v1/query", &[("query", "1+1"), ("time", "4")])
        .await;
    assert_eq!((status, &body["data"]["result"]), (200, &json!([4, "2"])));
}

#[tokio::test]
async fn fields_are_metrics_and_tags_are_labels() {
    let s = loaded().await;
    let (status, body) = s
        .get(&format!("/api/v1/query?query=cpu_usage_user&time={AT}"))
        .await;
    assert_eq!(status, 200, "{body}");
    let result = body["data"]["result"].as_array().unwrap();
    assert_eq!(result.len(), 2);
    assert_eq!(
        result[0]["metric"],
        json!({"__name__": "cpu_usage_user", "host": "a", "region": "eu"})
    );
    assert_eq!(result[0]["value"], json!([1_700_000_600, "1200"]));
    // A field named `value` is the measurement itself.
    let (_, body) = s.get(&format!("/api/v1/query?query=temp&time={AT}")).await;
    assert_eq!(
        body["data"]["result"][0]["metric"],
        json!({"__name__": "temp", "host": "a"})
    );
    let (_, body) = s.get("/api/v1/label/__name__/values").await;
    assert_eq!(
        body["data"],
        json!(["cpu_usage_system", "cpu_usage_user", "temp"])
    );
}

#[tokio::test]
async fn rate_sum_by_and_a_regex_on_the_name_over_a_range() {
    let s = loaded().await;
    let q = "sum by (region) (rate({__name__=~\"cpu_usage_u.*\"}[1m]))";
    let path = format!(
        "/api/v1/query_range?query={}&start=1700000300&end=1700000600&step=60",
        urlencode(q)
    );
    let (status, body) = s.get(&path).await;
    assert_eq!(status, 200, "{body}");
    let result = body["data"]["result"].as_array().unwrap();
    assert_eq!(body["data"]["resultType"], "matrix");
    assert_eq!(result.len(), 2);
    assert_eq!(result[0]["metric"], json!({"region": "eu"}));
    let values = result[0]["values"].as_array().unwrap();
    assert_eq!(values.len(), 6);
    assert_eq!(values[0], json!([1_700_000_300, "2"]));
    assert_eq!(result[1]["values"][5], json!([1_700_000_600, "1"]));
}

#[tokio::test]
async fn listing_series_labels_and_values() {
    let s = loaded().await;
    let (status, body) = s
        .get("/api/v1/series?match[]=cpu_usage_system&match[]=temp")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 3);
    let (_, body) = s.get("/api/v1/labels").await;
    assert_eq!(body["data"], json!(["__name__", "host", "region"]));
    let (_, body) = s.get("/api/v1/label/host/values?match[]=temp").await;
    assert_eq!(body["data"], json!(["a"]));
    // Nothing in that time range.
    let (_, body) = s
        .get("/api/v1/label/host/values?match[]=temp&start=1&end=2")
        .await;
    assert_eq!(body["data"], json!([]));
    let (status, body) = s.get("/api/v1/series").await;
    assert_eq!(
        (status, body["errorType"].as_str()),
        (400, Some("bad_data"))
    );
}

#[tokio::test]
async fn errors_have_prometheus_shape() {
    let s = loaded().await;
    let (status, body) = s.get("/api/v1/query?query=sum(").await;
    assert_eq!(
        (status, body["status"].as_str(), body["errorType"].as_str()),
        (400, Some("error"), Some("bad_data"))
    );
    let (status, body) = s
        .get(&format!(
            "/api/v1/query?query={}",
            urlencode("no_such_function(temp[5m], 0.5, 0.5)")
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"],
        "the function no_such_function() is not supported by tickertape"
    );
    let (status, body) = s
        .get("/api/v1/query_range?query=temp&start=10&end=1&step=1")
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = s
        .get(&format!(
            "/api/v1/query?query={}&time={AT}",
            urlencode("cpu_usage_user + on() cpu_usage_user")
        ))
        .await;
    assert_eq!(
        (status, body["errorType"].as_str()),
        (422, Some("execution")),
        "{body}"
    );
}

#[tokio::test]
async fn status_endpoints_answer_what_grafana_asks() {
    let s = Server::start().await;
    let (status, body) = s.get("/api/v1/status/buildinfo").await;
    assert_eq!(
        (status, body["data"]["version"].as_str()),
        (200, Some("2.42.0"))
    );
    assert_eq!(s.get("/api/v1/metadata").await.1["data"], json!({}));
    assert_eq!(
        s.get("/api/v1/query_exemplars?query=x").await.1["data"],
        json!([])
    );
    assert_eq!(
        s.get("/api/v1/rules").await.1["data"],
        json!({"groups": []})
    );
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn remote_read_answers_each_query_with_the_matching_samples() {
    use tickertape_prometheus::remote::{
        decode_read_response, encode_request, LabelMatcher, MatchType, Query, ReadRequest,
        MAX_DECODED_BYTES,
    };
    let s = loaded().await;
    let matcher = |t: MatchType, name: &str, value: &str| LabelMatcher {
        r#type: t as i32,
        name: name.into(),
        value: value.into(),
    };
    let request = ReadRequest {
        queries: vec![
            Query {
                start_timestamp_ms: 1_700_000_000_000,
                end_timestamp_ms: 1_700_000_030_000,
                matchers: vec![
                    matcher(MatchType::Re, "__name__", "cpu_usage_.*"),
                    matcher(MatchType::Neq, "host", "b"),
                ],
                ..Query::default()
            },
            Query {
                start_timestamp_ms: 0,
                end_timestamp_ms: 1,
                matchers: vec![matcher(MatchType::Eq, "__name__", "temp")],
                ..Query::default()
            },
        ],
        ..ReadRequest::default()
    };
    let body = encode_request(&request).unwrap();
    let r =
        s.0.client
            .post(format!("{}/prometheus/api/v1/read", s.0.url))
            .body(body)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-encoding"], "snappy");
    let response = decode_read_response(&r.bytes().await.unwrap(), MAX_DECODED_BYTES).unwrap();
    assert_eq!(response.results.len(), 2);
    let series = &response.results[0].timeseries;
    let names: Vec<&str> = series.iter().map(|t| t.labels[0].value.as_str()).collect();
    assert_eq!(names, ["cpu_usage_system", "cpu_usage_user"]);
    assert_eq!(
        series[1]
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect::<Vec<_>>(),
        [
            ("__name__", "cpu_usage_user"),
            ("host", "a"),
            ("region", "eu")
        ]
    );
    let samples: Vec<(i64, f64)> = series[1]
        .samples
        .iter()
        .map(|x| (x.timestamp, x.value))
        .collect();
    assert_eq!(
        samples,
        [
            (1_700_000_000_000, 0.0),
            (1_700_000_015_000, 30.0),
            (1_700_000_030_000, 60.0)
        ]
    );
    assert!(
        response.results[1].timeseries.is_empty(),
        "nothing in [0, 1] ms"
    );
    // A body that is not snappy is refused with Prometheus' error shape.
    let r =
        s.0.client
            .post(format!("{}/prometheus/api/v1/read", s.0.url))
            .body("nope")
            .send()
            .await
            .unwrap();
    assert_eq!(r.status().as_u16(), 400);
}

/// On a store with more series than one query may select, Grafana's metric browser
/// (`label/__name__/values` with a time range) still gets every name, with a warning;
/// other listings are refused naming the limit.
#[tokio::test]
async fn metric_names_are_listed_past_the_query_series_limit() {
    use std::sync::Arc;
    use tickertape_engine::{Engine, QueryLimits};
    let backend = Arc::new(tickertape_reference::ReferenceBackend::new(64).expect("capacity"));
    let limits = QueryLimits {
        max_series: 2,
        ..QueryLimits::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let engine = Engine::new(backend).with_query_limits(limits);
    let config = tickertape_server::ServerConfig::default();
    tokio::spawn(tickertape_server::serve(
        listener,
        engine,
        config,
        std::future::pending(),
    ));
    let client = support::client();
    let body = "a,h=1 value=1 1700000000\na,h=2 value=1 1700000000\nb,h=1 value=1 1700000000\n";
    let r = client
        .post(format!("{url}/write?precision=s"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let get = |path: &str| client.get(format!("{url}/prometheus/api/v1/{path}")).send();
    let r = get("label/__name__/values?start=1699999000&end=1700001000")
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["data"], json!(["a", "b"]));
    assert!(
        body["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--max-query-series"),
        "{body}"
    );
    let r = get("label/h/values").await.unwrap();
    assert_eq!(r.status().as_u16(), 422);
    // In PromQL's words, not the own API's (`tag=KEY:VALUE`).
    let body: Value = r.json().await.unwrap();
    let error = body["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("limit of 2 series")
            && error.contains("label matchers")
            && !error.contains("tag="),
        "{body}"
    );
}
