//! The storage backend trait: what tickertape stores and reads, in the domain's words.
//!
//! The engine speaks only to [`Backend`]; the embedded store and MongoDB implement it side by
//! side. Each backend gets the atomicity it needs its own way (one transaction per batch for
//! the embedded store, the seeds' conditional single-document updates on MongoDB), but both
//! give the guarantees written on each method, and both pass the conformance suite in
//! `crates/conformance`.
//!
//! Times are `i64` nanoseconds since the Unix epoch; ranges are inclusive on both ends
//! unless a method says otherwise.
//!
//! Still to come here (DESIGN §3, issue 4): time buckets (`apply_bucket_updates`,
//! `read_buckets`, `preallocate`), partitions (`list_partitions`, `drop_partition`) and the
//! name store (`tokenize`). They are added as new methods; the ones below keep their shape.

use async_trait::async_trait;
use thiserror::Error;
use tickertape_core::segment::Segment;
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};

/// What can go wrong in a backend, with the distinctions callers act on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The store cannot be reached or refuses service now; retrying later may work (HTTP 503).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A local I/O or database error. The embedded backend refuses every later write
    /// after one (sticky failure) until it is reopened.
    #[error("storage error: {0}")]
    Storage(String),
    /// Stored bytes that do not decode.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A bad argument from the caller (names the argument).
    #[error("invalid request: {0}")]
    Invalid(String),
}

pub type Result<T, E = BackendError> = std::result::Result<T, E>;

/// A registered series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesInfo {
    pub id: SeriesId,
    pub key: SeriesKey,
}

/// A series' latest stored point (the seed's `lastDate`/`lastValue` on the series head).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeriesHead {
    pub last: Point,
    /// Points stored in the series so far.
    pub count: u64,
}

/// Points to append to one series.
///
/// Invariant the caller keeps: `points` is non-empty and strictly increasing in time.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesAppend {
    pub series: SeriesId,
    pub points: Vec<Point>,
}

/// What became of one [`SeriesAppend`].
///
/// Points at or before the series' last stored time are refused; since the batch is
/// strictly increasing they form a prefix: `points[..refused]` were refused and
/// `points[refused..]` stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendOutcome {
    pub refused: usize,
    /// The series' last stored time before this append, when it refused anything.
    pub last_time: Option<i64>,
}

/// Space used by a store, for `bench` and `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Bytes the store occupies (file sizes; data + index bytes on MongoDB).
    pub bytes: u64,
    pub segments: u64,
    pub series: u64,
}

/// A storage backend. Implementations are shared between tasks (`Arc<dyn Backend>`).
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// A short name for logs and errors: `embedded`, `mongodb`.
    fn kind(&self) -> &'static str;

    /// The id of each key, registering the keys not seen before. Ids are stable forever:
    /// the same key gets the same id from every client, across restarts, also when
    /// several writers register it at once.
    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>>;

    /// Every registered series the selector matches, in id order.
    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>>;

    /// Appends each series' points to its value segments, rolling over to a new segment
    /// when one is full and sealing the full one into a compressed block.
    ///
    /// Returns one outcome per append, in order. When this returns `Ok`, every point not
    /// refused is durable (survives a crash of the process or the machine) and readable.
    /// On `Err`, no point of the call may be reported as stored; some may have been
    /// (a later append of the same points then refuses them as out of order).
    /// Several appends to the same series in one call are applied in order.
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<Vec<AppendOutcome>>;

    /// The segments of `series` that may hold points in `[start, end]` (both inclusive) or
    /// the nearest point before `start` or after `end` — see
    /// [`Segment::may_overlap`] — sorted by `prev_end`.
    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>>;

    /// The latest stored point of each series (`None` for a series with no point yet).
    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>>;

    /// Space used, as well as the backend can tell.
    async fn stats(&self) -> Result<StorageStats>;
}
