//! Raw points of value-segment measurements: the write-ahead log, the in-memory head and
//! the immutable part files, and how a read sees them as one sorted series.
//!
//! ```text
//!   writer ──(frames, fdatasync)──▶ wal/           every acknowledged write
//!      │
//!      └─(after the sync)──▶ head ──freeze──▶ frozen heads ──flush──▶ parts/ (+ manifest)
//!                                                               merge ──▶ one part per partition
//! ```
//!
//! - `wal`: frames and their files; `record`: what a frame carries;
//! - `head`: the points since the last freeze, per series sorted by time;
//! - `part`: the part file (one time partition of every measurement, a column block per
//!   series, and the series' rollup slots beside it, `summary`); `files`: the bounded
//!   cache of open part files;
//! - `pack`, `packing`: parts of a week or four weeks that are over, copied into one file;
//! - `manifest`: the parts that make up the store (and where packed ones lie), the
//!   checkpoint, the series' latest points; `open`: finding them at open;
//! - `background`: the thread that flushes frozen heads, merges parts and drops partitions;
//! - `cache`: decoded part blocks kept for the next read;
//! - `retention`: retention drops, every measurement's in one rewrite per partition;
//! - `delete`: deleting points: the heads set back, the partitions rewritten without them.
//!
//! The last write wins: of several values at one time the reader takes the one from the
//! newest source — the head, then frozen heads from the newest, then parts by `max_lsn`.
//! The invariant that makes this right: a source's precedence is the newest log frame it
//! holds, and the frames a part holds are all older than any frame a newer source holds
//! (heads are frozen and flushed in log order; a merge takes every part of its partition).

pub mod background;
pub mod cache;
pub mod delete;
pub mod files;
pub mod head;
pub mod manifest;
pub mod open;
pub mod pack;
mod packing;
pub mod part;
mod part_index;
pub mod record;
mod retention;
pub mod stage;
pub mod summary;
pub mod wal;

use head::Head;
use part::Part;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use tickertape_backend::RollupPlan;
use tickertape_backend::{Result, SeriesHead};
pub use tickertape_core::partition::{Partitioning, DEFAULT_PARTITION_NS};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId};

/// A head the writer froze: no longer written, waiting to be flushed into parts.
pub struct Frozen {
    pub head: Head,
    /// The last log frame whose points it holds.
    pub lsn: u64,
    /// Every series' latest point at the freeze: what the checkpoint records.
    pub latest: HashMap<SeriesId, SeriesHead>,
}

/// Everything a read needs, behind one lock so that a flush or merge swaps sources
/// atomically: a reader sees a frozen head or the parts made of it, never both or neither.
#[derive(Default)]
pub struct View {
    pub head: Head,
    /// Oldest first.
    pub frozen: Vec<Arc<Frozen>>,
    /// Partition start → its parts (of every measurement), by `max_lsn` ascending.
    pub parts: BTreeMap<i64, Vec<Arc<Part>>>,
    /// Every series' latest point and count (the heads of `Backend::heads`).
    pub latest: HashMap<SeriesId, SeriesHead>,
}

impl View {
    /// Puts a part in its partition, keeping the partition's parts by `max_lsn`.
    pub fn place_part(&mut self, part: Arc<Part>) {
        let parts = self.parts.entry(part.meta.start).or_default();
        parts.push(part);
        parts.sort_by_key(|p| p.meta.max_lsn);
    }

    /// Whether the head or a frozen head holds a point of `series` in `[start, end)`.
    fn in_memory(&self, series: SeriesId, start: i64, end: i64) -> bool {
        let holds = |points: &[Point]| {
            let from = points.partition_point(|p| p.time < start);
            points.get(from).is_some_and(|p| p.time < end)
        };
        holds(self.head.points(series)) || self.frozen.iter().any(|f| holds(f.head.points(series)))
    }

    /// Removes the parts with these ids; returns them.
    pub fn remove_parts(&mut self, ids: &[u64]) -> Vec<Arc<Part>> {
        let mut removed = Vec::new();
        self.parts.retain(|_, parts| {
            parts.retain(|p| match ids.contains(&p.meta.id) {
                true => {
                    removed.push(p.clone());
                    false
                }
                false => true,
            });
            !parts.is_empty()
        });
        removed
    }
}

/// The raw points of the store, shared by the backend's readers, the writer and the
/// background thread.
pub struct Values {
    pub partitioning: Partitioning,
    view: RwLock<View>,
    blocks: cache::BlockCache,
    /// The part files open now, at most its capacity.
    pub files: Arc<files::OpenFiles>,
}

/// One place a read takes points from, with its precedence (larger wins at equal times).
enum Source {
    Memory(Vec<Point>),
    Part(Arc<Part>),
}

impl Values {
    /// `cache_bytes`: decoded part blocks kept for later reads ([`cache`]); `files`: the
    /// cache of open part files the view's parts were opened with.
    pub fn new(
        partitioning: Partitioning,
        view: View,
        cache_bytes: u64,
        files: Arc<files::OpenFiles>,
    ) -> Self {
        Self {
            partitioning,
            view: RwLock::new(view),
            blocks: cache::BlockCache::new(cache_bytes),
            files,
        }
    }

    pub fn view(&self) -> RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn view_mut(&self) -> RwLockWriteGuard<'_, View> {
        self.view.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The rollup slots of `series` at `resolution` whose start lies in `[start, end)`
    /// (multiples of the resolution), by time. A partition whose only part holds the
    /// series' rollup block, and none of whose points of the series are still in memory,
    /// answers from that block; the rest of the range is summarised from the points a
    /// read merges. Both are `summarize_slots` over the same sorted points, so the
    /// answer does not depend on which one a slot came from.
    pub fn read_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        let mut out = Vec::new();
        let mut cursor = start;
        for (from, to, part) in self.stored_rollups(series, resolution, start, end) {
            out.extend(self.summarize(series, resolution, cursor, from)?);
            let slots = part.read_rollup(series, resolution)?.unwrap_or_default();
            out.extend(slots.into_iter().filter(|(t, _)| from <= *t && *t < to));
            cursor = to;
        }
        out.extend(self.summarize(series, resolution, cursor, end)?);
        Ok(out)
    }

    /// The slots of `resolution` over the points of `series` in `[start, end)`.
    fn summarize(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        if start >= end {
            return Ok(Vec::new());
        }
        let points = self.read_between(series, start, end, false)?;
        Ok(summarize_slots(&points, start, end, resolution))
    }

    /// The partitions of `[start, end)`, clipped to it, whose rollup block of `series`
    /// at `resolution` answers for them (see [`read_rollup`](Self::read_rollup)), by time:
    /// those where one part alone holds blocks of the series, and it holds that rollup.
    fn stored_rollups(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Vec<(i64, i64, Arc<Part>)> {
        let by = self.partitioning;
        if start >= end || !by.holds_slots_of(resolution) {
            return Vec::new();
        }
        let view = self.view();
        let mut out = Vec::new();
        for (&pstart, parts) in view.parts.range(by.start_of(start)..end) {
            let mut holding = parts.iter().filter(|p| p.may_hold_series(series));
            let (Some(part), None) = (holding.next(), holding.next()) else {
                continue;
            };
            let pend = by.clamped_end_of(pstart);
            if part.has_rollup(series, resolution) && !view.in_memory(series, pstart, pend) {
                out.push((pstart.max(start), pend.min(end), part.clone()));
            }
        }
        out
    }

    /// The points of `series` in `[start, end)`, with the nearest point before `start` and
    /// the nearest at or after `end`, sorted by time, one per time (the last written).
    pub fn read(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Point>> {
        self.read_between(series, start, end, true)
    }

    /// [`read`](Self::read), with the neighbours only when `neighbours`.
    pub fn read_between(
        &self,
        series: SeriesId,
        start: i64,
        end: i64,
        neighbours: bool,
    ) -> Result<Vec<Point>> {
        let (inside, mut before, mut after) = self.sources(series, start, end);
        if !neighbours {
            before.clear();
            after.clear();
        }
        // Each part's block is decoded once, then every source is read as a slice: the
        // block holding the range usually holds the neighbour before it too.
        let mut decoded: HashMap<u64, Arc<Vec<Point>>> = HashMap::new();
        for source in inside.iter().chain(&before).chain(&after) {
            if let (_, Source::Part(part)) = source {
                if let Entry::Vacant(e) = decoded.entry(part.meta.id) {
                    let id = part.meta.id;
                    e.insert(
                        self.blocks
                            .get_or_decode(id, series, || part.read(series))?,
                    );
                }
            }
        }
        let points_of = |source| points_of(source, &decoded);
        let mut ranges: Vec<(u64, &[Point])> = Vec::with_capacity(inside.len());
        for (rank, source) in &inside {
            let points = points_of(source);
            let from = points.partition_point(|p| p.time < start);
            let to = points.partition_point(|p| p.time < end);
            ranges.push((*rank, &points[from..to]));
        }
        let mut nearest_before: Option<(i64, u64, f64)> = None;
        for (rank, source) in &before {
            let points = points_of(source);
            let at = points.partition_point(|p| p.time < start);
            if let Some(p) = at.checked_sub(1).map(|i| points[i]) {
                nearest_before = nearest_before.max_by_time((p.time, *rank, p.value));
            }
        }
        let mut nearest_after: Option<(i64, u64, f64)> = None;
        for (rank, source) in &after {
            let points = points_of(source);
            let at = points.partition_point(|p| p.time < end);
            if let Some(p) = points.get(at) {
                nearest_after = nearest_after.min_by_time((p.time, *rank, p.value));
            }
        }
        ranges.sort_by_key(|(rank, _)| *rank);
        let inside_points: usize = ranges.iter().map(|(_, p)| p.len()).sum();
        let mut out = Vec::with_capacity(inside_points + 2);
        out.extend(nearest_before.map(|(t, _, v)| Point::new(t, v)));
        extend_merged(&mut out, ranges.into_iter().map(|(_, p)| p));
        out.extend(nearest_after.map(|(t, _, v)| Point::new(t, v)));
        Ok(out)
    }

    /// Under the lock, the sources that hold points of `[start, end)` and those that may
    /// hold its neighbours, each with its precedence. Parts are read after the lock is
    /// released; a part removed meanwhile stays readable through its open file.
    #[allow(clippy::type_complexity)]
    fn sources(
        &self,
        series: SeriesId,
        start: i64,
        end: i64,
    ) -> (Vec<(u64, Source)>, Vec<(u64, Source)>, Vec<(u64, Source)>) {
        let view = self.view();
        let mut inside = Vec::new();
        let mut before = Vec::new();
        let mut after = Vec::new();
        let memory = view
            .frozen
            .iter()
            .map(|f| (f.lsn, f.head.points(series)))
            .chain([(u64::MAX, view.head.points(series))]);
        for (rank, points) in memory {
            let from = points.partition_point(|p| p.time < start);
            let to = points.partition_point(|p| p.time < end);
            if from < to {
                inside.push((rank, Source::Memory(points[from..to].to_vec())));
            }
            if let Some(&p) = from.checked_sub(1).and_then(|i| points.get(i)) {
                before.push((rank, Source::Memory(vec![p])));
            }
            if let Some(&p) = points.get(to) {
                after.push((rank, Source::Memory(vec![p])));
            }
        }
        let by = self.partitioning;
        let holds = |part: &&Arc<Part>| part.may_hold(series, |_| true);
        let partitions = view.parts.range(..);
        for (&pstart, parts) in partitions.clone() {
            let overlaps =
                i128::from(pstart) < i128::from(end) && by.end_of(pstart) > i128::from(start);
            if overlaps {
                for part in parts.iter().filter(holds) {
                    inside.push((part.meta.max_lsn, Source::Part(part.clone())));
                }
            }
        }
        // The nearest point before `start` is in the latest partition that has a point
        // of the series before `start`; the nearest after, in the earliest at or after `end`.
        for (_, parts) in partitions.clone().rev().filter(|(k, _)| **k < start) {
            let candidates: Vec<&Arc<Part>> = parts
                .iter()
                .filter(|p| p.may_hold(series, |e| e.min < start))
                .collect();
            if !candidates.is_empty() {
                before.extend(
                    candidates
                        .into_iter()
                        .map(|p| (p.meta.max_lsn, Source::Part(p.clone()))),
                );
                break;
            }
        }
        for (_, parts) in partitions.filter(|(k, _)| by.end_of(**k) > i128::from(end)) {
            let candidates: Vec<&Arc<Part>> = parts
                .iter()
                .filter(|p| p.may_hold(series, |e| e.max >= end))
                .collect();
            if !candidates.is_empty() {
                after.extend(
                    candidates
                        .into_iter()
                        .map(|p| (p.meta.max_lsn, Source::Part(p.clone()))),
                );
                break;
            }
        }
        (inside, before, after)
    }

    /// The latest point and count of each series.
    pub fn heads(&self, series: &[SeriesId]) -> Vec<Option<SeriesHead>> {
        let view = self.view();
        series.iter().map(|s| view.latest.get(s).copied()).collect()
    }
}

/// The points of a source: its own, or its part's decoded block.
fn points_of<'a>(source: &'a Source, decoded: &'a HashMap<u64, Arc<Vec<Point>>>) -> &'a [Point] {
    match source {
        Source::Memory(points) => points,
        Source::Part(part) => decoded.get(&part.meta.id).map_or(&[], |p| p.as_slice()),
    }
}

/// Of two candidates `(time, precedence, value)`, the later in time, or at one time the
/// one of larger precedence.
trait Nearest {
    fn max_by_time(self, other: (i64, u64, f64)) -> Self;
    fn min_by_time(self, other: (i64, u64, f64)) -> Self;
}

impl Nearest for Option<(i64, u64, f64)> {
    fn max_by_time(self, other: (i64, u64, f64)) -> Self {
        match self {
            Some(best) if (best.0, best.1) >= (other.0, other.1) => Some(best),
            _ => Some(other),
        }
    }

    fn min_by_time(self, other: (i64, u64, f64)) -> Self {
        match self {
            Some(best) if best.0 < other.0 || (best.0 == other.0 && best.1 >= other.1) => {
                Some(best)
            }
            _ => Some(other),
        }
    }
}

/// Merges sorted point lists given oldest first into one sorted list with one point per
/// time: at equal times the newest list's point.
pub fn merge_newest_last(lists: impl IntoIterator<Item = Vec<Point>>) -> Vec<Point> {
    let mut lists: Vec<Vec<Point>> = lists.into_iter().filter(|l| !l.is_empty()).collect();
    match lists.len() {
        0 => return Vec::new(),
        1 => return lists.pop().unwrap_or_default(),
        _ => {}
    }
    let mut all: Vec<Point> = lists.into_iter().flatten().collect();
    // Stable: among equal times, the order of the lists, so the newest comes last.
    all.sort_by_key(|p| p.time);
    let mut out: Vec<Point> = Vec::with_capacity(all.len());
    for p in all {
        match out.last_mut() {
            Some(last) if last.time == p.time => *last = p,
            _ => out.push(p),
        }
    }
    out
}

/// [`merge_newest_last`] of sorted slices, appended to `out`: when the slices do not
/// overlap in time (a long read's day partitions, the head after the parts) they are
/// copied once, in time order, without a sort.
fn extend_merged<'a>(out: &mut Vec<Point>, lists: impl IntoIterator<Item = &'a [Point]>) {
    let mut lists: Vec<&[Point]> = lists.into_iter().filter(|l| !l.is_empty()).collect();
    // Stable: lists starting at one time keep their precedence order.
    let by_precedence = lists.clone();
    lists.sort_by_key(|l| l[0].time);
    let disjoint = lists
        .windows(2)
        .all(|pair| pair[0][pair[0].len() - 1].time < pair[1][0].time);
    if disjoint {
        for list in lists {
            out.extend_from_slice(list);
        }
    } else {
        out.extend(merge_newest_last(
            by_precedence.into_iter().map(<[Point]>::to_vec),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_lists_are_put_in_time_order_and_overlapping_ones_merged() {
        let early = [Point::new(1, 1.0), Point::new(2, 2.0)];
        let late = [Point::new(5, 5.0)];
        let mut out = vec![Point::new(0, 0.0)];
        extend_merged(&mut out, [&late[..], &[], &early[..]]);
        let times: Vec<i64> = out.iter().map(|p| p.time).collect();
        assert_eq!(times, [0, 1, 2, 5]);
        // Overlapping: the later list (higher precedence) wins at time 2.
        let newer = [Point::new(2, 20.0), Point::new(3, 30.0)];
        let mut out = Vec::new();
        extend_merged(&mut out, [&early[..], &newer[..]]);
        assert_eq!(
            out,
            vec![Point::new(1, 1.0), Point::new(2, 20.0), Point::new(3, 30.0)]
        );
    }

    #[test]
    fn the_newest_list_wins_at_equal_times() {
        let old = vec![Point::new(1, 1.0), Point::new(2, 2.0)];
        let new = vec![Point::new(2, 20.0), Point::new(3, 30.0)];
        assert_eq!(
            merge_newest_last([old, new]),
            vec![Point::new(1, 1.0), Point::new(2, 20.0), Point::new(3, 30.0)]
        );
    }
}
