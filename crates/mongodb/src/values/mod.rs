//! Value segments in time-partitioned collections (layout version 3): the points of every
//! measurement's series in one period live in the collection `sv.<period start>` as
//! immutable, compressed documents, each within one slice (a day by default), and their
//! derived rollups in `sr.<resolution>.<period start>` (`crate::naming`).
//! `docs/format/mongodb.md` has the shapes, the crash windows and the invariants.
//!
//! The one rule: for each time of a series, the stored value is the one with the highest
//! **write number** `w` (the `writes` counter, one `$inc` per append call). Every point
//! carries its write number (a fresh document's is its `_id.w`; a folded document keeps
//! them in a column), so documents may overlap freely: late points, retried bodies and
//! concurrent writers are all merged by readers ([`merge`]) and by folding.
//!
//! # Layout
//! - `names`: which collections a read or a pass looks at.
//! - `doc`: a value document, written and read back.
//! - `merge`: the last write of each time, from any set of documents (pure).
//! - `measurements`: the ids of measurements (`m` in every document).
//! - `write`: `append`, three requests for a body in one slice whatever its measurements.
//! - `read`: the series' bounds every read starts from, and `heads`.
//! - `range`: `read_points` and `read_segments`: the points of a range and their
//!   neighbours, for many series with one `find` per collection.
//! - `pass`: a fold pass: the slices it looks at, its marks, its rounds.
//! - `fold`: merging a series' documents and deriving its rollups, off the write path.
//! - `rollup_doc`, `rollups`: the rollup documents; `read_segment_rollups` (many series
//!   with one `find` per collection).
//! - `retention`: `drop_raw_before` and `drop_segment_rollup_before`: one measurement's
//!   slices deleted by ranges, a collection dropped once retention has emptied it.
//! - `background`: the task that folds every few seconds.
//! - `delete`: `delete_points`, the documents holding deleted points rewritten.

mod background;
mod delete;
mod doc;
mod fold;
mod measurements;
mod merge;
mod names;
mod pass;
mod range;
mod read;
mod retention;
mod rollup_doc;
mod rollups;
mod write;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

pub(crate) use background::spawn as spawn_background;
pub(crate) use measurements::MEASUREMENTS;
pub(crate) use names::PartitionName;
pub(crate) use pass::Scope;

/// The `counters` document whose `n` is the last write number issued.
pub(crate) const WRITES_COUNTER: &str = "writes";

/// Series id → measurement token, token → measurement name: both never change once
/// issued, so a handle caches them for good.
#[derive(Default)]
pub(crate) struct TokenCache {
    tokens: Mutex<HashMap<i64, u64>>,
    names: Mutex<HashMap<u64, String>>,
}

impl TokenCache {
    fn token(&self, series: i64) -> Option<u64> {
        lock(&self.tokens).get(&series).copied()
    }

    fn set_token(&self, series: i64, token: u64) {
        lock(&self.tokens).insert(series, token);
    }

    fn name(&self, token: u64) -> Option<String> {
        lock(&self.names).get(&token).cloned()
    }

    fn set_name(&self, token: u64, name: String) {
        lock(&self.names).insert(token, name);
    }
}

/// Per series, the slices `[first, last]` this handle has recorded in its series
/// document's bounds (`tf`/`tl`) — never more than the document holds, since bounds only
/// widen. Bounded: past `MAX_CACHED_BOUNDS` series it starts over (the next write of each
/// then sends its bounds again, harmlessly).
#[derive(Default)]
pub(crate) struct SeriesBounds(Mutex<HashMap<i64, (i64, i64)>>);

const MAX_CACHED_BOUNDS: usize = 1 << 20;

impl SeriesBounds {
    fn covers(&self, series: i64, (first, last): (i64, i64)) -> bool {
        lock(&self.0)
            .get(&series)
            .is_some_and(|&(f, l)| f <= first && last <= l)
    }

    fn widened(&self, series: i64, (first, last): (i64, i64)) {
        let mut known = lock(&self.0);
        if known.len() >= MAX_CACHED_BOUNDS {
            known.clear();
        }
        let entry = known.entry(series).or_insert((first, last));
        *entry = (entry.0.min(first), entry.1.max(last));
    }
}

/// The value and rollup collections whose indexes this handle has made sure of.
#[derive(Default)]
pub(crate) struct PartitionIndexes(Mutex<HashSet<String>>);

impl PartitionIndexes {
    fn has(&self, collection: &str) -> bool {
        lock(&self.0).contains(collection)
    }

    fn add(&self, collection: &str) {
        lock(&self.0).insert(collection.to_owned());
    }

    fn forget(&self, collection: &str) {
        lock(&self.0).remove(collection);
    }
}

/// How far the derived rollups are behind, as this handle knows it: points it appended
/// since the last fold pass began, plus the points that pass left uncovered. Until the
/// first pass has looked at the database, at least 1 (a restart does not know yet).
#[derive(Default)]
pub(crate) struct Lag {
    appended: AtomicU64,
    in_pass: AtomicU64,
    uncovered: AtomicU64,
    looked: AtomicBool,
}

impl Lag {
    fn appended(&self, points: u64) {
        self.appended.fetch_add(points, Ordering::Relaxed);
    }

    /// A pass begins: what was appended so far is its to cover.
    fn pass_begins(&self) {
        let appended = self.appended.swap(0, Ordering::Relaxed);
        self.in_pass.store(appended, Ordering::Relaxed);
    }

    /// A pass ended with `uncovered` points it could not cover.
    fn pass_ended(&self, uncovered: u64) {
        self.uncovered.store(uncovered, Ordering::Relaxed);
        self.in_pass.store(0, Ordering::Relaxed);
        self.looked.store(true, Ordering::Relaxed);
    }

    pub(crate) fn points(&self) -> u64 {
        let known = self.appended.load(Ordering::Relaxed)
            + self.in_pass.load(Ordering::Relaxed)
            + self.uncovered.load(Ordering::Relaxed);
        match self.looked.load(Ordering::Relaxed) {
            true => known,
            false => known.max(1),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
