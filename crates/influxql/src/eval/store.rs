//! What the evaluator reads, and from whom: [`Store`], the one interface between
//! InfluxQL's evaluation and the storage behind it. The server implements it over its
//! engine; the evaluator decides what to read, the store only answers.

use std::future::Future;

use tickertape_core::query::Aggregate;
use tickertape_core::{Point, QueryBudget, SeriesKey, SeriesSelector};

/// A read of the series a selector picks: their raw points in `[start, end)`, or their
/// windows aggregated by the store.
#[derive(Clone, Debug)]
pub struct Read {
    pub selector: SeriesSelector,
    /// Inclusive, nanoseconds since the epoch.
    pub start: i64,
    /// Exclusive, nanoseconds since the epoch.
    pub end: i64,
    /// `(width, aggregate)`: windows of `width` ns from the epoch (UTC's), each the
    /// aggregate of its points, as the store keeps them (a rollup where one answers);
    /// `None`: the raw points.
    pub windows: Option<(i64, Aggregate)>,
    /// Also each series' last point before `start` and first at or after `end`.
    pub neighbors: bool,
}

impl Read {
    /// The raw points of `[start, end)`.
    pub fn raw(selector: SeriesSelector, start: i64, end: i64) -> Self {
        Self {
            selector,
            start,
            end,
            windows: None,
            neighbors: false,
        }
    }
}

/// One series' answer to a [`Read`]: its points (or windows, at their start), in time
/// order.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoints {
    pub key: SeriesKey,
    pub points: Vec<Point>,
}

/// The first names of a listing, sorted, and whether there were more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub names: Vec<String>,
    pub truncated: bool,
}

/// Why a store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The read went past one of the store's limits: `what` says which, and how it is
    /// set, without advice (a statement adds its own, [`ReadError::in_select`]).
    #[error("{source}")]
    OverLimit {
        what: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Anything else, with its cause.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

impl ReadError {
    /// The error as a `SELECT` answers it: a limit with the ways a `SELECT` is narrowed.
    pub fn in_select(&self) -> String {
        match self {
            Self::OverLimit { what, .. } => format!(
                "{what}: narrow it with tag conditions in WHERE, a shorter time range or a larger GROUP BY time() interval"
            ),
            other => other.to_string(),
        }
    }
}

/// The series, points and names a statement reads. Every method answers for one
/// database (the store's); reads are charged to the request's `budget` as they come.
///
/// The futures are `Send` so that a server can run the evaluation inside a request's
/// task.
pub trait Store: Sync {
    /// Now, in nanoseconds since the epoch: the time `now()` and open ranges mean.
    fn now_nanos(&self) -> i64;

    /// The answer of every series `read.selector` picks, sorted by series key; a series
    /// without a point to answer may be left out.
    fn read(
        &self,
        read: Read,
        budget: &QueryBudget,
    ) -> impl Future<Output = Result<Vec<SeriesPoints>, ReadError>> + Send;

    /// The keys of every series the selector picks, sorted.
    fn series(
        &self,
        selector: &SeriesSelector,
    ) -> impl Future<Output = Result<Vec<SeriesKey>, ReadError>> + Send;

    /// The first `limit` measurement names.
    fn measurements(&self, limit: usize) -> impl Future<Output = Result<Names, ReadError>> + Send;

    /// The first `limit` field names of `measurement`.
    fn fields(
        &self,
        measurement: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Names, ReadError>> + Send;

    /// The first `limit` tag keys of `measurement`.
    fn tag_keys(
        &self,
        measurement: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Names, ReadError>> + Send;

    /// The first `limit` values of the tag `key` in `measurement`.
    fn tag_values(
        &self,
        measurement: &str,
        key: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Names, ReadError>> + Send;

    /// Gives the runtime a turn: a request whose client has gone is dropped at this
    /// point. Called by [`checkpoint`] when the budget says a turn is due.
    fn yield_now(&self) -> impl Future<Output = ()> + Send;
}

/// A point between two pieces of synchronous work where the request may be dropped:
/// the store's yield, when the budget says enough work was done since the last one.
pub async fn checkpoint<S: Store>(store: &S, budget: &QueryBudget) {
    if budget.yield_due() {
        store.yield_now().await;
    }
}
