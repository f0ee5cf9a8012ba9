//! How to reach MongoDB and which append protocol to use, plus the fault-injection hook the
//! crash-window tests use.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickertape_backend::BackendError;
use tickertape_core::segment::DEFAULT_SEGMENT_CAPACITY;

/// How a batch of points is appended to a series' value segments (DESIGN §3).
///
/// A database is written with one protocol for its whole life: [`crate::MongoBackend::connect`]
/// records the protocol (and the segment capacity) in the `meta` collection and refuses a
/// later handle that asks for another one, because the two keep the series head differently.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SegmentProtocol {
    /// Seed 000 generalised to batches: one conditional `findOneAndUpdate` of the series head
    /// reserves `k` slots (`sp -= k`), then one `$set` fills them in the pre-allocated
    /// segment. Tuned for in-place updates (MMAPv1).
    Reserve,
    /// One conditional update of the active segment itself per series per batch (room left,
    /// last time older than the batch), appending with `$push`/`$each`; every series of a
    /// batch goes out in one `update` command. No head round trip on the fast path.
    /// The default: `tickertape-bench layouts` measured it faster (docs/BENCHMARKS.md).
    #[default]
    Conditional,
}

impl SegmentProtocol {
    const NAMES: [(Self, &'static str); 2] = [
        (SegmentProtocol::Reserve, "reserve"),
        (SegmentProtocol::Conditional, "conditional"),
    ];

    /// The name used on the command line and in the `meta` collection.
    pub fn as_str(self) -> &'static str {
        name_of(&Self::NAMES, self)
    }
}

impl fmt::Display for SegmentProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SegmentProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        named(&Self::NAMES, s, "segment protocol")
    }
}

/// Which members serve queries (`read_segments`, `find_series`, `heads`). Writes, and the
/// reads a writer does to decide what to write, always go to the primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadMode {
    Primary,
    PrimaryPreferred,
    /// Secondary reads for reports (seed 003): may lag behind acknowledged writes.
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

/// The name of `value` in a table of (value, name).
fn name_of<T: Copy + PartialEq>(names: &[(T, &'static str)], value: T) -> &'static str {
    names
        .iter()
        .find(|(v, _)| *v == value)
        .map_or("?", |(_, name)| name)
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
    /// Slots per value segment (seed 000: 160 ≈ 4 KiB). Fixed per database.
    pub segment_capacity: usize,
    pub protocol: SegmentProtocol,
    /// Write concern `w` override: `"majority"`, a tag set name, or a number of members.
    pub w: Option<String>,
    /// Write concern `j` override: wait for the journal.
    pub journal: Option<bool>,
    /// Read preference override for queries.
    pub read_mode: Option<ReadMode>,
    /// How long to look for a suitable server before an operation fails as unavailable,
    /// unless the URI sets `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Duration,
    /// Test hook: make writers stop at chosen points of the protocols (see [`FaultPlan`]).
    pub fault: Option<Arc<FaultPlan>>,
    /// Take the protocol and capacity a database was first written with, instead of
    /// refusing a handle whose `protocol`/`segment_capacity` differ (those then apply to a
    /// new database only).
    pub adopt_stored_layout: bool,
}

impl MongoOptions {
    /// Defaults for `uri`: capacity 160, the conditional protocol, write concern and read
    /// preference from the URI, a 5 s server selection timeout.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            segment_capacity: DEFAULT_SEGMENT_CAPACITY,
            protocol: SegmentProtocol::default(),
            w: None,
            journal: None,
            read_mode: None,
            server_selection_timeout: Duration::from_secs(5),
            fault: None,
            adopt_stored_layout: false,
        }
    }
}

/// A point in the append protocols where a writer can be made to stop, as if its process
/// died there: the append returns [`BackendError::Storage`] and nothing after that point runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// Reserve protocol: slots were reserved on the head (`ld` advanced, `sp` decremented)
    /// but not filled. Seed 000's first crash window.
    AfterReserve,
    /// A writer found the active segment full and has not created the next one yet.
    /// Seed 000's second crash window.
    SegmentFull,
    /// The next segment exists but the head does not point to it yet.
    BeforeHeadSwitch,
    /// Points are written and the head points to the next segment; the full segment is not
    /// sealed yet (and `pe`/`ns` of the pair not tightened).
    BeforeSeal,
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
