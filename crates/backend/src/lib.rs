//! The storage backend trait: what tickertape stores and reads, in the domain's words.
//!
//! The engine speaks only to [`Backend`]; the embedded store and MongoDB implement it side by
//! side. Each backend gets the atomicity it needs its own way (one transaction per batch for
//! the embedded store, the seeds' conditional single-document updates on MongoDB), but both
//! give the guarantees written on each method, and both pass the conformance suite in
//! `crates/conformance`.
//!
//! Times are `i64` nanoseconds since the Unix epoch. Every range is half-open,
//! `[start, end)`: `start` inclusive, `end` exclusive, as the query API's.
//!
//! The contract is in the types where it can be: a [`SeriesAppend`], a [`BucketFamily`], a
//! [`Partition`] and a [`BucketWrite`] are checked when they are built, so a backend never
//! sees an invalid one and checks nothing again. What cannot be a type is written on each
//! method, and the in-memory reference backend (`crates/reference`) is that contract as
//! code: the conformance suite compares every backend with it.
//!
//! Three groups of methods: value segments and series (seed 000), time buckets with their
//! partitions ([`buckets`], seeds 001/003/004) and the name store ([`names`], seed 002).

pub mod buckets;
pub mod listing;
pub mod names;
pub mod partitions;

pub use buckets::{
    BucketFamily, BucketRange, BucketRead, BucketTotals, BucketWrite, BucketWriteOutcome,
    DocumentStart, Partition, SlotChange, SlotKind, SlotValue, StoredBucket,
};
pub use listing::{FirstNames, NameQuery};
pub use names::{NameSpace, TokenRequest, NAMES_PER_DOCUMENT};
pub use partitions::DocumentSpan;

use async_trait::async_trait;
use std::sync::Arc;
use thiserror::Error;
use tickertape_core::query::Summary;
use tickertape_core::rollup::Resolution;
use tickertape_core::segment::Segment;
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};

/// What can go wrong in a backend, with the distinctions callers act on.
#[derive(Clone, Debug, Error)]
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
    /// An append named a series id that was never registered ([`Backend::resolve_series`]).
    #[error("unknown series {0}: register it before appending to it")]
    UnknownSeries(SeriesId),
}

/// Why a [`SeriesAppend`] cannot be built.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AppendError {
    #[error("append to series {series}: no points")]
    Empty { series: SeriesId },
    #[error(
        "append to series {series}: point {index} at time {time} is not after time {previous}"
    )]
    NotIncreasing {
        series: SeriesId,
        index: usize,
        time: i64,
        previous: i64,
    },
}

impl From<AppendError> for BackendError {
    fn from(e: AppendError) -> Self {
        BackendError::Invalid(e.to_string())
    }
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
}

/// Points to append to one series.
///
/// Invariant, checked by [`SeriesAppend::new`]: `points` is non-empty and strictly
/// increasing in time.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesAppend {
    series: SeriesId,
    points: Vec<Point>,
}

impl SeriesAppend {
    pub fn new(series: SeriesId, points: Vec<Point>) -> Result<Self, AppendError> {
        if points.is_empty() {
            return Err(AppendError::Empty { series });
        }
        if let Some(i) = points.windows(2).position(|w| w[0].time >= w[1].time) {
            return Err(AppendError::NotIncreasing {
                series,
                index: i + 1,
                time: points[i + 1].time,
                previous: points[i].time,
            });
        }
        Ok(Self { series, points })
    }

    pub fn series(&self) -> SeriesId {
        self.series
    }

    /// The points, non-empty and strictly increasing in time.
    pub fn points(&self) -> &[Point] {
        &self.points
    }
}

/// The raw writes of one body: value-segment appends and raw bucket-slot writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawBatch {
    pub appends: Vec<SeriesAppend>,
    pub buckets: Vec<BucketWrite>,
}

/// What the writes of a [`RawBatch`] did: one outcome per bucket write, in order (every
/// append is stored: the last write of a time wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawOutcome {
    pub buckets: Vec<BucketWriteOutcome>,
}

/// Computes, from what a batch's raw writes stored, the bucket writes that go with them:
/// the rollups of exactly the points stored. It runs once, possibly on the backend's own
/// writer thread, so it must not block; an `Err` means the rollups cannot be written.
pub type DeriveRollups = Box<dyn FnOnce(&RawOutcome) -> Result<Vec<BucketWrite>> + Send>;

/// The rollup resolutions kept of each value-segment measurement, by its name: what every
/// backend derives from the points it holds ([`Backend::derive_segment_rollups`]).
pub type SegmentRollupPlan = Arc<dyn Fn(&str) -> Vec<Resolution> + Send + Sync>;

/// The rollups a store keeps of value segments, as the engine last set them
/// ([`Backend::derive_segment_rollups`]); none until it does.
#[derive(Default)]
pub struct RollupPlan(std::sync::RwLock<Option<SegmentRollupPlan>>);

impl RollupPlan {
    pub fn set(&self, plan: SegmentRollupPlan) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Some(plan);
    }

    /// The resolutions of `measurement` whose slots fit in one partition of `by` (those a
    /// store keeps beside each partition), finest first, each once.
    pub fn kept(
        &self,
        measurement: &str,
        by: tickertape_core::partition::Partitioning,
    ) -> Vec<Resolution> {
        let plan = self.0.read().unwrap_or_else(|p| p.into_inner());
        let mut kept: Vec<Resolution> = plan.as_ref().map_or_else(Vec::new, |p| p(measurement));
        kept.retain(|r| by.holds_slots_of(*r));
        kept.sort();
        kept.dedup();
        kept
    }
}

/// Space used by a store, for `tickertape-bench` and `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Bytes the store occupies (file sizes; data + index bytes on MongoDB).
    pub bytes: u64,
    pub segments: u64,
    pub series: u64,
    /// Points held in memory and not yet in the store's files (the embedded store's head
    /// and frozen heads; 0 where every write goes straight to the store).
    pub memory_points: u64,
    /// Bytes of the series index held in memory (the embedded catalog and its postings;
    /// 0 where the index lives in the database).
    pub index_memory_bytes: u64,
    /// Points of value segments stored but not yet covered by the store's derived rollups
    /// (as far as this handle knows): queries read raw points for their ranges, so answers
    /// are exact either way; 0 once the store has caught up.
    pub rollup_lag_points: u64,
}

/// How many series are registered: in all, and in each measurement asked about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeriesCount {
    pub total: u64,
    /// One count per measurement asked, in the same order.
    pub per_measurement: Vec<u64>,
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

    /// The id of each key already registered, `None` for the others. Registers nothing:
    /// what a writer checks its series limits with before it registers.
    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>>;

    /// How many series are registered, in all and in each of `measurements`.
    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount>;

    /// Every registered series the selector matches, in id order.
    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>>;

    /// Every (measurement, field) pair some registered series has, sorted, each once:
    /// what Prometheus' metric names are made of (`tickertape_prometheus::mapping`).
    async fn list_fields(&self) -> Result<Vec<(String, String)>>;

    /// The measurements of registered series that `query` accepts: sorted, each once, at
    /// most `query.limit()` (the dashboard's measurement picker). The default filters
    /// [`list_fields`](Self::list_fields); a backend where that costs a round trip per
    /// measurement answers it in one.
    async fn list_measurements(&self, query: &NameQuery) -> Result<Vec<String>> {
        let pairs = self.list_fields().await?;
        Ok(query.first_of(pairs.iter().map(|(m, _)| m.as_str())))
    }

    /// The fields of `measurement`'s registered series that `query` accepts: sorted, each
    /// once, at most `query.limit()`. The default filters [`list_fields`](Self::list_fields).
    async fn list_fields_of(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        let pairs = self.list_fields().await?;
        let fields = pairs
            .iter()
            .filter(|(m, _)| m == measurement)
            .map(|(_, f)| f.as_str());
        Ok(query.first_of(fields))
    }

    /// The tag keys of `measurement`'s registered series that `query` accepts: sorted,
    /// each once, at most `query.limit()` (the dashboard's search-as-you-type).
    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>>;

    /// The values tag `key` takes among `measurement`'s registered series that `query`
    /// accepts: sorted, each once, at most `query.limit()`. Must stay cheap at a million
    /// series, so never a read of every series: the embedded store passes over the key's
    /// distinct values in memory, MongoDB reads a range of its `tag_values` collection.
    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>>;

    /// Stores each series' points in its value segments, wherever they fall in time: a
    /// point at a time the series already holds replaces that value (the last write wins,
    /// InfluxDB's rule), and an exact duplicate changes nothing, so a retried call is
    /// harmless. Several appends to the same series in one call are applied in order (the
    /// later one wins at equal times).
    ///
    /// Every series must be registered: an unknown id fails the call with
    /// [`BackendError::UnknownSeries`] (as on any `Err`, appends to other series of the call
    /// may have been stored; the embedded and reference backends check before storing any).
    ///
    /// When this returns `Ok`, every point is durable (survives a crash of the process or
    /// the machine) and readable by every handle. On `Err`, some points may have been
    /// stored; storing them again is harmless.
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<()>;

    /// The segments of `series` that may hold points in `[start, end)`, the nearest point
    /// before `start` or the nearest at or after `end` — see [`Segment::may_overlap`] —
    /// sorted by `prev_end`. `start == end` reads just the two neighbours of `start`.
    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>>;

    /// The latest stored point of each series (`None` for a series with no point yet).
    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>>;

    /// Space used, as well as the backend can tell.
    async fn stats(&self) -> Result<StorageStats>;

    /// Applies bucket writes, creating documents as needed, each in its family's partition
    /// of its start. Returns one outcome per write, in order. Writes to the same slot in
    /// one call are applied in order. When this returns `Ok`, every applied write is
    /// durable; on `Err` some may have been applied.
    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>>;

    /// Stores `batch`, then the bucket writes `derive` computes from its outcome (the
    /// rollups of the points stored), with the semantics of [`append`](Self::append) and
    /// [`write_buckets`](Self::write_buckets); `Ok` once both are durable.
    ///
    /// A backend that can makes the two one atomic unit, so that a crash keeps a body's
    /// points together with their rollups or neither: the embedded store does both in one
    /// transaction. This default runs them one after the other, and a crash in between
    /// keeps points that the rollups miss (`tickertape admin rebuild-rollups` repairs it).
    async fn write_with_rollups(
        &self,
        batch: RawBatch,
        derive: DeriveRollups,
    ) -> Result<RawOutcome> {
        if !batch.appends.is_empty() {
            self.append(batch.appends).await?;
        }
        let buckets = match batch.buckets.is_empty() {
            true => Vec::new(),
            false => self.write_buckets(batch.buckets).await?,
        };
        let outcome = RawOutcome { buckets };
        let rollups = derive(&outcome)?;
        if !rollups.is_empty() {
            self.write_buckets(rollups).await?;
        }
        Ok(outcome)
    }

    /// The documents of `range.series` in `range.family` whose period overlaps
    /// `[range.start, range.end)`, by start ascending. Documents never written are absent.
    async fn read_buckets(&self, range: BucketRange, part: BucketRead)
        -> Result<Vec<StoredBucket>>;

    /// Writes empty shell documents for `series` at `bucket_start` in `family` (every slot
    /// present but unwritten), so that later slot writes update a document in place rather
    /// than grow it. A document that exists already is left as it is. Returns how many
    /// shells were created.
    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64>;

    /// Every partition holding at least one document (pre-allocated ones included), by
    /// family, then start.
    async fn list_partitions(&self) -> Result<Vec<Partition>>;

    /// Drops a whole partition: every document of it at once (a collection or table
    /// drop, never document by document). Dropping a missing partition is not an error.
    async fn drop_partition(&self, partition: Partition) -> Result<()>;

    /// The token of each name in `namespace`, issuing tokens for names not seen before
    /// (see [`names`]). Tokens are stable forever and the same from every client.
    async fn tokenize(&self, namespace: NameSpace, names: &[String]) -> Result<Vec<u64>>;

    /// The names of tokens issued in `namespace` (`None` for a token never issued).
    async fn names_of(&self, namespace: NameSpace, tokens: &[u64]) -> Result<Vec<Option<String>>>;

    /// Sets the rollup resolutions the store keeps of each value-segment measurement
    /// (`plan` names them by measurement); a later call replaces the plan. Every backend
    /// derives these rollups itself, from the points it holds, off the write path, and a
    /// crash never leaves a rollup that disagrees with the points: the engine writes no
    /// rollup of value segments and reads them with
    /// [`read_segment_rollup`](Self::read_segment_rollup).
    fn derive_segment_rollups(&self, plan: SegmentRollupPlan);

    /// The rollup slots of a value-segment series at `resolution` whose start lies in
    /// `[start, end)` (both multiples of the resolution), by time; slots without a point
    /// are absent. Each slot is exactly what `core::rollup::summarize_slots` gives over
    /// the series' stored points, late and replaced points included, so an answer from
    /// it is the raw answer bit for bit: where the derived rollup does not yet cover a
    /// range (the store has not caught up, see [`StorageStats::rollup_lag_points`]), the
    /// backend summarises the raw points of that range instead. A resolution the plan
    /// does not keep is summarised from raw points too.
    async fn read_segment_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>>;

    /// Drops the derived rollup slots at `resolution` of `measurement` (see
    /// [`derive_segment_rollups`](Self::derive_segment_rollups)) in whole time partitions
    /// that end at or before `cutoff`, or with `dry_run` only lists them; returns the
    /// partitions' `[start, end)`. [`drop_raw_before`](Self::drop_raw_before) keeps
    /// them, so rollups can outlive raw points.
    async fn drop_segment_rollup_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>>;

    /// Merges what the store keeps in pieces (recent points, small files or documents)
    /// into its final, smallest form, with its derived rollups, and answers when
    /// everything mergeable is merged.
    async fn compact(&self) -> Result<()>;

    /// Drops the raw points of `measurement`'s value segments in whole time partitions
    /// that end at or before `cutoff` (never a point at or after `cutoff`; points of a
    /// partition that `cutoff` cuts are kept), or with `dry_run` only lists them. Returns
    /// the partitions' `[start, end)`. Points that arrive for a dropped partition later, or
    /// that the store still holds in memory, are kept until a later call drops them.
    async fn drop_raw_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>>;
}
