//! The translation alone, request by request (the HTTP tests store and query them).

use super::translate::{translate, Sample, Translation};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, summary_data_point::ValueAtQuantile, AggregationTemporality,
    ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use tickertape_core::model::STALE_NAN_BITS;

const T: u64 = 1_700_000_000_123_456_789;
const T_MS: i64 = 1_700_000_000_123;

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn number(value: f64, attrs: Vec<KeyValue>) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs,
        time_unix_nano: T,
        value: Some(number_data_point::Value::AsDouble(value)),
        ..Default::default()
    }
}

fn metric(name: &str, unit: &str, data: Data) -> Metric {
    Metric {
        name: name.into(),
        unit: unit.into(),
        data: Some(data),
        ..Default::default()
    }
}

fn request(resource: Vec<KeyValue>, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
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

/// Each sample as `name{k=v,…} value`, the way the tests below state them.
fn shown(t: &Translation) -> Vec<String> {
    t.samples.iter().map(show).collect()
}

fn show(s: &Sample) -> String {
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}{{{}}} {}", s.name, labels.join(","), s.point.value)
}

#[test]
fn gauges_and_sums_are_named_with_their_unit_and_total() {
    let sum = |monotonic| {
        Data::Sum(Sum {
            data_points: vec![number(7.0, vec![kv("http.method", "GET")])],
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: monotonic,
        })
    };
    let t = translate(&request(
        vec![kv("service.name", "api")],
        vec![
            metric(
                "memory.used",
                "By",
                Data::Gauge(Gauge {
                    data_points: vec![number(1.5, vec![])],
                }),
            ),
            metric("http.requests", "{request}", sum(true)),
            metric("queue.length", "", sum(false)),
        ],
    ));
    assert_eq!(
        shown(&t),
        [
            "memory_used_bytes{job=api} 1.5",
            "http_requests_total{http_method=GET,job=api} 7",
            "queue_length{http_method=GET,job=api} 7",
        ]
    );
    assert!(t.samples.iter().all(|s| s.point.time == T_MS));
    assert_eq!(t.data_points, 3);
    assert!(t.refused.is_empty());
    assert_eq!(
        t.samples.iter().map(|s| s.data_point).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2)]
    );
}

#[test]
fn a_histogram_is_cumulative_buckets_sum_and_count() {
    let point = HistogramDataPoint {
        time_unix_nano: T,
        count: 6,
        sum: Some(12.5),
        bucket_counts: vec![1, 2, 3],
        explicit_bounds: vec![0.5, 5.0],
        ..Default::default()
    };
    let t = translate(&request(
        vec![],
        vec![metric(
            "latency",
            "s",
            Data::Histogram(Histogram {
                data_points: vec![point],
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            }),
        )],
    ));
    assert_eq!(
        shown(&t),
        [
            "latency_seconds_sum{} 12.5",
            "latency_seconds_count{} 6",
            "latency_seconds_bucket{le=0.5} 1",
            "latency_seconds_bucket{le=5} 3",
            "latency_seconds_bucket{le=+Inf} 6",
        ]
    );
    assert_eq!(t.data_points, 1);
}

#[test]
fn a_summary_is_quantiles_sum_and_count() {
    let point = SummaryDataPoint {
        time_unix_nano: T,
        count: 4,
        sum: 10.0,
        quantile_values: vec![
            ValueAtQuantile {
                quantile: 0.5,
                value: 2.0,
            },
            ValueAtQuantile {
                quantile: 0.99,
                value: 4.0,
            },
        ],
        ..Default::default()
    };
    let t = translate(&request(
        vec![],
        vec![metric(
            "rpc.duration",
            "ms",
            Data::Summary(Summary {
                data_points: vec![point],
            }),
        )],
    ));
    assert_eq!(
        shown(&t),
        [
            "rpc_duration_milliseconds_sum{} 10",
            "rpc_duration_milliseconds_count{} 4",
            "rpc_duration_milliseconds{quantile=0.5} 2",
            "rpc_duration_milliseconds{quantile=0.99} 4",
        ]
    );
}

#[test]
fn deltas_and_exponential_histograms_are_refused_with_their_points() {
    let delta = Data::Sum(Sum {
        data_points: vec![number(1.0, vec![]), number(2.0, vec![])],
        aggregation_temporality: AggregationTemporality::Delta as i32,
        is_monotonic: true,
    });
    let unspecified = Data::Histogram(Histogram {
        data_points: vec![HistogramDataPoint::default()],
        aggregation_temporality: AggregationTemporality::Unspecified as i32,
    });
    let exponential = Data::ExponentialHistogram(ExponentialHistogram {
        data_points: vec![ExponentialHistogramDataPoint::default()],
        aggregation_temporality: AggregationTemporality::Cumulative as i32,
    });
    let t = translate(&request(
        vec![],
        vec![
            metric("d", "", delta),
            metric("u", "", unspecified),
            metric("e", "", exponential),
            metric(
                "ok",
                "",
                Data::Gauge(Gauge {
                    data_points: vec![number(1.0, vec![])],
                }),
            ),
        ],
    ));
    assert_eq!(shown(&t), ["ok{} 1"]);
    assert_eq!(t.data_points, 5);
    let refused: Vec<usize> = t.refused.iter().map(|r| r.data_points).collect();
    assert_eq!(refused, [2, 1, 1]);
    assert!(
        t.refused[0].message.contains("\"d\": delta"),
        "{:?}",
        t.refused
    );
    assert!(
        t.refused[1].message.contains("unspecified"),
        "{:?}",
        t.refused
    );
    assert!(
        t.refused[2].message.contains("exponential"),
        "{:?}",
        t.refused
    );
    // The stored point is the request's fifth: numbers count refused points too.
    assert_eq!(t.samples[0].data_point, Some(4));
}

#[test]
fn job_instance_and_target_info_come_from_the_resource() {
    let resource = vec![
        kv("service.name", "shop"),
        kv("service.namespace", "prod"),
        kv("service.instance.id", "pod-1"),
        kv("host.name", "h1"),
    ];
    let gauge = Data::Gauge(Gauge {
        data_points: vec![number(
            3.0,
            vec![kv("job", "overridden"), kv("__name__", "x")],
        )],
    });
    let t = translate(&request(resource, vec![metric("up", "", gauge)]));
    assert_eq!(
        shown(&t),
        [
            "up{instance=pod-1,job=prod/shop} 3",
            "target_info{host_name=h1,instance=pod-1,job=prod/shop} 1",
        ]
    );
    assert_eq!(t.samples[1].data_point, None);
    assert_eq!(t.samples[1].point.time, T_MS);

    // An empty service.name sets no job; a resource `__name__` does not name target_info.
    let gauge = Data::Gauge(Gauge {
        data_points: vec![number(3.0, vec![kv("job", "mine")])],
    });
    let t = translate(&request(
        vec![
            kv("service.name", ""),
            kv("service.instance.id", "i"),
            kv("__name__", "x"),
            kv("os", "l"),
        ],
        vec![metric("up", "", gauge)],
    ));
    assert_eq!(
        shown(&t),
        [
            "up{instance=i,job=mine} 3",
            "target_info{instance=i,os=l} 1"
        ]
    );

    // Only identifying attributes: no target_info.
    let gauge = Data::Gauge(Gauge {
        data_points: vec![number(3.0, vec![])],
    });
    let t = translate(&request(
        vec![kv("service.name", "shop")],
        vec![metric("up", "", gauge)],
    ));
    assert_eq!(shown(&t), ["up{job=shop} 3"]);
}

#[test]
fn target_info_spans_the_resource_s_points_every_150_seconds() {
    let at = |ms: u64| NumberDataPoint {
        time_unix_nano: ms * 1_000_000,
        value: Some(number_data_point::Value::AsInt(1)),
        ..Default::default()
    };
    let gauge = Data::Gauge(Gauge {
        data_points: vec![at(1_000), at(400_000)],
    });
    let t = translate(&request(
        vec![kv("service.name", "s"), kv("os", "linux")],
        vec![metric("g", "", gauge)],
    ));
    let times: Vec<i64> = t
        .samples
        .iter()
        .filter(|s| s.name == "target_info")
        .map(|s| s.point.time)
        .collect();
    assert_eq!(times, [1_000, 151_000, 301_000, 400_000]);

    // A point at the epoch beside one now: the latest 100 intervals only.
    let gauge = Data::Gauge(Gauge {
        data_points: vec![at(0), at(T / 1_000_000)],
    });
    let t = translate(&request(
        vec![kv("service.name", "s"), kv("os", "linux")],
        vec![metric("g", "", gauge)],
    ));
    assert_eq!(
        t.samples.iter().filter(|s| s.name == "target_info").count(),
        101
    );
}

#[test]
fn colliding_attribute_keys_join_their_values_and_empty_ones_go() {
    let gauge = Data::Gauge(Gauge {
        data_points: vec![number(
            1.0,
            vec![
                kv("a_b", "2"),
                kv("a.b", "1"),
                kv("empty", ""),
                kv("9x", "n"),
            ],
        )],
    });
    let t = translate(&request(vec![], vec![metric("g", "", gauge)]));
    assert_eq!(shown(&t), ["g{a_b=1;2,key_9x=n} 1"]);
}

#[test]
fn no_recorded_value_is_the_stale_marker_and_a_missing_value_is_refused() {
    let mut stale = number(5.0, vec![]);
    stale.flags = 1;
    let mut stale_without_value = NumberDataPoint {
        time_unix_nano: T,
        flags: 1,
        ..Default::default()
    };
    stale_without_value.attributes = vec![kv("k", "v")];
    let missing = NumberDataPoint {
        time_unix_nano: T,
        ..Default::default()
    };
    let gauge = Data::Gauge(Gauge {
        data_points: vec![stale, stale_without_value, missing],
    });
    let t = translate(&request(vec![], vec![metric("g", "", gauge)]));
    assert_eq!(t.samples.len(), 2);
    assert!(t
        .samples
        .iter()
        .all(|s| s.point.value.to_bits() == STALE_NAN_BITS));
    assert_eq!(t.data_points, 3);
    assert_eq!(t.refused.len(), 1);
    assert!(t.refused[0].message.contains("no value"), "{:?}", t.refused);
}

#[test]
fn an_attribute_key_that_leaves_no_label_name_refuses_its_point() {
    let gauge = Data::Gauge(Gauge {
        data_points: vec![number(1.0, vec![kv("...", "x")]), number(2.0, vec![])],
    });
    let t = translate(&request(vec![], vec![metric("g", "", gauge)]));
    assert_eq!(shown(&t), ["g{} 2"]);
    assert_eq!(t.samples[0].data_point, Some(1));
    assert_eq!(t.refused.len(), 1);
    assert!(t.refused[0].message.contains("\"...\""), "{:?}", t.refused);
}
