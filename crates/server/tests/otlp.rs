//! OTLP/HTTP metrics end to end: requests built from the official message types
//! (`opentelemetry-proto`), posted to `/opentelemetry/v1/metrics` of a server on the
//! embedded store on 127.0.0.1:0, and what was stored read back through the PromQL API.

mod otlp_support;
mod support;

use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, summary_data_point::ValueAtQuantile, AggregationTemporality,
    ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram, HistogramDataPoint,
    Summary, SummaryDataPoint,
};
use otlp_support::*;
use prost::Message;
use serde_json::Value;
use std::io::Write;
use tickertape_engine::SeriesLimits;

/// Every metric type OTLP has that Prometheus takes, in one request: each stored under the
/// name and labels Prometheus gives it, with the value sent.
#[tokio::test]
async fn every_metric_type_is_stored_as_prometheus_names_it() {
    let server = Server::default().await;
    let get = vec![kv("http.method", "GET")];
    let histogram = HistogramDataPoint {
        attributes: get.clone(),
        start_time_unix_nano: nanos(T_S - 60),
        time_unix_nano: nanos(T_S),
        count: 10,
        sum: Some(4.2),
        bucket_counts: vec![2, 5, 3],
        explicit_bounds: vec![0.1, 1.0],
        ..Default::default()
    };
    let summary = SummaryDataPoint {
        time_unix_nano: nanos(T_S),
        count: 100,
        sum: 250.0,
        quantile_values: vec![
            ValueAtQuantile {
                quantile: 0.5,
                value: 2.0,
            },
            ValueAtQuantile {
                quantile: 0.99,
                value: 9.5,
            },
        ],
        ..Default::default()
    };
    let metrics = vec![
        metric(
            "memory.used",
            "By",
            Data::Gauge(Gauge {
                data_points: vec![number(T_S, number_data_point::Value::AsInt(4096), vec![])],
            }),
        ),
        metric(
            "cpu.utilization",
            "1",
            Data::Gauge(Gauge {
                data_points: vec![double(T_S, 0.25)],
            }),
        ),
        metric(
            "http.requests",
            "{request}",
            sum(
                vec![number(
                    T_S,
                    number_data_point::Value::AsInt(17),
                    get.clone(),
                )],
                AggregationTemporality::Cumulative,
                true,
            ),
        ),
        metric(
            "queue.length",
            "",
            sum(
                vec![double(T_S, -3.0)],
                AggregationTemporality::Cumulative,
                false,
            ),
        ),
        metric(
            "http.duration",
            "s",
            Data::Histogram(Histogram {
                data_points: vec![histogram],
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            }),
        ),
        metric(
            "rpc.latency",
            "ms",
            Data::Summary(Summary {
                data_points: vec![summary],
            }),
        ),
    ];
    let response = server.export(&request(service(), metrics)).await;
    assert_eq!(response.partial_success, None);

    let at = T_S as f64 + 1.0;
    assert_eq!(
        server.query("memory_used_bytes", at).await,
        [(
            labels(&[("__name__", "memory_used_bytes"), JOB, INSTANCE]),
            4096.0
        )]
    );
    assert_eq!(server.values("cpu_utilization_ratio", at).await, [0.25]);
    assert_eq!(
        server.query("http_requests_total", at).await,
        [(
            labels(&[
                ("__name__", "http_requests_total"),
                ("http_method", "GET"),
                JOB,
                INSTANCE
            ]),
            17.0
        )]
    );
    assert_eq!(server.values("queue_length", at).await, [-3.0]);
    // Buckets are cumulative, `+Inf` the count; in label order: 0.1, 1, +Inf.
    let buckets = server.query("http_duration_seconds_bucket", at).await;
    let les: Vec<(&str, f64)> = buckets
        .iter()
        .map(|(l, v)| (l["le"].as_str(), *v))
        .collect();
    assert_eq!(les, [("+Inf", 10.0), ("0.1", 2.0), ("1", 7.0)]);
    assert_eq!(server.values("http_duration_seconds_sum", at).await, [4.2]);
    assert_eq!(
        server.values("http_duration_seconds_count", at).await,
        [10.0]
    );
    // Prometheus' own histogram function reads them as a classic histogram: the median,
    // the 5th of 10 observations, lies in (0.1, 1] after 2: 0.1 + 0.9 * 3/5.
    let median = server
        .values("histogram_quantile(0.5, http_duration_seconds_bucket)", at)
        .await;
    assert!((median[0] - 0.64).abs() < 1e-12, "{median:?}");
    assert_eq!(
        server
            .values("rpc_latency_milliseconds{quantile=\"0.99\"}", at)
            .await,
        [9.5]
    );
    assert_eq!(
        server.values("rpc_latency_milliseconds_sum", at).await,
        [250.0]
    );
    assert_eq!(
        server.values("rpc_latency_milliseconds_count", at).await,
        [100.0]
    );
    // The resource's other attributes: `target_info`.
    assert_eq!(
        server.query("target_info", at).await,
        [(
            labels(&[
                ("__name__", "target_info"),
                ("host_name", "h1"),
                JOB,
                INSTANCE
            ]),
            1.0
        )]
    );
}

/// A cumulative counter exported three times: `rate` over the stored samples is the SDK's.
#[tokio::test]
async fn a_counter_exported_over_time_answers_rate() {
    let server = Server::default().await;
    for (i, value) in [0.0, 30.0, 90.0].into_iter().enumerate() {
        let at = T_S + 30 * i as u64;
        let counter = sum(
            vec![double(at, value)],
            AggregationTemporality::Cumulative,
            true,
        );
        let response = server
            .export(&request(service(), vec![metric("jobs.done", "", counter)]))
            .await;
        assert_eq!(response.partial_success, None);
    }
    let at = (T_S + 60) as f64;
    assert_eq!(
        server
            .values("increase(jobs_done_total[61s])", at)
            .await
            .len(),
        1
    );
    let rate = server.values("rate(jobs_done_total[60s])", at).await;
    assert!((rate[0] - 1.5).abs() < 1e-9, "{rate:?}");
}

/// Deltas (sums and histograms), unspecified temporality and exponential histograms are
/// refused, each data point counted in `partial_success`; the rest of the request is
/// stored, and 200 says so.
#[tokio::test]
async fn deltas_and_exponential_histograms_are_rejected_data_points() {
    let server = Server::default().await;
    let metrics = vec![
        metric(
            "d.sum",
            "",
            sum(
                vec![double(T_S, 1.0), double(T_S + 1, 2.0)],
                AggregationTemporality::Delta,
                true,
            ),
        ),
        metric(
            "d.updown",
            "",
            sum(vec![double(T_S, 1.0)], AggregationTemporality::Delta, false),
        ),
        metric(
            "d.hist",
            "",
            Data::Histogram(Histogram {
                data_points: vec![HistogramDataPoint {
                    time_unix_nano: nanos(T_S),
                    count: 1,
                    ..Default::default()
                }],
                aggregation_temporality: AggregationTemporality::Delta as i32,
            }),
        ),
        metric(
            "u.sum",
            "",
            sum(
                vec![double(T_S, 1.0)],
                AggregationTemporality::Unspecified,
                true,
            ),
        ),
        metric(
            "e.hist",
            "",
            Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![ExponentialHistogramDataPoint {
                    time_unix_nano: nanos(T_S),
                    count: 1,
                    ..Default::default()
                }],
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            }),
        ),
        metric(
            "kept",
            "",
            Data::Gauge(Gauge {
                data_points: vec![double(T_S, 5.0)],
            }),
        ),
    ];
    let response = server.export(&request(vec![], metrics)).await;
    let partial = response.partial_success.expect("partial_success");
    assert_eq!(partial.rejected_data_points, 6);
    let message = &partial.error_message;
    assert!(
        message.starts_with("6 of 7 data points rejected"),
        "{message}"
    );
    for needle in [
        "\"d.sum\": delta",
        "\"d.hist\": delta",
        "\"u.sum\": unspecified",
        "\"e.hist\": exponential",
    ] {
        assert!(message.contains(needle), "{needle} in {message}");
    }
    let at = T_S as f64 + 2.0;
    assert_eq!(server.values("kept", at).await, [5.0]);
    assert_eq!(server.query("{__name__=~\"d_.*|u_.*|e_.*\"}", at).await, []);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let metrics = client
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "tickertape_otlp_data_points_received_total 7",
        "tickertape_otlp_data_points_rejected_total 6",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

/// Series past `--max-series` are refused by the engine as in remote write: each refused
/// sample's data point is counted once (a histogram's several series are one data point).
#[tokio::test]
async fn series_past_a_limit_are_rejected_data_points() {
    let server = Server::start(SeriesLimits {
        max_series: 3,
        max_series_per_database: 0,
        max_series_per_measurement: 0,
    })
    .await;
    let point = |host: &str| {
        number(
            T_S,
            number_data_point::Value::AsDouble(1.0),
            vec![kv("host", host)],
        )
    };
    let histogram = HistogramDataPoint {
        time_unix_nano: nanos(T_S),
        count: 1,
        sum: Some(1.0),
        bucket_counts: vec![1, 0],
        explicit_bounds: vec![1.0],
        ..Default::default()
    };
    let metrics = vec![
        metric(
            "g",
            "",
            Data::Gauge(Gauge {
                data_points: vec![point("a"), point("b")],
            }),
        ),
        // Four series (sum, count, two buckets): one fits, the others are refused.
        metric(
            "h",
            "",
            Data::Histogram(Histogram {
                data_points: vec![histogram],
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            }),
        ),
    ];
    let response = server.export(&request(vec![], metrics)).await;
    let partial = response.partial_success.expect("partial_success");
    assert_eq!(partial.rejected_data_points, 1, "{}", partial.error_message);
    assert!(
        partial.error_message.contains("max-series"),
        "{}",
        partial.error_message
    );
    assert_eq!(server.values("g", T_S as f64).await, [1.0, 1.0]);
}

/// A point flagged "no recorded value" ends its series as a Prometheus stale marker does.
#[tokio::test]
async fn no_recorded_value_ends_the_series() {
    let server = Server::default().await;
    let mut gone = double(T_S + 10, 0.0);
    gone.flags = 1;
    let gauge = Data::Gauge(Gauge {
        data_points: vec![double(T_S, 7.0), gone],
    });
    let response = server
        .export(&request(vec![], vec![metric("g", "", gauge)]))
        .await;
    assert_eq!(response.partial_success, None);
    assert_eq!(server.values("g", (T_S + 5) as f64).await, [7.0]);
    assert_eq!(
        server.values("g", (T_S + 20) as f64).await,
        Vec::<f64>::new()
    );
}

/// OTLP/JSON (64-bit integers as strings, enums as numbers) is answered in JSON, partial
/// success included.
#[tokio::test]
async fn json_bodies_get_json_answers() {
    let server = Server::default().await;
    let t = nanos(T_S);
    let body = format!(
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"js"}}}}]}},
        "scopeMetrics":[{{"scope":{{"name":"s"}},"metrics":[
          {{"name":"temperature","unit":"Cel","gauge":{{"dataPoints":[{{"timeUnixNano":"{t}","asDouble":21.5,
             "attributes":[{{"key":"room","value":{{"stringValue":"kitchen"}}}}]}}]}}}},
          {{"name":"hits","sum":{{"aggregationTemporality":2,"isMonotonic":true,
             "dataPoints":[{{"timeUnixNano":"{t}","asInt":"42"}}]}}}},
          {{"name":"deltas","sum":{{"aggregationTemporality":1,"isMonotonic":true,
             "dataPoints":[{{"timeUnixNano":"{t}","asInt":"1"}}]}}}}
        ]}}]}}]}}"#
    );
    let (status, content_type, answer) = server
        .post(
            body.into_bytes(),
            &[("Content-Type", "application/json; charset=utf-8")],
        )
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(content_type, "application/json");
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        answer["partialSuccess"]["rejectedDataPoints"], "1",
        "{answer}"
    );
    assert!(answer["partialSuccess"]["errorMessage"]
        .as_str()
        .unwrap()
        .contains("delta"));
    let at = T_S as f64;
    assert_eq!(
        server.query("temperature_celsius", at).await,
        [(
            labels(&[
                ("__name__", "temperature_celsius"),
                ("job", "js"),
                ("room", "kitchen")
            ]),
            21.5
        )]
    );
    assert_eq!(server.values("hits_total", at).await, [42.0]);

    // Nothing refused: an empty object.
    let body = format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{{"name":"x","gauge":{{"dataPoints":[{{"timeUnixNano":"{t}","asDouble":1}}]}}}}]}}]}}]}}"#
    );
    let (status, _, answer) = server
        .post(body.into_bytes(), &[("Content-Type", "application/json")])
        .await;
    assert_eq!((status, answer.as_slice()), (200, b"{}".as_slice()));
}

#[tokio::test]
async fn gzip_bodies_are_decoded() {
    let server = Server::default().await;
    let gauge = Data::Gauge(Gauge {
        data_points: vec![double(T_S, 3.5)],
    });
    let raw = request(vec![], vec![metric("zipped", "", gauge)]).encode_to_vec();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&raw).unwrap();
    let headers = [
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "gzip"),
    ];
    let (status, _, body) = server.post(encoder.finish().unwrap(), &headers).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(server.values("zipped", T_S as f64).await, [3.5]);
}

/// A body that cannot be decoded: 400, a `google.rpc.Status` naming the problem in the
/// request's format, nothing stored.
#[tokio::test]
async fn undecodable_bodies_are_400() {
    /// `google.rpc.Status`'s first two fields.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Status {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }
    let server = Server::default().await;
    let protobuf = [("Content-Type", "application/x-protobuf")];
    let (status, content_type, body) = server.post(vec![0x0a, 0xff, 0x01], &protobuf).await;
    assert_eq!(
        (status, content_type.as_str()),
        (400, "application/x-protobuf")
    );
    let decoded = Status::decode(body.as_slice()).unwrap();
    assert_eq!(decoded.code, 3);
    assert!(
        decoded
            .message
            .contains("not a protobuf ExportMetricsServiceRequest"),
        "{decoded:?}"
    );

    let gzip = [
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "gzip"),
    ];
    let (status, _, body) = server.post(b"not gzip".to_vec(), &gzip).await;
    assert_eq!(status, 400);
    assert!(Status::decode(body.as_slice())
        .unwrap()
        .message
        .contains("gzip"));

    let json = [("Content-Type", "application/json")];
    let (status, _, body) = server
        .post(br#"{"resourceMetrics": 5}"#.to_vec(), &json)
        .await;
    assert_eq!(status, 400);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["code"], 3);
    assert!(
        body["message"].as_str().unwrap().contains("OTLP/JSON"),
        "{body}"
    );
    assert_eq!(server.query("{__name__=~\".+\"}", T_S as f64).await, []);
}

#[tokio::test]
async fn other_content_types_and_encodings_are_415() {
    let server = Server::default().await;
    let raw = request(vec![], vec![]).encode_to_vec();
    for headers in [
        vec![("Content-Type", "text/plain")],
        vec![],
        vec![
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "br"),
        ],
    ] {
        let (status, _, body) = server.post(raw.clone(), &headers).await;
        assert_eq!(
            status,
            415,
            "{headers:?}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let (status, _, body) = server.post(raw, &[("Content-Type", "text/plain")]).await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 415);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("application/x-protobuf"),
        "{body}"
    );
}
