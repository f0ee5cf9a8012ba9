//! The background thread: flushes frozen heads into part files (a checkpoint), merges the
//! parts of a partition into one, and drops partitions for retention. It takes tasks in
//! the order the writer sends them, so heads are flushed in log order.
//!
//! A part holds one time partition of every measurement: a flush writes one part per
//! partition its head touches, however many measurements it holds, so the number of
//! files grows with time and size, never with the number of measurements or series.
//! Parts of a week or four weeks that are over are then packed into one file
//! (`packing.rs`). Rollups are computed here, off the write path: every part carries, beside each series'
//! raw block, its slots at each rollup resolution its measurement keeps (`RollupPlan`).
//! After a flush, every partition the flush did not write to and that has more than one
//! part is merged, so a day that is over ends as one part whose rollup blocks answer
//! rollup reads (`Values::read_rollup`).
//!
//! Crash safety of each task, step by step:
//! - flush: parts are written whole (temp file, fsync, rename, folder fsync), then one
//!   durable redb transaction names them and moves the checkpoint; only then are the log
//!   files the checkpoint covers deleted. A crash before the transaction leaves unnamed
//!   files (deleted at open) and the log still holds every point.
//! - merge: the merged part is written whole, then one transaction names it and forgets
//!   its inputs, then their files are deleted. Before the transaction the inputs are the
//!   store; after it, the merged part.
//! - drop (`retention.rs`): the parts that hold a dropped block (measurements' raw
//!   blocks, or their rollup blocks at a resolution) are rewritten whole without them —
//!   every other block copied as it is —, then one transaction swaps them for the old
//!   parts, then the old files are deleted.
//!
//! Old files are deleted when the last reader that took the part before the swap lets go
//! of it (`Part::retire`): parts are opened on demand through a bounded cache of open
//! files (`files.rs`), so a reader may need to open a part's file again.
//!
//! A failure stops the thread's work for good (`failed`): the writer then refuses writes
//! until the store is reopened, as after any I/O error. Nothing acknowledged is lost: the
//! log still holds whatever was not checkpointed.

use super::files::OpenFiles;
use super::manifest::{self, CHECKPOINT_LSN};
use super::part::{Entry, Part, PartMeta, SeriesBlocks, PARTS_DIR};
use super::wal::Wal;
use super::{merge_newest_last, Frozen, RollupPlan, Values};
use crate::catalog::Catalog;
use crate::writer::storage;
use redb::{Database, Durability};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use tickertape_backend::{
    BackendError, DeleteRange, DroppedPartitions, Expiry, Result, SeriesHead, SnapshotReport,
    SnapshotTarget,
};
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId};
use tokio::sync::oneshot;

/// A partition with this many parts is merged after a flush.
const MERGE_AT: usize = 4;

pub enum Task {
    Flush(Arc<Frozen>),
    /// Merge every partition with more than one part, then answer.
    Compact(oneshot::Sender<Result<()>>),
    /// Drop (or with `dry_run` list) what `expiries` name (`retention.rs`).
    DropExpired {
        expiries: Vec<Expiry>,
        dry_run: bool,
        reply: oneshot::Sender<Result<Vec<DroppedPartitions>>>,
    },
    /// Delete the points of `series` in `range` from the parts (`values/delete.rs`) and
    /// record `heads`, the series' latest points without them.
    Delete {
        series: Vec<SeriesId>,
        range: DeleteRange,
        heads: Vec<(SeriesId, Option<SeriesHead>)>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Copy the store into a snapshot (`snapshot.rs`): between two tasks, so that no
    /// part, checkpoint or log file changes meanwhile.
    Snapshot {
        target: SnapshotTarget,
        now_ns: i64,
        reply: oneshot::Sender<Result<SnapshotReport>>,
    },
}

impl Task {
    /// Answers the task's caller with `error` (a flush has no caller: the log keeps its
    /// points).
    pub fn fail(self, error: BackendError) {
        match self {
            Task::Flush(_) => {}
            Task::Compact(reply) => drop(reply.send(Err(error))),
            Task::DropExpired { reply, .. } => drop(reply.send(Err(error))),
            Task::Delete { reply, .. } => drop(reply.send(Err(error))),
            Task::Snapshot { reply, .. } => drop(reply.send(Err(error))),
        }
    }
}

pub struct Background {
    pub db: Arc<Database>,
    pub catalog: Arc<Catalog>,
    pub values: Arc<Values>,
    pub store: PathBuf,
    pub next_part_id: u64,
    /// The rollups each measurement keeps.
    pub rollups: Arc<RollupPlan>,
    /// Measurement names by number, filled as needed.
    pub names: HashMap<u64, String>,
    /// Set when a task failed; read by the writer.
    pub failed: Arc<Mutex<Option<String>>>,
}

impl Background {
    /// Runs until the writer drops its sender.
    pub fn run(mut self, tasks: Receiver<Task>) {
        for task in tasks {
            let failed = self
                .failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if let Some(reason) = failed {
                let error = BackendError::Storage(format!(
                    "background work stopped after an earlier failure ({reason}); restart to reopen the store"
                ));
                task.fail(error);
                continue;
            }
            match task {
                Task::Flush(frozen) => {
                    let result = self
                        .flush(&frozen)
                        .and_then(|written| self.merge_due(&written))
                        .and_then(|()| self.pack_due());
                    self.record(result);
                }
                Task::Compact(reply) => {
                    let result = self
                        .merge_due(&BTreeSet::new())
                        .and_then(|()| self.pack_due());
                    self.record(result.clone());
                    drop(reply.send(result));
                }
                Task::DropExpired {
                    expiries,
                    dry_run,
                    reply,
                } => {
                    let result = self.drop_expired(&expiries, dry_run);
                    drop(reply.send(result));
                }
                Task::Delete {
                    series,
                    range,
                    heads,
                    reply,
                } => {
                    let result = self.delete(&series, range, &heads);
                    self.record(result.clone());
                    drop(reply.send(result));
                }
                Task::Snapshot {
                    target,
                    now_ns,
                    reply,
                } => {
                    // A failed snapshot leaves the store as it was: not a failure of the
                    // store's background work.
                    let result = crate::snapshot::take(&self.db, &self.store, &target, now_ns);
                    drop(reply.send(result));
                }
            }
        }
    }

    fn record(&self, result: Result<()>) {
        if let Err(e) = result {
            tracing::error!(error = %e, "background flush or merge failed; refusing writes until restart");
            *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
    }

    pub(super) fn dir(&self) -> PathBuf {
        self.store.join(PARTS_DIR)
    }

    pub(super) fn next_id(&mut self) -> u64 {
        self.next_part_id += 1;
        self.next_part_id - 1
    }

    pub(super) fn files(&self) -> Arc<OpenFiles> {
        self.values.files.clone()
    }

    /// The rollup resolutions part files keep for each measurement (by number), as one
    /// task asks: the plan is read once per measurement and task.
    fn rollups_of(&mut self, number: u64, known: &mut Rollups) -> Result<Arc<[Resolution]>> {
        if let Some(kept) = known.get(&number) {
            return Ok(kept.clone());
        }
        if !self.names.contains_key(&number) {
            self.names = manifest::measurement_names(&self.db)?;
        }
        let kept: Arc<[Resolution]> = match self.names.get(&number) {
            Some(name) => self.rollups.kept(name, self.values.partitioning).into(),
            None => Arc::new([]),
        };
        known.insert(number, kept.clone());
        Ok(kept)
    }

    /// Writes a frozen head into parts, one per partition (holding every measurement),
    /// and checkpoints. Returns the partitions written to.
    fn flush(&mut self, frozen: &Frozen) -> Result<BTreeSet<i64>> {
        let started = std::time::Instant::now();
        let tokens = self.measurement_tokens(frozen)?;
        let by = self.values.partitioning;
        // Partition start → series in it, ascending.
        let mut layout: BTreeMap<i64, BTreeSet<SeriesId>> = BTreeMap::new();
        for (series, points) in frozen.head.iter() {
            if !tokens.contains_key(&series) {
                continue;
            }
            let mut starts: Vec<i64> = points.iter().map(|p| by.start_of(p.time)).collect();
            starts.dedup();
            for start in starts {
                layout.entry(start).or_default().insert(series);
            }
        }
        let written: BTreeSet<i64> = layout.keys().copied().collect();
        let mut known = Rollups::new();
        let mut parts = Vec::with_capacity(layout.len());
        for (start, series) in layout {
            let meta = PartMeta {
                id: self.next_id(),
                start,
                end: by.clamped_end_of(start),
                max_lsn: frozen.lsn,
            };
            let mut blocks = Vec::with_capacity(series.len());
            for s in series {
                let Some(&measurement) = tokens.get(&s) else {
                    continue;
                };
                let points = frozen.head.points(s);
                let from = points.partition_point(|p| p.time < start);
                let to = points.partition_point(|p| i128::from(p.time) < by.end_of(start));
                blocks.push(Ok(SeriesBlocks {
                    series: s,
                    measurement,
                    points: points[from..to].to_vec(),
                    rollups: self.rollups_of(measurement, &mut known)?,
                    kept: Vec::new(),
                }));
            }
            parts.push(Arc::new(Part::write(
                &self.dir(),
                &self.files(),
                meta,
                blocks,
            )?));
        }
        let mut txn = self.db.begin_write().map_err(storage)?;
        txn.set_durability(Durability::Immediate);
        let added: Vec<(u64, u64)> = parts.iter().map(|p| (p.meta.id, p.meta.max_lsn)).collect();
        manifest::swap_parts(&txn, &added, &[])?;
        manifest::save_heads(&txn, frozen.latest.iter())?;
        manifest::set_meta(&txn, CHECKPOINT_LSN, frozen.lsn)?;
        txn.commit().map_err(storage)?;
        {
            let mut view = self.values.view_mut();
            for part in &parts {
                view.place_part(part.clone());
            }
            // The head is in parts now: readers take its points from there.
            view.frozen.retain(|f| !std::ptr::eq(f.as_ref(), frozen));
        }
        Wal::remove_through(&self.store, frozen.lsn)?;
        tracing::debug!(
            points = frozen.head.len(),
            parts = parts.len(),
            ms = started.elapsed().as_millis() as u64,
            "flushed a frozen head"
        );
        Ok(written)
    }

    /// The measurement number of every series in the frozen head, numbering measurements
    /// never flushed before.
    fn measurement_tokens(&mut self, frozen: &Frozen) -> Result<HashMap<SeriesId, u64>> {
        let series: Vec<SeriesId> = frozen.head.iter().map(|(s, _)| s).collect();
        let measurements = self.catalog.measurements_of(&series);
        let mut names: Vec<String> = measurements.iter().flatten().cloned().collect();
        names.sort();
        names.dedup();
        let mut txn = self.db.begin_write().map_err(storage)?;
        // The checkpoint's durable commit persists this one too.
        txn.set_durability(Durability::None);
        let tokens = manifest::measurement_numbers(&txn, &names)?;
        txn.commit().map_err(storage)?;
        for (name, &token) in names.iter().zip(&tokens) {
            self.names.insert(token, name.clone());
        }
        let token_of: HashMap<&String, u64> = names.iter().zip(tokens).collect();
        Ok(series
            .into_iter()
            .zip(measurements)
            .filter_map(|(s, m)| Some((s, *token_of.get(&m?)?)))
            .collect())
    }

    /// Merges into one part every partition with [`MERGE_AT`] parts, and every other one
    /// with more than one part that is not in `busy` (the partitions the last flush wrote
    /// to: they are likely to get more parts soon).
    fn merge_due(&mut self, busy: &BTreeSet<i64>) -> Result<()> {
        let due: Vec<Vec<Arc<Part>>> = self
            .values
            .view()
            .parts
            .iter()
            .filter(|(key, parts)| {
                parts.len() >= MERGE_AT || (parts.len() > 1 && !busy.contains(key))
            })
            .map(|(_, parts)| parts.clone())
            .collect();
        for parts in due {
            self.merge(&parts)?;
        }
        Ok(())
    }

    /// Merges the parts of one partition (given oldest first) into one.
    pub(super) fn merge(&mut self, parts: &[Arc<Part>]) -> Result<()> {
        self.merge_keeping(parts, |_, _| true)
    }

    /// Merges the parts of one partition (given oldest first) into one that holds the
    /// merged points `keep` accepts (a merge keeps every one; a delete does not), with
    /// their rollups computed anew; a partition left with no block is removed.
    ///
    /// A series with rollup blocks but no raw block in any of the parts (retention dropped
    /// its raw points) keeps its rollup blocks as they are, from the newest part holding
    /// each. A series with raw points gets its rollups from them alone.
    pub(super) fn merge_keeping(
        &mut self,
        parts: &[Arc<Part>],
        keep: impl Fn(SeriesId, &Point) -> bool,
    ) -> Result<()> {
        let Some(newest) = parts.last() else {
            return Ok(());
        };
        let meta = PartMeta {
            id: self.next_id(),
            ..newest.meta
        };
        // Each part's raw entries, read once: a lookup per series and part would read a
        // run of the index from the file every time. Rollup entries only of series
        // without a raw block in their part (rare: retention dropped those points).
        let mut raw: Vec<Vec<Entry>> = Vec::with_capacity(parts.len());
        let mut bare: BTreeMap<SeriesId, BTreeMap<u64, (usize, Entry)>> = BTreeMap::new();
        for (at, part) in parts.iter().enumerate() {
            let mut entries = Vec::new();
            for e in part.entries()? {
                if e.is_raw() {
                    entries.push(e);
                } else if entries.last().is_none_or(|r: &Entry| r.series != e.series) {
                    // Newer parts come later and replace older ones' blocks.
                    bare.entry(e.series).or_default().insert(e.kind, (at, e));
                }
            }
            raw.push(entries);
        }
        let mut series: BTreeMap<SeriesId, u64> = BTreeMap::new();
        for e in raw.iter().flatten() {
            series.insert(e.series, e.measurement);
        }
        bare.retain(|s, _| !series.contains_key(s));
        let mut known = Rollups::new();
        let mut blocks = Vec::with_capacity(series.len() + bare.len());
        let mut rollups = HashMap::new();
        for &measurement in series.values() {
            rollups.insert(measurement, self.rollups_of(measurement, &mut known)?);
        }
        let mut order: Vec<SeriesId> = series.keys().chain(bare.keys()).copied().collect();
        order.sort_unstable();
        let blocks_of = |s: SeriesId| -> Result<SeriesBlocks> {
            if let Some(kinds) = bare.get(&s) {
                let mut kept = Vec::with_capacity(kinds.len());
                for (at, entry) in kinds.values() {
                    kept.push((*entry, parts[*at].read_rollup_entry(entry)?));
                }
                let measurement = kinds.values().next().map_or(0, |(_, e)| e.measurement);
                return Ok(SeriesBlocks {
                    series: s,
                    measurement,
                    points: Vec::new(),
                    rollups: Arc::new([]),
                    kept,
                });
            }
            let lists = parts
                .iter()
                .zip(&raw)
                .map(
                    |(part, entries)| match entries.binary_search_by_key(&s, |e| e.series) {
                        Ok(at) => part.read_entry(&entries[at]),
                        Err(_) => Ok(Vec::new()),
                    },
                )
                .collect::<Result<Vec<_>>>()?;
            let mut points = merge_newest_last(lists);
            points.retain(|p| keep(s, p));
            let measurement = series.get(&s).copied().unwrap_or(0);
            Ok(SeriesBlocks {
                series: s,
                measurement,
                points,
                rollups: rollups
                    .get(&measurement)
                    .cloned()
                    .unwrap_or_else(|| Arc::new([])),
                kept: Vec::new(),
            })
        };
        blocks.extend(order.into_iter().map(blocks_of));
        let merged = Part::write(&self.dir(), &self.files(), meta, blocks)?;
        let removed: Vec<u64> = parts.iter().map(|p| p.meta.id).collect();
        if merged.blocks() == 0 {
            // Nothing left: no part rather than an empty one.
            merged.retire();
            return self.swap(Vec::new(), &removed);
        }
        self.swap(vec![Arc::new(merged)], &removed)
    }

    /// Puts `added` (written whole) in place of the parts `removed`: one durable
    /// transaction names the new ones and forgets the old, readers switch over, then the
    /// old files are deleted.
    pub(super) fn swap(&mut self, added: Vec<Arc<Part>>, removed: &[u64]) -> Result<()> {
        let mut txn = self.db.begin_write().map_err(storage)?;
        txn.set_durability(Durability::Immediate);
        let named: Vec<(u64, u64)> = added.iter().map(|p| (p.meta.id, p.meta.max_lsn)).collect();
        manifest::swap_parts(&txn, &named, removed)?;
        txn.commit().map_err(storage)?;
        let gone = {
            let mut view = self.values.view_mut();
            let gone = view.remove_parts(removed);
            for part in added {
                view.place_part(part);
            }
            gone
        };
        // Deleted when the last reader lets go (now, unless a read is under way).
        for part in gone {
            part.retire();
        }
        Ok(())
    }
}

/// Measurement number → the rollups its parts keep, as read once in a task.
type Rollups = HashMap<u64, Arc<[Resolution]>>;
