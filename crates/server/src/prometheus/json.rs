//! Prometheus' JSON shapes, written directly: sample values as strings in Go's shortest
//! form (`"NaN"`, `"+Inf"`), times as Unix seconds with milliseconds.

use std::fmt::Write;
use tickertape_core::{Exhausted, QueryBudget};
use tickertape_prometheus::mapping::Labels;
use tickertape_prometheus::promql::{Grid, RawSeries, Series, Value};

/// A value as Prometheus prints it (`strconv.FormatFloat(v, 'f', -1, 64)`).
#[cfg(test)]
fn value(v: f64) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// [`value`], appended to `out`.
fn write_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // Rust's shortest round-trip form, never in exponent notation, as Go's 'f', -1.
        write!(out, "{v}").ok();
    }
}

/// A time in ms as Unix seconds.
pub(crate) fn time(out: &mut String, ms: i64) {
    let sign = if ms < 0 { "-" } else { "" };
    let (secs, frac) = (ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
    match frac {
        0 => write!(out, "{sign}{secs}"),
        f => write!(out, "{sign}{secs}.{f:03}"),
    }
    .ok();
}

fn string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::String(s.to_string()).to_string());
}

pub(crate) fn labels(out: &mut String, labels: &Labels) {
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, k);
        out.push(':');
        string(out, v);
    }
    out.push('}');
}

fn pair(out: &mut String, ms: i64, v: f64) {
    out.push('[');
    time(out, ms);
    out.push_str(",\"");
    write_value(out, v);
    out.push_str("\"]");
}

/// `{"status":"success","data":…}` around `data`, with `warnings` when there are any.
pub(crate) fn success(data: &str, warnings: &[String]) -> String {
    let mut out = String::with_capacity(data.len() + 64);
    out.push_str("{\"status\":\"success\",\"data\":");
    out.push_str(data);
    if !warnings.is_empty() {
        out.push_str(",\"warnings\":");
        out.push_str(&strings(warnings.iter().map(String::as_str)));
    }
    out.push('}');
    out
}

/// `{"status":"success","data":…}` around the data `write` appends to the text: an
/// answer written once, not copied into its envelope.
pub(crate) fn success_with<E>(
    write: impl FnOnce(&mut String) -> Result<(), E>,
) -> Result<String, E> {
    let mut out = String::from("{\"status\":\"success\",\"data\":");
    write(&mut out)?;
    out.push('}');
    Ok(out)
}

/// Charges the bytes `out` grew by since `*charged` (its length then) to `budget`: the
/// answer is charged series by series as it is written.
fn charge_growth(out: &str, charged: &mut usize, budget: &QueryBudget) -> Result<(), Exhausted> {
    let grown = out.len().saturating_sub(*charged);
    *charged = out.len();
    budget.charge_bytes(grown)
}

/// The `data` of an instant query, appended to `out` and charged to `budget`.
pub(crate) fn instant(
    out: &mut String,
    v: &Value,
    at: i64,
    budget: &QueryBudget,
) -> Result<(), Exhausted> {
    let mut charged = out.len();
    match v {
        Value::Scalar(s) => {
            out.push_str("{\"resultType\":\"scalar\",\"result\":");
            pair(out, at, s[0]);
        }
        Value::String(s) => {
            out.push_str("{\"resultType\":\"string\",\"result\":[");
            time(out, at);
            out.push(',');
            string(out, s);
            out.push(']');
        }
        Value::Vector(series) => {
            out.push_str("{\"resultType\":\"vector\",\"result\":[");
            let mut first = true;
            for s in series {
                let Some(v) = s.values[0] else { continue };
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                labels(out, &s.labels);
                out.push_str(",\"value\":");
                pair(out, at, v);
                out.push('}');
                charge_growth(out, &mut charged, budget)?;
            }
            out.push(']');
        }
        Value::Matrix(series) => {
            out.push_str("{\"resultType\":\"matrix\",\"result\":");
            matrix_of_raw(out, series, &mut charged, budget)?;
        }
    }
    out.push('}');
    charge_growth(out, &mut charged, budget)
}

/// The `data` of a range query: series sorted by labels, a scalar as one series
/// without labels; appended to `out` and charged to `budget` series by series.
pub(crate) fn range(
    out: &mut String,
    v: Value,
    grid: &Grid,
    budget: &QueryBudget,
) -> Result<(), Exhausted> {
    let mut series = match v {
        Value::Scalar(s) => vec![Series {
            labels: Vec::new(),
            values: s.into_iter().map(Some).collect(),
        }],
        Value::Vector(v) => v,
        _ => Vec::new(),
    };
    series.retain(|s| s.values.iter().any(Option::is_some));
    series.sort_by(|a, b| a.labels.cmp(&b.labels));
    let mut charged = out.len();
    out.push_str("{\"resultType\":\"matrix\",\"result\":[");
    for (i, s) in series.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"metric\":");
        labels(out, &s.labels);
        out.push_str(",\"values\":[");
        let mut first = true;
        for (step, v) in s.values.iter().enumerate() {
            let Some(v) = v else { continue };
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            pair(out, grid.time(step), *v);
        }
        out.push_str("]}");
        charge_growth(out, &mut charged, budget)?;
    }
    out.push_str("]}");
    charge_growth(out, &mut charged, budget)
}

fn matrix_of_raw(
    out: &mut String,
    series: &[RawSeries],
    charged: &mut usize,
    budget: &QueryBudget,
) -> Result<(), Exhausted> {
    out.push('[');
    for (i, s) in series.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"metric\":");
        labels(out, &s.labels);
        out.push_str(",\"values\":[");
        for (j, &(t, v)) in s.samples.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            pair(out, t, v);
        }
        out.push_str("]}");
        charge_growth(out, charged, budget)?;
    }
    out.push(']');
    Ok(())
}

/// A JSON array of strings.
pub(crate) fn strings<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (i, s) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&mut out, s);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_times_as_prometheus_prints_them() {
        assert_eq!(value(2.0), "2");
        assert_eq!(value(0.1), "0.1");
        assert_eq!(value(1e21), "1000000000000000000000");
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(value(f64::NEG_INFINITY), "-Inf");
        let mut s = String::new();
        time(&mut s, 4000);
        s.push(' ');
        time(&mut s, 1_435_781_451_781);
        s.push(' ');
        time(&mut s, -1500);
        assert_eq!(s, "4 1435781451.781 -1.500");
    }

    #[test]
    fn grafanas_test_query_answers_a_scalar() {
        let budget = QueryBudget::unlimited();
        let mut data = String::new();
        assert_eq!(
            instant(&mut data, &Value::Scalar(vec![2.0]), 4000, &budget),
            Ok(())
        );
        assert_eq!(data, r#"{"resultType":"scalar","result":[4,"2"]}"#);
        assert_eq!(budget.bytes(), data.len());
    }

    /// A range answer is charged series by series and stops at the byte budget.
    #[test]
    fn a_range_answer_stops_at_the_byte_budget() {
        let grid = Grid {
            start: 0,
            end: 99_000,
            step: 1000,
        };
        let series = |i: usize| Series {
            labels: vec![("i".into(), i.to_string())],
            values: vec![Some(1.5); 100],
        };
        let vector = || Value::Vector((0..10).map(series).collect());
        let unlimited = QueryBudget::unlimited();
        let mut whole = String::new();
        assert_eq!(range(&mut whole, vector(), &grid, &unlimited), Ok(()));
        assert_eq!(unlimited.bytes(), whole.len());
        let short = QueryBudget::new(usize::MAX, whole.len() / 2);
        let mut part = String::new();
        assert_eq!(
            range(&mut part, vector(), &grid, &short),
            Err(Exhausted::Bytes {
                limit: whole.len() / 2
            })
        );
        // Stopped within one series of the limit.
        assert!(part.len() < whole.len() / 2 + whole.len() / 10 + 100);
    }
}
