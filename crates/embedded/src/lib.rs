//! The embedded backend, in a store directory:
//!
//! - raw points of value-segment measurements (the value segments of `docs/design.md`, read
//!   as one sorted series) in a write-ahead log, an in-memory head and immutable,
//!   time-partitioned part files merged in the background (`values`); any point may arrive
//!   in any order and the last write of a time wins ([`AppendRule::LastWriteWins`]);
//! - the series catalog, time buckets, rollups, the name store and the part manifest in one
//!   redb file (`tickertape.redb`).
//!
//! One writer thread applies every change as groups (see `writer`): a group's log frames
//! are fsynced before anyone is answered.
//!
//! # Layout
//!
//! - `values`: the log, head, parts, manifest and background thread;
//! - `tables`: the fixed redb tables (series, meta) and their values;
//! - `buckets`: one table per bucket partition, the bucket document encoding;
//! - `names`: the name ↔ token tables;
//! - `writer`: the single writer thread every change goes through;
//! - `catalog`: the in-memory series catalog;
//! - `tokens`: the API tokens, hashed, in `tokens.json` ([`TokenFile`]);
//! - `snapshot`: online snapshots (hard-linked parts, redb and log copied at one instant);
//! - `faults`: I/O fault injection for tests.
//!
//! The byte layout of every table is in `docs/format/embedded.md`.

mod buckets;
mod catalog;
mod databases;
mod faults;
mod file;
mod names;
mod series_keys;
mod snapshot;
mod tables;
mod tokens;
mod values;
mod writer;

use async_trait::async_trait;
use catalog::Catalog;
use file::{create_tables, open_database, partitioning, store_bytes};
use redb::Database;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tickertape_backend::{
    Backend, BackendError, BucketRange, BucketRead, BucketWrite, BucketWriteOutcome, DeleteRange,
    DeriveRollups, DocumentStart, DroppedPartitions, Expiry, NameKind, NameQuery, Partition,
    PointsRange, RangePoints, RawBatch, RawOutcome, Result, SegmentRollupPlan, SeriesAppend,
    SeriesCount, SeriesHead, SeriesInfo, SnapshotReport, SnapshotTarget, StorageStats,
    StoredBucket, TokenRequest,
};
use tickertape_backend::{BucketStore, NameStore, SeriesCatalog, ValueStore};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{Resolution, ResolutionOrRaw};
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};
use tokio::sync::{mpsc, oneshot};
use values::background::Background;
use values::manifest::{self, CHECKPOINT_LSN};
use values::wal::Wal;
use values::{RollupPlan, Values, View};
use writer::{Job, Writer, WriterParts};

use values::files::OpenFiles;
pub use values::files::DEFAULT_OPEN_PARTS;
pub use values::DEFAULT_PARTITION_NS;

pub use faults::IoFaults;
pub use tokens::{TokenFile, TOKEN_FILE};

/// The file inside the store directory.
pub const DATA_FILE: &str = "tickertape.redb";

/// Jobs waiting for the writer beyond this make senders wait: backpressure on ingest.
const QUEUE_DEPTH: usize = 256;

/// Frozen heads waiting for the background thread beyond this make the writer wait.
const FLUSH_QUEUE_DEPTH: usize = 2;

/// The head is frozen and flushed into parts when it holds this many points (~16 bytes
/// each in memory, plus the log): it bounds memory and the replay at the next open.
pub const DEFAULT_HEAD_POINTS: usize = 4_000_000;

/// The head is also frozen once its first point is this old (checked after each write),
/// so a series no longer written leaves memory even while the head fills slowly.
pub const DEFAULT_HEAD_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// The store directory; created if missing.
    pub path: PathBuf,
    /// Width of a time partition of part files, for a new store (an existing store keeps
    /// the width it was created with). A day by default.
    pub partition_ns: i64,
    /// Points the head holds before it is flushed into parts.
    pub head_points: usize,
    /// Age of the head's first point after which it is flushed, however few it holds.
    pub head_age: std::time::Duration,
    /// Bytes of decoded part blocks kept for later reads (0: none).
    pub block_cache_bytes: u64,
    /// Part files kept open at most; the others are opened when a read needs them.
    pub open_parts: usize,
    /// Tests only: put the data file behind a switch that makes its writes fail on a
    /// countdown ([`IoFaults`]).
    pub io_faults: Option<IoFaults>,
}

impl EmbeddedOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            partition_ns: DEFAULT_PARTITION_NS,
            head_points: DEFAULT_HEAD_POINTS,
            head_age: DEFAULT_HEAD_AGE,
            block_cache_bytes: values::cache::DEFAULT_BLOCK_CACHE_BYTES,
            open_parts: DEFAULT_OPEN_PARTS,
            io_faults: None,
        }
    }
}

pub struct EmbeddedBackend {
    db: Arc<Database>,
    catalog: Arc<Catalog>,
    values: Arc<Values>,
    /// The rollups of value segments the background thread computes.
    rollups: Arc<RollupPlan>,
    queue: Option<mpsc::Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    background: Option<JoinHandle<()>>,
    dir: PathBuf,
    file: PathBuf,
}

impl EmbeddedBackend {
    /// Opens (or creates) the store in `options.path`, replaying its write-ahead log.
    /// Fails if another process has it open.
    pub fn open(options: EmbeddedOptions) -> Result<Self> {
        if options.head_points == 0 {
            return Err(BackendError::Invalid(
                "head size must be at least 1 point".into(),
            ));
        }
        std::fs::create_dir_all(&options.path).map_err(|e| {
            BackendError::Storage(format!(
                "cannot create store directory {}: {e}",
                options.path.display()
            ))
        })?;
        let dir = options.path.clone();
        let file = dir.join(DATA_FILE);
        let db = Arc::new(open_database(&file, options.io_faults.clone())?);
        create_tables(&db)?;
        let partitioning = partitioning(&db, options.partition_ns)?;
        let started = std::time::Instant::now();
        let catalog = Arc::new(Catalog::default());
        let files = Arc::new(OpenFiles::new(options.open_parts));
        // The catalog and the parts load side by side: with a million series each takes
        // a good part of a second.
        let (loaded, parts, latest) = std::thread::scope(|scope| {
            let loading = scope.spawn(|| {
                series_keys::load(&db, &catalog)?;
                Ok::<_, BackendError>(started.elapsed())
            });
            let parts = values::open::open_parts(&db, &dir, &files);
            let latest = manifest::load_heads(&db);
            let loaded = loading
                .join()
                .unwrap_or_else(|_| Err(BackendError::Storage("catalog load panicked".into())));
            (loaded, parts, latest)
        });
        let catalog_loaded = loaded?;
        let opened = parts?;
        let next_part_id = opened.next_id;
        let mut view = View {
            latest: latest?,
            ..View::default()
        };
        let part_files = opened.parts.len();
        for part in opened.parts {
            view.place_part(part);
        }
        let values = Arc::new(Values::new(
            partitioning,
            view,
            options.block_cache_bytes,
            files.clone(),
        ));
        let checkpoint = manifest::meta(&db, CHECKPOINT_LSN)?.unwrap_or(0);
        let (wal, frames) = Wal::open(&dir, checkpoint)?;
        let wal = wal.with_faults(options.io_faults);
        let failed = Arc::new(Mutex::new(None));
        let rollups = Arc::new(RollupPlan::default());
        let (tasks, task_queue) = std::sync::mpsc::sync_channel(FLUSH_QUEUE_DEPTH);
        let worker = Background {
            db: db.clone(),
            catalog: catalog.clone(),
            values: values.clone(),
            store: dir.clone(),
            next_part_id,
            rollups: rollups.clone(),
            names: Default::default(),
            failed: failed.clone(),
        };
        let background = std::thread::Builder::new()
            .name("tickertape-flush".into())
            .spawn(move || worker.run(task_queue))
            .map_err(|e| BackendError::Storage(format!("cannot start flush thread: {e}")))?;
        let mut writer = Writer::new(WriterParts {
            db: db.clone(),
            catalog: catalog.clone(),
            values: values.clone(),
            wal,
            head_limit: options.head_points,
            head_age: options.head_age,
            background: tasks,
            background_failed: failed,
        });
        let replay_started = std::time::Instant::now();
        writer.replay(frames)?;
        tracing::info!(
            series = catalog.len(),
            part_files,
            open_parts_at_most = files.capacity(),
            catalog_ms = catalog_loaded.as_millis() as u64,
            log_replay_ms = replay_started.elapsed().as_millis() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "store opened"
        );
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let handle = std::thread::Builder::new()
            .name("tickertape-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| BackendError::Storage(format!("cannot start writer thread: {e}")))?;
        Ok(Self {
            db,
            catalog,
            values,
            rollups,
            queue: Some(tx),
            writer: Some(handle),
            background: Some(background),
            dir,
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    async fn submit<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Job) -> Result<T> {
        let (reply, answer) = oneshot::channel();
        let queue = self
            .queue
            .as_ref()
            .ok_or_else(|| BackendError::Unavailable("store is closing".into()))?;
        queue
            .send(make(reply))
            .await
            .map_err(|_| BackendError::Unavailable("the writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| BackendError::Unavailable("the writer stopped before answering".into()))?
    }

    /// `UnknownSeries` for the first append to a series never registered: the writer
    /// would otherwise start a head for it that no key names.
    fn check_registered(&self, appends: &[SeriesAppend]) -> Result<()> {
        match self
            .catalog
            .first_unknown(appends.iter().map(SeriesAppend::series))
        {
            Some(series) => Err(BackendError::UnknownSeries(series)),
            None => Ok(()),
        }
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| BackendError::Storage(format!("read task failed: {e}")))?
    }
}

impl Drop for EmbeddedBackend {
    /// Stops the writer after it drained its queue and the background thread after it
    /// flushed the head, so the files are closed when this returns and the store can be
    /// reopened at once.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
        if let Some(handle) = self.background.take() {
            let _ = handle.join();
        }
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    /// `bytes`: the whole store directory (redb file, log, parts); `segments`: column
    /// blocks in parts plus series with points in memory; `memory_points`: the head's and
    /// the frozen heads' points; `index_memory_bytes`: the catalog and its postings.
    async fn stats(&self) -> Result<StorageStats> {
        let series = self.catalog.len() as u64;
        let (segments, memory_points) = {
            let view = self.values.view();
            let blocks: usize = view.parts.values().flatten().map(|p| p.raw_blocks()).sum();
            let in_memory: usize = view.frozen.iter().map(|f| f.head.iter().count()).sum();
            let points = view.head.len() + view.frozen.iter().map(|f| f.head.len()).sum::<usize>();
            (
                (blocks + in_memory + view.head.iter().count()) as u64,
                points as u64,
            )
        };
        let dir = self.dir.clone();
        let bytes = tokio::task::spawn_blocking(move || store_bytes(&dir))
            .await
            .map_err(|e| BackendError::Storage(format!("stats task failed: {e}")))?;
        Ok(StorageStats {
            bytes,
            segments,
            series,
            memory_points,
            index_memory_bytes: self.catalog.heap_bytes() as u64,
            // Points in memory are in no part, so in no rollup block yet. (A partition of
            // several parts not yet merged is also read raw; it is not counted here.)
            rollup_lag_points: memory_points,
        })
    }

    /// One writer job, so one transaction: a crash keeps the points and their rollups, or
    /// neither.
    async fn write_with_rollups(
        &self,
        batch: RawBatch,
        derive: DeriveRollups,
    ) -> Result<RawOutcome> {
        self.check_registered(&batch.appends)?;
        let buckets = buckets::targets(batch.buckets);
        let appends = batch.appends;
        self.submit(|reply| Job::WriteWithRollups {
            appends,
            buckets,
            derive,
            reply,
        })
        .await
    }

    /// Flushes the head and merges every partition into one part.
    async fn compact(&self) -> Result<()> {
        self.submit(|reply| Job::Compact { reply }).await
    }

    /// Hard-links the part files and copies redb and the log while the writer waits
    /// (`snapshot.rs` says why that is consistent).
    async fn snapshot(&self, target: SnapshotTarget) -> Result<SnapshotReport> {
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        self.submit(|reply| Job::Snapshot {
            target,
            now_ns,
            reply,
        })
        .await
    }
}

#[async_trait]
impl SeriesCatalog for EmbeddedBackend {
    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        if let Some(ids) = self.catalog.lookup(keys) {
            return Ok(ids);
        }
        let keys = keys.to_vec();
        self.submit(|reply| Job::Register { keys, reply }).await
    }

    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>> {
        Ok(self.catalog.ids_of(keys))
    }

    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount> {
        Ok(SeriesCount {
            total: self.catalog.len() as u64,
            per_measurement: measurements
                .iter()
                .map(|m| self.catalog.count_in(m) as u64)
                .collect(),
        })
    }

    /// From the inverted index in memory (`catalog/postings.rs`).
    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        Ok(self.catalog.matching(selector))
    }

    async fn list_fields(&self) -> Result<Vec<(String, String)>> {
        Ok(self.catalog.fields())
    }

    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        Ok(self.catalog.tag_keys(measurement, query))
    }

    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        Ok(self.catalog.tag_values(measurement, key, query))
    }

    /// Recorded in redb (`removed_series`), then taken out of the catalog and its index.
    async fn remove_series(&self, series: &[SeriesId]) -> Result<u64> {
        let series = series.to_vec();
        self.submit(|reply| Job::RemoveSeries { series, reply })
            .await
    }
}

#[async_trait]
impl ValueStore for EmbeddedBackend {
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<()> {
        if appends.is_empty() {
            return Ok(());
        }
        self.check_registered(&appends)?;
        self.submit(|reply| Job::Append { appends, reply }).await
    }

    /// One open segment holding the points of `[start, end)` and both neighbours: the
    /// store keeps points in parts and the head, not in a chain of fixed-size segments, so
    /// the segment is made for the read.
    ///
    /// Reads run on the caller's thread, not `spawn_blocking`: one series' read is a few
    /// block reads from the page cache and their decoding, and a query reads up to a few
    /// hundred thousand series, where a thread handoff each cost more than the reads.
    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
        let points = self.values.read(series, start, end)?;
        if points.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Segment {
            series,
            prev_end: NO_PREVIOUS,
            next_start: NO_NEXT,
            body: SegmentBody::Open(points.into_iter().map(Some).collect()),
        }])
    }

    /// Each series' points straight from its blocks, on the caller's thread as
    /// `read_segments`: the default would wrap them in a segment and copy them out again,
    /// twice per point of a long read.
    async fn read_points(
        &self,
        series: &[SeriesId],
        range: PointsRange,
    ) -> Result<Vec<RangePoints>> {
        // An empty or reversed range reads the neighbours of `start`.
        let end = range.end.max(range.start);
        series
            .iter()
            .map(|&s| {
                let all = self
                    .values
                    .read_between(s, range.start, end, range.neighbors)?;
                Ok(RangePoints::from_sorted_vec(all, range))
            })
            .collect()
    }

    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        Ok(self.values.heads(series))
    }

    /// Rollups of value segments are computed by the background thread, from the points
    /// of each part it writes, and kept beside them (`values/part.rs`).
    fn derive_segment_rollups(&self, plan: SegmentRollupPlan) {
        self.rollups.set(plan);
    }

    async fn read_segment_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        // On the caller's thread, as `read_segments`.
        self.values.read_rollup(series, resolution, start, end)
    }

    /// Drops raw points partition by partition; the rollup blocks computed from them
    /// stay until [`drop_segment_rollup_before`](Backend::drop_segment_rollup_before).
    async fn drop_raw_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        self.drop_one(measurement, ResolutionOrRaw::Raw, cutoff, dry_run)
            .await
    }

    async fn drop_segment_rollup_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let level = ResolutionOrRaw::Rollup(resolution);
        self.drop_one(measurement, level, cutoff, dry_run).await
    }

    /// Every expiry in one background task: each partition rewritten once for all of
    /// them (`values/retention.rs`).
    async fn drop_expired(
        &self,
        expiries: &[Expiry],
        dry_run: bool,
    ) -> Result<Vec<DroppedPartitions>> {
        let expiries = expiries.to_vec();
        self.submit(|reply| Job::DropExpired {
            expiries,
            dry_run,
            reply,
        })
        .await
    }

    /// Sets the series' heads back, flushes the head and rewrites the partitions holding
    /// deleted points, each in one durable swap (`values/delete.rs`); answers when done.
    async fn delete_points(&self, series: &[SeriesId], range: DeleteRange) -> Result<()> {
        if series.is_empty() {
            return Ok(());
        }
        let series = series.to_vec();
        self.submit(|reply| Job::Delete {
            series,
            range,
            reply,
        })
        .await
    }
}

#[async_trait]
impl BucketStore for EmbeddedBackend {
    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let writes = buckets::targets(writes);
        self.submit(|reply| Job::WriteBuckets { writes, reply })
            .await
    }

    async fn read_buckets(
        &self,
        range: BucketRange,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        self.read(move |db| buckets::read_buckets(db, range, part))
            .await
    }

    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64> {
        if series.is_empty() {
            return Ok(0);
        }
        let targets = series
            .iter()
            .map(|&s| buckets::Target::new(document.partition(), s, document.start()))
            .collect();
        self.submit(|reply| Job::Preallocate { targets, reply })
            .await
    }

    async fn list_partitions(&self) -> Result<Vec<Partition>> {
        self.read(buckets::list_partitions).await
    }

    async fn drop_partition(&self, partition: Partition) -> Result<()> {
        let table = partition.name();
        self.submit(|reply| Job::DropPartition { table, reply })
            .await
    }
}

#[async_trait]
impl NameStore for EmbeddedBackend {
    async fn tokenize(&self, namespace: NameKind, names: &[String]) -> Result<Vec<u64>> {
        let mut request = TokenRequest::new(names);
        let wanted: Vec<String> = request.missing().into_iter().map(str::to_owned).collect();
        let (wanted, found) = self
            .read(move |db| {
                let found = names::lookup(db, namespace, &wanted)?;
                Ok((wanted, found))
            })
            .await?;
        for (name, token) in wanted.iter().zip(found) {
            if let Some(token) = token {
                request.found(name, token);
            }
        }
        let missing: Vec<String> = request.missing().into_iter().map(str::to_owned).collect();
        if !missing.is_empty() {
            let issued = self
                .submit(|reply| Job::Tokenize {
                    namespace,
                    names: missing.clone(),
                    reply,
                })
                .await?;
            for (name, token) in missing.iter().zip(issued) {
                request.found(name, token);
            }
        }
        request.finish()
    }

    async fn names_of(&self, namespace: NameKind, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        let tokens = tokens.to_vec();
        self.read(move |db| names::names_of(db, namespace, &tokens))
            .await
    }
}

impl EmbeddedBackend {
    /// One expiry, as [`drop_expired`](ValueStore::drop_expired) drops a pass of them.
    async fn drop_one(
        &self,
        measurement: &str,
        level: ResolutionOrRaw,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<DroppedPartitions> {
        let expiry = Expiry {
            measurement: measurement.to_string(),
            level,
            cutoff,
        };
        let mut dropped = self.drop_expired(&[expiry], dry_run).await?;
        Ok(dropped.pop().unwrap_or_default())
    }
}
