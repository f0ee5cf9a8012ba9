//! Functions of instant vectors and scalars, step by step (`abs`, `clamp_min`,
//! `label_replace`, `vector`, `time`, …). Range functions are in `range_functions`.

use super::value::{drop_metric_name, label_value, Series, VectorBuilder};
use crate::mapping::Labels;
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
        "sgn" => |v: f64| match v {
            v if v > 0.0 => 1.0,
            v if v < 0.0 => -1.0,
            v => v,
        },
        _ => return None,
    })
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
