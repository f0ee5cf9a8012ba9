//! Selectors: which series and time ranges an expression reads (asked of the store before
//! evaluation, as Prometheus' engine does), and their values at each step.

use super::anchor::Anchor;
use super::history::Widening;
use super::value::{Grid, RawSeries, Series};
use super::PromqlError;
use promql_parser::label::Matcher;
use promql_parser::parser::{Expr, Offset, VectorSelector};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;
use tickertape_core::model::is_stale_marker;

/// Prometheus' default lookback: an instant selector sees a sample up to 5 minutes old.
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// What the store must answer for one selector: the series its matchers select, with
/// their samples in `[start, end]` (ms, both ends included), stale markers kept.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Identifies the selector in [`Fetched`].
    pub id: SelectorId,
    pub matchers: Vec<Matcher>,
    pub start: i64,
    pub end: i64,
}

/// A selector node of one parsed expression (its address: the expression is not moved
/// or changed between planning and evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelectorId(usize);

impl SelectorId {
    fn of(vs: &VectorSelector) -> Self {
        Self(vs as *const VectorSelector as usize)
    }
}

/// The store's answers, by selector. Series sorted by labels, as Prometheus' are.
pub type Fetched = HashMap<SelectorId, Vec<RawSeries>>;

pub(crate) fn offset_ms(offset: &Option<Offset>) -> i64 {
    match offset {
        None => 0,
        Some(Offset::Pos(d)) => millis(d),
        Some(Offset::Neg(d)) => -millis(d),
    }
}

pub(crate) fn millis(d: &Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Every selector of `expr` with the time range it reads over `grid`.
///
/// A selector reads from its lookback (or range) before the first time it looks at to
/// the last; inside a subquery, over the subquery's steps, which reach back its range
/// before the outer steps (each level's `@` and `offset` applied, as Prometheus' own
/// planning does), so a selector is read once for every level of steps it is evaluated
/// at.
pub fn selections(expr: &Expr, grid: &Grid) -> Result<Vec<Selection>, PromqlError> {
    let mut out = Vec::new();
    collect(expr, grid, (grid.start, grid.end), &mut out)?;
    Ok(out)
}

/// `span`: the first and last step times `expr` is evaluated at.
fn collect(
    expr: &Expr,
    query: &Grid,
    span: (i64, i64),
    out: &mut Vec<Selection>,
) -> Result<(), PromqlError> {
    match expr {
        Expr::VectorSelector(vs) => out.push(selection(vs, query, span, LOOKBACK_MS)?),
        Expr::MatrixSelector(ms) => out.push(selection(&ms.vs, query, span, millis(&ms.range))?),
        Expr::Aggregate(a) => {
            collect(&a.expr, query, span, out)?;
            if let Some(p) = &a.param {
                collect(p, query, span, out)?;
            }
        }
        Expr::Unary(u) => collect(&u.expr, query, span, out)?,
        Expr::Binary(b) => {
            collect(&b.lhs, query, span, out)?;
            collect(&b.rhs, query, span, out)?;
        }
        Expr::Paren(p) => collect(&p.expr, query, span, out)?,
        Expr::Call(c) => {
            for arg in &c.args.args {
                collect(arg, query, span, out)?;
            }
        }
        Expr::Subquery(sq) => {
            let (first, last) = Anchor::new(&sq.at, &sq.offset, query).span(span.0, span.1);
            let inner = (first.saturating_sub(millis(&sq.range)), last);
            collect(&sq.expr, query, inner, out)?;
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) => {}
        Expr::Extension(_) => return Err(PromqlError::unsupported("extension expressions")),
    }
    Ok(())
}

/// What `vs` reads when evaluated at the steps of `span`, looking `window` back.
fn selection(
    vs: &VectorSelector,
    query: &Grid,
    span: (i64, i64),
    window: i64,
) -> Result<Selection, PromqlError> {
    if !vs.matchers.or_matchers.is_empty() {
        return Err(PromqlError::unsupported("`or` inside a selector's braces"));
    }
    let (first, last) = Anchor::new(&vs.at, &vs.offset, query).span(span.0, span.1);
    let mut matchers = vs.matchers.matchers.clone();
    if let Some(name) = &vs.name {
        if !matchers
            .iter()
            .any(|m| m.name == crate::mapping::METRIC_NAME)
        {
            matchers.push(Matcher::new(
                promql_parser::label::MatchOp::Equal,
                crate::mapping::METRIC_NAME,
                name,
            ));
        }
    }
    Ok(Selection {
        id: SelectorId::of(vs),
        matchers,
        start: first.saturating_sub(window),
        end: last,
    })
}

/// The series of a selector in `data`.
pub(crate) fn fetched<'a>(data: &'a Fetched, vs: &VectorSelector) -> &'a [RawSeries] {
    data.get(&SelectorId::of(vs)).map_or(&[], Vec::as_slice)
}

/// An instant selector at every step: each series' latest sample in
/// `[t - lookback, t]`, `t` the time `anchor` looks at for the step, unless that sample
/// is a stale marker. Series without any value are left out. Where the lookback reaches
/// before a series' raw points, it is one of its rollup slots (`history`).
/// Series are evaluated side by side (`rayon`), each on its own.
pub(crate) fn instant_vector(raw: &[RawSeries], grid: &Grid, anchor: Anchor) -> Vec<Series> {
    raw.par_iter()
        .filter_map(|s| {
            let mut next = 0; // samples[..next] are at or before the step's time
            let widening = Widening::of(s);
            let values: Vec<Option<f64>> = (0..grid.len())
                .map(|i| {
                    let t = anchor.time(grid.time(i));
                    // Steps are usually many samples apart: a search, not a walk.
                    next += s.samples[next..].partition_point(|&(time, _)| time <= t);
                    let (time, value) = *s.samples.get(next.checked_sub(1)?)?;
                    let lookback = Widening::lookback(widening, t);
                    (time >= t.saturating_sub(lookback) && !is_stale_marker(value)).then_some(value)
                })
                .collect();
            values.iter().any(Option::is_some).then(|| Series {
                labels: s.labels.clone(),
                values,
            })
        })
        .collect()
}

/// For `timestamp()`: an instant selector at every step, each value the time (in
/// seconds) of the sample it selects.
pub(crate) fn sample_times(raw: &[RawSeries], grid: &Grid, anchor: Anchor) -> Vec<Series> {
    let timed: Vec<RawSeries> = raw
        .iter()
        .map(|s| RawSeries {
            labels: s.labels.clone(),
            samples: s
                .samples
                .iter()
                .map(|&(t, v)| {
                    (
                        t,
                        if is_stale_marker(v) {
                            v
                        } else {
                            t as f64 / 1000.0
                        },
                    )
                })
                .collect(),
            history: s.history.clone(),
        })
        .collect();
    instant_vector(&timed, grid, anchor)
}

/// The samples of `series` without stale markers: what range selectors see. Borrowed
/// when it has none (the usual case: a series ends with at most one), so that a range
/// function reads the store's answer without copying it.
pub(crate) fn without_stale(series: &RawSeries) -> Cow<'_, [(i64, f64)]> {
    if !series.samples.iter().any(|&(_, v)| is_stale_marker(v)) {
        return Cow::Borrowed(&series.samples);
    }
    Cow::Owned(
        series
            .samples
            .iter()
            .copied()
            .filter(|&(_, v)| !is_stale_marker(v))
            .collect(),
    )
}

/// Slides a window `[t - range, t]` over samples in time order, for increasing `t`.
pub(crate) struct WindowCursor<'a> {
    samples: &'a [(i64, f64)],
    lo: usize,
    hi: usize,
}

impl<'a> WindowCursor<'a> {
    pub(crate) fn new(samples: &'a [(i64, f64)]) -> Self {
        Self {
            samples,
            lo: 0,
            hi: 0,
        }
    }

    /// The samples in `[end - range, end]`; `end` must not decrease between calls.
    pub(crate) fn at(&mut self, end: i64, range: i64) -> &'a [(i64, f64)] {
        let start = end.saturating_sub(range);
        while self.hi < self.samples.len() && self.samples[self.hi].0 <= end {
            self.hi += 1;
        }
        while self.lo < self.hi && self.samples[self.lo].0 < start {
            self.lo += 1;
        }
        &self.samples[self.lo..self.hi]
    }
}

/// Whether a label set satisfies every matcher (a missing label is "").
pub fn matches_all(labels: &crate::mapping::Labels, matchers: &[Matcher]) -> bool {
    matchers
        .iter()
        .all(|m| m.is_match(super::value::label_value(labels, &m.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::model::STALE_NAN_BITS;

    fn series(samples: &[(i64, f64)]) -> RawSeries {
        RawSeries {
            labels: vec![("__name__".into(), "x".into())],
            samples: samples.to_vec(),
            history: None,
        }
    }

    #[test]
    fn an_instant_selector_looks_back_five_minutes_and_stops_at_a_stale_marker() {
        let stale = f64::from_bits(STALE_NAN_BITS);
        let raw = [series(&[(0, 1.0), (60_000, 2.0), (120_000, stale)])];
        let grid = Grid {
            start: 0,
            end: 600_000,
            step: 60_000,
        };
        let v = instant_vector(&raw, &grid, Anchor::new(&None, &None, &grid));
        assert_eq!(
            v[0].values,
            [
                Some(1.0),
                Some(2.0),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None
            ]
        );
        let raw = [series(&[(0, 1.0)])];
        let v = instant_vector(&raw, &grid, Anchor::new(&None, &None, &grid));
        // 300 s after the sample it is still seen (both ends included); at 360 s not.
        assert_eq!(v[0].values[5], Some(1.0));
        assert_eq!(v[0].values[6], None);
    }

    #[test]
    fn a_window_includes_both_ends() {
        let samples = [(0, 0.0), (10, 1.0), (20, 2.0), (30, 3.0)];
        let mut w = WindowCursor::new(&samples);
        assert_eq!(w.at(10, 10).len(), 2);
        assert_eq!(w.at(30, 10), &samples[2..]);
        assert_eq!(w.at(100, 10).len(), 0);
    }
}
