//! Subqueries, `expr[range:step]`: an instant-vector expression evaluated at steps of its
//! own, whose values become samples a range function (or an instant query's answer)
//! reads as it reads stored ones.
//!
//! As Prometheus 2.42 evaluates them: the inner steps are the multiples of `step` since
//! the epoch from `range` before the first time the outer steps look at (`@` and
//! `offset` applied, see `anchor`) up to the last; one evaluation of the inner expression
//! covers every outer step, the range function then takes each outer step's window
//! `[t - range, t]` of those samples. Selectors inside look back from each inner step
//! as they do from a query's steps (5 minutes, a stale marker ends a series).

use super::anchor::Anchor;
use super::eval::Evaluator;
use super::select::millis;
use super::value::{Grid, RawSeries, Series, Value};
use super::PromqlError;
use promql_parser::parser::SubqueryExpr;

/// The step of a subquery written without one (`x[1h:]`): Prometheus takes its global
/// evaluation interval, one minute unless configured otherwise, as its test suite does.
pub const DEFAULT_SUBQUERY_STEP_MS: i64 = 60_000;

/// The inner steps of a subquery of `range` and `step` (ms, `step` positive) whose
/// outer steps look at `[first, last]`: the multiples of `step` in
/// `[first - range, last]`. Empty when that holds no multiple.
pub(crate) fn inner_grid(first: i64, last: i64, range: i64, step: i64) -> Grid {
    let from = first.saturating_sub(range);
    let down = from.div_euclid(step).saturating_mul(step);
    let start = match down < from {
        true => down.saturating_add(step),
        false => down,
    };
    Grid {
        start,
        end: last,
        step,
    }
}

impl Evaluator<'_> {
    /// The subquery's series, each with its values at the inner steps as samples;
    /// series without any value are left out. The inner steps are charged to the
    /// budget before anything of them is evaluated: they bound what every inner node
    /// allocates per step, so a subquery of millions of steps is refused before it
    /// takes memory, whatever it selects.
    pub(crate) fn subquery(&self, sq: &SubqueryExpr) -> Result<Vec<RawSeries>, PromqlError> {
        let step = sq.step.as_ref().map_or(DEFAULT_SUBQUERY_STEP_MS, millis);
        if step <= 0 {
            return Err(PromqlError::BadData(format!(
                "the step of a subquery must be positive, not {step}ms"
            )));
        }
        let anchor = Anchor::new(&sq.at, &sq.offset, &self.query);
        let (first, last) = anchor.span(self.grid.start, self.grid.end);
        let grid = inner_grid(first, last, millis(&sq.range), step);
        self.budget.charge_points(grid.len())?;
        let inner = Evaluator {
            grid,
            query: self.query,
            data: self.data,
            budget: self.budget,
        };
        let series = match inner.eval(&sq.expr)? {
            Value::Vector(v) => v,
            Value::Scalar(values) => vec![Series {
                labels: Vec::new(),
                values: values.into_iter().map(Some).collect(),
            }],
            _ => {
                return Err(PromqlError::Execution(
                    "a subquery takes an instant vector or a scalar".into(),
                ))
            }
        };
        Ok(series
            .into_iter()
            .map(|s| RawSeries {
                samples: s
                    .values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.map(|v| (grid.time(i), v)))
                    .collect(),
                labels: s.labels,
                history: None,
            })
            .filter(|s| !s.samples.is_empty())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_steps_are_multiples_of_the_step_inside_the_range() {
        // At 1010 s, [30s:10s] offset 3s: 977..=1007 s holds 980, 990, 1000.
        let g = inner_grid(1_007_000, 1_007_000, 30_000, 10_000);
        assert_eq!((g.start, g.end, g.len()), (980_000, 1_007_000, 3));
        // An aligned start is kept: [50s:10s] at 10 s is -40..=10 s.
        let g = inner_grid(10_000, 10_000, 50_000, 10_000);
        assert_eq!((g.start, g.len()), (-40_000, 6));
        // Before the epoch, still multiples: -50 s with a 15 s step starts at -45 s.
        assert_eq!(inner_grid(10_000, 10_000, 60_000, 15_000).start, -45_000);
        // A range shorter than the step may hold no step at all.
        assert!(inner_grid(1_006_000, 1_006_000, 5_000, 10_000).is_empty());
    }
}
