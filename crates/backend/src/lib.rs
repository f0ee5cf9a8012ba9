//! The storage backend trait: what tickertape stores and reads, in the domain's words.
//!
//! The engine speaks only to [`Backend`]; the embedded store and MongoDB implement it side by
//! side. Each backend gets the atomicity it needs its own way (one transaction per batch for
//! the embedded store, conditional single-document updates on MongoDB), but both
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
//! [`Backend`] is five narrow stores in one handle, each trait's method docs its contract:
//! the [`SeriesCatalog`] (which series exist), the [`ValueStore`] (value segments,
//! docs/design.md#value-segments: points, derived rollups, raw retention), the
//! [`BucketStore`] (time buckets with their partitions,
//! docs/design.md#bucket-documents-and-in-place-updates), the [`NameStore`]
//! (docs/design.md#the-name-store) and the [`DatabaseCatalog`] (which databases exist, and
//! their retention policies); callers take the one they need.
//!
//! The API tokens of `serve --auth` are a sixth store apart from [`Backend`], the
//! [`TokenStore`]: a store's tokens are managed while a server holds it.
//!
//! Deleting points ([`ValueStore::delete_points`], [`DeleteRange`]) and removing a series
//! whole ([`SeriesCatalog::remove_series`]) are one contract on every backend too.

pub mod bucket_store;
pub mod buckets;
pub mod catalog;
pub mod databases;
pub mod delete;
pub mod listing;
pub mod names;
pub mod partitions;
pub mod range_points;
pub mod snapshot;
pub mod tokens;
pub mod value_store;

pub use bucket_store::BucketStore;
pub use catalog::SeriesCatalog;
pub use databases::DatabaseCatalog;
pub use delete::{DeleteRange, EmptyDeleteRange};
pub use tokens::TokenStore;
pub use value_store::{DroppedPartitions, Expiry, ValueStore};

pub use buckets::{
    BucketFamily, BucketRange, BucketRead, BucketTotals, BucketWrite, BucketWriteOutcome,
    DocumentStart, Partition, SlotChange, SlotKind, SlotValue, StoredBucket,
};
pub use listing::{FirstNames, NameQuery};
pub use names::{NameKind, NameStore, TokenRequest, NAMES_PER_DOCUMENT};
pub use partitions::DocumentSpan;
pub use range_points::{PointsRange, RangePoints};
pub use snapshot::{SnapshotReport, SnapshotTarget, SNAPSHOTS_DIR};

use async_trait::async_trait;
use std::sync::Arc;
use thiserror::Error;
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId, SeriesKey};

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
    /// An append named a series id that was never registered ([`SeriesCatalog::resolve_series`]).
    #[error("unknown series {0}: register it before appending to it")]
    UnknownSeries(SeriesId),
    /// An operation this backend does not offer; the message says what to use instead
    /// (HTTP 501).
    #[error("not supported: {0}")]
    Unsupported(String),
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

/// A series' latest stored point (what a chart's "now" and `agg=last` read first).
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
/// backend derives from the points it holds ([`ValueStore::derive_segment_rollups`]).
pub type SegmentRollupPlan = Arc<dyn Fn(&str) -> Vec<Resolution> + Send + Sync>;

/// The rollups a store keeps of value segments, as the engine last set them
/// ([`ValueStore::derive_segment_rollups`]); none until it does.
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

/// A storage backend: the five narrow stores (catalog, values, buckets, names, databases)
/// in one handle, plus what spans them.
/// Implementations are shared between tasks (`Arc<dyn Backend>`); a caller that needs one
/// part takes it alone (`&dyn ValueStore`, `&dyn NameStore`: trait upcasting).
#[async_trait]
pub trait Backend:
    SeriesCatalog + ValueStore + BucketStore + NameStore + DatabaseCatalog + Send + Sync + 'static
{
    /// A short name for logs and errors: `embedded`, `mongodb`.
    fn kind(&self) -> &'static str;

    /// Space used, as well as the backend can tell.
    async fn stats(&self) -> Result<StorageStats>;

    /// Stores `batch`, then the bucket writes `derive` computes from its outcome (the
    /// rollups of the points stored), with the semantics of [`append`](ValueStore::append) and
    /// [`write_buckets`](BucketStore::write_buckets); `Ok` once both are durable.
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

    /// Merges what the store keeps in pieces (recent points, small files or documents)
    /// into its final, smallest form, with its derived rollups, and answers when
    /// everything mergeable is merged.
    async fn compact(&self) -> Result<()>;

    // Snapshots: a consistent copy of the store while it serves (docs/backup.md).

    /// Copies the store, while it keeps serving, into a new directory at `target`, as a
    /// store of its own that holds every write answered `Ok` before this call began; `Ok`
    /// once the copy is durable (files and folders fsynced). Never modifies or deletes
    /// the live store's files. A backend that cannot answers
    /// [`BackendError::Unsupported`] saying what to use instead.
    async fn snapshot(&self, target: SnapshotTarget) -> Result<SnapshotReport>;
}
