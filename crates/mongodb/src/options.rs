//! How to reach MongoDB, how time is cut into slices and collections and folded, and the
//! fault-injection hook the crash-window tests use.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickertape_backend::BackendError;
use tickertape_core::partition::DEFAULT_PARTITION_NS;

/// Points per value document at most, unless [`MongoOptions::block_points`] says otherwise.
///
/// Why 100,000: a day of a series written every second (86,400 points) folds into one
/// document, and the worst case of the codec (~18 bytes a point for random times and
/// values) keeps a folded document (at most twice this) near 3.6 MB, far below MongoDB's
/// 16 MiB document limit.
pub const DEFAULT_BLOCK_POINTS: usize = 100_000;

/// The largest `block_points` accepted: a folded document holds up to twice as many points,
/// which at the codec's worst case stays under the 16 MiB document limit.
pub const MAX_BLOCK_POINTS: usize = 400_000;

/// Which members serve queries (`read_segments`, `find_series`, `heads`). Writes, and the
/// reads a writer does to decide what to write, always go to the primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadMode {
    Primary,
    PrimaryPreferred,
    /// Secondary reads for reports (analytics that tolerate lag): may lag behind acknowledged writes.
    Secondary,
    SecondaryPreferred,
    Nearest,
}

impl ReadMode {
    /// The names of MongoDB's read preference modes.
    const NAMES: [(Self, &'static str); 5] = [
        (ReadMode::Primary, "primary"),
        (ReadMode::PrimaryPreferred, "primaryPreferred"),
        (ReadMode::Secondary, "secondary"),
        (ReadMode::SecondaryPreferred, "secondaryPreferred"),
        (ReadMode::Nearest, "nearest"),
    ];
}

impl FromStr for ReadMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        named(&Self::NAMES, s, "read preference")
    }
}

/// The value named `text` in a table of (value, name); the error lists the names.
fn named<T: Copy>(names: &[(T, &'static str)], text: &str, what: &str) -> Result<T, String> {
    match names.iter().find(|(_, name)| *name == text) {
        Some((value, _)) => Ok(*value),
        None => {
            let expected: Vec<&str> = names.iter().map(|(_, name)| *name).collect();
            Err(format!(
                "unknown {what} {text:?} (expected one of {})",
                expected.join(", ")
            ))
        }
    }
}

/// Options of [`crate::MongoBackend::connect`].
///
/// Write concern and read preference come from the URI (`?w=majority&journal=true`,
/// `?readPreference=secondary`) unless overridden here; with neither, writes wait for
/// `{w: "majority", j: true}` and reads go to the primary.
#[derive(Clone, Debug)]
pub struct MongoOptions {
    /// `mongodb://HOST:PORT/DB?...`; the database is the URI's path, `tickertape` if empty.
    pub uri: String,
    /// Width in ns of a slice: what a value document never spans, a fold merges, a rollup
    /// document summarises and retention drops (`naming`). Fixed per database, recorded in
    /// `meta`.
    pub partition_ns: i64,
    /// Slices per value collection (`sv.<start>`: every measurement's points of the
    /// period). Fixed per database, recorded in `meta`.
    pub collection_slices: u32,
    /// Slices per rollup collection (`sr.<resolution>.<start>`). Fixed per database,
    /// recorded in `meta`.
    pub rollup_collection_slices: u32,
    /// Points per value document at most: a write cuts a series' points in a slice
    /// into documents of this many, and folding stops growing a document at this size.
    /// Fixed per database, recorded in `meta`.
    pub block_points: usize,
    /// How often the background task looks for fold work.
    pub fold_every: Duration,
    /// A series' fresh documents in one partition that make it worth folding at once.
    pub fold_docs: usize,
    /// A fresh document this old is folded (sealed) whatever else: a series no longer
    /// written ends up compressed in few documents. Also: a partition that ended this long
    /// ago has every fresh document folded at the next pass.
    pub seal_idle: Duration,
    /// How long a document a fold superseded stays readable before a pass deletes it: far
    /// longer than any one read of a partition takes, so that a read that began before
    /// the fold still finds its points. `compact` waits this long and then deletes them.
    pub superseded_grace: Duration,
    /// Write concern `w` override: `"majority"`, a tag set name, or a number of members.
    pub w: Option<String>,
    /// Write concern `j` override: wait for the journal.
    pub journal: Option<bool>,
    /// Read preference override for queries.
    pub read_mode: Option<ReadMode>,
    /// How long to look for a suitable server before an operation fails as unavailable,
    /// unless the URI sets `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Duration,
    /// Test hook: make writers and folds stop at chosen points (see [`FaultPlan`]).
    pub fault: Option<Arc<FaultPlan>>,
    /// Take the slice width, collection periods and block size a database was first
    /// written with, instead of refusing a handle whose `partition_ns`, `block_points`,
    /// `collection_slices` or `rollup_collection_slices` differ (those then apply to a new
    /// database only).
    pub adopt_stored_layout: bool,
    /// Driver options the caller wants on the client (e.g. a command event handler that
    /// counts requests); `None`: the URI's alone.
    pub configure_client: Option<ConfigureClient>,
}

/// A change to the driver's client options before the client is built (tests count the
/// requests a store sends with a command event handler set here).
#[derive(Clone)]
pub struct ConfigureClient(pub Arc<dyn Fn(&mut mongodb::options::ClientOptions) + Send + Sync>);

impl std::fmt::Debug for ConfigureClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConfigureClient(..)")
    }
}

impl MongoOptions {
    /// Defaults for `uri`: day slices in two-week value collections and eight-week rollup
    /// collections, 100,000-point documents, a fold pass every 5 s
    /// (32 fresh documents, or 10 minutes idle), write concern and read preference from
    /// the URI, a 5 s server selection timeout.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            partition_ns: DEFAULT_PARTITION_NS,
            collection_slices: crate::naming::DEFAULT_VALUE_SLICES,
            rollup_collection_slices: crate::naming::DEFAULT_ROLLUP_SLICES,
            block_points: DEFAULT_BLOCK_POINTS,
            fold_every: Duration::from_secs(5),
            fold_docs: 32,
            seal_idle: Duration::from_secs(600),
            superseded_grace: Duration::from_secs(15),
            w: None,
            journal: None,
            read_mode: None,
            server_selection_timeout: Duration::from_secs(5),
            fault: None,
            adopt_stored_layout: false,
            configure_client: None,
        }
    }
}

/// A point in the write path or a fold where a handle can be made to stop, as if its
/// process died there: the call returns [`BackendError::Storage`] and nothing after that
/// point runs (`docs/format/mongodb.md`, "Crash windows").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// An append took its write sequence numbers and inserted nothing yet.
    AfterSequence,
    /// An append inserted its documents into some partitions but not into the others
    /// (fires before the second partition's insert).
    BetweenPartitions,
    /// A fold upserted the rollup documents and has not inserted its merged documents yet.
    AfterRollups,
    /// A fold inserted its merged documents and has not marked its inputs superseded.
    AfterReplace,
}

/// Which [`FaultPoint`]s fire, and how often. Shared by the tests and the backend handle.
#[derive(Debug, Default)]
pub struct FaultPlan {
    // A std Mutex: it is held only to update counters, never across an await.
    state: Mutex<HashMap<FaultPoint, (u32, u32)>>,
}

impl FaultPlan {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next `times` writers that reach `point` stop there.
    pub fn arm(&self, point: FaultPoint, times: u32) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.entry(point).or_insert((0, 0)).0 = times;
    }

    /// How many times `point` has fired so far.
    pub fn fired(&self, point: FaultPoint) -> u32 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.get(&point).map_or(0, |&(_, fired)| fired)
    }

    /// Called by writers at `point`: an error when the plan says to stop here.
    pub(crate) fn check(&self, point: FaultPoint) -> Result<(), BackendError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.get_mut(&point) {
            Some((armed, fired)) if *armed > 0 => {
                *armed -= 1;
                *fired += 1;
                Err(BackendError::Storage(format!(
                    "injected fault: writer stopped at {point:?}"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// `uri` with its database (the path) replaced by `database`, query options kept:
/// `mongodb://h:1/?w=1` + `x` → `mongodb://h:1/x?w=1`. For tests and benchmarks that
/// work in throw-away databases on one server.
pub fn uri_with_database(uri: &str, database: &str) -> String {
    let (base, query) = match uri.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (uri, String::new()),
    };
    let hosts_start = base.find("://").map_or(0, |i| i + 3);
    let hosts_end = base[hosts_start..]
        .find('/')
        .map_or(base.len(), |i| hosts_start + i);
    format!("{}/{database}{query}", &base[..hosts_end])
}

#[cfg(test)]
mod uri_tests {
    use super::uri_with_database;

    #[test]
    fn database_is_replaced_and_options_kept() {
        assert_eq!(uri_with_database("mongodb://h:1", "x"), "mongodb://h:1/x");
        assert_eq!(
            uri_with_database("mongodb://h:1/old?w=1", "x"),
            "mongodb://h:1/x?w=1"
        );
        assert_eq!(
            uri_with_database("mongodb://a:1,b:2/?rs=r", "x"),
            "mongodb://a:1,b:2/x?rs=r"
        );
    }
}
