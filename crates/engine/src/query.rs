//! A query as the interfaces give it (range, selector, step, aggregate, chart options)
//! and its validation. How it is read for a measurement's schema: `plan.rs`.

use crate::EngineError;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::SeriesSelector;

/// A query, as `GET /api/v1/query` and `tickertape query` take it.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub selector: SeriesSelector,
    /// Inclusive, nanoseconds.
    pub start: i64,
    /// Exclusive, nanoseconds.
    pub end: i64,
    /// Window width in nanoseconds; needs `agg`.
    pub step: Option<i64>,
    pub agg: Option<Aggregate>,
    /// Also return the last point before `start` and the first at or after `end`.
    pub neighbors: bool,
    /// Force the resolution windows are summed by (`raw`, or a rollup that divides `step`).
    pub resolution: Option<ResolutionOrRaw>,
    /// Let the engine pick `step` (and the resolution) so that each series gets at most
    /// this many points; excludes `step`.
    pub max_points: Option<usize>,
    /// How a counter's windows are shown (MMS's controls); implies `agg=sum`.
    pub display: Option<CounterDisplay>,
}

/// `display=` for counters: the count per window, or the count per second of the window
/// (the window's part inside the range, for the two windows the range cuts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterDisplay {
    Total,
    AvgPerSec,
}

impl CounterDisplay {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "total" => Some(Self::Total),
            "avg_per_sec" => Some(Self::AvgPerSec),
            _ => None,
        }
    }
}

impl Query {
    /// A raw query over `[start, end)`.
    pub fn raw(selector: SeriesSelector, start: i64, end: i64) -> Self {
        Self {
            selector,
            start,
            end,
            step: None,
            agg: None,
            neighbors: false,
            resolution: None,
            max_points: None,
            display: None,
        }
    }

    /// The aggregate the windows use: `agg`, or `sum` under a counter `display`.
    pub(crate) fn effective_agg(&self) -> Option<Aggregate> {
        match self.display {
            Some(_) => Some(Aggregate::Sum),
            None => self.agg,
        }
    }
}

impl Query {
    pub(crate) fn validate(&self) -> Result<(), EngineError> {
        if self.start >= self.end {
            return Err(EngineError::BadQuery(format!(
                "start ({}) must be before end ({})",
                self.start, self.end
            )));
        }
        if self.display.is_some() && self.agg.is_some_and(|a| a != Aggregate::Sum) {
            return Err(EngineError::BadQuery(
                "display shows a counter's sums: give display or agg, not both".into(),
            ));
        }
        if self.step.is_some() && self.effective_agg().is_none() {
            return Err(EngineError::BadQuery(
                "step needs agg (avg, min, max, sum, count, first or last)".into(),
            ));
        }
        if self.neighbors && (self.effective_agg().is_some() || self.max_points.is_some()) {
            return Err(EngineError::BadQuery(
                "neighbors applies to raw points, not to agg or max_points".into(),
            ));
        }
        match self.max_points {
            Some(_) if self.step.is_some() => Err(EngineError::BadQuery(
                "max_points picks the step itself: give step or max_points, not both".into(),
            )),
            Some(n) if n < 2 => Err(EngineError::BadQuery(format!(
                "max_points must be at least 2, not {n}"
            ))),
            _ => Ok(()),
        }
    }
}
