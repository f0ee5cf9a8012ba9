//! tickertape's MongoDB backend: value segments (seed 000) on any MongoDB deployment
//! (standalone, replica set, sharded cluster), behind the same [`Backend`] trait as the
//! embedded store.
//!
//! The stored shapes, indexes, both append protocols with their crash windows, and the
//! invariants are written down in `docs/format/mongodb.md`; the field-name table is in
//! [`layout`]'s docs.
//!
//! # Layout
//! - [`options`]: [`MongoOptions`], [`SegmentProtocol`], the [`FaultPlan`] test hook.
//! - `layout`: collection and field names, document (de)serialisation.
//! - `bulk`: many conditional writes in one round trip, with per-statement outcomes.
//! - `series`: registering and listing series (`resolve_series`, `find_series`).
//! - `selector`: a series selector as an index query on `series` (tag pairs `k.p`).
//! - `backfill`: `k.p` given at `connect` to series documents written before it existed.
//! - `reserve`, `conditional`: the two append protocols.
//! - `tidy`: sealing full segments and tightening `pe`/`ns`, shared by both protocols.
//! - `read`: `read_segments`, `heads`, `stats`.
//! - `bucket_layout`, `bucket_write`, `bucket_read`: time buckets in time-partitioned
//!   collections (seeds 001, 003, 004): names, slot paths, shells, writes, reads.
//! - `names`: the name store (seed 002).
//! - `error`: driver errors mapped to [`BackendError`].

mod admin;
mod backfill;
mod bucket_layout;
mod bucket_read;
mod bucket_write;
mod bulk;
mod conditional;
mod error;
mod find;
pub mod layout;
mod names;
pub mod options;
mod read;
mod reserve;
mod selector;
mod series;
mod series_count;
mod tag_values;
mod tidy;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mongodb::bson::{doc, Document};
use mongodb::options::{
    Acknowledgment, ClientOptions, DatabaseOptions, IndexOptions, ReadPreference,
    ReadPreferenceOptions, SelectionCriteria, WriteConcern,
};
use mongodb::{Client, Database, IndexModel};
use tickertape_backend::{
    AppendOutcome, Backend, BackendError, BucketRange, BucketRead, BucketWrite, BucketWriteOutcome,
    DocumentStart, NameQuery, NameSpace, Partition, Result, SeriesAppend, SeriesCount, SeriesHead,
    SeriesInfo, StorageStats, StoredBucket,
};
use tickertape_core::segment::Segment;
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

pub use admin::{ensure_mongos, segments_shard_key, ShardReport};
pub use options::{
    uri_with_database, FaultPlan, FaultPoint, MongoOptions, ReadMode, SegmentProtocol,
};

use crate::error::map_err;
use crate::layout::{COUNTERS, LAYOUT_VERSION, META, NAMES, SEGMENTS, SERIES};

/// The database used when the URI names none.
pub const DEFAULT_DATABASE: &str = "tickertape";

/// A handle on a tickertape store in one MongoDB database. Cheap to share (`Arc<dyn
/// Backend>`); every handle on the same database sees the same data, and several handles
/// (in one process or many) may write the same series at once.
pub struct MongoBackend {
    client: Client,
    /// Primary reads and every write, with the configured write concern.
    db: Database,
    /// Query reads, with the configured read preference.
    read_db: Database,
    /// The write concern, as put into `run_command` write commands.
    write_concern: Document,
    capacity: i64,
    protocol: SegmentProtocol,
    fault: Option<Arc<FaultPlan>>,
    /// Conditional protocol: the active generation last seen per series. Only a hint: a
    /// stale entry makes the fast path's condition fail and the slow path re-read the head.
    /// A std Mutex: held only to read or write the map, never across an await.
    active: Mutex<HashMap<i64, i64>>,
}

impl MongoBackend {
    /// Connects, pings the server, checks (or records) the database's protocol and segment
    /// capacity, gives series documents of an older store their tag pairs (`backfill`),
    /// and creates the indexes.
    ///
    /// Fails with [`BackendError::Unavailable`] (`cannot reach MongoDB at <uri>: <reason>`)
    /// when no suitable server answers within the server selection timeout, and with
    /// [`BackendError::Invalid`] for a malformed URI or options that contradict the data
    /// already in the database.
    pub async fn connect(options: MongoOptions) -> Result<Self> {
        let shown = redact(&options.uri);
        if options.segment_capacity == 0 || options.segment_capacity > 100_000 {
            return Err(BackendError::Invalid(format!(
                "segment_capacity must be between 1 and 100000, not {}",
                options.segment_capacity
            )));
        }
        let mut client_options = ClientOptions::parse(&options.uri).await.map_err(|e| {
            if matches!(*e.kind, mongodb::error::ErrorKind::DnsResolve { .. }) {
                BackendError::Unavailable(format!("cannot reach MongoDB at {shown}: {e}"))
            } else {
                BackendError::Invalid(format!("bad MongoDB URI {shown}: {e}"))
            }
        })?;
        if client_options.server_selection_timeout.is_none() {
            client_options.server_selection_timeout = Some(options.server_selection_timeout);
        }
        if client_options.connect_timeout.is_none() {
            client_options.connect_timeout = Some(options.server_selection_timeout);
        }
        let write_concern = write_concern(client_options.write_concern.clone(), &options)?;
        let read_criteria = match options.read_mode {
            Some(mode) => SelectionCriteria::ReadPreference(read_preference(mode)),
            None => client_options
                .selection_criteria
                .clone()
                .unwrap_or(SelectionCriteria::ReadPreference(ReadPreference::Primary)),
        };
        let name = client_options
            .default_database
            .clone()
            .unwrap_or_else(|| DEFAULT_DATABASE.to_owned());
        let client = Client::with_options(client_options)
            .map_err(|e| BackendError::Invalid(format!("bad MongoDB options for {shown}: {e}")))?;
        let db = client.database_with_options(
            &name,
            DatabaseOptions::builder()
                .write_concern(write_concern.clone())
                .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary))
                .build(),
        );
        let read_db = client.database_with_options(
            &name,
            DatabaseOptions::builder()
                .write_concern(write_concern.clone())
                .selection_criteria(read_criteria)
                .build(),
        );
        db.run_command(doc! { "ping": 1 }).await.map_err(|e| {
            BackendError::Unavailable(format!("cannot reach MongoDB at {shown}: {e}"))
        })?;
        let write_concern = mongodb::bson::to_document(&write_concern)
            .map_err(|e| BackendError::Invalid(format!("write concern: {e}")))?;
        let mut backend = Self {
            client,
            db,
            read_db,
            write_concern,
            capacity: options.segment_capacity as i64,
            protocol: options.protocol,
            fault: options.fault,
            active: Mutex::new(HashMap::new()),
        };
        backend.check_layout(options.adopt_stored_layout).await?;
        // Before the indexes: on a store that predates `k.p`, building the tag index once
        // over the backfilled documents is cheaper than updating it document by document.
        backend.backfill_tag_pairs().await?;
        backend.backfill_tag_values().await?;
        backend.create_indexes().await?;
        Ok(backend)
    }

    pub fn protocol(&self) -> SegmentProtocol {
        self.protocol
    }

    pub fn segment_capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The database this handle works in.
    pub fn database_name(&self) -> &str {
        self.db.name()
    }

    /// Drops the whole database. For tests and `tickertape-bench`, which work in throw-away
    /// databases.
    pub async fn drop_database(&self) -> Result<()> {
        self.db
            .drop()
            .await
            .map_err(|e| map_err("drop database", e))
    }

    /// Closes the connection pool. Dropping the handle does the same, less gracefully.
    pub async fn shutdown(self) {
        self.client.shutdown().await;
    }

    /// Records the protocol and capacity on first use; refuses a handle that disagrees.
    ///
    /// With `adopt`, a database that already holds data keeps its own protocol and capacity
    /// and this handle takes them over (what a command that was not asked for either wants).
    async fn check_layout(&mut self, adopt: bool) -> Result<()> {
        let meta = doc! {
            "_id": "layout",
            "v": LAYOUT_VERSION,
            "p": self.protocol.as_str(),
            "cap": self.capacity,
        };
        bulk::insert(&self.db, &self.write_concern, META, vec![meta]).await?;
        // The series id counter, created here so that registrations never race to create it.
        let counter = doc! { "_id": "series", "n": 0_i64 };
        bulk::insert(&self.db, &self.write_concern, COUNTERS, vec![counter]).await?;
        let stored = self
            .db
            .collection::<Document>(META)
            .find_one(doc! { "_id": "layout" })
            .await
            .map_err(|e| map_err("read layout", e))?
            .ok_or_else(|| BackendError::Storage("mongodb: layout document vanished".into()))?;
        let version = layout::need_i64(&stored, "v")?;
        let protocol = stored.get_str("p").unwrap_or("?");
        let capacity = layout::need_i64(&stored, "cap")?;
        if adopt && version == LAYOUT_VERSION {
            if let (Ok(p), true) = (protocol.parse::<SegmentProtocol>(), capacity > 0) {
                self.protocol = p;
                self.capacity = capacity;
                return Ok(());
            }
        }
        if version != LAYOUT_VERSION
            || protocol != self.protocol.as_str()
            || capacity != self.capacity
        {
            return Err(BackendError::Invalid(format!(
                "database {} holds layout v{version} written with protocol {protocol} and \
                 segment capacity {capacity}; this handle asks for v{LAYOUT_VERSION}, {} and {}",
                self.db.name(),
                self.protocol,
                self.capacity
            )));
        }
        Ok(())
    }

    /// The indexes the queries need (`docs/format/mongodb.md`, "Indexes").
    async fn create_indexes(&self) -> Result<()> {
        // (collection, keys, index name, unique)
        let indexes = [
            (SERIES, doc! { "ck": 1 }, "key_unique", true),
            (
                SERIES,
                doc! { "k.m": 1, "k.f": 1 },
                "measurement_field",
                false,
            ),
            // `find_series` with tag conditions (`selector`): multikey, one key per tag
            // pair; the field last, so that a selector without one is still one range.
            (
                SERIES,
                doc! { "k.m": 1, "k.p": 1, "k.f": 1 },
                "measurement_tags_field",
                false,
            ),
            (
                SEGMENTS,
                doc! { "s": 1, "ns": 1, "pe": 1 },
                "series_range",
                false,
            ),
            // Name lookups by value; the newest document is found through `_id`. A
            // multikey index, one key per name: lookups of many names at once stay index
            // scans.
            (NAMES, doc! { "ns": 1, "l": 1 }, "namespace_name", false),
        ];
        // The counters collection is only ever read by `_id`; bucket partitions are read
        // and written through `_id` ranges and equalities, which the built-in index serves.
        for (collection, keys, name, unique) in indexes {
            let options = IndexOptions::builder()
                .name(name.to_owned())
                .unique(unique)
                .build();
            self.db
                .collection::<Document>(collection)
                .create_index(IndexModel::builder().keys(keys).options(options).build())
                .await
                .map_err(|e| map_err(&format!("create index {collection}.{name}"), e))?;
        }
        Ok(())
    }

    fn fault(&self, point: FaultPoint) -> Result<()> {
        match &self.fault {
            Some(plan) => plan.check(point),
            None => Ok(()),
        }
    }

    fn collection(&self, name: &str) -> mongodb::Collection<Document> {
        self.db.collection(name)
    }
}

/// The write concern: the overrides, else the URI's, else `{w: "majority", j: true}`.
fn write_concern(from_uri: Option<WriteConcern>, options: &MongoOptions) -> Result<WriteConcern> {
    let mut wc = from_uri.unwrap_or_else(|| {
        WriteConcern::builder()
            .w(Acknowledgment::Majority)
            .journal(true)
            .build()
    });
    if let Some(w) = &options.w {
        wc.w = Some(match w.parse::<u32>() {
            Ok(0) => {
                return Err(BackendError::Invalid(
                    "write concern w=0 cannot confirm a write; use 1 or more".into(),
                ))
            }
            Ok(n) => Acknowledgment::Nodes(n),
            Err(_) if w == "majority" => Acknowledgment::Majority,
            Err(_) => Acknowledgment::Custom(w.clone()),
        });
    }
    if let Some(j) = options.journal {
        wc.journal = Some(j);
    }
    if wc.w == Some(Acknowledgment::Nodes(0)) {
        return Err(BackendError::Invalid(
            "write concern w=0 cannot confirm a write; use 1 or more".into(),
        ));
    }
    Ok(wc)
}

fn read_preference(mode: ReadMode) -> ReadPreference {
    let options: Option<ReadPreferenceOptions> = None;
    match mode {
        ReadMode::Primary => ReadPreference::Primary,
        ReadMode::PrimaryPreferred => ReadPreference::PrimaryPreferred { options },
        ReadMode::Secondary => ReadPreference::Secondary { options },
        ReadMode::SecondaryPreferred => ReadPreference::SecondaryPreferred { options },
        ReadMode::Nearest => ReadPreference::Nearest { options },
    }
}

/// The URI without its password, for messages.
fn redact(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://") else {
        return uri.to_owned();
    };
    let rest = &uri[scheme_end + 3..];
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{}***@{}", &uri[..scheme_end + 3], &rest[at + 1..]),
        None => uri.to_owned(),
    }
}

#[async_trait]
impl Backend for MongoBackend {
    fn kind(&self) -> &'static str {
        "mongodb"
    }

    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        self.resolve(keys).await
    }

    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>> {
        self.lookup(keys).await
    }

    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount> {
        self.count(measurements).await
    }

    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        self.find(selector).await
    }

    async fn list_fields(&self) -> Result<Vec<(String, String)>> {
        self.fields().await
    }

    async fn list_measurements(&self, query: &NameQuery) -> Result<Vec<String>> {
        self.measurements(query).await
    }

    async fn list_fields_of(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        self.fields_of(measurement, query).await
    }

    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        self.tag_keys(measurement, query).await
    }

    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        self.tag_values(measurement, key, query).await
    }

    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<Vec<AppendOutcome>> {
        // Several appends to one series are applied in order: the n-th append of each
        // series goes in round n; one round holds at most one append per series.
        let mut rounds: Vec<Vec<usize>> = Vec::new();
        let mut seen: HashMap<SeriesId, usize> = HashMap::new();
        for (i, a) in appends.iter().enumerate() {
            let round = seen.entry(a.series()).or_insert(0);
            if rounds.len() <= *round {
                rounds.push(Vec::new());
            }
            rounds[*round].push(i);
            *round += 1;
        }
        let mut outcomes = vec![AppendOutcome::all_new(); appends.len()];
        for round in rounds {
            let batch: Vec<(usize, &SeriesAppend)> =
                round.iter().map(|&i| (i, &appends[i])).collect();
            let done = match self.protocol {
                SegmentProtocol::Reserve => self.append_reserve(&batch).await?,
                SegmentProtocol::Conditional => self.append_conditional(&batch).await?,
            };
            for (i, outcome) in round.into_iter().zip(done) {
                outcomes[i] = outcome;
            }
        }
        Ok(outcomes)
    }

    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
        self.read(series, start, end).await
    }

    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        self.read_heads(series).await
    }

    async fn stats(&self) -> Result<StorageStats> {
        self.read_stats().await
    }

    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        self.write_bucket_batch(writes).await
    }

    async fn read_buckets(
        &self,
        range: BucketRange,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        self.read_bucket_range(range, part).await
    }

    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64> {
        self.preallocate_shells(document, series).await
    }

    async fn list_partitions(&self) -> Result<Vec<Partition>> {
        self.list_bucket_partitions().await
    }

    async fn drop_partition(&self, partition: Partition) -> Result<()> {
        self.drop_bucket_partition(partition).await
    }

    async fn tokenize(&self, namespace: NameSpace, names: &[String]) -> Result<Vec<u64>> {
        self.tokenize_names(namespace, names).await
    }

    async fn names_of(&self, namespace: NameSpace, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        self.names_of_tokens(namespace, tokens).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_credentials_only() {
        assert_eq!(
            redact("mongodb://u:secret@h:1/db?w=1"),
            "mongodb://***@h:1/db?w=1"
        );
        assert_eq!(redact("mongodb://h:1/db"), "mongodb://h:1/db");
    }

    #[test]
    fn write_concern_defaults_to_majority_journaled_and_accepts_overrides() {
        let mut options = MongoOptions::new("mongodb://h/");
        let wc = write_concern(None, &options).unwrap();
        assert_eq!(wc.w, Some(Acknowledgment::Majority));
        assert_eq!(wc.journal, Some(true));
        options.w = Some("2".into());
        options.journal = Some(false);
        let wc = write_concern(None, &options).unwrap();
        assert_eq!(wc.w, Some(Acknowledgment::Nodes(2)));
        assert_eq!(wc.journal, Some(false));
        options.w = Some("0".into());
        assert!(write_concern(None, &options).is_err());
    }
}
