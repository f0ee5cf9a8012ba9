//! tickertape's MongoDB backend: value segments in time-partitioned
//! collections, time buckets and the name store (docs/design.md) on any
//! MongoDB deployment (standalone, replica set, sharded cluster), behind the same
//! [`Backend`] trait and the same contract as the embedded store: the last write of a
//! time wins, rollups are derived from the points stored, retention drops a
//! measurement's expired slices (and a collection once every measurement in it expired).
//! Collections are cut by time alone and shared by every measurement (`naming`), so
//! their number grows with time, never with the number of measurements.
//!
//! The stored shapes, indexes, crash windows and invariants are written down in
//! `docs/format/mongodb.md`; the field-name tables are in [`layout`]'s docs and in
//! `values`.
//!
//! # Layout
//! - [`options`]: [`MongoOptions`], the [`FaultPlan`] test hook.
//! - `connect`: the client, the stored layout check, the fixed collections' indexes, the
//!   state a handle shares with its background task.
//! - `layout`: collection and field names, document (de)serialisation.
//! - [`naming`]: the time-partitioned collections' names, periods and indexes (pure).
//! - `bulk`: many conditional writes in one round trip, with per-statement outcomes.
//! - `series`: registering and listing series (`resolve_series`, `find_series`).
//! - `selector`: a series selector as an index query on `series` (tag pairs `k.p`).
//! - `backfill`: `k.p` given at `connect` to series documents written before it existed.
//! - `values`: value points in collections by time: writes, reads, folds, derived
//!   rollups, retention.
//! - `bucket_layout`, `bucket_write`, `bucket_read`: time buckets in time-partitioned
//!   collections: names, slot paths, shells, writes, reads.
//! - `names`: the name store.
//! - `api_tokens`: the API tokens, hashed ([`MongoTokens`]).
//! - `databases`: the databases created and not dropped, and each database's retention
//!   policies (`DatabaseCatalog`).
//! - `error`: driver errors mapped to [`BackendError`].

mod admin;
mod api_tokens;
mod backfill;
mod bucket_layout;
mod bucket_read;
mod bucket_write;
mod bulk;
mod connect;
mod databases;
mod error;
mod find;
pub mod layout;
mod names;
pub mod naming;
pub mod options;
mod selector;
mod series;
mod series_count;
pub mod shard_plan;
mod stats;
mod tag_values;
mod values;

use std::sync::Arc;

use async_trait::async_trait;
use tickertape_backend::{
    Backend, BackendError, BucketRange, BucketRead, BucketWrite, BucketWriteOutcome, DeleteRange,
    DocumentStart, NameKind, NameQuery, Partition, PointsRange, RangePoints, Result,
    SegmentRollupPlan, SeriesAppend, SeriesCount, SeriesHead, SeriesInfo, SnapshotReport,
    SnapshotTarget, StorageStats, StoredBucket,
};
use tickertape_backend::{BucketStore, DatabaseCatalog, NameStore, SeriesCatalog, ValueStore};
use tickertape_core::database::DatabaseName;
use tickertape_core::query::Summary;
use tickertape_core::retention_policy::RetentionPolicies;
use tickertape_core::rollup::Resolution;
use tickertape_core::segment::Segment;
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

pub use admin::{ensure_mongos, ShardReport};
pub use api_tokens::MongoTokens;
pub use options::{
    uri_with_database, FaultPlan, FaultPoint, MongoOptions, ReadMode, DEFAULT_BLOCK_POINTS,
    MAX_BLOCK_POINTS,
};
pub use shard_plan::{shard_key_of, PlannedCollection, ShardPlan};

use crate::error::map_err;
use crate::values::Scope;
pub(crate) use connect::Shared;

/// The database used when the URI names none.
pub const DEFAULT_DATABASE: &str = "tickertape";

/// A handle on a tickertape store in one MongoDB database. Cheap to share (`Arc<dyn
/// Backend>`); every handle on the same database sees the same data, and several handles
/// (in one process or many) may write the same series at once. Each handle folds in the
/// background (see `values`); dropping it stops that task.
pub struct MongoBackend {
    shared: Arc<Shared>,
    background: tokio::task::JoinHandle<()>,
}

impl Drop for MongoBackend {
    fn drop(&mut self) {
        self.background.abort();
    }
}

impl MongoBackend {
    /// Connects, pings the server, checks (or records) the database's layout, gives
    /// series documents of an older store their tag pairs (`backfill`), creates the
    /// indexes and starts the background folds.
    ///
    /// Fails with [`tickertape_backend::BackendError::Unavailable`] (`cannot reach MongoDB
    /// at <uri>: <reason>`) when no suitable server answers within the server selection
    /// timeout, and with [`tickertape_backend::BackendError::Invalid`] for a malformed URI,
    /// options that contradict the data already in the database, or a database of another
    /// layout version.
    pub async fn connect(options: MongoOptions) -> Result<Self> {
        let shared = Shared::connect(&options).await?;
        // Before the indexes: on a store that predates `k.p`, building the tag index once
        // over the backfilled documents is cheaper than updating it document by document.
        shared.backfill_tag_pairs().await?;
        shared.backfill_tag_values().await?;
        shared.create_indexes().await?;
        let shared = Arc::new(shared);
        let background = values::spawn_background(&shared);
        Ok(Self { shared, background })
    }

    /// The width of a slice, in ns (the database's own): what a value document never
    /// spans and retention drops.
    pub fn partition_ns(&self) -> i64 {
        self.shared.layout.partition_ns
    }

    /// How the database cuts time: slices, value and rollup collections (its own).
    pub fn periods(&self) -> naming::Periods {
        self.shared.layout.periods
    }

    /// Points per value document at most (the database's own).
    pub fn block_points(&self) -> usize {
        self.shared.layout.block_points
    }

    /// The store's API tokens (`api_tokens`), on this handle's connection.
    pub fn token_store(&self) -> MongoTokens {
        MongoTokens {
            shared: self.shared.clone(),
        }
    }

    /// The database this handle works in.
    pub fn database_name(&self) -> &str {
        self.shared.db.name()
    }

    /// How the server would run `find_series` for `selector` (`explain`): for tests that
    /// check the index is used.
    pub async fn explain_find_series(
        &self,
        selector: &SeriesSelector,
    ) -> Result<mongodb::bson::Document> {
        self.shared.explain_find_series(selector).await
    }

    /// Each collection, present and upcoming, with its shard key and whether it is sharded
    /// (`tickertape admin shard --plan`). Changes nothing; works on any server.
    pub async fn shard_plan(&self) -> Result<ShardPlan> {
        self.shared.shard_plan().await
    }

    /// See `admin::shard`.
    pub async fn shard(&self) -> Result<ShardReport> {
        self.shared.shard().await
    }

    /// Drops the whole database. For tests and `tickertape-bench`, which work in throw-away
    /// databases.
    pub async fn drop_database(&self) -> Result<()> {
        self.shared
            .db
            .drop()
            .await
            .map_err(|e| map_err("drop database", e))
    }

    /// Runs one background fold pass over the pending marks now, as the background task
    /// does every `fold_every` (for tests and measurements that cannot wait for it).
    pub async fn fold_pending_now(&self) -> Result<()> {
        self.shared.fold_pass(Scope::Pending).await
    }

    /// Closes the connection pool. Dropping the handle does the same, less gracefully.
    pub async fn shutdown(self) {
        self.background.abort();
        self.shared.client.clone().shutdown().await;
    }
}

/// What [`Backend::snapshot`] answers on MongoDB (`tickertape admin snapshot` says it
/// without connecting).
pub const BACKUP_TOOLS: &str = "snapshots of a MongoDB store are made with MongoDB's own \
     backup tools: mongodump/mongorestore, or a file system or cloud snapshot of the \
     replica set; for a sharded cluster follow MongoDB's documented procedure with the \
     balancer stopped (docs/backup.md)";

#[async_trait]
impl Backend for MongoBackend {
    fn kind(&self) -> &'static str {
        "mongodb"
    }

    async fn stats(&self) -> Result<StorageStats> {
        self.shared.read_stats().await
    }

    /// Folds every series of every slice into its final documents, with its rollups.
    /// Waits out the superseded documents' grace and deletes them too, so that what it
    /// leaves is the final form.
    async fn compact(&self) -> Result<()> {
        self.shared.fold_pass(Scope::Compact).await?;
        tokio::time::sleep(self.shared.schedule.grace).await;
        self.shared.fold_pass(Scope::Pending).await
    }

    /// MongoDB is backed up with its own tools, which know its journal, replica set and
    /// shards (docs/backup.md).
    async fn snapshot(&self, _target: SnapshotTarget) -> Result<SnapshotReport> {
        Err(BackendError::Unsupported(BACKUP_TOOLS.into()))
    }
}

#[async_trait]
impl SeriesCatalog for MongoBackend {
    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        self.shared.resolve(keys).await
    }

    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>> {
        self.shared.lookup(keys).await
    }

    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount> {
        self.shared.count(measurements).await
    }

    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        self.shared.find(selector).await
    }

    async fn list_fields(&self) -> Result<Vec<(String, String)>> {
        self.shared.fields().await
    }

    async fn list_measurements(&self, query: &NameQuery) -> Result<Vec<String>> {
        self.shared.measurements(query).await
    }

    async fn list_fields_of(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        self.shared.fields_of(measurement, query).await
    }

    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        self.shared.tag_keys(measurement, query).await
    }

    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        self.shared.tag_values(measurement, key, query).await
    }

    async fn remove_series(&self, series: &[SeriesId]) -> Result<u64> {
        self.shared.remove(series).await
    }
}

#[async_trait]
impl ValueStore for MongoBackend {
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<()> {
        self.shared.append_values(appends).await
    }

    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
        self.shared.read_values(series, start, end).await
    }

    async fn read_points(
        &self,
        series: &[SeriesId],
        range: PointsRange,
    ) -> Result<Vec<RangePoints>> {
        self.shared.read_ranges(series, range).await
    }

    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        self.shared.value_heads(series).await
    }

    fn derive_segment_rollups(&self, plan: SegmentRollupPlan) {
        self.shared.rollups.set(plan);
        self.shared
            .verify
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.shared.plan_set.notify_one();
    }

    async fn read_segment_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        let mut answers = self
            .shared
            .read_rollups(&[series], resolution, start, end)
            .await?;
        Ok(answers.pop().unwrap_or_default())
    }

    async fn read_segment_rollups(
        &self,
        series: &[SeriesId],
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<Vec<(i64, Summary)>>> {
        self.shared
            .read_rollups(series, resolution, start, end)
            .await
    }

    async fn drop_segment_rollup_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        self.shared
            .drop_rollups_before(measurement, resolution, cutoff, dry_run)
            .await
    }

    async fn drop_raw_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        self.shared
            .drop_values_before(measurement, cutoff, dry_run)
            .await
    }

    /// The documents holding deleted points rewritten without them (`values/delete.rs`).
    async fn delete_points(&self, series: &[SeriesId], range: DeleteRange) -> Result<()> {
        self.shared.delete_values(series, range).await
    }
}

#[async_trait]
impl BucketStore for MongoBackend {
    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        self.shared.write_bucket_batch(writes).await
    }

    async fn read_buckets(
        &self,
        range: BucketRange,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        self.shared.read_bucket_range(range, part).await
    }

    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64> {
        self.shared.preallocate_shells(document, series).await
    }

    async fn list_partitions(&self) -> Result<Vec<Partition>> {
        self.shared.list_bucket_partitions().await
    }

    async fn drop_partition(&self, partition: Partition) -> Result<()> {
        self.shared.drop_bucket_partition(partition).await
    }
}

#[async_trait]
impl DatabaseCatalog for MongoBackend {
    async fn databases(&self) -> Result<Vec<DatabaseName>> {
        self.shared.databases().await
    }

    async fn create_database(&self, name: &DatabaseName) -> Result<bool> {
        self.shared.create_database(name).await
    }

    async fn drop_database(&self, name: &DatabaseName) -> Result<bool> {
        self.shared.drop_database(name).await
    }

    async fn retention_policies(&self, name: &DatabaseName) -> Result<Option<RetentionPolicies>> {
        self.shared.retention_policies(name).await
    }

    async fn set_retention_policies(
        &self,
        name: &DatabaseName,
        policies: Option<&RetentionPolicies>,
    ) -> Result<()> {
        self.shared.set_retention_policies(name, policies).await
    }
}

#[async_trait]
impl NameStore for MongoBackend {
    async fn tokenize(&self, namespace: NameKind, names: &[String]) -> Result<Vec<u64>> {
        self.shared.tokenize_names(namespace, names).await
    }

    async fn names_of(&self, namespace: NameKind, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        self.shared.names_of_tokens(namespace, tokens).await
    }
}
