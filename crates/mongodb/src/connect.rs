//! Connecting: the driver's client and database handles, the stored layout check, the
//! indexes of the fixed collections, and the state every handle shares with its
//! background fold task ([`Shared`]).

use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::options::{
    Acknowledgment, ClientOptions, DatabaseOptions, IndexOptions, ReadPreference,
    ReadPreferenceOptions, SelectionCriteria, WriteConcern,
};
use mongodb::{Client, Database, IndexModel};
use tickertape_backend::{BackendError, Result, RollupPlan};
use tickertape_core::partition::Partitioning;

use crate::error::map_err;
use crate::layout::{self, COUNTERS, LAYOUT_VERSION, META, NAMES, SERIES};
use crate::naming::Periods;
use crate::options::{FaultPlan, FaultPoint, MongoOptions, ReadMode, MAX_BLOCK_POINTS};
use crate::values::{
    Lag, PartitionIndexes, SeriesBounds, TokenCache, MEASUREMENTS, WRITES_COUNTER,
};
use crate::{bulk, DEFAULT_DATABASE};

/// How time is cut into slices and collections, fixed per database (`meta` `{_id: "layout"}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ValueLayout {
    /// Slices (`periods.slice_ns`): what a document never spans.
    pub partitioning: Partitioning,
    pub partition_ns: i64,
    /// Slices, value collections and rollup collections.
    pub periods: Periods,
    /// Points per value document at most (a fold's document: twice this at most).
    pub block_points: usize,
}

/// When the background task folds (see `values::background`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FoldSchedule {
    pub every: Duration,
    pub docs: usize,
    pub seal_idle: Duration,
    pub grace: Duration,
}

/// Everything a handle works with; the background fold task holds a `Weak` of it, so it
/// ends with the last handle.
pub(crate) struct Shared {
    pub client: Client,
    /// Primary reads and every write, with the configured write concern.
    pub db: Database,
    /// Query reads, with the configured read preference.
    pub read_db: Database,
    /// The write concern, as put into `run_command` write commands.
    pub write_concern: Document,
    pub layout: ValueLayout,
    pub schedule: FoldSchedule,
    pub fault: Option<std::sync::Arc<FaultPlan>>,
    /// Series → measurement token, token → measurement name.
    pub tokens: TokenCache,
    /// The partition collections whose indexes this handle has created.
    pub indexed: PartitionIndexes,
    /// The series bounds this handle has recorded.
    pub bounds: SeriesBounds,
    /// The rollups the engine asked for (`Backend::derive_segment_rollups`).
    pub rollups: RollupPlan,
    /// Points in fresh (unfolded) documents, as far as this handle knows.
    pub lag: Lag,
    /// One fold at a time per handle (the background pass, `compact`, retention's fold
    /// before a drop): concurrent folds are safe, only wasteful.
    pub fold_lock: tokio::sync::Mutex<()>,
    /// Woken when the engine sets the rollup plan: the first pass waits for it (or for
    /// `fold_every`), so that the folds of a start-up write the rollups too.
    pub plan_set: tokio::sync::Notify,
    /// Set when the rollup plan changes: the next pass verifies every series' rollups.
    pub verify: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// Connects, pings the server and checks (or records) the database's layout.
    pub(crate) async fn connect(options: &MongoOptions) -> Result<Self> {
        let shown = redact(&options.uri);
        check_options(options)?;
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
        if let Some(configure) = &options.configure_client {
            (configure.0)(&mut client_options);
        }
        let write_concern = write_concern(client_options.write_concern.clone(), options)?;
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
            // Wrong credentials will not get better by retrying: say what it is.
            if matches!(*e.kind, mongodb::error::ErrorKind::Authentication { .. }) {
                BackendError::Invalid(format!(
                    "MongoDB at {shown} refused the credentials (authentication failed): {e}"
                ))
            } else {
                BackendError::Unavailable(format!("cannot reach MongoDB at {shown}: {e}"))
            }
        })?;
        let write_concern = mongodb::bson::to_document(&write_concern)
            .map_err(|e| BackendError::Invalid(format!("write concern: {e}")))?;
        let periods = Periods::new(
            options.partition_ns,
            options.collection_slices,
            options.rollup_collection_slices,
        )
        .ok_or_else(|| {
            BackendError::Invalid(format!(
                "partition_ns must be positive, collection_slices and \
                 rollup_collection_slices at least 1, and their products fit 64 bits: not \
                 {} ns × {} and × {}",
                options.partition_ns, options.collection_slices, options.rollup_collection_slices
            ))
        })?;
        let wanted = ValueLayout {
            partitioning: periods.slices(),
            partition_ns: options.partition_ns,
            periods,
            block_points: options.block_points,
        };
        let mut shared = Self {
            client,
            db,
            read_db,
            write_concern,
            layout: wanted,
            schedule: FoldSchedule {
                every: options.fold_every,
                docs: options.fold_docs.max(1),
                seal_idle: options.seal_idle,
                grace: options.superseded_grace,
            },
            fault: options.fault.clone(),
            tokens: TokenCache::default(),
            indexed: PartitionIndexes::default(),
            bounds: SeriesBounds::default(),
            rollups: RollupPlan::default(),
            lag: Lag::default(),
            fold_lock: tokio::sync::Mutex::new(()),
            plan_set: tokio::sync::Notify::new(),
            verify: std::sync::atomic::AtomicBool::new(false),
        };
        shared.check_layout(options.adopt_stored_layout).await?;
        Ok(shared)
    }

    /// Records the layout on first use; refuses a handle that disagrees, and a database of
    /// another layout version.
    ///
    /// With `adopt`, a database that already holds data keeps its own slice width,
    /// collection periods and block size and this handle takes them over (what a command
    /// that was not asked for any wants).
    async fn check_layout(&mut self, adopt: bool) -> Result<()> {
        let periods = self.layout.periods;
        let meta = doc! {
            "_id": "layout",
            "v": LAYOUT_VERSION,
            "pw": self.layout.partition_ns,
            "cs": periods.value_slices(),
            "rs": periods.rollup_slices(),
            "bp": self.layout.block_points as i64,
        };
        bulk::insert(&self.db, &self.write_concern, META, vec![meta]).await?;
        let stored = self
            .db
            .collection::<Document>(META)
            .find_one(doc! { "_id": "layout" })
            .await
            .map_err(|e| map_err("read layout", e))?
            .ok_or_else(|| BackendError::Storage("mongodb: layout document vanished".into()))?;
        let version = layout::need_i64(&stored, "v")?;
        if version != LAYOUT_VERSION {
            return Err(BackendError::Invalid(older_layout(self.db.name(), version)));
        }
        let width = layout::need_i64(&stored, "pw")?;
        let block = layout::need_i64(&stored, "bp")?;
        let value_slices = layout::need_i64(&stored, "cs")?;
        let rollup_slices = layout::need_i64(&stored, "rs")?;
        let stored_layout = u32::try_from(value_slices)
            .ok()
            .zip(u32::try_from(rollup_slices).ok())
            .and_then(|(cs, rs)| Periods::new(width, cs, rs))
            .zip(usize::try_from(block).ok().filter(|&b| b > 0))
            .map(|(periods, block_points)| ValueLayout {
                partitioning: periods.slices(),
                partition_ns: width,
                periods,
                block_points,
            })
            .ok_or_else(|| {
                crate::error::corrupt(format!(
                    "layout document with pw {width}, cs {value_slices}, rs {rollup_slices}, \
                     bp {block}"
                ))
            })?;
        if stored_layout != self.layout && !adopt {
            return Err(BackendError::Invalid(format!(
                "database {} keeps {width} ns slices in collections of {value_slices} \
                 (rollups: {rollup_slices}) with up to {block} points a document; this handle \
                 asks for {} ns, {} and {} slices and {} points (leave them unset to take \
                 the database's own)",
                self.db.name(),
                self.layout.partition_ns,
                periods.value_slices(),
                periods.rollup_slices(),
                self.layout.block_points
            )));
        }
        self.layout = stored_layout;
        // The counters, created here so that registrations and writes never race to.
        let counters = vec![
            doc! { "_id": "series", "n": 0_i64 },
            doc! { "_id": WRITES_COUNTER, "n": 0_i64 },
            doc! { "_id": MEASUREMENTS, "n": 0_i64 },
        ];
        bulk::insert(&self.db, &self.write_concern, COUNTERS, counters).await?;
        Ok(())
    }

    /// The indexes of the fixed collections (`docs/format/mongodb.md`, "Indexes"); each
    /// value and rollup collection gets its own when first written (`naming`).
    pub(crate) async fn create_indexes(&self) -> Result<()> {
        for (collection, keys, name, unique) in fixed_indexes() {
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

    pub(crate) fn fault(&self, point: FaultPoint) -> Result<()> {
        match &self.fault {
            Some(plan) => plan.check(point),
            None => Ok(()),
        }
    }

    pub(crate) fn collection(&self, name: &str) -> mongodb::Collection<Document> {
        self.db.collection(name)
    }
}

/// Why a database of another layout version is refused, and the way over: layout 3
/// cannot read the older shapes, so their points travel as line protocol, exported by
/// the version of tickertape that wrote them.
pub(crate) fn older_layout(database: &str, version: i64) -> String {
    let what = match version {
        1 => "value segments in one chain per series",
        2 => "one collection per measurement and day",
        _ => "a layout this version does not know",
    };
    format!(
        "database {database} holds a tickertape MongoDB store of layout version {version} \
         ({what}); this version of tickertape reads layout version {LAYOUT_VERSION} only \
         (collections by time, shared by every measurement) and will not change it. To \
         migrate, export its points with the tickertape version that wrote it \
         (`tickertape admin export --store <uri of {database}> --out points.lp`, with \
         `--config` if the store has one) and import them with this one into a new \
         database (`tickertape import points.lp --store <uri of the new database>`); \
         docs/scale-out.md describes both commands"
    )
}

/// The secondary indexes of the fixed collections: (collection, keys, name, unique).
/// `counters`, `meta`, `pending` and the others are read by `_id` alone; partitions get
/// theirs from `naming` when first written. `naming::FIXED_COLLECTIONS` counts these.
fn fixed_indexes() -> Vec<(&'static str, Document, &'static str, bool)> {
    vec![
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
        // Name lookups by value; the newest document is found through `_id`. A
        // multikey index, one key per name: lookups of many names at once stay index
        // scans.
        (NAMES, doc! { "ns": 1, "l": 1 }, "namespace_name", false),
        (MEASUREMENTS, doc! { "t": 1 }, "measurement_id", true),
    ]
}

fn check_options(options: &MongoOptions) -> Result<()> {
    if options.block_points == 0 || options.block_points > MAX_BLOCK_POINTS {
        return Err(BackendError::Invalid(format!(
            "block_points must be between 1 and {MAX_BLOCK_POINTS}, not {}",
            options.block_points
        )));
    }
    if options.fold_every.is_zero() {
        return Err(BackendError::Invalid(
            "fold_every must be longer than 0".into(),
        ));
    }
    Ok(())
}

/// The write concern: the overrides, else the URI's, else `{w: "majority", j: true}`.
pub(crate) fn write_concern(
    from_uri: Option<WriteConcern>,
    options: &MongoOptions,
) -> Result<WriteConcern> {
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
pub(crate) fn redact(uri: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_collections_count_the_indexes_connect_makes() {
        for (collection, count) in crate::naming::FIXED_COLLECTIONS {
            let made = fixed_indexes()
                .iter()
                .filter(|(c, ..)| c == collection)
                .count();
            assert_eq!(made, *count, "{collection}");
        }
    }

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
