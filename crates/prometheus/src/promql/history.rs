//! Windows that reach back before a series' raw points, where the store's retention has
//! dropped them and only the series' rollup slots are left (its [`History`]).
//!
//! A window that starts at or after the raw points is evaluated as Prometheus does, on
//! the raw samples, bit for bit. One that reaches before them is read from the slots:
//!
//! - `avg`, `sum`, `count`, `min`, `max`, `last` and `present_over_time` combine the
//!   summaries of the slots that end inside the window, `(end - range, end]`, with the
//!   raw samples in it. At whole slots (`avg_over_time(x[1h])` at whole hours over 1h
//!   slots) that is exactly each slot's summary: what the own API's `step=1h` answers
//!   for the hour before. A sum adds the slots' sums, a mean divides that by their count.
//! - every other function, instant selectors and `timestamp()` see each slot's first and
//!   last points as the series' samples: a counter's `rate` is its rise between them.
//! - a window shorter than the slots would seldom hold a slot's end or two of those
//!   points, and a chart would go blank: it is widened to one slot for the summaries, to
//!   two slots for the other functions, and an instant selector looks back one slot
//!   instead of five minutes.

use super::range_functions::{extreme_of, kahan_sum};
use super::select::LOOKBACK_MS;
use super::value::{History, RawSeries};

/// Range functions answered from slot summaries where a window reaches before the raw
/// points.
pub(crate) fn from_summaries(name: &str) -> bool {
    matches!(
        name,
        "avg_over_time"
            | "sum_over_time"
            | "count_over_time"
            | "min_over_time"
            | "max_over_time"
            | "last_over_time"
            | "present_over_time"
    )
}

/// Slots a window of the functions over points is widened to: two points a slot apart
/// at least (a rate needs two). A store answering with slots reads this many before a
/// selection's start, for the first step's widened window.
pub const POINT_WINDOW_SLOTS: i64 = 2;

/// How one series' windows are widened where they reach before its raw points.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Widening {
    raw_from: i64,
    /// The longest slot of the history.
    slot: i64,
}

impl Widening {
    /// `None` for a series read from raw points throughout (and a computed one).
    pub(crate) fn of(series: &RawSeries) -> Option<Self> {
        let history = series.history.as_ref()?;
        let slot = history.slots.iter().map(|s| s.end - s.start).max()?;
        Some(Self {
            raw_from: history.raw_from,
            slot,
        })
    }

    /// Whether the window `[end - range, end]` reaches before the raw points.
    pub(crate) fn reaches(&self, end: i64, range: i64) -> bool {
        end.saturating_sub(range) < self.raw_from
    }

    /// The range a summary function's window reaching before the raw points takes.
    pub(crate) fn summary_range(&self, range: i64) -> i64 {
        range.max(self.slot)
    }

    /// The range a function over points takes when its window reaches before the raw
    /// points.
    pub(crate) fn point_range(&self, range: i64) -> i64 {
        range.max(self.slot.saturating_mul(POINT_WINDOW_SLOTS))
    }

    /// An instant selector's lookback at `t`: a slot where it reaches before the raw
    /// points, else Prometheus' five minutes.
    pub(crate) fn lookback(this: Option<Self>, t: i64) -> i64 {
        match this {
            Some(w) if w.reaches(t, LOOKBACK_MS) => LOOKBACK_MS.max(w.slot),
            _ => LOOKBACK_MS,
        }
    }
}

/// A summary function ([`from_summaries`]) over the slots of `history` that end in
/// `(end - range, end]` and the raw samples (of `samples`, in time order, without stale
/// markers) in `[end - range, end]`; `None` when there are neither.
pub(crate) fn summarized(
    name: &str,
    history: &History,
    samples: &[(i64, f64)],
    end: i64,
    range: i64,
) -> Option<f64> {
    let start = end.saturating_sub(range);
    let slots = between(&history.slots, |s| s.end <= start, |s| s.end <= end);
    let raw_start = start.max(history.raw_from);
    let raw = between(samples, |&(t, _)| t < raw_start, |&(t, _)| t <= end);
    if slots.is_empty() && raw.is_empty() {
        return None;
    }
    let count = || slots.iter().map(|s| s.count).sum::<u64>() + raw.len() as u64;
    let sum = || kahan_sum(slots.iter().map(|s| s.sum).chain(raw.iter().map(|s| s.1)));
    Some(match name {
        "count_over_time" => count() as f64,
        "sum_over_time" => sum(),
        "avg_over_time" => sum() / count() as f64,
        "min_over_time" => extreme_of(
            slots.iter().map(|s| s.min).chain(raw.iter().map(|s| s.1)),
            |v, m| v < m,
        )?,
        "max_over_time" => extreme_of(
            slots.iter().map(|s| s.max).chain(raw.iter().map(|s| s.1)),
            |v, m| v > m,
        )?,
        "last_over_time" => match raw.last() {
            Some(&(_, v)) => v,
            None => slots.last()?.last.1,
        },
        "present_over_time" => 1.0,
        _ => return None,
    })
}

/// The items of `sorted` after those `before` and up to those `upto` (empty when the
/// first bound lies past the second).
fn between<T>(sorted: &[T], before: impl Fn(&T) -> bool, upto: impl Fn(&T) -> bool) -> &[T] {
    let hi = sorted.partition_point(upto);
    &sorted[sorted.partition_point(before).min(hi)..hi]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::promql::value::Slot;

    const HOUR: i64 = 3_600_000;

    fn slot(start: i64, values: &[(i64, f64)]) -> Slot {
        let vs = values.iter().map(|p| p.1);
        Slot {
            start,
            end: start + HOUR,
            count: values.len() as u64,
            sum: vs.clone().sum(),
            min: vs.clone().fold(f64::INFINITY, f64::min),
            max: vs.fold(f64::NEG_INFINITY, f64::max),
            first: values[0],
            last: values[values.len() - 1],
        }
    }

    /// Two hourly slots, then raw samples from the third hour.
    fn series() -> RawSeries {
        let history = History {
            slots: vec![
                slot(0, &[(0, 1.0), (1_000, 5.0), (HOUR - 1, 3.0)]),
                slot(HOUR, &[(HOUR + 10, 2.0), (HOUR + 20, 4.0)]),
            ],
            raw_from: 2 * HOUR,
        };
        RawSeries::with_history(
            vec![],
            history,
            vec![(2 * HOUR, 7.0), (2 * HOUR + 60_000, 8.0)].into_iter(),
        )
    }

    #[test]
    fn samples_are_each_slots_first_and_last_points_then_the_raw_ones() {
        let s = series();
        let times: Vec<i64> = s.samples.iter().map(|p| p.0).collect();
        assert_eq!(
            times,
            [
                0,
                HOUR - 1,
                HOUR + 10,
                HOUR + 20,
                2 * HOUR,
                2 * HOUR + 60_000
            ]
        );
    }

    #[test]
    fn a_whole_slot_window_answers_the_slot() {
        let s = series();
        let h = s.history.as_ref().unwrap();
        // The window [0, 1h] takes the first slot only (it ends at 1h).
        let at = |name| summarized(name, h, &s.samples, HOUR, HOUR);
        assert_eq!(at("avg_over_time"), Some(3.0));
        assert_eq!(at("count_over_time"), Some(3.0));
        assert_eq!(at("max_over_time"), Some(5.0));
        assert_eq!(at("last_over_time"), Some(3.0));
        // Across the raw points' start: the second slot and the raw point at 2h.
        let across = |name| summarized(name, h, &s.samples, 2 * HOUR, HOUR);
        assert_eq!(across("sum_over_time"), Some(13.0));
        assert_eq!(across("min_over_time"), Some(2.0));
        assert_eq!(across("last_over_time"), Some(7.0));
        // Before any slot ends: nothing.
        assert_eq!(
            summarized("count_over_time", h, &s.samples, HOUR - 1, HOUR),
            None
        );
    }

    #[test]
    fn only_windows_before_the_raw_points_are_widened() {
        let w = Widening::of(&series()).unwrap();
        assert!(w.reaches(2 * HOUR + 60_000, 5 * 60_000));
        assert!(!w.reaches(2 * HOUR + 5 * 60_000, 5 * 60_000));
        assert_eq!(w.point_range(5 * 60_000), 2 * HOUR);
        assert_eq!(w.summary_range(3 * HOUR), 3 * HOUR);
        assert_eq!(Widening::lookback(Some(w), HOUR), HOUR);
        assert_eq!(Widening::lookback(Some(w), 3 * HOUR), LOOKBACK_MS);
        assert_eq!(Widening::lookback(None, HOUR), LOOKBACK_MS);
    }

    /// Hourly slots of the points before `raw_from`, the raw points after: what a store
    /// answers once its raw retention has dropped the earlier points.
    fn with_slots(points: &[(i64, f64)], raw_from: i64) -> RawSeries {
        let mut slots: Vec<Slot> = Vec::new();
        for &(t, v) in points.iter().filter(|p| p.0 < raw_from) {
            let start = t.div_euclid(HOUR) * HOUR;
            match slots.last_mut() {
                Some(s) if s.start == start => {
                    s.count += 1;
                    s.sum += v;
                    s.min = s.min.min(v);
                    s.max = s.max.max(v);
                    s.last = (t, v);
                }
                _ => slots.push(slot(start, &[(t, v)])),
            }
        }
        let raw: Vec<(i64, f64)> = points.iter().copied().filter(|p| p.0 >= raw_from).collect();
        RawSeries::with_history(vec![], History { slots, raw_from }, raw.into_iter())
    }

    fn eval(series: RawSeries, query: &str, grid: &crate::promql::Grid) -> Vec<Option<f64>> {
        let expr = crate::promql::parse(query).unwrap();
        let mut data = crate::promql::Fetched::new();
        for sel in crate::promql::selections(&expr, grid).unwrap() {
            data.insert(sel.id, vec![series.clone()]);
        }
        let budget = tickertape_core::QueryBudget::unlimited();
        match crate::promql::evaluate(&expr, grid, &data, &budget).unwrap() {
            crate::promql::Value::Vector(v) => v
                .into_iter()
                .next()
                .map_or(vec![None; grid.len()], |s| s.values),
            other => panic!("{other:?}"),
        }
    }

    /// The summary functions' answer from the points of `[start, end)`, or of `[start,
    /// end]` with `closed`.
    fn expected(
        name: &str,
        points: &[(i64, f64)],
        start: i64,
        end: i64,
        closed: bool,
    ) -> Option<f64> {
        let inside: Vec<f64> = points
            .iter()
            .filter(|p| p.0 >= start && (p.0 < end || (closed && p.0 == end)))
            .map(|p| p.1)
            .collect();
        let last = *inside.last()?;
        Some(match name {
            "count_over_time" => inside.len() as f64,
            "sum_over_time" => inside.iter().sum(),
            "avg_over_time" => inside.iter().sum::<f64>() / inside.len() as f64,
            "min_over_time" => inside.iter().copied().fold(f64::INFINITY, f64::min),
            "max_over_time" => inside.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            "last_over_time" => last,
            _ => 1.0,
        })
    }

    proptest::proptest! {
        /// Windows that start at or after the raw points answer what raw points give,
        /// bit for bit; whole-hour windows before them answer the hours' slots, points
        /// on the hour boundaries included.
        #[test]
        fn windows_before_the_raw_points_answer_their_slots(
            mut times in proptest::collection::btree_set(0i64..12 * 60, 1..200),
            on_hours in proptest::collection::vec(0i64..12, 0..6),
            values in proptest::collection::vec(-1000i32..1000, 220),
            raw_hours in 1i64..11,
            range_hours in 1i64..4,
            f in 0usize..7,
        ) {
            // Minutes, some on whole hours, as ms.
            times.extend(on_hours.iter().map(|h| h * 60));
            let points: Vec<(i64, f64)> = times
                .iter()
                .zip(&values)
                .map(|(m, v)| (m * 60_000, f64::from(*v) / 8.0))
                .collect();
            let name = ["avg_over_time", "sum_over_time", "count_over_time", "min_over_time",
                "max_over_time", "last_over_time", "present_over_time"][f];
            let raw_from = raw_hours * HOUR;
            let range = range_hours * HOUR;
            let grid = crate::promql::Grid { start: 0, end: 13 * HOUR, step: HOUR };
            let query = format!("{name}(x[{range_hours}h])");
            let raw = eval(RawSeries::new(vec![], points.clone()), &query, &grid);
            let sliced = eval(with_slots(&points, raw_from), &query, &grid);
            for (i, (got, raw)) in sliced.iter().zip(&raw).enumerate() {
                let t = grid.time(i);
                if t - range >= raw_from {
                    proptest::prop_assert_eq!(got.map(f64::to_bits), raw.map(f64::to_bits), "at {}", t);
                    continue;
                }
                let want = expected(name, &points, t - range, t, t >= raw_from);
                match (got, want) {
                    (Some(g), Some(w)) => proptest::prop_assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{} at {}: {} vs {}", name, t, g, w),
                    (g, w) => proptest::prop_assert_eq!(*g, w, "at {}", t),
                }
            }
        }
    }
}
