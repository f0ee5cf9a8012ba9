//! Functions of instant vectors and scalars, step by step (`abs`, `clamp_min`,
//! `label_replace`, `vector`, `time`, …). Range functions are in `range_functions`.

use super::value::{drop_metric_name, label_value, Series, VectorBuilder};
use crate::mapping::Labels;
use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};
use regex::Regex;

/// A function applied to each value of a vector, dropping the metric name.
pub(crate) fn simple_function(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "abs" => f64::abs,
        "ceil" => f64::ceil,
        "floor" => f64::floor,
        "exp" => f64::exp,
        "sqrt" => f64::sqrt,
        "ln" => f64::ln,
        "log2" => f64::log2,
        "log10" => f64::log10,
        "acos" => f64::acos,
        "acosh" => f64::acosh,
        "asin" => f64::asin,
        "asinh" => f64::asinh,
        "atan" => f64::atan,
        "atanh" => f64::atanh,
        "cos" => f64::cos,
        "cosh" => f64::cosh,
        "sin" => f64::sin,
        "sinh" => f64::sinh,
        "tan" => f64::tan,
        "tanh" => f64::tanh,
        "deg" => |v: f64| v * 180.0 / std::f64::consts::PI,
        "rad" => |v: f64| v * std::f64::consts::PI / 180.0,
        "sgn" => |v: f64| match v {
            v if v > 0.0 => 1.0,
            v if v < 0.0 => -1.0,
            v => v,
        },
        _ => return None,
    })
}

/// The calendar functions (`hour`, `month`, …): a part of a Unix time in seconds, UTC.
pub(crate) fn date_function(name: &str) -> Option<fn(DateTime<Utc>) -> f64> {
    Some(match name {
        "day_of_month" => |t| f64::from(t.day()),
        "day_of_week" => |t| f64::from(t.weekday().num_days_from_sunday()),
        "day_of_year" => |t| f64::from(t.ordinal()),
        "days_in_month" => |t| f64::from(days_in_month(t.year(), t.month())),
        "hour" => |t| f64::from(t.hour()),
        "minute" => |t| f64::from(t.minute()),
        "month" => |t| f64::from(t.month()),
        "year" => |t| f64::from(t.year()),
        _ => return None,
    })
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next_year, next_month, 1)
        .and_then(|d| d.pred_opt())
        .map_or(31, |d| d.day())
}

/// The UTC time of `seconds` since the epoch, truncated to whole seconds as Go's
/// `time.Unix(int64(v), 0)` does; NaN for a value no date has.
pub(crate) fn date_of(seconds: f64, f: fn(DateTime<Utc>) -> f64) -> f64 {
    if !seconds.is_finite() {
        return f64::NAN;
    }
    DateTime::from_timestamp(seconds.trunc() as i64, 0).map_or(f64::NAN, f)
}

/// `label_join(v, dst, separator, src…)`: `dst` set to the `src` labels' values joined.
pub(crate) fn label_join(
    input: &[Series],
    steps: usize,
    dst: &str,
    separator: &str,
    sources: &[String],
) -> Result<Vec<Series>, String> {
    if let Some(bad) = sources.iter().find(|s| !is_label_name(s)) {
        return Err(format!("invalid source label name in label_join(): {bad}"));
    }
    if !is_label_name(dst) {
        return Err(format!(
            "invalid destination label name in label_join(): {dst}"
        ));
    }
    let mut out = VectorBuilder::new(steps);
    for s in input {
        let joined: Vec<&str> = sources.iter().map(|l| label_value(&s.labels, l)).collect();
        let joined = joined.join(separator);
        let mut labels: Labels = s.labels.iter().filter(|(k, _)| k != dst).cloned().collect();
        if !joined.is_empty() {
            labels.push((dst.to_string(), joined));
            labels.sort();
        }
        for (step, v) in s.values.iter().enumerate() {
            if let Some(v) = v {
                out.put(labels.clone(), step, *v)?;
            }
        }
    }
    Ok(out.finish())
}

/// `f` of every value, each series without its name.
pub(crate) fn map_values(
    input: &[Series],
    steps: usize,
    f: impl Fn(f64, usize) -> Option<f64>,
) -> Result<Vec<Series>, String> {
    let mut out = VectorBuilder::new(steps);
    for s in input {
        let labels = drop_metric_name(&s.labels);
        for (step, v) in s.values.iter().enumerate() {
            if let Some(value) = v.and_then(|v| f(v, step)) {
                out.put(labels.clone(), step, value)?;
            }
        }
    }
    Ok(out.finish())
}

/// `round(v, to_nearest)` as Prometheus computes it (halves rounded up).
pub(crate) fn round(v: f64, to_nearest: f64) -> f64 {
    let inverse = 1.0 / to_nearest;
    (v * inverse + 0.5).floor() / inverse
}

/// `scalar(v)`: the value of a single-series vector, NaN otherwise.
pub(crate) fn scalar(input: &[Series], steps: usize) -> Vec<f64> {
    (0..steps)
        .map(|step| {
            let mut present = input.iter().filter_map(|s| s.values[step]);
            match (present.next(), present.next()) {
                (Some(v), None) => v,
                _ => f64::NAN,
            }
        })
        .collect()
}

/// `label_replace(v, dst, replacement, src, regex)`: where `regex` matches all of the
/// `src` label's value, `dst` is set to the expanded replacement (removed if empty).
pub(crate) fn label_replace(
    input: &[Series],
    steps: usize,
    dst: &str,
    replacement: &str,
    src: &str,
    regex: &str,
) -> Result<Vec<Series>, String> {
    let re = Regex::new(&format!("^(?s:{regex})$"))
        .map_err(|e| format!("invalid regular expression in label_replace(): {regex}: {e}"))?;
    if !is_label_name(dst) {
        return Err(format!(
            "invalid destination label name in label_replace(): {dst}"
        ));
    }
    let mut out = VectorBuilder::new(steps);
    for s in input {
        let labels = replaced(&s.labels, &re, dst, replacement, src);
        for (step, v) in s.values.iter().enumerate() {
            if let Some(v) = v {
                out.put(labels.clone(), step, *v)?;
            }
        }
    }
    Ok(out.finish())
}

fn replaced(labels: &Labels, re: &Regex, dst: &str, replacement: &str, src: &str) -> Labels {
    let Some(caps) = re.captures(label_value(labels, src)) else {
        return labels.clone();
    };
    let mut value = String::new();
    caps.expand(replacement, &mut value);
    let mut out: Labels = labels.iter().filter(|(k, _)| k != dst).cloned().collect();
    if !value.is_empty() {
        out.push((dst.to_string(), value));
        out.sort();
    }
    out
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `sort`/`sort_desc` for an instant query (a range query's order is by labels anyway):
/// by value, NaN last.
pub(crate) fn sort_by_value(mut input: Vec<Series>, descending: bool) -> Vec<Series> {
    input.sort_by(|a, b| {
        let (x, y) = (
            a.values[0].unwrap_or(f64::NAN),
            b.values[0].unwrap_or(f64::NAN),
        );
        match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ if descending => y.total_cmp(&x),
            _ => x.total_cmp(&y),
        }
    });
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_replace_expands_groups_and_removes_an_empty_result() {
        let s = Series {
            labels: vec![
                ("__name__".into(), "x".into()),
                ("src".into(), "a-b".into()),
            ],
            values: vec![Some(1.0)],
        };
        let out = label_replace(
            std::slice::from_ref(&s),
            1,
            "dst",
            "$2.$1",
            "src",
            "(.*)-(.*)",
        )
        .unwrap();
        assert_eq!(label_value(&out[0].labels, "dst"), "b.a");
        assert_eq!(label_value(&out[0].labels, "__name__"), "x");
        let out = label_replace(std::slice::from_ref(&s), 1, "src", "", "src", ".*").unwrap();
        assert_eq!(out[0].labels.len(), 1);
        assert!(label_replace(&[s], 1, "1bad", "", "src", ".*").is_err());
    }

    #[test]
    fn calendar_parts_in_utc() {
        // 2024-02-29T13:45:00Z, a Thursday in a leap year.
        let t = 1_709_214_300.0;
        let part = |name: &str| date_of(t, date_function(name).unwrap());
        assert_eq!(
            [
                "year",
                "month",
                "day_of_month",
                "day_of_week",
                "day_of_year",
                "hour",
                "minute",
                "days_in_month"
            ]
            .map(part),
            [2024.0, 2.0, 29.0, 4.0, 60.0, 13.0, 45.0, 29.0]
        );
        assert!(date_of(f64::NAN, date_function("year").unwrap()).is_nan());
    }

    #[test]
    fn round_and_scalar() {
        assert_eq!(round(2.5, 1.0), 3.0);
        assert_eq!(round(-2.5, 1.0), -2.0);
        assert_eq!(round(1.234, 0.1), 1.2);
        let two = Series {
            labels: vec![],
            values: vec![Some(1.0)],
        };
        assert_eq!(scalar(std::slice::from_ref(&two), 1), vec![1.0]);
        assert!(scalar(&[two.clone(), two], 1)[0].is_nan());
    }
}
