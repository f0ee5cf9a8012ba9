//! `histogram_quantile` over classic histograms: `_bucket` series told apart by `le`.

use super::value::{drop_metric_name, label_value, Series, VectorBuilder};
use crate::mapping::Labels;
use std::collections::HashMap;

/// The label that holds a bucket's upper bound.
const BUCKET_LABEL: &str = "le";

/// `histogram_quantile(q, buckets)` at every step: each group of buckets (same labels but
/// `le`) gives the `q`-quantile, labelled without `le` and `__name__`.
pub(crate) fn histogram_quantile(
    q: &[f64],
    buckets: &[Series],
    steps: usize,
) -> Result<Vec<Series>, String> {
    // Per bucket series: its group (labels without `le`) and upper bound, once.
    let mut groups: HashMap<Labels, usize> = HashMap::new();
    let mut group_labels: Vec<Labels> = Vec::new();
    let members: Vec<Option<(usize, f64)>> = buckets
        .iter()
        .map(|s| {
            let bound: f64 = parse_bound(label_value(&s.labels, BUCKET_LABEL))?;
            let key: Labels = s
                .labels
                .iter()
                .filter(|(k, _)| k != BUCKET_LABEL)
                .cloned()
                .collect();
            let next = groups.len();
            let g = *groups.entry(key.clone()).or_insert_with(|| {
                group_labels.push(drop_metric_name(&key));
                next
            });
            Some((g, bound))
        })
        .collect();
    let mut out = VectorBuilder::new(steps);
    let mut per_group: Vec<Vec<(f64, f64)>> = vec![Vec::new(); group_labels.len()];
    for (step, &q) in q.iter().enumerate().take(steps) {
        per_group.iter_mut().for_each(Vec::clear);
        for (s, member) in buckets.iter().zip(&members) {
            if let (Some((g, bound)), Some(count)) = (member, s.values[step]) {
                per_group[*g].push((*bound, count));
            }
        }
        for (g, bs) in per_group.iter_mut().enumerate() {
            if !bs.is_empty() {
                out.put(group_labels[g].clone(), step, bucket_quantile(q, bs))?;
            }
        }
    }
    Ok(out.finish())
}

/// A bound as Go's `strconv.ParseFloat` reads it (`+Inf` included).
fn parse_bound(text: &str) -> Option<f64> {
    match text.trim_start_matches('+').to_ascii_lowercase().as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok(),
    }
}

/// The quantile of cumulative buckets `(upper bound, count)`, interpolated linearly within
/// the bucket it falls in (Prometheus' `bucketQuantile`).
fn bucket_quantile(q: f64, buckets: &mut Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        return f64::NAN;
    }
    coalesce(buckets);
    ensure_monotonic(buckets);
    if buckets.len() < 2 {
        return f64::NAN;
    }
    let observations = buckets[buckets.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let b = buckets[..buckets.len() - 1]
        .iter()
        .position(|bucket| bucket.1 >= rank)
        .unwrap_or(buckets.len() - 1);
    if b == buckets.len() - 1 {
        return buckets[buckets.len() - 2].0;
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return buckets[0].0;
    }
    let (mut start, end, mut count) = (0.0, buckets[b].0, buckets[b].1);
    if b > 0 {
        start = buckets[b - 1].0;
        count -= buckets[b - 1].1;
        rank -= buckets[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// Buckets with the same bound are added together.
fn coalesce(buckets: &mut Vec<(f64, f64)>) {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for &(bound, count) in buckets.iter() {
        match out.last_mut() {
            Some(last) if last.0 == bound => last.1 += count,
            _ => out.push((bound, count)),
        }
    }
    *buckets = out;
}

/// Counts made non-decreasing (scrapes of several buckets are not atomic).
fn ensure_monotonic(buckets: &mut [(f64, f64)]) {
    let mut max = buckets[0].1;
    for b in buckets.iter_mut().skip(1) {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_within_the_bucket() {
        let mut b = vec![(f64::INFINITY, 100.0), (1.0, 50.0), (0.5, 20.0)];
        assert_eq!(bucket_quantile(0.5, &mut b), 1.0);
        let mut b = vec![(0.5, 20.0), (1.0, 50.0), (f64::INFINITY, 100.0)];
        assert_eq!(bucket_quantile(0.35, &mut b), 0.75);
        // Past the last finite bound: that bound.
        let mut b = vec![(0.5, 20.0), (1.0, 50.0), (f64::INFINITY, 100.0)];
        assert_eq!(bucket_quantile(0.9, &mut b), 1.0);
    }

    #[test]
    fn without_an_infinite_bucket_there_is_no_answer() {
        assert!(bucket_quantile(0.5, &mut vec![(1.0, 3.0)]).is_nan());
        assert_eq!(parse_bound("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_bound("0.25"), Some(0.25));
        assert_eq!(parse_bound("x"), None);
    }
}
