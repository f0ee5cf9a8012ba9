//! When a selector or a subquery looks: at each step's time, or at the one time its `@`
//! modifier pins, moved back by its `offset`.
//!
//! Prometheus 2.42 rewrites `@` into an offset relative to the query's start and evaluates
//! the pinned part once; the answer is the same as looking at `@`'s time minus the offset
//! at every step, which is what this says directly. `@ <t> offset <d>` and
//! `offset <d> @ <t>` are the same modifier. `@ start()` and `@ end()` are the whole
//! query's start and end, also inside subqueries (whose own steps are elsewhere).

use super::select::{millis, offset_ms};
use super::value::Grid;
use promql_parser::parser::{AtModifier, Offset};
use std::time::UNIX_EPOCH;

/// A selector's or subquery's `@` and `offset`, resolved to milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// The time `@` pins, if any.
    pinned: Option<i64>,
    /// `offset` (negative for `offset -5m`).
    offset: i64,
}

impl Anchor {
    /// `query` is the whole query's grid, whose start and end `@ start()` and `@ end()`
    /// name.
    pub(crate) fn new(at: &Option<AtModifier>, offset: &Option<Offset>, query: &Grid) -> Self {
        Self {
            pinned: at.as_ref().map(|at| at_ms(at, query)),
            offset: offset_ms(offset),
        }
    }

    /// The time looked at for the step at `step_time`: the pinned time or the step's,
    /// less the offset (saturating: a huge offset looks at the beginning of time).
    pub(crate) fn time(&self, step_time: i64) -> i64 {
        self.pinned.unwrap_or(step_time).saturating_sub(self.offset)
    }

    /// The times looked at over the steps `[first, last]`, ends included.
    pub(crate) fn span(&self, first: i64, last: i64) -> (i64, i64) {
        (self.time(first), self.time(last))
    }
}

/// The time of an `@` modifier in milliseconds since the epoch (before it: negative).
fn at_ms(at: &AtModifier, query: &Grid) -> i64 {
    match at {
        AtModifier::Start => query.start,
        AtModifier::End => query.end,
        AtModifier::At(time) => match time.duration_since(UNIX_EPOCH) {
            Ok(after) => millis(&after),
            Err(before) => millis(&before.duration()).saturating_neg(),
        },
    }
}

/// `SystemTime` of `ms` since the epoch, for tests.
#[cfg(test)]
pub(crate) fn system_time(ms: i64) -> std::time::SystemTime {
    let d = std::time::Duration::from_millis(ms.unsigned_abs());
    match ms >= 0 {
        true => UNIX_EPOCH + d,
        false => UNIX_EPOCH - d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn at_pins_the_time_and_offset_moves_it_back() {
        let query = Grid {
            start: 10_000,
            end: 70_000,
            step: 30_000,
        };
        let offset = Some(Offset::Pos(Duration::from_secs(50)));
        let pinned = Anchor::new(&Some(AtModifier::At(system_time(100_000))), &offset, &query);
        assert_eq!(pinned.time(10_000), 50_000);
        assert_eq!(pinned.time(40_000), 50_000);
        let start = Anchor::new(&Some(AtModifier::Start), &None, &query);
        assert_eq!(start.span(40_000, 70_000), (10_000, 10_000));
        let end = Anchor::new(&Some(AtModifier::End), &None, &query);
        assert_eq!(end.time(10_000), 70_000);
        let back = Some(Offset::Neg(Duration::from_secs(50)));
        let before_epoch = Anchor::new(&Some(AtModifier::At(system_time(-1_500))), &back, &query);
        assert_eq!(before_epoch.time(0), 48_500);
        let free = Anchor::new(&None, &offset, &query);
        assert_eq!(free.span(100_000, 160_000), (50_000, 110_000));
        let far = Anchor::new(&None, &Some(Offset::Pos(Duration::MAX)), &query);
        assert_eq!(far.time(i64::MIN + 5), i64::MIN);
    }
}
