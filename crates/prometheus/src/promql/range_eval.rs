//! Range vectors in the evaluator: a range selector's stored samples or a subquery's
//! computed ones, windowed at each step for the range functions, `absent_over_time`,
//! and an instant query's matrix answer.

use super::anchor::Anchor;
use super::eval::{unwrap_parens, Evaluator};
use super::history::{from_summaries, summarized, Widening};
use super::range_functions::{check_args, matrix_arg_index, scalar_arg_indices, RangeFn, Window};
use super::select::{self, fetched, millis, without_stale};
use super::sliding::SlidingExtreme;
use super::value::{drop_metric_name, RawSeries, Series, Value, SAME_LABELSET};
use super::PromqlError;
use crate::mapping::Labels;
use promql_parser::parser::Expr;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashSet;

/// Steps of a range function between two looks at the budget's cancellation.
const CHECK_EVERY_STEPS: usize = 64;

type Result<T> = std::result::Result<T, PromqlError>;

/// A range-vector argument, ready to be windowed: the window of the step at `t` is
/// `[anchor(t) - range, anchor(t)]`, both ends included (Prometheus 2.x).
pub(crate) struct RangeInput<'a> {
    series: Source<'a>,
    range: i64,
    anchor: Anchor,
}

enum Source<'a> {
    /// A range selector's series as the store answered them, stale markers kept.
    Stored(&'a [RawSeries]),
    /// A subquery's series: computed values, never a stale marker.
    Computed(Vec<RawSeries>),
}

impl RangeInput<'_> {
    fn series(&self) -> &[RawSeries] {
        match &self.series {
            Source::Stored(s) => s,
            Source::Computed(s) => s,
        }
    }

    /// The samples a window may see: without the stale markers.
    fn samples<'s>(&self, series: &'s RawSeries) -> Cow<'s, [(i64, f64)]> {
        match self.series {
            Source::Stored(_) => without_stale(series),
            Source::Computed(_) => Cow::Borrowed(&series.samples),
        }
    }

    /// Where the window of the step at `step_time` ends.
    fn end(&self, step_time: i64) -> i64 {
        self.anchor.time(step_time)
    }
}

impl<'a> Evaluator<'a> {
    /// `expr` as a range vector: a range selector (`x[5m]`) or a subquery (`x[5m:1m]`),
    /// in parentheses or not.
    pub(crate) fn range_input(&self, expr: &Expr) -> Result<RangeInput<'a>> {
        match unwrap_parens(expr) {
            Expr::MatrixSelector(ms) => Ok(RangeInput {
                series: Source::Stored(fetched(self.data, &ms.vs)),
                range: millis(&ms.range),
                anchor: Anchor::new(&ms.vs.at, &ms.vs.offset, &self.query),
            }),
            Expr::Subquery(sq) => Ok(RangeInput {
                series: Source::Computed(self.subquery(sq)?),
                range: millis(&sq.range),
                anchor: Anchor::new(&sq.at, &sq.offset, &self.query),
            }),
            _ => Err(PromqlError::Execution(
                "expected a range vector argument".into(),
            )),
        }
    }

    /// A range vector as a query's result (instant queries only): the samples of the
    /// window at the query's time. Not charged again: a selector's samples were charged
    /// when read, a subquery's as it computed them.
    pub(crate) fn range_result(&self, expr: &Expr) -> Result<Value> {
        if self.steps() != 1 {
            return Err(PromqlError::BadData(
                "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector".into(),
            ));
        }
        let input = self.range_input(expr)?;
        let end = input.end(self.grid.start);
        let start = end.saturating_sub(input.range);
        let mut out = Vec::new();
        for s in input.series() {
            let samples: Vec<(i64, f64)> = input
                .samples(s)
                .iter()
                .copied()
                .filter(|&(t, _)| t >= start && t <= end)
                .collect();
            if samples.is_empty() {
                continue;
            }
            out.push(RawSeries::new(s.labels.clone(), samples));
        }
        Ok(Value::Matrix(out))
    }

    /// `absent_over_time(r)`: 1 at the steps where no series of `r` has a sample in
    /// the window.
    pub(crate) fn absent_over_time(&self, arg: &Expr) -> Result<Value> {
        let input = self.range_input(arg)?;
        let mut present = vec![false; self.steps()];
        for raw in input.series() {
            self.budget.check()?;
            let samples = input.samples(raw);
            let mut window = select::WindowCursor::new(&samples);
            let widening = Widening::of(raw);
            for (i, p) in present.iter_mut().enumerate() {
                let end = input.end(self.grid.time(i));
                let range = match widening {
                    Some(w) if w.reaches(end, input.range) => w.point_range(input.range),
                    _ => input.range,
                };
                *p |= !window.at(end, range).is_empty();
            }
        }
        Ok(super::eval::absent_series(arg, &present))
    }

    /// A function of a range vector: each series' window at each step reduced to one
    /// value; the metric name dropped (but by `last_over_time`).
    pub(crate) fn range_call(&self, name: &str, f: RangeFn, args: &[&Expr]) -> Result<Value> {
        let Some(arg) = args.get(matrix_arg_index(name)) else {
            return Err(PromqlError::BadData(format!(
                "{name}() needs a range vector"
            )));
        };
        let input = self.range_input(arg)?;
        // The scalar arguments, each a value per step.
        let params: Vec<Vec<f64>> = scalar_arg_indices(name)
            .iter()
            .filter_map(|&i| args.get(i))
            .map(|a| self.scalar_arg(a))
            .collect::<Result<_>>()?;
        // Each series on its own, side by side (`rayon`); the order is kept.
        let out: Vec<Series> = input
            .series()
            .par_iter()
            .map(|raw| self.range_series(name, f, &input, &params, raw))
            .collect::<Result<Vec<Option<Series>>>>()?
            .into_iter()
            .flatten()
            .collect();
        let mut seen: HashSet<&Labels> = HashSet::new();
        if !out.iter().all(|s| seen.insert(&s.labels)) {
            return Err(PromqlError::Execution(SAME_LABELSET.into()));
        }
        Ok(Value::Vector(out))
    }

    /// One series of [`Self::range_call`]: its window at each step reduced by `f`;
    /// `None` when no step has a value.
    fn range_series(
        &self,
        name: &str,
        f: RangeFn,
        input: &RangeInput<'_>,
        params: &[Vec<f64>],
        raw: &RawSeries,
    ) -> Result<Option<Series>> {
        let mut step_params = vec![0.0; params.len()];
        // Each series' steps before they are computed: a long range over many
        // series stops here, and so does one whose client has gone.
        self.budget.charge_points(self.steps())?;
        let samples = input.samples(raw);
        let mut window = select::WindowCursor::new(&samples);
        let widening = Widening::of(raw);
        // The same answer as `f`, without a scan of each step's window.
        let mut extreme = match name {
            "max_over_time" => Some(SlidingExtreme::new(&samples, true)),
            "min_over_time" => Some(SlidingExtreme::new(&samples, false)),
            _ => None,
        };
        let mut values: Vec<Option<f64>> = Vec::with_capacity(self.steps());
        for i in 0..self.steps() {
            // A step may reduce a long window: a query whose client has gone stops
            // within a few of them.
            if i % CHECK_EVERY_STEPS == 0 {
                self.budget.check()?;
            }
            let end = input.end(self.grid.time(i));
            // Before the raw points, from the slots (`history`).
            let mut range = input.range;
            match (widening, &raw.history) {
                (Some(w), Some(h)) if w.reaches(end, range) && from_summaries(name) => {
                    values.push(summarized(name, h, &samples, end, w.summary_range(range)));
                    continue;
                }
                (Some(w), _) if w.reaches(end, range) => range = w.point_range(range),
                _ => {}
            }
            let inside = window.at(end, range);
            if inside.is_empty() {
                values.push(None);
                continue;
            }
            if let Some(extreme) = &mut extreme {
                values.push(extreme.at(end, range));
                continue;
            }
            for (p, values) in step_params.iter_mut().zip(params) {
                *p = values[i];
            }
            check_args(name, &step_params).map_err(PromqlError::Execution)?;
            let w = Window {
                samples: inside,
                range_start: end.saturating_sub(range),
                range_end: end,
                step_time: self.grid.time(i),
            };
            values.push(f(&w, &step_params));
        }
        if !values.iter().any(Option::is_some) {
            return Ok(None);
        }
        let labels = match name {
            "last_over_time" => raw.labels.clone(),
            _ => drop_metric_name(&raw.labels),
        };
        Ok(Some(Series { labels, values }))
    }
}
