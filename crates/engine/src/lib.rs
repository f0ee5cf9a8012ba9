//! The engine: what sits between the interfaces (HTTP, CLI) and a [`Backend`].
//!
//! - [`write`]: a line-protocol body becomes per-series batches; every refusal is tied
//!   to its line number. `samples`: series already decoded (Prometheus remote write)
//!   take the same pipeline after parsing.
//! - [`query`]: a query and its validation.
//! - `plan`: the read plan, decided once per query from the query and the measurement's
//!   schema: where each answer is read from (head, raw points, rollups, document totals).
//! - [`read`]: finds the series and executes the plan for each; `windows` reduces a
//!   range or its windows; `stored` reads what one series has stored.
//! - [`series_cache`]: series ids by the raw text of a line, so the hot path of ingest
//!   resolves a series with one hash lookup.
//! - [`series_limits`]: `--max-series` and `--max-series-per-measurement`, checked before
//!   a body registers new series.
//! - `samples_read`: raw points over a closed range with stale markers, for PromQL.
//! - [`key_limits`]: `--max-line-bytes`, `--max-tags`, `--max-name-bytes`,
//!   `--max-tag-value-bytes`: what one line and one new series may be.
//! - [`string_fields`]: `--string-fields`: string values skipped (counted, logged once per
//!   series) or refusing their line.
//! - [`names`]: the name store's tokens, cached (a token never changes once issued).
//! - [`cardinality`]: series counts by measurement, field, tag key and tag pair.
//! - [`maintenance`]: retention by whole partitions and bucket pre-allocation.
//! - `delete`: a selection's points deleted over a range, emptied series removed.
//! - `databases`: the database an engine works in (a namespace of measurement names),
//!   the others, creating and dropping them.

mod batch_read;
pub mod cardinality;
mod databases;
mod delete;
pub mod history;
pub mod key_limits;
mod listing;
pub mod maintenance;
pub mod names;
mod parse;
mod plan;
pub mod query;
pub mod read;
mod retention_policies;
mod rollup_source;
mod samples;
mod samples_read;
pub mod series_cache;
pub mod series_limits;
mod side_by_side;
mod stale;
mod store_admin;
mod stored;
pub mod string_fields;
mod windows;
pub mod write;

pub use key_limits::KeyLimits;
use names::NameCache;
pub use series_limits::SeriesLimits;
use std::sync::Arc;
use string_fields::SkipLog;
pub use string_fields::StringFields;
use thiserror::Error;
use tickertape_backend::{Backend, BackendError, SegmentRollupPlan};
use tickertape_core::schema::{Layout, MeasurementSchema, Schema};
use tickertape_core::time::{Clock, SystemClock};
pub use tickertape_core::{Exhausted, QueryBudget};

pub use cardinality::Cardinality;
pub use databases::DEFAULT_DATABASE;
pub use delete::DeleteReport;
pub use history::SeriesHistory;
pub use listing::Listing;
pub use maintenance::{ExpiredPartition, RebuildReport, RetentionReport};
pub use query::{CounterDisplay, Query};
pub use read::SeriesPoints;
pub use samples::{SeriesRef, SeriesSamples};
pub use write::{LineError, WriteMode, WriteReport};

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A query parameter that cannot be answered; the message names it.
    #[error("{0}")]
    BadQuery(String),
    /// A query wider than a limit ([`QueryLimits`]); the message names the limit, its
    /// value and how to narrow a query of the own API (another API words its own advice
    /// from [`OverLimit::what`]).
    #[error("{0}")]
    OverLimit(OverLimit),
    /// A request named a database that does not exist (InfluxDB 1.x's words).
    #[error("database not found: {0:?}")]
    UnknownDatabase(String),
    /// A retention policy statement refused, or a request naming a policy its database
    /// does not have (InfluxDB 1.x's words).
    #[error(transparent)]
    RetentionPolicy(#[from] tickertape_core::retention_policy::PolicyError),
    /// The query's client went away; its work stopped ([`QueryBudget::cancel_on_drop`]).
    #[error("{}", Exhausted::Cancelled)]
    Cancelled,
}

/// A query's [`QueryBudget`] refused a charge: the limit it went past, named as the
/// other limits are, or the client's departure.
impl From<Exhausted> for EngineError {
    fn from(e: Exhausted) -> Self {
        match e {
            Exhausted::Points { limit } => Self::OverLimit(OverLimit::Points { limit }),
            Exhausted::Bytes { limit } => Self::OverLimit(OverLimit::Bytes { limit }),
            Exhausted::Cancelled => Self::Cancelled,
        }
    }
}

/// Which of the [`QueryLimits`] a query went past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverLimit {
    /// It selects `selected` series, more than `limit`.
    Series { selected: usize, limit: usize },
    /// It produces more than `limit` points (rows and filled windows included).
    Points { limit: usize },
    /// Its answer takes more than `limit` bytes.
    Bytes { limit: usize },
}

impl OverLimit {
    /// What went past which limit and the option that sets it, without advice.
    pub fn what(&self) -> String {
        match self {
            Self::Series { selected, limit } => format!(
                "the query selects {selected} series, over the limit of {limit} series per \
                 query (--max-query-series)"
            ),
            Self::Points { limit } => format!(
                "the query produces more than the limit of {limit} points per query \
                 (--max-query-points)"
            ),
            Self::Bytes { limit } => format!(
                "the answer takes more than the limit of {limit} bytes per query \
                 (--max-response-bytes)"
            ),
        }
    }
}

/// The message of the own query API: what, and how to narrow it with its parameters.
impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let advice = match self {
            Self::Series { .. } => "narrow it with tag=KEY:VALUE or field=NAME",
            Self::Points { .. } | Self::Bytes { .. } => {
                "aggregate with step= and agg= (or max_points=), shorten the range, or select \
                 fewer series"
            }
        };
        write!(f, "{}: {advice}", self.what())
    }
}

/// How wide a query may be, so that one request cannot build an answer that exhausts
/// the server's memory (`tickertape serve --max-query-series/--max-query-points/
/// --max-response-bytes`). The points and bytes are one [`QueryBudget`] per request
/// ([`Engine::budget`]), charged by every query language as it produces them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLimits {
    /// Series one query may select.
    pub max_series: usize,
    /// Points (and rows) one request may produce, over all its series and statements:
    /// points read, windows computed (filled ones too), PromQL's values per step.
    pub max_points: usize,
    /// Bytes one request's answer may take, as it is written (JSON, CSV, protobuf).
    pub max_response_bytes: usize,
}

impl QueryLimits {
    pub const DEFAULT_MAX_SERIES: usize = 200_000;
    /// 10 M. Prometheus' own default is 50 M samples, but here the widest shapes then
    /// peak at 1.7 GiB a request (InfluxQL's 9 M raw rows, against 329 MiB at 10 M;
    /// docs/BENCHMARKS.md, "Memory"): a row costs far more than the 16 bytes of a point.
    /// A 7-day Grafana panel over 1,000 series scraped every minute (10 M points) needs
    /// the flag raised.
    pub const DEFAULT_MAX_POINTS: usize = 10_000_000;
    /// 64 MiB: a chart or a Grafana panel takes a few MiB; a bigger answer is an export
    /// (`tickertape export`), and the server holds an answer whole while it sends it
    /// (beside the rows it was written from).
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

    /// No limit: for a caller that reads everything by design (an export).
    pub const UNLIMITED: Self = Self {
        max_series: usize::MAX,
        max_points: usize::MAX,
        max_response_bytes: usize::MAX,
    };
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            max_series: Self::DEFAULT_MAX_SERIES,
            max_points: Self::DEFAULT_MAX_POINTS,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// Yields to the runtime when `budget` says one is due ([`QueryBudget::yield_due`]):
/// long synchronous work inside a request's future calls it between steps, so that the
/// connection sees a client that has gone and drops the request (and the work). Tokio's
/// yield, which lets the runtime poll its I/O driver before running the task again.
pub async fn checkpoint(budget: &QueryBudget) {
    if budget.yield_due() {
        tokio::task::yield_now().await;
    }
}

/// The engine. Cheap to clone; clones share the backend and caches.
#[derive(Clone)]
pub struct Engine {
    backend: Arc<dyn Backend>,
    /// The database this engine works in, with its series cache.
    db: Arc<databases::View>,
    databases: Arc<databases::Databases>,
    names: Arc<NameCache>,
    clock: Arc<dyn Clock>,
    schema: Arc<Schema>,
    limits: QueryLimits,
    series_limits: SeriesLimits,
    key_limits: KeyLimits,
    string_fields: StringFields,
    skipped_strings: Arc<SkipLog>,
}

impl Engine {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Self::with_clock(backend, Arc::new(SystemClock))
    }

    pub fn with_clock(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>) -> Self {
        let databases = Arc::new(databases::Databases::new(default_database_name()));
        Self {
            backend,
            db: databases.default_view(),
            databases,
            names: Arc::new(NameCache::default()),
            clock,
            schema: Arc::new(Schema::default()),
            limits: QueryLimits::default(),
            series_limits: SeriesLimits::default(),
            key_limits: KeyLimits::default(),
            string_fields: StringFields::default(),
            skipped_strings: Arc::new(SkipLog::default()),
        }
        .offer_segment_rollups()
    }

    /// Now, by the engine's clock (ns): what a query's relative times are relative to.
    pub fn now_nanos(&self) -> i64 {
        self.clock.now_nanos()
    }

    /// A fresh budget for one request, of `--max-query-points` points and
    /// `--max-response-bytes` bytes: one per request, handed to every read and
    /// computation of it ([`Engine::query_with`], [`Engine::read_raw_with`]).
    pub fn budget(&self) -> QueryBudget {
        QueryBudget::new(self.limits.max_points, self.limits.max_response_bytes)
    }

    /// Refuses queries wider than `limits` (the defaults otherwise).
    pub fn with_query_limits(mut self, limits: QueryLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Refuses lines that would register series past `limits` (the defaults otherwise).
    pub fn with_series_limits(mut self, limits: SeriesLimits) -> Self {
        self.series_limits = limits;
        self
    }

    /// Refuses lines and new series past `limits` (the defaults otherwise).
    pub fn with_key_limits(mut self, limits: KeyLimits) -> Self {
        self.key_limits = limits;
        self
    }

    /// Skips string field values, or refuses their lines (skips by default).
    pub fn with_string_fields(mut self, strings: StringFields) -> Self {
        self.string_fields = strings;
        self
    }

    /// Uses `schema` for every measurement it lists (the default for the others).
    pub fn with_schema(mut self, schema: Schema) -> Self {
        self.schema = Arc::new(schema);
        self.offer_segment_rollups()
    }

    /// Tells the backend which rollups each value-segment measurement keeps: the backend
    /// derives them from the points it holds (`Backend::derive_segment_rollups`).
    fn offer_segment_rollups(self) -> Self {
        let schema = Arc::clone(&self.schema);
        // The backend names a measurement by its stored name, whatever its database.
        let plan: SegmentRollupPlan = Arc::new(move |stored: &str| {
            let m = schema.for_measurement(tickertape_core::database::split_stored(stored).1);
            match m.layout {
                Layout::Segments => m.rollups.clone(),
                Layout::Buckets { .. } => Vec::new(),
            }
        });
        self.backend.derive_segment_rollups(plan);
        self
    }

    /// Whether the engine writes and reads the rollups of measurements of this schema as
    /// bucket rollups: those of bucket measurements, updated with every write. The
    /// backend derives those of value segments (`Backend::read_segment_rollup`).
    pub(crate) fn writes_rollups_of(&self, schema: &MeasurementSchema) -> bool {
        schema.layout != Layout::Segments
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }
}

/// [`DEFAULT_DATABASE`], checked.
fn default_database_name() -> tickertape_core::database::DatabaseName {
    match tickertape_core::database::DatabaseName::new(DEFAULT_DATABASE) {
        Ok(name) => name,
        Err(e) => unreachable!("{e}"),
    }
}
