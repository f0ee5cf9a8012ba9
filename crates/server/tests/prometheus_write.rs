//! Prometheus remote write end to end: real snappy-compressed protobuf bodies posted to
//! `/prometheus/api/v1/write` of a server on 127.0.0.1:0.

use serde_json::Value;
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::model::STALE_NAN_BITS;
use tickertape_core::segment::collect_points;
use tickertape_core::{SeriesKey, SeriesSelector};
use tickertape_engine::{Engine, SeriesLimits};
use tickertape_prometheus::remote::{
    encode_request, Label, MetricMetadata, Sample, TimeSeries, WriteRequest,
};
use tickertape_reference::ReferenceBackend;
use tickertape_server::ServerConfig;
use tokio::sync::oneshot;

struct Server {
    url: String,
    client: reqwest::Client,
    backend: Arc<dyn Backend>,
    _stop: oneshot::Sender<()>,
}

impl Server {
    async fn start(config: ServerConfig, limits: SeriesLimits) -> Self {
        let backend: Arc<dyn Backend> = Arc::new(ReferenceBackend::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let engine = Engine::new(backend.clone()).with_series_limits(limits);
        tokio::spawn(tickertape_server::serve(listener, engine, config, async {
            let _ = stopped.await;
        }));
        Self {
            url,
            client: reqwest::Client::new(),
            backend,
            _stop: stop,
        }
    }

    async fn default() -> Self {
        Self::start(ServerConfig::default(), SeriesLimits::default()).await
    }

    /// Posts `body` with `Content-Encoding: encoding` (none if `None`), as Prometheus does.
    async fn post(&self, body: Vec<u8>, encoding: Option<&str>) -> (u16, String) {
        let mut request = self
            .client
            .post(format!("{}/prometheus/api/v1/write", self.url))
            .header("Content-Type", "application/x-protobuf")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body);
        if let Some(encoding) = encoding {
            request = request.header("Content-Encoding", encoding);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    async fn write(&self, request: &WriteRequest) -> (u16, String) {
        self.post(encode_request(request).unwrap(), Some("snappy"))
            .await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Every stored point of every series of `measurement` (stale markers included),
    /// read from the store itself, as (key, [(time ns, value bits)]).
    async fn stored(&self, measurement: &str) -> Vec<(SeriesKey, Vec<(i64, u64)>)> {
        let selector = SeriesSelector {
            measurement: measurement.into(),
            ..Default::default()
        };
        let mut series = self.backend.find_series(&selector).await.unwrap();
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Vec::new();
        for info in series {
            let segments = self
                .backend
                .read_segments(info.id, i64::MIN, i64::MAX)
                .await
                .unwrap();
            let points = collect_points(&segments).unwrap();
            out.push((
                info.key,
                points.iter().map(|p| (p.time, p.value.to_bits())).collect(),
            ));
        }
        out
    }

    /// The points of the first series `/api/v1/query?measurement=up&{query}` answers.
    async fn points(&self, query: &str) -> Value {
        let (status, body) = self
            .get(&format!("/api/v1/query?measurement=up&{query}"))
            .await;
        assert_eq!(status, 200, "{body}");
        body["series"][0]["points"].clone()
    }

    async fn metric(&self, name: &str) -> f64 {
        let (_, text) = self.get("/metrics").await;
        let text = text.as_str().unwrap_or_default().to_string();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} not in /metrics"))
    }
}

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.into(),
        value: value.into(),
    }
}

fn series(name: &str, instance: &str, samples: &[(i64, f64)]) -> TimeSeries {
    TimeSeries {
        labels: vec![
            label("__name__", name),
            label("instance", instance),
            label("job", "node"),
        ],
        samples: samples
            .iter()
            .map(|&(timestamp, value)| Sample { value, timestamp })
            .collect(),
        ..TimeSeries::default()
    }
}

fn request(timeseries: Vec<TimeSeries>) -> WriteRequest {
    WriteRequest {
        timeseries,
        metadata: Vec::new(),
    }
}

const MS: i64 = 1_000_000;
const T0: i64 = 1_700_000_000_000;

#[tokio::test]
async fn a_write_is_stored_and_answered_204() {
    let server = Server::default().await;
    let stale = f64::from_bits(STALE_NAN_BITS);
    let (status, body) = server
        .write(&request(vec![
            series("up", "a:9100", &[(T0, 1.0), (T0 + 15_000, stale)]),
            series("up", "b:9100", &[(T0, 0.0)]),
        ]))
        .await;
    assert_eq!((status, body.as_str()), (204, ""));
    let stored = server.stored("up").await;
    assert_eq!(stored.len(), 2);
    assert_eq!(
        stored[0].0,
        SeriesKey::new(
            "up",
            vec![
                ("instance".into(), "a:9100".into()),
                ("job".into(), "node".into())
            ],
            "value"
        )
    );
    assert_eq!(
        stored[0].1,
        vec![
            (T0 * MS, 1f64.to_bits()),
            ((T0 + 15_000) * MS, STALE_NAN_BITS)
        ],
        "the stale marker is stored bit for bit"
    );
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_received_total")
            .await,
        3.0
    );
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_refused_total")
            .await,
        0.0
    );
}

/// Remote write 2.0's message is refused with 415 (the 2.0 specification's answer for a
/// message the receiver does not take), and stores nothing; 1.0 named explicitly is taken.
#[tokio::test]
async fn remote_write_2_is_refused_with_415_and_1_named_explicitly_is_taken() {
    let server = Server::default().await;
    let body = encode_request(&request(vec![series("up", "a", &[(T0, 1.0)])])).unwrap();
    let post = |content_type: &'static str, body: Vec<u8>| {
        server
            .client
            .post(format!("{}/prometheus/api/v1/write", server.url))
            .header("Content-Type", content_type)
            .header("Content-Encoding", "snappy")
            .body(body)
            .send()
    };
    let response = post(
        "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        body.clone(),
    )
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    let text = response.text().await.unwrap();
    assert!(text.contains("io.prometheus.write.v2.Request"), "{text}");
    assert!(
        server.stored("up").await.is_empty(),
        "a refused body stored points"
    );
    let response = post(
        "application/x-protobuf; proto=prometheus.WriteRequest",
        body,
    )
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert_eq!(server.stored("up").await.len(), 1);
}

#[tokio::test]
async fn a_body_without_content_encoding_is_taken_as_snappy() {
    let server = Server::default().await;
    let body = encode_request(&request(vec![series("up", "a", &[(T0, 1.0)])])).unwrap();
    assert_eq!(server.post(body, None).await.0, 204);
    assert_eq!(server.stored("up").await.len(), 1);
}

#[tokio::test]
async fn undecodable_bodies_are_400_and_store_nothing() {
    let server = Server::default().await;
    let good = encode_request(&request(vec![series("up", "a", &[(T0, 1.0)])])).unwrap();
    // A snappy header announcing 33 MiB, over the 32 MiB limit; nothing follows.
    let oversized = vec![0x80, 0x80, 0x80, 0x11];
    // A good series, then one whose label value is not UTF-8: the whole body is refused.
    let mut protobuf = snap::raw::Decoder::new().decompress_vec(&good).unwrap();
    protobuf.extend_from_slice(&[0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, 0xff]);
    let bad_label = snap::raw::Encoder::new().compress_vec(&protobuf).unwrap();
    let cases: Vec<(&str, Vec<u8>, Option<&str>, &str)> = vec![
        ("empty", Vec::new(), Some("snappy"), "empty"),
        (
            "label not UTF-8",
            bad_label,
            Some("snappy"),
            "a label value is not valid UTF-8",
        ),
        (
            "truncated",
            good[..good.len() / 2].to_vec(),
            Some("snappy"),
            "truncated or corrupt",
        ),
        (
            "corrupt",
            vec![0x10, 0x01, 0x05],
            Some("snappy"),
            "truncated or corrupt",
        ),
        ("not snappy", b"up 1\n".to_vec(), Some("snappy"), "snappy"),
        (
            "oversized",
            oversized,
            Some("snappy"),
            "over the limit of 33554432 bytes",
        ),
        (
            "garbage protobuf",
            snap::raw::Encoder::new()
                .compress_vec(&[0x0f, 0xff])
                .unwrap(),
            Some("snappy"),
            "not a valid protobuf WriteRequest",
        ),
    ];
    for (what, body, encoding, says) in cases {
        let (status, text) = server.post(body, encoding).await;
        assert_eq!(status, 400, "{what}: {text}");
        let message: Value = serde_json::from_str(&text).unwrap();
        let message = message["error"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{what}: {message}");
    }
    // An encoding the protocol does not have is 415 (the specification's word for it),
    // before the body is read.
    for encoding in ["gzip", "br", "identity"] {
        let (status, text) = server.post(good.clone(), Some(encoding)).await;
        assert_eq!(status, 415, "{encoding}: {text}");
        let message: Value = serde_json::from_str(&text).unwrap();
        let message = message["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("Content-Encoding {encoding:?} is not supported"))
                && message.contains("snappy"),
            "{encoding}: {message}"
        );
    }
    assert!(server.stored("up").await.is_empty(), "nothing was stored");
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_received_total")
            .await,
        0.0
    );
}

/// The specification's label rules (names `[a-zA-Z_][a-zA-Z0-9_]*`, none empty, none
/// repeated): a series breaking them is an invalid sample, answered 400 with a message
/// naming it, while the request's other series are stored.
#[tokio::test]
async fn series_with_labels_the_specification_forbids_are_refused_with_400() {
    let server = Server::default().await;
    let with_labels = |labels: &[(&str, &str)]| TimeSeries {
        labels: labels.iter().map(|(k, v)| label(k, v)).collect(),
        samples: vec![Sample {
            value: 1.0,
            timestamp: T0,
        }],
        ..TimeSeries::default()
    };
    let (status, text) = server
        .write(&request(vec![
            series("up", "good-1", &[(T0, 1.0)]),
            with_labels(&[("__name__", "up"), ("zone", "a"), ("zone", "b")]),
            with_labels(&[("", "x"), ("__name__", "up")]),
            with_labels(&[("__name__", "up"), ("a-b", "x")]),
            with_labels(&[("__name__", "up"), ("__name__", "down")]),
            series("up", "good-2", &[(T0, 2.0)]),
        ]))
        .await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let message = body["error"].as_str().unwrap_or_default();
    for needle in [
        "4 series refused for invalid labels, the others were stored",
        "timeseries[1]: label name \"zone\" is not unique",
        "timeseries[2]: invalid label name \"\"",
        "timeseries[3]: invalid label name \"a-b\"",
        "and 1 more",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let stored = server.stored("up").await;
    let instances: Vec<&str> = stored
        .iter()
        .map(|(key, _)| {
            key.tags
                .iter()
                .find(|(k, _)| k == "instance")
                .map_or("", |(_, v)| v)
        })
        .collect();
    assert_eq!(
        instances,
        ["good-1", "good-2"],
        "only the valid series: {stored:?}"
    );
    assert!(server.stored("down").await.is_empty());
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_refused_total")
            .await,
        4.0
    );
}

#[tokio::test]
async fn a_body_over_the_body_limit_is_413() {
    let config = ServerConfig {
        max_body_bytes: 64,
        ..ServerConfig::default()
    };
    let server = Server::start(config, SeriesLimits::default()).await;
    let big: Vec<TimeSeries> = (0..20)
        .map(|i| series("up", &format!("host-{i}"), &[(T0, 1.0)]))
        .collect();
    let (status, text) = server.write(&request(big)).await;
    assert_eq!(status, 413);
    let body: Value = serde_json::from_str(&text).expect("a JSON error");
    assert_eq!(
        body["error"],
        "request body exceeds the limit of 64 bytes (--max-body-bytes)"
    );
    assert!(server.stored("up").await.is_empty());
}

#[tokio::test]
async fn a_metadata_only_request_is_204() {
    let server = Server::default().await;
    let metadata_only = WriteRequest {
        timeseries: Vec::new(),
        metadata: vec![MetricMetadata {
            r#type: 1,
            metric_family_name: "http_requests_total".into(),
            help: "Requests.".into(),
            unit: String::new(),
        }],
    };
    assert_eq!(server.write(&metadata_only).await.0, 204);
}

/// Refused series (past a series limit, without a metric name) do not cost the others:
/// 204, the rest stored, the refused samples counted in /metrics.
#[tokio::test]
async fn partial_refusals_are_204_and_counted() {
    let limits = SeriesLimits {
        max_series: 1,
        max_series_per_database: 0,
        max_series_per_measurement: 0,
    };
    let server = Server::start(ServerConfig::default(), limits).await;
    let nameless = TimeSeries {
        labels: vec![label("job", "node")],
        samples: vec![Sample {
            value: 1.0,
            timestamp: T0,
        }],
        ..TimeSeries::default()
    };
    let (status, _) = server
        .write(&request(vec![
            series("up", "a", &[(T0, 1.0), (T0 + 1, 2.0)]),
            nameless,
            series("up", "b", &[(T0, 1.0), (T0 + 1, 2.0), (T0 + 2, 3.0)]),
        ]))
        .await;
    assert_eq!(status, 204);
    let stored = server.stored("up").await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].1.len(), 2);
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_received_total")
            .await,
        6.0
    );
    assert_eq!(
        server
            .metric("tickertape_prometheus_samples_refused_total")
            .await,
        4.0
    );
    assert_eq!(server.metric("tickertape_points_written_total").await, 2.0);
}

/// A stale marker is stored (above) but `/api/v1/query` never shows it: not as a raw
/// point, not as a neighbour, not in a count.
#[tokio::test]
async fn a_stale_marker_is_not_returned_by_the_query_api() {
    let server = Server::default().await;
    let stale = f64::from_bits(STALE_NAN_BITS);
    let samples = [
        (T0, 1.0),
        (T0 + 15_000, stale),
        (T0 + 30_000, 2.0),
        (T0 + 45_000, stale),
    ];
    assert_eq!(
        server
            .write(&request(vec![series("up", "a", &samples)]))
            .await
            .0,
        204
    );
    assert_eq!(server.stored("up").await[0].1.len(), 4);
    let ns = |ms: i64| ms * MS;
    assert_eq!(
        server.points("").await,
        serde_json::json!([[ns(T0), 1.0], [ns(T0 + 30_000), 2.0]])
    );
    let around_marker = format!(
        "start={}&end={}&neighbors=true",
        ns(T0 + 40_000),
        ns(T0 + 50_000)
    );
    assert_eq!(
        server.points(&around_marker).await,
        serde_json::json!([[ns(T0 + 30_000), 2.0]])
    );
    assert_eq!(
        server
            .points(&format!(
                "agg=count&start={}&end={}",
                ns(T0),
                ns(T0 + 60_000)
            ))
            .await,
        serde_json::json!([[ns(T0), 2.0]])
    );
    assert_eq!(
        server.points("agg=last").await,
        serde_json::json!([[ns(T0 + 30_000), 2.0]])
    );
}
