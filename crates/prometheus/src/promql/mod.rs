//! PromQL, parsed by `promql-parser` and evaluated here with Prometheus 2.x's semantics:
//! a grid of steps `start + k·step`, a 5-minute lookback that a stale marker ends, `rate`'s
//! extrapolation and counter resets, `__name__` dropped by functions and arithmetic.
//!
//! Evaluation is in two halves so that this crate does no I/O: [`selections`] says which
//! series and time ranges an expression reads; the caller fetches them from the store
//! ([`Fetched`]); [`evaluate`] computes the value at every step from those.
//!
//! - `depth`: the bound on a query's nesting, checked before it is parsed; `names`:
//!   Prometheus 2.x's names of functions the parser knows by their Prometheus 3 name;
//! - `value`: grids, series, values; `select`: selectors and lookback; `anchor`: the
//!   `@` modifier and `offset`;
//! - `eval`: the walk over the expression; `range_eval`: range vectors (selectors and
//!   subqueries) windowed at each step, `sliding` the extremes of a sliding window;
//!   `subquery`: a subquery's own steps; `history`: windows that reach back before a
//!   series' raw points, read from its rollup slots;
//!   `binary`, `aggregate`, `functions`, `range_functions`, `histogram`: the operators
//!   and functions.

mod aggregate;
mod anchor;
mod binary;
mod depth;
mod eval;
mod functions;
mod histogram;
mod history;
mod names;
mod range_eval;
mod range_functions;
mod select;
mod sliding;
mod subquery;
mod value;

pub use depth::{MAX_NESTING, MAX_OPERATORS};
pub use history::POINT_WINDOW_SLOTS as HISTORY_LEAD_SLOTS;
pub use promql_parser::parser::Expr;
pub use select::{matches_all, selections, Fetched, Selection, SelectorId, LOOKBACK_MS};
pub use subquery::DEFAULT_SUBQUERY_STEP_MS;
pub use value::{Grid, History, RawSeries, Series, Slot, Value};

use thiserror::Error;
use tickertape_core::{Exhausted, QueryBudget};

/// Why a query has no answer. The API answers `BadData` and `Unsupported` with 400
/// (`bad_data`), `Execution` with 422 (`execution`), as Prometheus does.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PromqlError {
    #[error("{0}")]
    BadData(String),
    /// Valid PromQL that tickertape does not evaluate; the message names it.
    #[error("{0} is not supported by tickertape")]
    Unsupported(String),
    #[error("{0}")]
    Execution(String),
    /// The query's budget refused a charge: too many values per step over all series,
    /// or its client has gone.
    #[error("{0}")]
    Budget(#[from] Exhausted),
}

impl PromqlError {
    pub(crate) fn unsupported(what: &str) -> Self {
        Self::Unsupported(what.to_string())
    }
}

/// Parses a query; a syntax error is `BadData` with the parser's message. Prometheus
/// 2.x's `holt_winters` is read as the parser's `double_exponential_smoothing` (the
/// same function). A function the parser does not know is `Unsupported`, named. A
/// query nested deeper than [`MAX_NESTING`] or with more than [`MAX_OPERATORS`] is
/// `BadData` naming the limit, before the parser sees it: so every tree this returns is
/// shallow enough for the evaluator's recursion.
pub fn parse(query: &str) -> Result<Expr, PromqlError> {
    depth::check(query)?;
    promql_parser::parser::parse(&names::current_names(query)).map_err(|message| {
        let message = names::in_query_names(query, message);
        match message.strip_prefix("unknown function with name ") {
            Some(name) => {
                PromqlError::Unsupported(format!("the function {}()", name.trim_matches('\'')))
            }
            None => PromqlError::BadData(message),
        }
    })
}

/// The value of `expr` at every step of `grid`, from the store's answers to its
/// [`selections`] (over the same grid). Every value a step holds, of every series of
/// every subexpression, is charged to `budget` as it is made (an empty step too: it
/// takes its memory), so a range query over many series stops at the budget; so is a
/// subquery's every own step, before it is evaluated, so that no subquery (nested, or
/// selecting nothing) goes past the budget unseen.
pub fn evaluate(
    expr: &Expr,
    grid: &Grid,
    data: &Fetched,
    budget: &QueryBudget,
) -> Result<Value, PromqlError> {
    eval::Evaluator {
        grid: *grid,
        query: *grid,
        data,
        budget,
    }
    .eval(expr)
}

#[cfg(test)]
mod tests;
