//! Aggregation operators (`sum by (job) (…)`, `topk(3, …)`), step by step, in the order
//! and arithmetic of Prometheus 2.x so that sums agree to the last bit.

use super::range_functions::quantile;
use super::value::{Series, VectorBuilder};
use super::PromqlError;
use crate::mapping::{Labels, METRIC_NAME};
use std::collections::HashMap;
use tickertape_core::QueryBudget;

/// The aggregation operators tickertape evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggregateOp {
    Sum,
    Avg,
    Min,
    Max,
    Count,
    Group,
    Stddev,
    Stdvar,
    Quantile,
    Topk,
    Bottomk,
}

impl AggregateOp {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "sum" => Self::Sum,
            "avg" => Self::Avg,
            "min" => Self::Min,
            "max" => Self::Max,
            "count" => Self::Count,
            "group" => Self::Group,
            "stddev" => Self::Stddev,
            "stdvar" => Self::Stdvar,
            "quantile" => Self::Quantile,
            "topk" => Self::Topk,
            "bottomk" => Self::Bottomk,
            _ => return None,
        })
    }
}

/// `by (labels)` or `without (labels)`; no clause is `by ()`.
pub(crate) enum Grouping {
    By(Vec<String>),
    Without(Vec<String>),
}

impl Grouping {
    /// The labels of the group a series falls in.
    fn group_of(&self, labels: &Labels) -> Labels {
        match self {
            Grouping::By(names) => labels
                .iter()
                .filter(|(k, _)| names.contains(k))
                .cloned()
                .collect(),
            Grouping::Without(names) => labels
                .iter()
                .filter(|(k, _)| k != METRIC_NAME && !names.contains(k))
                .cloned()
                .collect(),
        }
    }
}

/// One group's running state at one step.
struct Group {
    value: f64,
    mean: f64,
    count: f64,
    /// topk/bottomk: (value, series index), a binary heap as Go's `container/heap` keeps
    /// it, so that ties keep the same series as Prometheus. quantile: all values.
    heap: Vec<(f64, usize)>,
}

/// Aggregates `input` at each step. `param` is topk/bottomk's `k` or quantile's `q`.
pub(crate) fn aggregate(
    op: AggregateOp,
    grouping: &Grouping,
    param: Option<&[f64]>,
    input: &[Series],
    steps: usize,
) -> Result<Vec<Series>, String> {
    let mut keys: HashMap<Labels, usize> = HashMap::new();
    let mut group_labels: Vec<Labels> = Vec::new();
    let group_of: Vec<usize> = input
        .iter()
        .map(|s| {
            let labels = grouping.group_of(&s.labels);
            let next = keys.len();
            *keys.entry(labels.clone()).or_insert_with(|| {
                group_labels.push(labels);
                next
            })
        })
        .collect();
    let mut out = VectorBuilder::new(steps);
    for step in 0..steps {
        let p = param.map_or(0.0, |p| p[step]);
        let k = match op {
            AggregateOp::Topk | AggregateOp::Bottomk => {
                if !(p >= i64::MIN as f64 && p <= i64::MAX as f64) {
                    return Err(format!("Scalar value {p} overflows int64"));
                }
                let k = p as i64;
                if k < 1 {
                    continue;
                }
                k as usize
            }
            _ => 0,
        };
        let mut groups: Vec<Option<Group>> = (0..group_labels.len()).map(|_| None).collect();
        let mut order: Vec<usize> = Vec::new();
        for (i, s) in input.iter().enumerate() {
            let Some(v) = s.values[step] else { continue };
            let g = group_of[i];
            match &mut groups[g] {
                slot @ None => {
                    *slot = Some(first(op, v, i));
                    order.push(g);
                }
                Some(group) => add(op, group, v, i, k),
            }
        }
        for g in order {
            let Some(group) = groups[g].take() else {
                continue;
            };
            match op {
                AggregateOp::Topk | AggregateOp::Bottomk => {
                    for (v, i) in ranked(group.heap, op == AggregateOp::Topk) {
                        out.put(input[i].labels.clone(), step, v)?;
                    }
                }
                _ => out.put(group_labels[g].clone(), step, result(op, &group, p))?,
            }
        }
    }
    Ok(out.finish())
}

/// A group's kept series best first (largest for topk, smallest for bottomk), NaN last:
/// the order of an instant query's answer.
fn ranked(mut kept: Vec<(f64, usize)>, largest_first: bool) -> Vec<(f64, usize)> {
    kept.sort_by(|a, b| match (a.0.is_nan(), b.0.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ if largest_first => b.0.total_cmp(&a.0),
        _ => a.0.total_cmp(&b.0),
    });
    kept
}

/// `count_values("label", v)`: how many series have each value at each step, the value
/// (as Prometheus prints it) in `label`.
pub(crate) fn count_values(
    label: &str,
    grouping: &Grouping,
    input: &[Series],
    steps: usize,
    budget: &QueryBudget,
) -> Result<Vec<Series>, PromqlError> {
    let valid = label
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    if label.is_empty() || !valid {
        return Err(PromqlError::Execution(format!(
            "invalid label name {label:?}"
        )));
    }
    let grouping = match grouping {
        Grouping::By(names) => {
            Grouping::By(names.iter().cloned().chain([label.to_string()]).collect())
        }
        Grouping::Without(names) => Grouping::Without(names.clone()),
    };
    let mut out = VectorBuilder::new(steps);
    for step in 0..steps {
        let mut order: Vec<Labels> = Vec::new();
        let mut counts: HashMap<Labels, f64> = HashMap::new();
        for s in input {
            let Some(v) = s.values[step] else { continue };
            let mut labels: Labels = s
                .labels
                .iter()
                .filter(|(k, _)| k != label)
                .cloned()
                .collect();
            labels.push((label.to_string(), format_value(v)));
            labels.sort();
            let group = grouping.group_of(&labels);
            let count = counts.entry(group.clone()).or_insert_with(|| {
                order.push(group);
                0.0
            });
            *count += 1.0;
        }
        // Each distinct value makes a series of every step: charged step by step, so
        // values that change at every step stop at the budget, not at the memory.
        let before = out.len();
        for group in order {
            let count = counts[&group];
            out.put(group, step, count)
                .map_err(PromqlError::Execution)?;
        }
        budget.charge_points((out.len() - before).saturating_mul(steps))?;
    }
    Ok(out.finish())
}

/// A value as Go's `strconv.FormatFloat(v, 'f', -1, 64)` writes it.
fn format_value(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".to_string(),
        f64::INFINITY => "+Inf".to_string(),
        f64::NEG_INFINITY => "-Inf".to_string(),
        v => format!("{v}"),
    }
}

fn first(op: AggregateOp, v: f64, i: usize) -> Group {
    let value = match op {
        AggregateOp::Stddev | AggregateOp::Stdvar => 0.0,
        AggregateOp::Group => 1.0,
        _ => v,
    };
    let heap = match op {
        AggregateOp::Topk | AggregateOp::Bottomk | AggregateOp::Quantile => vec![(v, i)],
        _ => Vec::new(),
    };
    Group {
        value,
        mean: v,
        count: 1.0,
        heap,
    }
}

fn add(op: AggregateOp, g: &mut Group, v: f64, i: usize, k: usize) {
    match op {
        AggregateOp::Sum => g.value += v,
        AggregateOp::Avg => {
            g.count += 1.0;
            if g.mean.is_infinite() {
                if v.is_infinite() && (g.mean > 0.0) == (v > 0.0) {
                    return;
                }
                if !v.is_infinite() && !v.is_nan() {
                    return;
                }
            }
            g.mean += v / g.count - g.mean / g.count;
        }
        AggregateOp::Group => {}
        AggregateOp::Max => {
            if g.value < v || g.value.is_nan() {
                g.value = v;
            }
        }
        AggregateOp::Min => {
            if g.value > v || g.value.is_nan() {
                g.value = v;
            }
        }
        AggregateOp::Count => g.count += 1.0,
        AggregateOp::Stddev | AggregateOp::Stdvar => {
            g.count += 1.0;
            let delta = v - g.mean;
            g.mean += delta / g.count;
            g.value += delta * (v - g.mean);
        }
        AggregateOp::Quantile => g.heap.push((v, i)),
        AggregateOp::Topk => keep_k(&mut g.heap, (v, i), k, |a, b| a < b),
        AggregateOp::Bottomk => keep_k(&mut g.heap, (v, i), k, |a, b| a > b),
    }
}

fn result(op: AggregateOp, g: &Group, q: f64) -> f64 {
    match op {
        AggregateOp::Avg => g.mean,
        AggregateOp::Count => g.count,
        AggregateOp::Stdvar => g.value / g.count,
        AggregateOp::Stddev => (g.value / g.count).sqrt(),
        AggregateOp::Quantile => {
            let mut values: Vec<f64> = g.heap.iter().map(|e| e.0).collect();
            quantile(q, &mut values)
        }
        _ => g.value,
    }
}

/// Whether heap entry `i` sorts before entry `j`.
type HeapLess<'a> = dyn Fn(&[(f64, usize)], usize, usize) -> bool + 'a;

/// Keeps the `k` best of the values seen in `heap`, a heap whose root is the worst kept
/// (`worse(a, b)`: `a` is dropped before `b`; NaN always first). The same pushes and pops
/// as Go's `container/heap`, so ties resolve as in Prometheus.
fn keep_k(
    heap: &mut Vec<(f64, usize)>,
    entry: (f64, usize),
    k: usize,
    worse: fn(f64, f64) -> bool,
) {
    let less = |h: &[(f64, usize)], i: usize, j: usize| h[i].0.is_nan() || worse(h[i].0, h[j].0);
    let root = heap[0].0;
    if !(heap.len() < k || worse(root, entry.0) || root.is_nan()) {
        return;
    }
    if heap.len() == k {
        if k == 1 {
            heap[0] = entry;
            return;
        }
        // Pop: the root swapped to the end, sifted down, removed.
        let n = heap.len() - 1;
        heap.swap(0, n);
        sift_down(heap, 0, n, &less);
        heap.pop();
    }
    heap.push(entry);
    let mut j = heap.len() - 1;
    while j > 0 {
        let parent = (j - 1) / 2;
        if !less(heap, j, parent) {
            break;
        }
        heap.swap(parent, j);
        j = parent;
    }
}

fn sift_down(heap: &mut [(f64, usize)], mut i: usize, n: usize, less: &HeapLess<'_>) {
    loop {
        let left = 2 * i + 1;
        if left >= n {
            break;
        }
        let mut j = left;
        if left + 1 < n && less(heap, left + 1, left) {
            j = left + 1;
        }
        if !less(heap, j, i) {
            break;
        }
        heap.swap(i, j);
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(labels: &[(&str, &str)], values: &[Option<f64>]) -> Series {
        Series {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn sum_by_a_label_groups_and_drops_the_others() {
        let input = [
            series(
                &[("__name__", "x"), ("job", "a"), ("i", "1")],
                &[Some(1.0), None],
            ),
            series(
                &[("__name__", "x"), ("job", "a"), ("i", "2")],
                &[Some(2.0), Some(5.0)],
            ),
            series(
                &[("__name__", "x"), ("job", "b"), ("i", "1")],
                &[Some(4.0), Some(6.0)],
            ),
        ];
        let by = Grouping::By(vec!["job".into()]);
        let out = aggregate(AggregateOp::Sum, &by, None, &input, 2).unwrap();
        assert_eq!(out[0].labels, vec![("job".to_string(), "a".to_string())]);
        assert_eq!(out[0].values, vec![Some(3.0), Some(5.0)]);
        assert_eq!(out[1].values, vec![Some(4.0), Some(6.0)]);
        let without = Grouping::Without(vec!["i".into()]);
        let out = aggregate(AggregateOp::Count, &without, None, &input, 2).unwrap();
        assert_eq!(out[0].values, vec![Some(2.0), Some(1.0)]);
    }

    #[test]
    fn topk_keeps_the_largest_with_their_labels() {
        let input: Vec<Series> = (0..5)
            .map(|i| series(&[("i", &i.to_string())], &[Some(f64::from(i % 3))]))
            .collect();
        let out = aggregate(
            AggregateOp::Topk,
            &Grouping::By(vec![]),
            Some(&[2.0]),
            &input,
            1,
        )
        .unwrap();
        let mut got: Vec<(String, f64)> = out
            .iter()
            .map(|s| (s.labels[0].1.clone(), s.values[0].unwrap()))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        // Of the two 1s, the first seen stays: a later equal value does not displace it.
        assert_eq!(got, vec![("1".into(), 1.0), ("2".into(), 2.0)]);
        let out = aggregate(
            AggregateOp::Bottomk,
            &Grouping::By(vec![]),
            Some(&[1.0]),
            &input,
            1,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].values[0], Some(0.0));
    }
}
