//! An OTLP metrics request as the samples Prometheus' OTLP receiver would store
//! (`storage/remote/otlptranslator/prometheusremotewrite` in its default settings):
//!
//! | OTLP | series (metric name from [`names::metric_name`]) |
//! |---|---|
//! | gauge | `N` |
//! | sum, cumulative, monotonic | `N_total` |
//! | sum, cumulative, not monotonic | `N` |
//! | histogram, cumulative, explicit buckets | `N_bucket{le=…}` (cumulative counts, `le="+Inf"` = count), `N_sum` (when sent), `N_count` |
//! | summary | `N{quantile=…}`, `N_sum`, `N_count` |
//! | sum or histogram, delta or unspecified temporality | refused (as Prometheus does unless its delta feature flags are on) |
//! | exponential histogram | refused (Prometheus makes native histograms of them; tickertape has none) |
//!
//! Labels: the data point's attributes (names sanitized, values as text; keys that
//! sanitize alike have their values joined by `;` in key order), `job` =
//! `service.namespace/service.name` (or `service.name`), `instance` =
//! `service.instance.id`. The resource's other attributes go to one `target_info` series
//! per resource (value 1), as Prometheus does when no attribute is promoted. Times are
//! cut to milliseconds, as Prometheus keeps them; a point flagged "no recorded value" is
//! stored as the stale marker.

use super::names::{self, attribute_text, float_label, label_name, MetricKind};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, DataPointFlags, HistogramDataPoint, Metric, NumberDataPoint,
    SummaryDataPoint,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use tickertape_core::model::STALE_NAN_BITS;
use tickertape_core::Point;

const SERVICE_NAME: &str = "service.name";
const SERVICE_NAMESPACE: &str = "service.namespace";
const SERVICE_INSTANCE_ID: &str = "service.instance.id";
const TARGET_INFO: &str = "target_info";
/// Prometheus writes `target_info` every half lookback delta (5 min) between a resource's
/// first and last point, so that a join with it finds a sample at every step.
const TARGET_INFO_INTERVAL_MS: i64 = 150_000;
/// At most this many `target_info` samples per resource, the latest ones: a request with
/// one point at the epoch and one now would otherwise ask for millions.
const MAX_TARGET_INFO_SAMPLES: i64 = 100;

/// One sample as Prometheus names it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    /// The metric name (`__name__`): the stored series' measurement.
    pub name: String,
    /// Sorted by name, names unique, values non-empty, no `__name__`.
    pub labels: Vec<(String, String)>,
    /// Time in milliseconds since the epoch.
    pub point: Point,
    /// The data point it comes from, numbered from 0 over the request; `None` for
    /// `target_info`, which no data point of the sender's is.
    pub data_point: Option<usize>,
}

/// Data points refused before anything was stored, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub data_points: usize,
    pub message: String,
}

#[derive(Debug, Default)]
pub(crate) struct Translation {
    pub samples: Vec<Sample>,
    /// Every data point of the request, refused ones included.
    pub data_points: usize,
    pub refused: Vec<Refusal>,
}

/// `job` and `instance` of a resource.
#[derive(Default)]
struct Identity {
    job: Option<String>,
    instance: Option<String>,
}

impl Identity {
    fn of(resource: Option<&Resource>) -> Self {
        let attrs = resource
            .map(|r| r.attributes.as_slice())
            .unwrap_or_default();
        let text = |key: &str| {
            attrs
                .iter()
                .find(|kv| kv.key == key)
                .map(|kv| attribute_text(kv.value.as_ref()))
        };
        let job = text(SERVICE_NAME).map(|name| match text(SERVICE_NAMESPACE) {
            Some(namespace) => format!("{namespace}/{name}"),
            None => name,
        });
        // As Prometheus: an empty value sets nothing (a data point's own `job` stays).
        Self {
            job: job.filter(|j| !j.is_empty()),
            instance: text(SERVICE_INSTANCE_ID).filter(|i| !i.is_empty()),
        }
    }

    /// Sets `job` and `instance`, over attributes of those names (as Prometheus does).
    fn apply(&self, labels: &mut Labels) {
        if let Some(job) = &self.job {
            set(labels, "job", job.clone());
        }
        if let Some(instance) = &self.instance {
            set(labels, "instance", instance.clone());
        }
    }
}

/// Labels being built: unsorted, names unique.
type Labels = Vec<(String, String)>;

fn set(labels: &mut Labels, name: &str, value: String) {
    match labels.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => *v = value,
        None => labels.push((name.to_owned(), value)),
    }
}

/// Attributes as labels: keys sanitized, in key order, the values of keys that sanitize
/// to one name joined by `;`. `skip` keys are left out.
fn attribute_labels(attrs: &[KeyValue], skip: &[&str]) -> Result<Labels, String> {
    let mut attrs: Vec<(&str, String)> = attrs
        .iter()
        .filter(|kv| !skip.contains(&kv.key.as_str()))
        .map(|kv| (kv.key.as_str(), attribute_text(kv.value.as_ref())))
        .collect();
    attrs.sort_by(|a, b| a.0.cmp(b.0));
    let mut labels = Labels::with_capacity(attrs.len() + 2);
    for (key, value) in attrs {
        let name = label_name(key)?;
        match labels.iter_mut().find(|(n, _)| *n == name) {
            Some((_, existing)) if !existing.is_empty() => {
                existing.push(';');
                existing.push_str(&value);
            }
            Some((_, existing)) => *existing = value,
            None => labels.push((name, value)),
        }
    }
    Ok(labels)
}

/// The stored form of `labels`: empty values dropped (Prometheus has no empty label),
/// sorted by name.
fn finish(mut labels: Labels) -> Vec<(String, String)> {
    labels.retain(|(_, v)| !v.is_empty());
    labels.sort_by(|a, b| a.0.cmp(&b.0));
    labels
}

/// Nanoseconds since the epoch as Prometheus' milliseconds (cut, not rounded).
fn millis(nanos: u64) -> i64 {
    // u64::MAX / 10^6 < i64::MAX: never wraps.
    (nanos / 1_000_000) as i64
}

fn no_recorded_value(flags: u32) -> bool {
    flags & DataPointFlags::NoRecordedValueMask as u32 != 0
}

fn stale_or(flags: u32, value: f64) -> f64 {
    match no_recorded_value(flags) {
        true => f64::from_bits(STALE_NAN_BITS),
        false => value,
    }
}

/// The samples of `request` and the data points refused on the way.
pub(crate) fn translate(request: &ExportMetricsServiceRequest) -> Translation {
    let mut out = Translation::default();
    for resource_metrics in &request.resource_metrics {
        let resource = resource_metrics.resource.as_ref();
        let identity = Identity::of(resource);
        let mut span: Option<(u64, u64)> = None;
        for scope in &resource_metrics.scope_metrics {
            for metric in &scope.metrics {
                if let Some((first, last)) = time_span(metric) {
                    span = Some(match span {
                        Some((a, b)) => (a.min(first), b.max(last)),
                        None => (first, last),
                    });
                }
                out.metric(metric, &identity);
            }
        }
        if let Some((first, last)) = span {
            target_info(resource, &identity, first, last, &mut out.samples);
        }
    }
    out
}

/// The first and last time of a metric's data points, in nanoseconds.
fn time_span(metric: &Metric) -> Option<(u64, u64)> {
    let times: Vec<u64> = match metric.data.as_ref()? {
        Data::Gauge(g) => g.data_points.iter().map(|p| p.time_unix_nano).collect(),
        Data::Sum(s) => s.data_points.iter().map(|p| p.time_unix_nano).collect(),
        Data::Histogram(h) => h.data_points.iter().map(|p| p.time_unix_nano).collect(),
        Data::ExponentialHistogram(h) => h.data_points.iter().map(|p| p.time_unix_nano).collect(),
        Data::Summary(s) => s.data_points.iter().map(|p| p.time_unix_nano).collect(),
    };
    Some((*times.iter().min()?, *times.iter().max()?))
}

impl Translation {
    fn refuse(&mut self, data_points: usize, message: String) {
        self.data_points += data_points;
        self.refused.push(Refusal {
            data_points,
            message,
        });
    }

    fn metric(&mut self, metric: &Metric, identity: &Identity) {
        let Some(data) = &metric.data else {
            // Nothing to count: the spec's rejected_data_points stays, the message says why.
            self.refuse(0, format!("metric {:?} has no data (no type)", metric.name));
            return;
        };
        let (kind, points, temporality) = match data {
            Data::Gauge(g) => (MetricKind::Gauge, g.data_points.len(), None),
            Data::Sum(s) => {
                let kind = match s.is_monotonic {
                    true => MetricKind::MonotonicCounter,
                    false => MetricKind::NonMonotonicCounter,
                };
                (kind, s.data_points.len(), Some(s.aggregation_temporality))
            }
            Data::Histogram(h) => (
                MetricKind::Histogram,
                h.data_points.len(),
                Some(h.aggregation_temporality),
            ),
            Data::Summary(s) => (MetricKind::Summary, s.data_points.len(), None),
            Data::ExponentialHistogram(h) => {
                return self.refuse(
                    h.data_points.len(),
                    format!(
                        "metric {:?}: exponential histograms are not supported (Prometheus \
                         stores them as native histograms, which tickertape does not have); \
                         export explicit-bucket histograms",
                        metric.name
                    ),
                );
            }
        };
        if let Some(t) = temporality.filter(|&t| t != AggregationTemporality::Cumulative as i32) {
            let which = match AggregationTemporality::try_from(t) {
                Ok(AggregationTemporality::Delta) => "delta",
                _ => "unspecified",
            };
            return self.refuse(
                points,
                format!(
                    "metric {:?}: {which} aggregation temporality is not supported, as in \
                     Prometheus: export cumulative temporality",
                    metric.name
                ),
            );
        }
        let name = match names::metric_name(&metric.name, &metric.unit, kind) {
            Ok(name) => name,
            Err(message) => return self.refuse(points, message),
        };
        match data {
            Data::Gauge(g) => g.data_points.iter().for_each(|p| {
                self.number(&metric.name, &name, p, identity);
            }),
            Data::Sum(s) => s.data_points.iter().for_each(|p| {
                self.number(&metric.name, &name, p, identity);
            }),
            Data::Histogram(h) => h.data_points.iter().for_each(|p| {
                self.histogram(&metric.name, &name, p, identity);
            }),
            Data::Summary(s) => s.data_points.iter().for_each(|p| {
                self.summary(&metric.name, &name, p, identity);
            }),
            Data::ExponentialHistogram(_) => {}
        }
    }

    /// The next data point's number and its labels; `None` when it is refused.
    fn start_point(
        &mut self,
        metric: &str,
        attributes: &[KeyValue],
        identity: &Identity,
    ) -> Option<(usize, Labels)> {
        match attribute_labels(attributes, &["__name__"]) {
            Ok(mut labels) => {
                identity.apply(&mut labels);
                self.data_points += 1;
                Some((self.data_points - 1, labels))
            }
            Err(message) => {
                self.refuse(1, format!("metric {metric:?}: {message}"));
                None
            }
        }
    }

    fn push(&mut self, name: String, labels: Labels, time_ms: i64, value: f64, point: usize) {
        self.samples.push(Sample {
            name,
            labels: finish(labels),
            point: Point::new(time_ms, value),
            data_point: Some(point),
        });
    }

    fn number(&mut self, metric: &str, name: &str, p: &NumberDataPoint, identity: &Identity) {
        let value = match p.value {
            Some(Value::AsDouble(d)) => d,
            Some(Value::AsInt(i)) => i as f64,
            None if no_recorded_value(p.flags) => f64::NAN,
            None => {
                return self.refuse(
                    1,
                    format!("metric {metric:?}: a data point has no value (as_double or as_int)"),
                )
            }
        };
        let Some((n, labels)) = self.start_point(metric, &p.attributes, identity) else {
            return;
        };
        let value = stale_or(p.flags, value);
        self.push(name.to_owned(), labels, millis(p.time_unix_nano), value, n);
    }

    fn histogram(&mut self, metric: &str, name: &str, p: &HistogramDataPoint, id: &Identity) {
        let Some((n, labels)) = self.start_point(metric, &p.attributes, id) else {
            return;
        };
        let t = millis(p.time_unix_nano);
        if let Some(sum) = p.sum {
            let sum = stale_or(p.flags, sum);
            self.push(format!("{name}_sum"), labels.clone(), t, sum, n);
        }
        let count = stale_or(p.flags, p.count as f64);
        self.push(format!("{name}_count"), labels.clone(), t, count, n);
        // Buckets as Prometheus' cumulative `le` buckets; as Prometheus, the bounds and
        // counts are paired as far as both go, and `+Inf` is the total count.
        let mut cumulative = 0u64;
        for (bound, bucket) in p.explicit_bounds.iter().zip(&p.bucket_counts) {
            cumulative = cumulative.saturating_add(*bucket);
            let mut bucket_labels = labels.clone();
            set(&mut bucket_labels, "le", float_label(*bound));
            let value = stale_or(p.flags, cumulative as f64);
            self.push(format!("{name}_bucket"), bucket_labels, t, value, n);
        }
        let mut inf = labels;
        set(&mut inf, "le", "+Inf".into());
        self.push(format!("{name}_bucket"), inf, t, count, n);
    }

    fn summary(&mut self, metric: &str, name: &str, p: &SummaryDataPoint, id: &Identity) {
        let Some((n, labels)) = self.start_point(metric, &p.attributes, id) else {
            return;
        };
        let t = millis(p.time_unix_nano);
        let sum = stale_or(p.flags, p.sum);
        self.push(format!("{name}_sum"), labels.clone(), t, sum, n);
        let count = stale_or(p.flags, p.count as f64);
        self.push(format!("{name}_count"), labels.clone(), t, count, n);
        for q in &p.quantile_values {
            let mut quantile_labels = labels.clone();
            set(&mut quantile_labels, "quantile", float_label(q.quantile));
            let value = stale_or(p.flags, q.value);
            self.push(name.to_owned(), quantile_labels, t, value, n);
        }
    }
}

/// `target_info{job, instance, <the resource's other attributes>} 1` from the resource's
/// first point to its last, every [`TARGET_INFO_INTERVAL_MS`] and at the last; none when
/// the resource has no attribute besides those of `job` and `instance`, or neither of
/// those (nothing to join on). An attribute key that leaves no label name drops the
/// series (the data points are stored all the same).
fn target_info(
    resource: Option<&Resource>,
    identity: &Identity,
    first_ns: u64,
    last_ns: u64,
    out: &mut Vec<Sample>,
) {
    let attrs = resource
        .map(|r| r.attributes.as_slice())
        .unwrap_or_default();
    let identifying = [SERVICE_NAME, SERVICE_NAMESPACE, SERVICE_INSTANCE_ID];
    if attrs
        .iter()
        .all(|kv| identifying.contains(&kv.key.as_str()))
    {
        return;
    }
    let skip = [
        SERVICE_NAME,
        SERVICE_NAMESPACE,
        SERVICE_INSTANCE_ID,
        "__name__",
    ];
    let Ok(mut labels) = attribute_labels(attrs, &skip) else {
        return;
    };
    identity.apply(&mut labels);
    let labels = finish(labels);
    if !labels.iter().any(|(k, _)| k == "job" || k == "instance") {
        return;
    }
    let (first, last) = (millis(first_ns), millis(last_ns));
    let mut t = first.max(last - MAX_TARGET_INFO_SAMPLES * TARGET_INFO_INTERVAL_MS);
    let sample = |t: i64| Sample {
        name: TARGET_INFO.into(),
        labels: labels.clone(),
        point: Point::new(t, 1.0),
        data_point: None,
    };
    while t < last {
        out.push(sample(t));
        t += TARGET_INFO_INTERVAL_MS;
    }
    out.push(sample(last));
}
