//! How Prometheus' `promql/test.go` judges an answer: an instant vector's series as a set
//! (in order for `eval_ordered`), labels exact, values within a relative 1e-6; and, for a
//! range query over [t-1m, t+1m] at a 1 m step, the middle step judged the same way.

use super::{Expected, Labels};
use serde_json::Value;

/// The answer `data` against the expected result, as Prometheus' test compares them.
pub fn compare(expected: &Expected, data: &Value, ordered: bool) -> Result<(), String> {
    let kind = data["resultType"].as_str().unwrap_or("?");
    match (expected, kind) {
        (Expected::Scalar(want), "scalar") => {
            let got = sample_value(&data["result"])?;
            check_value(*want, got, "the scalar")
        }
        (Expected::Vector(want), "vector") => {
            let got = vector(&data["result"])?;
            compare_vectors(want, &got, ordered)
        }
        (Expected::Scalar(_), _) => Err(format!("a {kind} where a scalar was expected")),
        (Expected::Vector(_), _) => Err(format!("a {kind} where a vector was expected")),
    }
}

/// A `query_range` answer `data` (a matrix) judged at its step `at_ms` against the expected
/// instant result, as Prometheus' test checks that range mode agrees with instant mode.
pub fn compare_range_middle(expected: &Expected, data: &Value, at_ms: i64) -> Result<(), String> {
    if data["resultType"] != "matrix" {
        return Err(format!(
            "range mode: a {} instead of a matrix",
            data["resultType"]
        ));
    }
    let series = data["result"]
        .as_array()
        .ok_or("range mode: no result array")?;
    let mut at_step = Vec::new();
    for s in series {
        let point = s["values"].as_array().and_then(|points| {
            points.iter().find(|p| {
                p[0].as_f64()
                    .is_some_and(|t| (t * 1000.0).round() as i64 == at_ms)
            })
        });
        if let Some(p) = point {
            let labels = labels_of(&s["metric"])?;
            at_step.push((labels, sample_value(p)?));
        }
    }
    let result = match expected {
        // A scalar's range answer is one series without labels; Prometheus takes its value.
        Expected::Scalar(want) => match at_step.first() {
            Some((_, v)) => check_value(*want, *v, "the scalar"),
            None => Err("no value at the step".into()),
        },
        Expected::Vector(want) => compare_vectors(want, &at_step, false),
    };
    result.map_err(|e| format!("range mode: {e}"))
}

fn compare_vectors(
    want: &[(Labels, f64)],
    got: &[(Labels, f64)],
    ordered: bool,
) -> Result<(), String> {
    for (pos, (labels, value)) in got.iter().enumerate() {
        if got[..pos].iter().any(|(l, _)| l == labels) {
            return Err(format!("{} twice in the result", show(labels)));
        }
        let Some(at) = want.iter().position(|(l, _)| l == labels) else {
            return Err(format!("unexpected {} {value} in the result", show(labels)));
        };
        if ordered && at != pos {
            return Err(format!(
                "{} at position {pos}, expected at {at}",
                show(labels)
            ));
        }
        check_value(want[at].1, *value, &show(labels))?;
    }
    match want.iter().find(|(l, _)| !got.iter().any(|(g, _)| g == l)) {
        Some((l, v)) => Err(format!("{} {v} missing from the result", show(l))),
        None => Ok(()),
    }
}

fn check_value(want: f64, got: f64, what: &str) -> Result<(), String> {
    if almost_equal(want, got) {
        Ok(())
    } else {
        Err(format!("{what}: expected {want}, got {got}"))
    }
}

/// Prometheus' `almostEqual`: NaN equals NaN, else a relative error under 1e-6 (with an
/// absolute floor near zero).
fn almost_equal(a: f64, b: f64) -> bool {
    const EPSILON: f64 = 0.000001;
    let min_normal = f64::MIN_POSITIVE;
    if (a.is_nan() && b.is_nan()) || a == b {
        return true;
    }
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || diff < min_normal {
        return diff < EPSILON * min_normal;
    }
    diff / (a.abs() + b.abs()) < EPSILON
}

/// `[time, "value"]` → the value.
fn sample_value(pair: &Value) -> Result<f64, String> {
    let text = pair[1]
        .as_str()
        .ok_or_else(|| format!("a sample that is not [time, \"value\"]: {pair}"))?;
    text.parse::<f64>()
        .map_err(|_| format!("a value that is not a number: {text:?}"))
}

/// `[{"metric": {…}, "value": [t, "v"]}, …]` → (labels, value) in the answer's order.
fn vector(result: &Value) -> Result<Vec<(Labels, f64)>, String> {
    let items = result.as_array().ok_or("a vector that is not an array")?;
    items
        .iter()
        .map(|item| Ok((labels_of(&item["metric"])?, sample_value(&item["value"])?)))
        .collect()
}

/// A JSON `metric` object → labels.
fn labels_of(metric: &Value) -> Result<Labels, String> {
    let metric = metric
        .as_object()
        .ok_or_else(|| format!("a sample without its metric: {metric}"))?;
    Ok(metric
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect())
}

fn show(labels: &Labels) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn almost_equal_is_prometheus_tolerance() {
        assert!(almost_equal(f64::NAN, f64::NAN));
        assert!(almost_equal(1.0, 1.0 + 1e-7));
        assert!(!almost_equal(1.0, 1.0 + 1e-5));
        assert!(!almost_equal(0.0, 1e-300));
        assert!(almost_equal(f64::INFINITY, f64::INFINITY));
        assert!(!almost_equal(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!almost_equal(1.0, f64::NAN));
    }

    #[test]
    fn vectors_compare_as_sets_unless_ordered() {
        let l = |v: &str| Labels::from([("a".to_string(), v.to_string())]);
        let want = vec![(l("x"), 1.0), (l("y"), 2.0)];
        let swapped = vec![(l("y"), 2.0), (l("x"), 1.0)];
        assert!(compare_vectors(&want, &swapped, false).is_ok());
        assert!(compare_vectors(&want, &swapped, true).is_err());
        assert!(
            compare_vectors(&want, &want[..1], false).is_err(),
            "a missing series"
        );
        let extra = vec![(l("x"), 1.0), (l("y"), 2.0), (l("z"), 3.0)];
        assert!(
            compare_vectors(&want, &extra, false).is_err(),
            "an extra series"
        );
        let twice = vec![(l("x"), 1.0), (l("x"), 1.0), (l("y"), 2.0)];
        assert!(
            compare_vectors(&want, &twice, false).is_err(),
            "a duplicate"
        );
        let off = vec![(l("x"), 1.1), (l("y"), 2.0)];
        assert!(
            compare_vectors(&want, &off, false).is_err(),
            "a wrong value"
        );
    }

    #[test]
    fn range_mode_is_judged_at_the_middle_step() {
        let data = serde_json::json!({"resultType": "matrix", "result": [
            {"metric": {"a": "x"}, "values": [[0, "9"], [60, "1"], [120, "9"]]},
            {"metric": {"a": "y"}, "values": [[0, "2"]]},
        ]});
        let l = |v: &str| Labels::from([("a".to_string(), v.to_string())]);
        let at = 60_000;
        let only_x = Expected::Vector(vec![(l("x"), 1.0)]);
        assert!(
            compare_range_middle(&only_x, &data, at).is_ok(),
            "y has no point at 60 s"
        );
        let both = Expected::Vector(vec![(l("x"), 1.0), (l("y"), 2.0)]);
        assert!(compare_range_middle(&both, &data, at).is_err());
        assert!(compare_range_middle(&Expected::Scalar(1.0), &data, at).is_ok());
        assert!(compare_range_middle(&Expected::Scalar(9.0), &data, at).is_err());
        let wrong = Expected::Vector(vec![(l("x"), 9.0)]);
        assert!(compare_range_middle(&wrong, &data, at).is_err());
    }
}
