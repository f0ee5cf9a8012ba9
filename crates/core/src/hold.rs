//! Reading a change-only series (`change_only = true`: a value equal to the previous one
//! is not stored).
//!
//! Such a series stores a point only when its value changes, so a stored point means "from
//! here on the value is v". Read as it was written, a chart of it would have holes
//! wherever the value merely held. The rules here turn the stored changes back into the
//! signal the writer saw:
//!
//! - The value in force at any time is the last stored point at or before it; it holds
//!   until the next change, and at most until "now" (the store cannot know the future, and
//!   a writer that stopped reporting looks like one whose value holds).
//! - A window without a stored change answers the held value, reported at the window's
//!   start like every window (`agg` without `step`: at the range's start).
//! - A window whose first change comes after its start also had the held value before
//!   that change: it is taken in as a point at the window's start, so `min`, `max` and
//!   `first` see it, and `avg` is the mean of the values the series took in the window
//!   (one each: the held one and every change), not weighted by how long each held.
//! - `count` and `sum` are not held: they answer over the stored changes only (`count` is
//!   the number of changes).
//!
//! Holding works on window summaries after the rollup-or-raw choice, and both paths give
//! identical summaries, so the answer still does not depend on the resolution read.

use crate::model::Point;
use crate::query::{Aggregate, Summary};
use crate::time::window_start;

/// Windows filled with a held value in one series' answer, at most; past it a query asks
/// for a larger step (`max_points` never comes near it).
pub const MAX_HELD_WINDOWS: u64 = 1_000_000;

/// Whether `agg` answers with the held value (see the module docs).
pub fn holds(agg: Aggregate) -> bool {
    !matches!(agg, Aggregate::Count | Aggregate::Sum)
}

/// A query that would fill more than [`MAX_HELD_WINDOWS`] windows of one series.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a step of {step} ns gives about {windows} windows per series, and a change-only \
     measurement answers every one of them (at most {MAX_HELD_WINDOWS}): use a larger step \
     or max_points"
)]
pub struct TooManyWindows {
    pub step: i64,
    pub windows: u64,
}

/// Applies the hold rules to `windows` (the non-empty windows of `[start, end)` at `step`,
/// as [`crate::query::window_summaries`] gives them, in time order).
///
/// `held` is the value in force at `start` (the last stored point before it), if any;
/// windows are filled up to, not including, `until` (the smaller of the range's end and
/// just after "now"). Stored windows at or after `until` pass through unchanged.
pub fn hold_windows(
    windows: Vec<(i64, Summary)>,
    mut held: Option<f64>,
    start: i64,
    until: i64,
    step: i64,
) -> Result<Vec<(i64, Summary)>, TooManyWindows> {
    let first = window_start(start, step);
    let fillable = if until > first {
        (until as i128 - first as i128) as u128 / step.max(1) as u128 + 1
    } else {
        0
    };
    if held.is_some() || !windows.is_empty() {
        let fillable = u64::try_from(fillable).unwrap_or(u64::MAX);
        if fillable > MAX_HELD_WINDOWS {
            return Err(TooManyWindows {
                step,
                windows: fillable,
            });
        }
    }
    let mut out = Vec::with_capacity(windows.len());
    let mut stored = windows.into_iter().peekable();
    let mut w = first;
    loop {
        let at = w.max(start);
        match stored.next_if(|(sw, _)| *sw == w) {
            Some((sw, summary)) => {
                let summary = with_held_start(summary, held, at);
                held = Some(summary.last.value);
                out.push((sw, summary));
            }
            None => {
                if let (Some(v), true) = (held, w < until) {
                    out.push((w, Summary::of(Point::new(at, v))));
                }
            }
        }
        // Step window by window while there is something to fill, else jump to the next
        // stored window.
        let next = w.checked_add(step).filter(|n| held.is_some() && *n < until);
        w = match (next, stored.peek()) {
            (Some(n), Some((sw, _))) => n.min(*sw),
            (Some(n), None) => n,
            (None, Some((sw, _))) => *sw,
            (None, None) => break,
        };
    }
    Ok(out)
}

/// The hold rules for a single reduction over `[start, end)` (`agg` without `step`):
/// `summary` is that of the stored points in the range. `until` as for [`hold_windows`].
pub fn hold_range(
    summary: Option<Summary>,
    held: Option<f64>,
    start: i64,
    until: i64,
) -> Option<Summary> {
    match summary {
        Some(s) => Some(with_held_start(s, held, start)),
        None if start < until => held.map(|v| Summary::of(Point::new(start, v))),
        None => None,
    }
}

/// `summary` with the held value taken in at `at`, when its first change comes later.
fn with_held_start(summary: Summary, held: Option<f64>, at: i64) -> Summary {
    match held {
        Some(v) if summary.first.time > at => {
            let mut with_held = Summary::of(Point::new(at, v));
            with_held.merge(&summary);
            with_held
        }
        _ => summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{answer_windows, point_window_summaries};
    use proptest::prelude::*;

    fn p(time: i64, value: f64) -> Point {
        Point::new(time, value)
    }

    /// The hold rules from first principles: the full signal at every tick of `tick` ns
    /// (the value in force), which is what a writer without the filter would have stored
    /// when it reported every tick and its first report was a change.
    fn answer_by_ticks(
        changes: &[Point],
        held: Option<f64>,
        start: i64,
        until: i64,
        step: i64,
        agg: Aggregate,
    ) -> Vec<Point> {
        let mut signal = Vec::new();
        let mut value = held;
        let mut i = 0;
        for t in start..until {
            while i < changes.len() && changes[i].time <= t {
                value = Some(changes[i].value);
                i += 1;
            }
            if let Some(v) = value {
                signal.push(p(t, v));
            }
        }
        answer_windows(&point_window_summaries(&signal, start, until, step), agg)
    }

    #[test]
    fn empty_windows_answer_the_held_value() {
        // Changes at 3 (to 1.0) and 25 (to 2.0); windows of 10 over [0, 40).
        let changes = [p(3, 1.0), p(25, 2.0)];
        let windows = point_window_summaries(&changes, 0, 40, 10);
        let held = hold_windows(windows, None, 0, 40, 10).unwrap();
        let avg = answer_windows(&held, Aggregate::Avg);
        assert_eq!(avg, vec![p(0, 1.0), p(10, 1.0), p(20, 1.5), p(30, 2.0)]);
        let min = answer_windows(&held, Aggregate::Min);
        assert_eq!(min, vec![p(0, 1.0), p(10, 1.0), p(20, 1.0), p(30, 2.0)]);
        let first = answer_windows(&held, Aggregate::First);
        assert_eq!(first, vec![p(0, 1.0), p(10, 1.0), p(20, 1.0), p(30, 2.0)]);
    }

    #[test]
    fn the_value_before_the_range_holds_into_it_and_stops_at_until() {
        let windows = point_window_summaries(&[], 100, 200, 10);
        let held = hold_windows(windows, Some(7.0), 105, 131, 10).unwrap();
        let last = answer_windows(&held, Aggregate::Last);
        // The window the range starts in is reported at its start, like every window.
        assert_eq!(
            last,
            vec![p(100, 7.0), p(110, 7.0), p(120, 7.0), p(130, 7.0)]
        );
    }

    #[test]
    fn nothing_is_held_before_the_first_change() {
        let changes = [p(25, 2.0)];
        let windows = point_window_summaries(&changes, 0, 40, 10);
        let held = hold_windows(windows, None, 0, 40, 10).unwrap();
        assert_eq!(
            answer_windows(&held, Aggregate::Max),
            vec![p(20, 2.0), p(30, 2.0)]
        );
    }

    #[test]
    fn stored_windows_past_until_pass_through() {
        let changes = [p(5, 1.0), p(45, 3.0)];
        let windows = point_window_summaries(&changes, 0, 60, 10);
        let held = hold_windows(windows, None, 0, 20, 10).unwrap();
        assert_eq!(
            answer_windows(&held, Aggregate::Max),
            vec![p(0, 1.0), p(10, 1.0), p(40, 3.0)]
        );
    }

    #[test]
    fn a_step_too_small_for_the_range_is_refused() {
        let err = hold_windows(Vec::new(), Some(1.0), 0, i64::MAX, 1).unwrap_err();
        assert!(err.to_string().contains("larger step"), "{err}");
        // Nothing to hold and nothing stored: nothing to fill, no refusal.
        assert_eq!(hold_windows(Vec::new(), None, 0, i64::MAX, 1), Ok(vec![]));
    }

    #[test]
    fn a_single_reduction_holds_too() {
        assert_eq!(
            hold_range(None, Some(4.0), 10, 20),
            Some(Summary::of(p(10, 4.0)))
        );
        assert_eq!(hold_range(None, Some(4.0), 10, 10), None);
        let stored = Summary::of(p(15, 6.0));
        let held = hold_range(Some(stored), Some(4.0), 10, 20).unwrap();
        assert_eq!((held.min, held.max, held.count), (4.0, 6.0, 2));
    }

    proptest! {
        /// Holding the stored changes answers what the unfiltered signal answers, for
        /// min, max, first and last (which do not depend on how often the writer
        /// reported), on windows of any width.
        #[test]
        fn held_changes_answer_like_the_full_signal(
            values in proptest::collection::vec((1i64..6, 0u8..4), 0..12),
            held in proptest::option::of(0u8..4),
            start in 0i64..20,
            len in 1i64..80,
            step in 1i64..15,
            agg in prop_oneof![
                Just(Aggregate::Min), Just(Aggregate::Max),
                Just(Aggregate::First), Just(Aggregate::Last)
            ],
        ) {
            // Changes at increasing times from `start`, each a different value than the
            // one before (that is what the filter stores).
            let mut changes = Vec::new();
            let mut t = start;
            let mut last = held.map(f64::from);
            for (gap, v) in values {
                t += gap;
                let v = f64::from(v);
                if last != Some(v) {
                    changes.push(p(t, v));
                    last = Some(v);
                }
            }
            let until = start + len;
            let windows = point_window_summaries(&changes, start, until, step);
            let got = hold_windows(windows, held.map(f64::from), start, until, step).unwrap();
            let expected = answer_by_ticks(&changes, held.map(f64::from), start, until, step, agg);
            // Every window at its start, first and last included, so the answers compare
            // point for point.
            prop_assert_eq!(answer_windows(&got, agg), expected);
        }
    }
}
