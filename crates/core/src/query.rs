//! Query operators over one series' points, sorted by time: range selection with
//! neighbours, and aggregation over aligned windows.
//!
//! Ranges are `[start, end)`: inclusive start, exclusive end, nanoseconds.

use crate::budget::{Exhausted, QueryBudget};
use crate::model::{is_stale_marker, Point};
use crate::time::window_start;
use std::fmt;
use std::str::FromStr;

/// The aggregates a query can ask for (`agg=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aggregate {
    Avg,
    Min,
    Max,
    Sum,
    Count,
    First,
    Last,
}

impl Aggregate {
    pub const ALL: [Aggregate; 7] = [
        Self::Avg,
        Self::Min,
        Self::Max,
        Self::Sum,
        Self::Count,
        Self::First,
        Self::Last,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Avg => "avg",
            Self::Min => "min",
            Self::Max => "max",
            Self::Sum => "sum",
            Self::Count => "count",
            Self::First => "first",
            Self::Last => "last",
        }
    }
}

impl fmt::Display for Aggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Aggregate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown aggregate {s:?}: expected one of avg, min, max, sum, count, first, last"))
    }
}

/// The smaller of `kept` and `new`, keeping `kept` on a tie — as MongoDB's `$min` does.
///
/// `f64::min` is not used because which zero it returns for `min(0.0, -0.0)` is left to
/// the platform (debug and release builds differ), and stored rollups must have the same
/// bits on every backend and every build. Line protocol has no NaN; a NaN from Prometheus
/// remote write is kept where it stands unless it comes first (stale markers are never
/// summarised: [`point_window_summaries`]).
pub fn keep_min(kept: f64, new: f64) -> f64 {
    if new < kept {
        new
    } else {
        kept
    }
}

/// The larger of `kept` and `new`, keeping `kept` on a tie (MongoDB's `$max`); see
/// [`keep_min`].
pub fn keep_max(kept: f64, new: f64) -> f64 {
    if new > kept {
        new
    } else {
        kept
    }
}

/// Running summary of a set of points: enough to answer every [`Aggregate`], and to merge
/// with another summary. Rollup buckets store exactly these fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    pub first: Point,
    pub last: Point,
}

impl Summary {
    pub fn of(point: Point) -> Self {
        Self {
            count: 1,
            sum: point.value,
            min: point.value,
            max: point.value,
            first: point,
            last: point,
        }
    }

    /// Every field as bits (times as their two's-complement bits): two summaries are the
    /// same, bit for bit, when these are equal — what the rollup guarantee compares, with
    /// `-0.0` and `0.0` told apart.
    pub fn to_bits(&self) -> [u64; 8] {
        [
            self.count,
            self.sum.to_bits(),
            self.min.to_bits(),
            self.max.to_bits(),
            self.first.time as u64,
            self.first.value.to_bits(),
            self.last.time as u64,
            self.last.value.to_bits(),
        ]
    }

    /// Adds a point later than every point already summarised.
    pub fn push(&mut self, point: Point) {
        self.count += 1;
        self.sum += point.value;
        self.min = keep_min(self.min, point.value);
        self.max = keep_max(self.max, point.value);
        self.last = point;
    }

    /// Folds in the summary of another set of points: counts add, `sum` becomes
    /// `self.sum + other.sum` (in that order), and `first`/`last` keep the earlier and the
    /// later point. On a tie `first` stays `self`'s and `last` becomes `other`'s, as if
    /// `other`'s points had been [`push`](Self::push)ed after `self`'s.
    ///
    /// Merging the summaries of consecutive runs of points gives the same count, min, max,
    /// first and last as pushing the points one by one; the sum can differ in its last bits
    /// (float addition is not associative), see `crate::rollup` for how rollups deal with it.
    pub fn merge(&mut self, other: &Summary) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = keep_min(self.min, other.min);
        self.max = keep_max(self.max, other.max);
        if other.first.time < self.first.time {
            self.first = other.first;
        }
        if other.last.time >= self.last.time {
            self.last = other.last;
        }
    }

    /// The aggregate's value.
    pub fn value(&self, agg: Aggregate) -> f64 {
        match agg {
            Aggregate::Avg => self.sum / self.count as f64,
            Aggregate::Min => self.min,
            Aggregate::Max => self.max,
            Aggregate::Sum => self.sum,
            Aggregate::Count => self.count as f64,
            Aggregate::First => self.first.value,
            Aggregate::Last => self.last.value,
        }
    }

    /// The answer of a whole range reduced to one point (`agg` without `step`): reported
    /// at the range's `start`, except `first` and `last`, at the chosen point's own time
    /// (so `agg=last` answers "the latest point", TSBS's lastpoint). A window is
    /// reported at its start whatever the aggregate: [`answer_windows`].
    pub fn range_answer(&self, agg: Aggregate, start: i64) -> Point {
        match agg {
            Aggregate::First => self.first,
            Aggregate::Last => self.last,
            _ => Point::new(start, self.value(agg)),
        }
    }
}

/// The points of `sorted` in `[start, end)`, plus — when `neighbors` — the last point
/// before `start` and the first at or after `end`, when they exist.
pub fn select_range(sorted: &[Point], start: i64, end: i64, neighbors: bool) -> Vec<Point> {
    let lo = sorted.partition_point(|p| p.time < start);
    let hi = sorted.partition_point(|p| p.time < end).max(lo);
    let lo_n = if neighbors && lo > 0 { lo - 1 } else { lo };
    let hi_n = if neighbors && hi < sorted.len() {
        hi + 1
    } else {
        hi
    };
    sorted[lo_n..hi_n].to_vec()
}

/// Aggregates the points of `sorted` in `[start, end)` over windows of `step` ns aligned to
/// multiples of `step` since the epoch. Each window is reported at its start, for every
/// aggregate (`first` and `last` too, as InfluxDB's `GROUP BY time()` does), so that
/// the windows of several aggregates or series fall on the same times. Empty windows are
/// left out.
pub fn aggregate_windows(
    sorted: &[Point],
    start: i64,
    end: i64,
    step: i64,
    agg: Aggregate,
) -> Vec<Point> {
    answer_windows(&point_window_summaries(sorted, start, end, step), agg)
}

/// The window summaries [`aggregate_windows`] answers from. Stale markers (Prometheus'
/// end-of-series NaN, [`is_stale_marker`]) are no values and are left out, here and in
/// every summary of points: rollups, ranges, windows.
pub fn point_window_summaries(
    sorted: &[Point],
    start: i64,
    end: i64,
    step: i64,
) -> Vec<(i64, Summary)> {
    let points = values_in_range(sorted, start, end);
    window_summaries(points.map(|&p| (p.time, Summary::of(p))), step)
}

/// Merges time-ordered `(time, summary)` items into windows of `step` ns aligned to the
/// epoch, left to right: one `(window start, summary)` per non-empty window, in time
/// order. Raw points (one summary each) and rollup slots go through this same fold, so
/// both sum in one order.
pub fn window_summaries(
    items: impl Iterator<Item = (i64, Summary)>,
    step: i64,
) -> Vec<(i64, Summary)> {
    let mut out: Vec<(i64, Summary)> = Vec::new();
    for (time, summary) in items {
        let w = window_start(time, step);
        match out.last_mut() {
            Some((cw, s)) if *cw == w => s.merge(&summary),
            _ => out.push((w, summary)),
        }
    }
    out
}

/// `agg` of each window of [`window_summaries`], reported at the window's start.
pub fn answer_windows(windows: &[(i64, Summary)], agg: Aggregate) -> Vec<Point> {
    windows
        .iter()
        .map(|(w, s)| Point::new(*w, s.value(agg)))
        .collect()
}

/// The summary of the points of `sorted` in `[start, end)`, stale markers left out;
/// `None` when there are none.
pub fn summarize_range(sorted: &[Point], start: i64, end: i64) -> Option<Summary> {
    let mut points = values_in_range(sorted, start, end);
    let mut summary = Summary::of(*points.next()?);
    for &p in points {
        summary.push(p);
    }
    Some(summary)
}

/// Reduces the points of `sorted` in `[start, end)` to one, reported at `start`
/// (`first`/`last`: at the point's own time, [`Summary::range_answer`]). `None` when the
/// range is empty.
pub fn aggregate_all(sorted: &[Point], start: i64, end: i64, agg: Aggregate) -> Option<Point> {
    summarize_range(sorted, start, end).map(|s| s.range_answer(agg, start))
}

/// The points of `sorted` in `[start, end)` that are values (not stale markers).
fn values_in_range(sorted: &[Point], start: i64, end: i64) -> impl Iterator<Item = &Point> {
    let lo = sorted.partition_point(|p| p.time < start);
    let hi = sorted.partition_point(|p| p.time < end).max(lo);
    sorted[lo..hi].iter().filter(|p| !is_stale_marker(p.value))
}

/// `points` without stale markers: what tickertape's own API shows of a series.
pub fn without_stale_markers(mut points: Vec<Point>) -> Vec<Point> {
    points.retain(|p| !is_stale_marker(p.value));
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pts(times: &[i64]) -> Vec<Point> {
        times.iter().map(|&t| Point::new(t, t as f64)).collect()
    }

    #[test]
    fn range_is_half_open_with_optional_neighbours() {
        let p = pts(&[10, 20, 30, 40]);
        let times = |v: Vec<Point>| v.iter().map(|p| p.time).collect::<Vec<_>>();
        assert_eq!(times(select_range(&p, 20, 40, false)), vec![20, 30]);
        assert_eq!(times(select_range(&p, 20, 40, true)), vec![10, 20, 30, 40]);
        assert_eq!(times(select_range(&p, 21, 29, false)), Vec::<i64>::new());
        assert_eq!(times(select_range(&p, 21, 29, true)), vec![20, 30]);
        assert_eq!(times(select_range(&p, 50, 60, true)), vec![40]);
    }

    #[test]
    fn windows_report_their_start_and_skip_empty_ones() {
        let p = pts(&[0, 5, 9, 25, 27]);
        assert_eq!(
            aggregate_windows(&p, 0, 100, 10, Aggregate::Sum),
            vec![Point::new(0, 14.0), Point::new(20, 52.0)]
        );
        assert_eq!(
            aggregate_windows(&p, 0, 100, 10, Aggregate::Last),
            vec![Point::new(0, 9.0), Point::new(20, 27.0)],
            "first and last too, at the window's start"
        );
        assert_eq!(
            aggregate_windows(&p, 0, 100, 10, Aggregate::First),
            vec![Point::new(0, 0.0), Point::new(20, 25.0)]
        );
        assert_eq!(
            aggregate_all(&p, 1, 26, Aggregate::Count),
            Some(Point::new(1, 3.0))
        );
        assert_eq!(
            aggregate_all(&p, 1, 26, Aggregate::First),
            Some(Point::new(5, 5.0))
        );
        assert_eq!(aggregate_all(&p, 30, 40, Aggregate::Max), None);
    }

    proptest! {
        /// Every aggregate over windows equals the same aggregate computed naively per window.
        #[test]
        fn windows_match_naive_grouping(
            mut times in proptest::collection::btree_set(-1_000i64..1_000, 0..60),
            step in 1i64..200,
            start in -1_100i64..1_100,
            len in 0i64..2_200,
        ) {
            let times: Vec<i64> = std::mem::take(&mut times).into_iter().collect();
            let points = pts(&times);
            let end = start + len;
            for agg in Aggregate::ALL {
                let got = aggregate_windows(&points, start, end, step, agg);
                let mut expected = Vec::new();
                let mut groups: std::collections::BTreeMap<i64, Vec<Point>> = Default::default();
                for p in points.iter().filter(|p| p.time >= start && p.time < end) {
                    groups.entry(p.time.div_euclid(step) * step).or_default().push(*p);
                }
                for (w, g) in groups {
                    let vals: Vec<f64> = g.iter().map(|p| p.value).collect();
                    expected.push(match agg {
                        Aggregate::Avg => Point::new(w, vals.iter().sum::<f64>() / vals.len() as f64),
                        Aggregate::Min => Point::new(w, vals.iter().cloned().fold(f64::INFINITY, f64::min)),
                        Aggregate::Max => Point::new(w, vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
                        Aggregate::Sum => Point::new(w, vals.iter().sum()),
                        Aggregate::Count => Point::new(w, vals.len() as f64),
                        Aggregate::First => Point::new(w, vals[0]),
                        Aggregate::Last => Point::new(w, vals[vals.len() - 1]),
                    });
                }
                prop_assert_eq!(got, expected);
            }
        }
    }
}

/// The times of a merge and each series' value at each of them.
pub type TimeAxis = (Vec<i64>, Vec<Vec<Option<f64>>>);

/// Several series on one time axis (`merge=true`, for charting several series together):
/// the sorted union of their times, and for each series its value at each of those times,
/// `None` where it has no point. Each input must be sorted by time with unique times.
pub fn merge_on_time_axis(series: &[Vec<Point>]) -> TimeAxis {
    match merge_on_time_axis_within(series, &QueryBudget::unlimited()) {
        Ok(merged) => merged,
        Err(e) => unreachable!("an unlimited budget refused a charge: {e}"),
    }
}

/// [`merge_on_time_axis`], its columns (a slot per series and time, present or not)
/// charged to `budget` before they are made: series with few points at different times
/// make series × times slots.
pub fn merge_on_time_axis_within(
    series: &[Vec<Point>],
    budget: &QueryBudget,
) -> Result<TimeAxis, Exhausted> {
    let mut times: Vec<i64> = series.iter().flatten().map(|p| p.time).collect();
    times.sort_unstable();
    times.dedup();
    budget.charge_points(series.len().saturating_mul(times.len()))?;
    let columns = series
        .iter()
        .map(|points| {
            let mut next = points.iter().peekable();
            times
                .iter()
                .map(|&t| next.next_if(|p| p.time == t).map(|p| p.value))
                .collect()
        })
        .collect();
    Ok((times, columns))
}

#[cfg(test)]
mod merge_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gaps_become_none() {
        let a = vec![Point::new(1, 1.0), Point::new(3, 3.0)];
        let b = vec![Point::new(2, 20.0), Point::new(3, 30.0)];
        let (times, columns) = merge_on_time_axis(&[a, b]);
        assert_eq!(times, vec![1, 2, 3]);
        assert_eq!(columns[0], vec![Some(1.0), None, Some(3.0)]);
        assert_eq!(columns[1], vec![None, Some(20.0), Some(30.0)]);
    }

    proptest! {
        /// Every point appears exactly once, at its own time; nothing else is filled in.
        #[test]
        fn merge_keeps_every_point_and_only_them(
            sets in proptest::collection::vec(proptest::collection::btree_set(-50i64..50, 0..20), 0..5)
        ) {
            let series: Vec<Vec<Point>> = sets
                .iter()
                .map(|s| s.iter().map(|&t| Point::new(t, t as f64)).collect())
                .collect();
            let (times, columns) = merge_on_time_axis(&series);
            prop_assert!(times.windows(2).all(|w| w[0] < w[1]));
            for (set, column) in sets.iter().zip(&columns) {
                prop_assert_eq!(column.len(), times.len());
                for (t, v) in times.iter().zip(column) {
                    prop_assert_eq!(v.is_some(), set.contains(t));
                }
            }
        }
    }
}
