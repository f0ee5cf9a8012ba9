//! What the OTLP tests share: a server on the embedded store on 127.0.0.1:0 (with series
//! limits), its OTLP endpoint and PromQL API, and requests built from the official
//! message types (`opentelemetry-proto`).

// Included by tests/otlp.rs; not every helper is used by every test.
#![allow(dead_code)]

use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, AggregationTemporality, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, SeriesLimits};
use tickertape_server::ServerConfig;
use tokio::sync::oneshot;

/// 2023-11-14T22:13:20Z in seconds; data points are at `T_S` and after.
pub const T_S: u64 = 1_700_000_000;
pub const PATH: &str = "/opentelemetry/v1/metrics";

pub struct Server {
    pub url: String,
    pub client: reqwest::Client,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Server {
    pub async fn start(limits: SeriesLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backend = EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let engine = Engine::new(Arc::new(backend)).with_series_limits(limits);
        tokio::spawn(tickertape_server::serve(
            listener,
            engine,
            ServerConfig::default(),
            async {
                let _ = stopped.await;
            },
        ));
        Self {
            url,
            client: crate::support::client(),
            _stop: stop,
            _dir: dir,
        }
    }

    pub async fn default() -> Self {
        Self::start(SeriesLimits::default()).await
    }

    /// Posts `body` with these headers; the status, the `Content-Type` and the body.
    pub async fn post(&self, body: Vec<u8>, headers: &[(&str, &str)]) -> (u16, String, Vec<u8>) {
        let mut request = self.client.post(format!("{}{PATH}", self.url)).body(body);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (
            status,
            content_type,
            response.bytes().await.unwrap().to_vec(),
        )
    }

    /// Exports `request` as protobuf, as the SDKs do; the status and the decoded response.
    pub async fn export(
        &self,
        request: &ExportMetricsServiceRequest,
    ) -> ExportMetricsServiceResponse {
        let (status, content_type, body) = self
            .post(
                request.encode_to_vec(),
                &[("Content-Type", "application/x-protobuf")],
            )
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(content_type, "application/x-protobuf");
        ExportMetricsServiceResponse::decode(body.as_slice()).unwrap()
    }

    /// An instant PromQL query at `time_s`: each series' labels and value, sorted.
    pub async fn query(&self, expr: &str, time_s: f64) -> Vec<(BTreeMap<String, String>, f64)> {
        let response = self
            .client
            .get(format!("{}/prometheus/api/v1/query", self.url))
            .query(&[("query", expr), ("time", &time_s.to_string())])
            .send()
            .await
            .unwrap();
        let json: Value = response.json().await.unwrap();
        assert_eq!(json["status"], "success", "{expr}: {json}");
        let mut out: Vec<_> = json["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{expr}: {json}"))
            .iter()
            .map(|r| {
                let labels: BTreeMap<String, String> =
                    serde_json::from_value(r["metric"].clone()).unwrap();
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (labels, value)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The values of `expr` at `time_s`, in label order.
    pub async fn values(&self, expr: &str, time_s: f64) -> Vec<f64> {
        self.query(expr, time_s)
            .await
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

pub fn nanos(seconds: u64) -> u64 {
    seconds * 1_000_000_000
}

pub fn number(at_s: u64, value: number_data_point::Value, attrs: Vec<KeyValue>) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs,
        start_time_unix_nano: nanos(T_S - 60),
        time_unix_nano: nanos(at_s),
        value: Some(value),
        ..Default::default()
    }
}

pub fn double(at_s: u64, v: f64) -> NumberDataPoint {
    number(at_s, number_data_point::Value::AsDouble(v), vec![])
}

pub fn metric(name: &str, unit: &str, data: Data) -> Metric {
    Metric {
        name: name.into(),
        unit: unit.into(),
        data: Some(data),
        ..Default::default()
    }
}

pub fn sum(
    points: Vec<NumberDataPoint>,
    temporality: AggregationTemporality,
    monotonic: bool,
) -> Data {
    Data::Sum(Sum {
        data_points: points,
        aggregation_temporality: temporality as i32,
        is_monotonic: monotonic,
    })
}

pub fn request(resource: Vec<KeyValue>, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

pub fn service() -> Vec<KeyValue> {
    vec![
        kv("service.name", "shop"),
        kv("service.namespace", "prod"),
        kv("service.instance.id", "pod-1"),
        kv("host.name", "h1"),
    ]
}

pub const JOB: (&str, &str) = ("job", "prod/shop");
pub const INSTANCE: (&str, &str) = ("instance", "pod-1");
