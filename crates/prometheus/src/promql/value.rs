//! What PromQL expressions evaluate to, over a grid of evaluation times.
//!
//! Every expression is evaluated at every step of the query at once (an instant query is a
//! grid of one step), as Prometheus' engine does: a vector is a list of series, each with
//! an optional value per step.

use crate::mapping::{Labels, METRIC_NAME};
use std::collections::HashMap;

/// Evaluation times in milliseconds: `start + k·step` for every `k` up to `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub start: i64,
    pub end: i64,
    /// At least 1.
    pub step: i64,
}

impl Grid {
    /// One evaluation at `time`.
    pub fn instant(time: i64) -> Self {
        Self {
            start: time,
            end: time,
            step: 1,
        }
    }

    /// How many steps: `(end - start) / step + 1`, none when `end < start` (a subquery
    /// whose range is shorter than its step can have no aligned step inside it).
    pub fn len(&self) -> usize {
        if self.end < self.start {
            return 0;
        }
        let steps = (i128::from(self.end) - i128::from(self.start)) / i128::from(self.step.max(1));
        usize::try_from(steps + 1).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The time of step `i`.
    pub fn time(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }
}

/// A selected series as stored: samples in time order, times in ms, stale markers kept.
///
/// A series whose raw points the store's retention has dropped before the range ends
/// also has a [`History`]: its rollup slots there, whose first and last points stand
/// in `samples` for the dropped ones (see [`RawSeries::with_history`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RawSeries {
    pub labels: Labels,
    pub samples: Vec<(i64, f64)>,
    pub history: Option<History>,
}

impl RawSeries {
    /// A series read from raw points throughout, or computed.
    pub fn new(labels: Labels, samples: Vec<(i64, f64)>) -> Self {
        Self {
            labels,
            samples,
            history: None,
        }
    }

    /// A series whose time before `history.raw_from` is known only from its rollup
    /// slots, followed by its raw samples (all at or after `raw_from`): the samples are
    /// each slot's first and last points, then the raw ones. Without slots, the raw
    /// samples alone.
    pub fn with_history(
        labels: Labels,
        history: History,
        raw: impl ExactSizeIterator<Item = (i64, f64)>,
    ) -> Self {
        if history.slots.is_empty() {
            return Self::new(labels, raw.collect());
        }
        let mut samples = Vec::with_capacity(2 * history.slots.len() + raw.len());
        for slot in &history.slots {
            samples.push(slot.first);
            if slot.last.0 != slot.first.0 {
                samples.push(slot.last);
            }
        }
        samples.extend(raw.filter(|&(t, _)| t >= history.raw_from));
        Self {
            labels,
            samples,
            history: Some(history),
        }
    }
}

/// A series' rollup slots where its raw points are gone: `[start, end)` of each slot
/// summarised, in time order, every slot ending at or before `raw_from`, where the raw
/// samples begin.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    pub slots: Vec<Slot>,
    pub raw_from: i64,
}

/// One rollup slot of a series: the summary of its points in `[start, end)` (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot {
    pub start: i64,
    pub end: i64,
    /// At least 1: a slot without a point is not stored.
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// The slot's first and last points, `(time, value)`.
    pub first: (i64, f64),
    pub last: (i64, f64),
}

/// One series of a vector: its labels and its value at each step, if it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub values: Vec<Option<f64>>,
}

/// The result of an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A value at every step.
    Scalar(Vec<f64>),
    Vector(Vec<Series>),
    /// A range selector's samples (an instant query of `x[5m]`: one step only).
    Matrix(Vec<RawSeries>),
    String(String),
}

/// `labels` without `__name__`.
pub fn drop_metric_name(labels: &Labels) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| k != METRIC_NAME)
        .cloned()
        .collect()
}

/// The value of label `name`, "" when absent.
pub fn label_value<'a>(labels: &'a Labels, name: &str) -> &'a str {
    labels
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Builds a vector step by step, merging outputs with the same labels into one series,
/// as Prometheus does: two values for the same labels at the same step are an error.
pub(crate) struct VectorBuilder {
    steps: usize,
    index: HashMap<Labels, usize>,
    series: Vec<Series>,
}

/// The error Prometheus gives when an operation leaves two series with one label set.
pub(crate) const SAME_LABELSET: &str = "vector cannot contain metrics with the same labelset";

impl VectorBuilder {
    pub(crate) fn new(steps: usize) -> Self {
        Self {
            steps,
            index: HashMap::new(),
            series: Vec::new(),
        }
    }

    /// Sets the value of `labels` at `step`; `Err` if it already has one.
    pub(crate) fn put(&mut self, labels: Labels, step: usize, value: f64) -> Result<(), String> {
        let steps = self.steps;
        let series = &mut self.series;
        let i = *self.index.entry(labels).or_insert_with_key(|labels| {
            series.push(Series {
                labels: labels.clone(),
                values: vec![None; steps],
            });
            series.len() - 1
        });
        let slot = &mut series[i].values[step];
        if slot.is_some() {
            return Err(SAME_LABELSET.to_string());
        }
        *slot = Some(value);
        Ok(())
    }

    /// Series made so far.
    pub(crate) fn len(&self) -> usize {
        self.series.len()
    }

    pub(crate) fn finish(self) -> Vec<Series> {
        self.series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_counts_its_ends() {
        let g = Grid {
            start: 0,
            end: 60_000,
            step: 15_000,
        };
        assert_eq!(g.len(), 5);
        assert_eq!(g.time(4), 60_000);
        assert_eq!(Grid::instant(7).len(), 1);
        let none = Grid {
            start: 10,
            end: 5,
            step: 10,
        };
        assert!(none.is_empty());
        let widest = Grid {
            start: i64::MIN,
            end: i64::MAX,
            step: 1,
        };
        assert_eq!(widest.len(), usize::MAX);
    }

    #[test]
    fn the_same_labels_at_the_same_step_are_refused() {
        let mut b = VectorBuilder::new(2);
        let l: Labels = vec![("a".into(), "1".into())];
        b.put(l.clone(), 0, 1.0).unwrap();
        b.put(l.clone(), 1, 2.0).unwrap();
        assert!(b.put(l, 1, 3.0).is_err());
        assert_eq!(b.finish()[0].values, vec![Some(1.0), Some(2.0)]);
    }
}
