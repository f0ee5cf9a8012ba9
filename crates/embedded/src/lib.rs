//! The embedded backend: value segments (seed 000), time buckets (seeds 001, 003, 004)
//! and the name store (seed 002) in one redb file under the store directory. redb gives
//! ACID transactions with durable commits; one write transaction holds every batch that
//! arrived while the previous one committed (see `writer`).
//!
//! # Layout
//!
//! - `tables`: the fixed tables (series, heads, segments, meta) and their values;
//! - `buckets`: one table per bucket partition, the bucket document encoding;
//! - `names`: the name ↔ token tables;
//! - `writer`: the single writer thread every change goes through;
//! - `catalog`: the in-memory series catalog;
//! - `faults`: I/O fault injection for tests.
//!
//! The byte layout of every table is in `docs/format/embedded.md`.

mod buckets;
mod catalog;
mod faults;
mod names;
mod tables;
mod writer;

use async_trait::async_trait;
use catalog::Catalog;
use redb::{Database, ReadableTable, ReadableTableMetadata};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use tables::{FORMAT_VERSION, FORMAT_VERSION_KEY, HEADS, META, SEGMENTS, SERIES_IDS, SERIES_KEYS};
use tickertape_backend::{
    AppendOutcome, Backend, BackendError, BucketRange, BucketRead, BucketWrite, BucketWriteOutcome,
    DeriveRollups, DocumentStart, NameSpace, Partition, RawBatch, RawOutcome, Result, SeriesAppend,
    SeriesHead, SeriesInfo, StorageStats, StoredBucket, TokenRequest,
};
use tickertape_core::segment::{Segment, DEFAULT_SEGMENT_CAPACITY};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};
use tokio::sync::{mpsc, oneshot};
use writer::{storage, Job, Writer};

pub use faults::IoFaults;

/// The file inside the store directory.
pub const DATA_FILE: &str = "tickertape.redb";

/// Jobs waiting for the writer beyond this make senders wait: backpressure on ingest.
const QUEUE_DEPTH: usize = 256;

#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// The store directory; created if missing.
    pub path: PathBuf,
    /// Points per value segment (seed 000: 160).
    pub segment_capacity: usize,
    /// Tests only: put the data file behind a switch that makes its writes fail on a
    /// countdown ([`IoFaults`]).
    pub io_faults: Option<IoFaults>,
}

impl EmbeddedOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            segment_capacity: DEFAULT_SEGMENT_CAPACITY,
            io_faults: None,
        }
    }
}

pub struct EmbeddedBackend {
    db: Arc<Database>,
    catalog: Arc<Catalog>,
    queue: Option<mpsc::Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    file: PathBuf,
}

impl EmbeddedBackend {
    /// Opens (or creates) the store in `options.path`. Fails if another process has it open.
    pub fn open(options: EmbeddedOptions) -> Result<Self> {
        if options.segment_capacity == 0 {
            return Err(BackendError::Invalid(
                "segment capacity must be at least 1".into(),
            ));
        }
        std::fs::create_dir_all(&options.path).map_err(|e| {
            BackendError::Storage(format!(
                "cannot create store directory {}: {e}",
                options.path.display()
            ))
        })?;
        let file = options.path.join(DATA_FILE);
        let db = Arc::new(open_database(&file, options.io_faults)?);
        create_tables(&db)?;
        let catalog = Arc::new(Catalog::default());
        catalog.insert_all(load_catalog(&db)?);
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let writer = Writer::new(db.clone(), catalog.clone(), options.segment_capacity);
        let handle = std::thread::Builder::new()
            .name("tickertape-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| BackendError::Storage(format!("cannot start writer thread: {e}")))?;
        Ok(Self {
            db,
            catalog,
            queue: Some(tx),
            writer: Some(handle),
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
    /// Stops the writer after it drained its queue, so the file is closed when this returns
    /// and the store can be reopened at once.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        if let Some(ids) = self.catalog.lookup(keys) {
            return Ok(ids);
        }
        let keys = keys.to_vec();
        self.submit(|reply| Job::Register { keys, reply }).await
    }

    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        Ok(self.catalog.matching(selector))
    }

    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<Vec<AppendOutcome>> {
        if appends.is_empty() {
            return Ok(Vec::new());
        }
        self.check_registered(&appends)?;
        self.submit(|reply| Job::Append { appends, reply }).await
    }

    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
        self.read(move |db| read_segments(db, series, start, end))
            .await
    }

    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        let series = series.to_vec();
        self.read(move |db| {
            let txn = db.begin_read().map_err(storage)?;
            let heads = txn.open_table(HEADS).map_err(storage)?;
            series
                .iter()
                .map(|s| {
                    let Some(raw) = heads.get(s.0).map_err(storage)? else {
                        return Ok(None);
                    };
                    let head = tables::Head::decode(raw.value()).ok_or_else(|| {
                        BackendError::Corrupt(format!("head of series {s} is malformed"))
                    })?;
                    Ok(Some(SeriesHead {
                        last: head.last,
                        count: head.count,
                    }))
                })
                .collect()
        })
        .await
    }

    async fn stats(&self) -> Result<StorageStats> {
        let file = self.file.clone();
        let series = self.catalog.len() as u64;
        self.read(move |db| {
            let txn = db.begin_read().map_err(storage)?;
            let segments = txn
                .open_table(SEGMENTS)
                .map_err(storage)?
                .len()
                .map_err(storage)?;
            // `bytes` is the file's size, so it covers the bucket and name tables too.
            Ok(StorageStats {
                bytes: disk_bytes(&file),
                segments,
                series,
            })
        })
        .await
    }

    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let writes = buckets::targets(writes);
        self.submit(|reply| Job::WriteBuckets { writes, reply })
            .await
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

    async fn tokenize(&self, namespace: NameSpace, names: &[String]) -> Result<Vec<u64>> {
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

    async fn names_of(&self, namespace: NameSpace, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        let tokens = tokens.to_vec();
        self.read(move |db| names::names_of(db, namespace, &tokens))
            .await
    }
}

/// Segments of `series` that may hold points of `[start, end)` or its neighbours
/// ([`Segment::may_overlap`]).
///
/// Keys are `(series, prev_end)`, so the candidates are the keys below `(series, end)`;
/// walking them backwards, `next_start` decreases, and the walk stops at the first segment
/// that ends before `start`.
fn read_segments(db: &Database, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(SEGMENTS).map_err(storage)?;
    let mut out = Vec::new();
    for entry in table
        .range((series.0, i64::MIN)..(series.0, end))
        .map_err(storage)?
        .rev()
    {
        let (key, value) = entry.map_err(storage)?;
        let prev_end = key.value().1;
        let segment = tables::decode_segment(series, prev_end, value.value()).ok_or_else(|| {
            BackendError::Corrupt(format!("segment ({series}, {prev_end}) is malformed"))
        })?;
        if segment.next_start < start {
            break;
        }
        out.push(segment);
    }
    out.reverse();
    Ok(out)
}

/// Opens (or creates) the redb file, behind the fault switch when a test gave one.
fn open_database(file: &Path, faults: Option<IoFaults>) -> Result<Database> {
    let opened = match faults {
        None => Database::create(file),
        Some(faults) => std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(file)
            .map_err(redb::DatabaseError::from)
            .and_then(redb::backends::FileBackend::new)
            .and_then(|backend| {
                Database::builder().create_with_backend(faults::FaultyFile::new(backend, faults))
            }),
    };
    opened.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => BackendError::Unavailable(format!(
            "the store {} is already open in another process",
            file.display()
        )),
        e => BackendError::Storage(format!("cannot open {}: {e}", file.display())),
    })
}

/// Creates the fixed tables and records the format version in a new store; refuses a
/// store written in another layout rather than misread it.
fn create_tables(db: &Database) -> Result<()> {
    let txn = db.begin_write().map_err(storage)?;
    // Any table at all means the file was written before: by this layout only if it says so.
    let used = txn.list_tables().map_err(storage)?.next().is_some();
    txn.open_table(SERIES_KEYS).map_err(storage)?;
    txn.open_table(SERIES_IDS).map_err(storage)?;
    txn.open_table(HEADS).map_err(storage)?;
    txn.open_table(SEGMENTS).map_err(storage)?;
    txn.open_table(names::NAME_TOKENS).map_err(storage)?;
    txn.open_table(names::TOKEN_NAMES).map_err(storage)?;
    {
        let mut meta = txn.open_table(META).map_err(storage)?;
        let version = meta
            .get(FORMAT_VERSION_KEY)
            .map_err(storage)?
            .map(|v| v.value());
        match version {
            Some(FORMAT_VERSION) => {}
            None if !used => {
                meta.insert(FORMAT_VERSION_KEY, FORMAT_VERSION)
                    .map_err(storage)?;
            }
            found => {
                // Dropping `txn` without a commit leaves the file as it was.
                return Err(BackendError::Corrupt(format!(
                    "the store was written in format {} and this version reads format \
                     {FORMAT_VERSION} only (rollup slots moved from documents to rows); \
                     re-import its data into a new store",
                    found.unwrap_or(1)
                )));
            }
        }
    }
    txn.commit().map_err(storage)
}

fn load_catalog(db: &Database) -> Result<Vec<(SeriesKey, SeriesId)>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(SERIES_KEYS).map_err(storage)?;
    let mut out = Vec::new();
    for entry in table.iter().map_err(storage)? {
        let (id, raw) = entry.map_err(storage)?;
        let key = tables::decode_key(raw.value()).ok_or_else(|| {
            BackendError::Corrupt(format!("series {} has a malformed key", id.value()))
        })?;
        out.push((key, SeriesId(id.value())));
    }
    Ok(out)
}

/// Bytes the data file occupies on disk (allocated blocks, not its apparent length).
fn disk_bytes(file: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(file)
        .map(|m| m.blocks() * 512)
        .unwrap_or(0)
}
