//! OTLP names as Prometheus writes them: the metric name with its unit and type suffixes,
//! label names sanitized, attribute values as text.
//!
//! A port of `github.com/prometheus/otlptranslator` in the configuration Prometheus uses by
//! default (2.x always; 3.x's `translation_strategy: UnderscoreEscapingWithSuffixes`):
//! names escaped to the classic charset, unit and type suffixes added, no namespace. So a
//! series sent here by OTLP has the name it would have in Prometheus, and dashboards made
//! for one work on the other.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::AnyValue;

/// What a metric is, as far as its name is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetricKind {
    Gauge,
    /// A sum that only goes up: named `…_total`.
    MonotonicCounter,
    /// A sum that may go down: named like a gauge, without `_ratio`.
    NonMonotonicCounter,
    Histogram,
    Summary,
}

/// OTel's units (UCUM case-sensitive) and the words Prometheus names them by; `1` (a
/// dimensionless ratio) adds no word.
const UNITS: &[(&str, &str)] = &[
    ("d", "days"),
    ("h", "hours"),
    ("min", "minutes"),
    ("s", "seconds"),
    ("ms", "milliseconds"),
    ("us", "microseconds"),
    ("ns", "nanoseconds"),
    ("By", "bytes"),
    ("KiBy", "kibibytes"),
    ("MiBy", "mebibytes"),
    ("GiBy", "gibibytes"),
    ("TiBy", "tibibytes"),
    ("KBy", "kilobytes"),
    ("MBy", "megabytes"),
    ("GBy", "gigabytes"),
    ("TBy", "terabytes"),
    ("m", "meters"),
    ("V", "volts"),
    ("A", "amperes"),
    ("J", "joules"),
    ("W", "watts"),
    ("g", "grams"),
    ("Cel", "celsius"),
    ("Hz", "hertz"),
    ("1", ""),
    ("%", "percent"),
];

/// The units after a `/` (`By/s` is `bytes_per_second`).
const PER_UNITS: &[(&str, &str)] = &[
    ("s", "second"),
    ("m", "minute"),
    ("h", "hour"),
    ("d", "day"),
    ("w", "week"),
    ("mo", "month"),
    ("y", "year"),
];

fn lookup(table: &[(&str, &'static str)], unit: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == unit).map(|(_, v)| *v)
}

/// A character of a classic metric name other than `_` (which separates words).
fn is_metric_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == ':'
}

/// The Prometheus name of an OTLP metric: its words (runs of `[a-zA-Z0-9:]`) joined by
/// `_`, then the unit's words unless already there (`By` → `bytes`, `ms` →
/// `milliseconds`, `By/s` → `bytes_per_second`; a unit in braces, such as `{request}`,
/// adds nothing), `total` last for a monotonic sum, `ratio` last for a gauge of unit `1`,
/// and `_` in front of a leading digit. `Err` when nothing of the name is left.
pub(crate) fn metric_name(name: &str, unit: &str, kind: MetricKind) -> Result<String, String> {
    let mut words: Vec<String> = name
        .split(|c| !is_metric_char(c))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    if words.is_empty() {
        return Err(format!(
            "metric name {name:?} has no character of a Prometheus metric name"
        ));
    }
    let (main, per) = unit_words(unit);
    add_unit_words(&mut words, clean_up_unit(&main), clean_up_unit(&per));
    if kind == MetricKind::MonotonicCounter {
        words.retain(|w| w != "total");
        words.push("total".into());
    }
    if unit == "1" && kind == MetricKind::Gauge {
        words.retain(|w| w != "ratio");
        words.push("ratio".into());
    }
    let mut joined = words.join("_");
    if joined.starts_with(|c: char| c.is_ascii_digit()) {
        joined.insert(0, '_');
    }
    Ok(joined)
}

/// The unit's main word and its `per_…` word, each empty when there is none.
fn unit_words(unit: &str) -> (String, String) {
    let (main, per) = match unit.split_once('/') {
        Some((main, per)) => (main, Some(per)),
        None => (unit, None),
    };
    let usable = |u: &str| !u.is_empty() && !u.contains(['{', '}']);
    let main = main.trim();
    let main = match usable(main) {
        true => lookup(UNITS, main).unwrap_or(main).to_owned(),
        false => String::new(),
    };
    let per = per.map(str::trim).filter(|p| usable(p));
    let per = match per {
        Some(p) => format!("per_{}", lookup(PER_UNITS, p).unwrap_or(p)),
        None => String::new(),
    };
    (main, per)
}

/// Characters outside the metric charset become `_`, runs of `_` one, and a leading `_`
/// goes.
fn clean_up_unit(unit: &str) -> String {
    let mut out = String::with_capacity(unit.len());
    for c in unit.chars() {
        let c = if is_metric_char(c) { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.strip_prefix('_').map(str::to_owned).unwrap_or(out)
}

fn add_unit_words(words: &mut Vec<String>, main: String, per: String) {
    let mut main = match words.contains(&main) {
        true => String::new(),
        false => main,
    };
    let per = match per.as_str() {
        "per_" => String::new(),
        p => {
            let p = p.strip_suffix('_').unwrap_or(p);
            match words.iter().any(|w| w == p) {
                true => String::new(),
                false => p.to_owned(),
            }
        }
    };
    if !per.is_empty() {
        if let Some(trimmed) = main.strip_suffix('_') {
            main = trimmed.to_owned();
        }
    }
    words.extend([main, per].into_iter().filter(|w| !w.is_empty()));
}

/// A Prometheus label name for an attribute key: every run of characters outside
/// `[a-zA-Z0-9]` (`_` included) becomes one `_`, a reserved `__name__`-like key keeps its
/// `__` on both sides, and a leading digit gets `key_` in front. `Err` for an empty key or
/// one of underscores only.
pub(crate) fn label_name(key: &str) -> Result<String, String> {
    if key.is_empty() {
        return Err("an attribute has an empty key".into());
    }
    let reserved = key.len() >= 4 && key.starts_with("__") && key.ends_with("__");
    let inner = match reserved {
        true => &key[2..key.len() - 2],
        false => key,
    };
    let mut out = String::with_capacity(key.len() + 4);
    if reserved {
        out.push_str("__");
    }
    let mut after_underscore = false;
    for c in inner.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
            after_underscore = false;
        } else if !after_underscore {
            out.push('_');
            after_underscore = true;
        }
    }
    if reserved {
        out.push_str("__");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "key_");
    }
    if out.chars().all(|c| c == '_') {
        return Err(format!(
            "attribute key {key:?} leaves no label name (only underscores) once sanitized"
        ));
    }
    Ok(out)
}

/// A label value for an attribute, as OTel's collector prints it (pdata's `AsString`):
/// strings as they are, numbers and booleans in decimal, bytes in base64, arrays and maps
/// as JSON; an empty value as `""` (which leaves the label out).
pub(crate) fn attribute_text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        None | Some(Value::StringValueStrindex(_)) => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => double_text(*d),
        Some(Value::BytesValue(b)) => base64_text(b),
        Some(other @ (Value::ArrayValue(_) | Value::KvlistValue(_))) => {
            json_of(Some(other)).to_string()
        }
    }
}

/// A double as ECMAScript prints a number, which is what the collector does: plain
/// decimals from 1e-6 up to 1e21, an exponent outside.
fn double_text(d: f64) -> String {
    let abs = d.abs();
    if d.is_finite() && abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1e21` and `1e-7`; ECMAScript `1e+21` and `1e-7`.
        let text = format!("{d:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => text,
        }
    } else {
        d.to_string()
    }
}

fn base64_text(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn json_of(value: Option<&Value>) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        None | Some(Value::StringValueStrindex(_)) => J::Null,
        Some(Value::StringValue(s)) => J::String(s.clone()),
        Some(Value::BoolValue(b)) => J::Bool(*b),
        Some(Value::IntValue(i)) => J::from(*i),
        Some(Value::DoubleValue(d)) => serde_json::Number::from_f64(*d)
            .map(J::Number)
            .unwrap_or_else(|| J::String(d.to_string())),
        Some(Value::BytesValue(b)) => J::String(base64_text(b)),
        Some(Value::ArrayValue(a)) => {
            J::Array(a.values.iter().map(|v| json_of(v.value.as_ref())).collect())
        }
        Some(Value::KvlistValue(kv)) => J::Object(
            kv.values
                .iter()
                .map(|kv| {
                    let value = kv.value.as_ref().and_then(|v| v.value.as_ref());
                    (kv.key.clone(), json_of(value))
                })
                .collect(),
        ),
    }
}

/// A bound or quantile as a label value, as Prometheus prints it (Go's `FormatFloat(f,
/// 'f', -1, 64)`): the shortest decimal that reads back the same, never an exponent;
/// `+Inf`, `-Inf`, `NaN`.
pub(crate) fn float_label(f: f64) -> String {
    if f == f64::INFINITY {
        "+Inf".into()
    } else if f == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        // Rust prints the shortest round-tripping decimal without an exponent, as Go's 'f'.
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValue, KeyValueList};
    use MetricKind::*;

    fn name(n: &str, unit: &str, kind: MetricKind) -> String {
        metric_name(n, unit, kind).unwrap()
    }

    /// The escaped-with-suffixes cases of otlptranslator's own `metric_namer_test.go`.
    #[test]
    fn metric_names_as_otlptranslator_tests_them() {
        for (metric, unit, kind, want) in [
            ("requests", "", MonotonicCounter, "requests_total"),
            ("cpu_usage", "1", Gauge, "cpu_usage_ratio"),
            ("items", "1", MonotonicCounter, "items_total"),
            ("response_time", "ms", Gauge, "response_time_milliseconds"),
            ("memory_usage", "By", Gauge, "memory_usage_bytes"),
            ("requests", "1/s", Gauge, "requests_per_second"),
            ("throughput", "By/s", Gauge, "throughput_bytes_per_second"),
            ("requests_total", "", MonotonicCounter, "requests_total"),
            ("cpu_usage_ratio", "1", Gauge, "cpu_usage_ratio"),
            (
                "metric__with__multiple__underscores",
                "unit__multiple__underscores",
                Gauge,
                "metric_with_multiple_underscores_unit_multiple_underscores",
            ),
            (
                "custom_metric",
                "unit@with#special/chars",
                Gauge,
                "custom_metric_unit_with_special_per_chars",
            ),
        ] {
            assert_eq!(name(metric, unit, kind), want, "{metric} {unit}");
        }
    }

    /// More cases, worked out from otlptranslator's code (`normalizeName`).
    #[test]
    fn metric_names_get_prometheus_suffixes() {
        assert_eq!(
            name("system.cpu.time", "s", MonotonicCounter),
            "system_cpu_time_seconds_total"
        );
        assert_eq!(
            name("http.server.duration", "ms", Histogram),
            "http_server_duration_milliseconds"
        );
        assert_eq!(name("memory.usage", "By", Gauge), "memory_usage_bytes");
        assert_eq!(
            name("throughput", "By/s", Gauge),
            "throughput_bytes_per_second"
        );
        assert_eq!(name("cpu.utilization", "1", Gauge), "cpu_utilization_ratio");
        assert_eq!(
            name("requests", "{request}", MonotonicCounter),
            "requests_total"
        );
        assert_eq!(
            name("requests_total", "", MonotonicCounter),
            "requests_total"
        );
        assert_eq!(
            name("total.requests", "", MonotonicCounter),
            "requests_total"
        );
        assert_eq!(name("queue.size", "", NonMonotonicCounter), "queue_size");
        assert_eq!(name("ratio.1", "1", NonMonotonicCounter), "ratio_1");
        assert_eq!(name("latency_seconds", "s", Histogram), "latency_seconds");
        assert_eq!(name("rate", "m/s", Gauge), "rate_meters_per_second");
        assert_eq!(name("x", "foo/bar", Gauge), "x_foo_per_bar");
        assert_eq!(name("x", "/s", Gauge), "x_per_second");
        assert_eq!(name("2xx.responses", "", Gauge), "_2xx_responses");
        assert_eq!(name("a__b..c", "", Summary), "a_b_c");
        assert_eq!(name("ns:metric", "", Gauge), "ns:metric");
        assert_eq!(name("temp", "Cel", Gauge), "temp_celsius");
        assert!(metric_name("...", "", Gauge).is_err());
        assert!(metric_name("", "", Gauge).is_err());
    }

    #[test]
    fn label_names_are_sanitized_as_prometheus_does() {
        assert_eq!(label_name("http.method").unwrap(), "http_method");
        assert_eq!(label_name("host__name").unwrap(), "host_name");
        assert_eq!(label_name("_private").unwrap(), "_private");
        assert_eq!(label_name("__reserved__").unwrap(), "__reserved__");
        assert_eq!(label_name("__a.b__").unwrap(), "__a_b__");
        assert_eq!(label_name("9lives").unwrap(), "key_9lives");
        assert_eq!(label_name("üml").unwrap(), "_ml");
        assert!(label_name("").is_err());
        assert!(label_name("__").is_err());
        assert!(label_name("...").is_err());
    }

    #[test]
    fn attribute_values_print_as_the_collector_prints_them() {
        let text = |v: Value| attribute_text(Some(&AnyValue { value: Some(v) }));
        assert_eq!(text(Value::StringValue("a b".into())), "a b");
        assert_eq!(text(Value::BoolValue(true)), "true");
        assert_eq!(text(Value::IntValue(-42)), "-42");
        assert_eq!(text(Value::DoubleValue(0.5)), "0.5");
        assert_eq!(text(Value::DoubleValue(1e21)), "1e+21");
        assert_eq!(text(Value::DoubleValue(-2.5e-7)), "-2.5e-7");
        assert_eq!(text(Value::DoubleValue(3.0)), "3");
        assert_eq!(text(Value::BytesValue(vec![1, 2, 3])), "AQID");
        let array = Value::ArrayValue(ArrayValue {
            values: vec![
                AnyValue {
                    value: Some(Value::IntValue(1)),
                },
                AnyValue {
                    value: Some(Value::StringValue("x".into())),
                },
            ],
        });
        assert_eq!(text(array), r#"[1,"x"]"#);
        let map = Value::KvlistValue(KeyValueList {
            values: vec![KeyValue {
                key: "k".into(),
                value: Some(AnyValue {
                    value: Some(Value::BoolValue(false)),
                }),
                ..Default::default()
            }],
        });
        assert_eq!(text(map), r#"{"k":false}"#);
        assert_eq!(attribute_text(None), "");
    }

    #[test]
    fn bounds_print_without_exponents() {
        assert_eq!(float_label(0.005), "0.005");
        assert_eq!(float_label(5.0), "5");
        assert_eq!(float_label(1e21), "1000000000000000000000");
        assert_eq!(float_label(f64::INFINITY), "+Inf");
        assert_eq!(float_label(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float_label(0.99), "0.99");
    }
}
