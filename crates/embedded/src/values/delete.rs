//! Deleting points (`ValueStore::delete_points`): the store has no tombstones; a delete
//! rewrites the part files that hold deleted points, through the same steps as a merge.
//!
//! 1. The writer thread, in order with the writes before it: sets the latest point of each
//!    series back to what remains ([`retreat_heads`]: the nearest point before the range
//!    when the latest lies in it), so that every head frozen from now on records it; then
//!    freezes the head, so that every acknowledged point is on its way to parts.
//! 2. The background thread, after that head's flush (tasks run in order): merges each
//!    partition where a part's raw block of one of the series
//!    overlaps the range into one part without the deleted points, rollups computed anew
//!    from what remains (`Background::merge_keeping`); then records the new latest points
//!    in the manifest (removing those of series left empty); then answers.
//!
//! Crash safety is the merge's: each partition's new part is named in one durable
//! transaction that forgets the old ones, and the log files of the frozen head are deleted
//! only after its flush's checkpoint, so a crash before the answer leaves the old points or
//! none of them, and nothing deleted is replayed after an answer. Points written after the
//! freeze are in the new head and are never touched: a later write wins over the delete.

use super::background::Background;
use super::manifest::SERIES_STATE;
use super::part::{Entry, Part};
use super::Values;
use crate::writer::storage;
use redb::Durability;
use std::collections::HashSet;
use std::sync::Arc;
use tickertape_backend::{DeleteRange, Result, SeriesHead};
use tickertape_core::SeriesId;

/// Up to this many series, a delete looks each up in a part's index rather than walking it.
const LOOKUPS_AT_MOST: usize = 1_024;

/// Sets the latest point of each of `series` whose latest lies in `range` to the nearest
/// point before the range (none: the series has no point left), in the view; returns the
/// heads changed, for the manifest. Runs on the writer thread, so no write interleaves.
pub fn retreat_heads(
    values: &Values,
    series: &[SeriesId],
    range: DeleteRange,
) -> Result<Vec<(SeriesId, Option<SeriesHead>)>> {
    let mut changed = Vec::new();
    for &s in series {
        let latest = values.heads(&[s]).pop().flatten();
        if !latest.is_some_and(|h| range.contains(h.last.time)) {
            continue;
        }
        // The latest point is in the range, so every later one is too: what remains
        // ends with the nearest point before the range.
        let before = match range.start() {
            i64::MIN => None,
            start => values
                .read(s, start, start)?
                .into_iter()
                .find(|p| p.time < start),
        };
        changed.push((s, before.map(|last| SeriesHead { last })));
    }
    let mut view = values.view_mut();
    for (s, head) in &changed {
        match head {
            Some(head) => view.latest.insert(*s, *head),
            None => view.latest.remove(s),
        };
    }
    Ok(changed)
}

impl Background {
    /// Rewrites every partition where a part holds points of `series` in `range` without
    /// them, then records `heads` (see the module docs).
    pub(super) fn delete(
        &mut self,
        series: &[SeriesId],
        range: DeleteRange,
        heads: &[(SeriesId, Option<SeriesHead>)],
    ) -> Result<()> {
        let targets: HashSet<SeriesId> = series.iter().copied().collect();
        for parts in self.partitions_holding(&targets, range)? {
            self.merge_keeping(&parts, |s, p| {
                !(range.contains(p.time) && targets.contains(&s))
            })?;
        }
        let mut txn = self.db.begin_write().map_err(storage)?;
        txn.set_durability(Durability::Immediate);
        {
            let mut table = txn.open_table(SERIES_STATE).map_err(storage)?;
            for (s, head) in heads {
                if head.is_none() {
                    table.remove(s.0).map_err(storage)?;
                }
            }
        }
        let kept = heads.iter().filter_map(|(s, h)| h.as_ref().map(|h| (s, h)));
        super::manifest::save_heads(&txn, kept)?;
        txn.commit().map_err(storage)?;
        Ok(())
    }

    /// The parts (oldest first) of each partition that overlaps `range` and where some
    /// part's raw block of a target overlaps it too. A few targets are looked up in each
    /// part's index; many, found by walking it.
    fn partitions_holding(
        &self,
        targets: &HashSet<SeriesId>,
        range: DeleteRange,
    ) -> Result<Vec<Vec<Arc<Part>>>> {
        let by = self.values.partitioning;
        let candidates: Vec<Vec<Arc<Part>>> = {
            let view = self.values.view();
            view.parts
                .iter()
                .filter(|(start, _)| {
                    let last = (by.end_of(**start) - 1).min(i128::from(i64::MAX)) as i64;
                    range.overlaps(**start, last)
                })
                .map(|(_, parts)| parts.clone())
                .collect()
        };
        let overlaps = |e: &Entry| targets.contains(&e.series) && range.overlaps(e.min, e.max);
        let mut doomed = Vec::new();
        for parts in candidates {
            let mut holds = false;
            for part in &parts {
                holds |= if targets.len() <= LOOKUPS_AT_MOST {
                    let mut any = false;
                    for &s in targets {
                        any |= part.entry(s)?.is_some_and(|e| overlaps(&e));
                    }
                    any
                } else {
                    part.raw_entries()?.iter().any(overlaps)
                };
            }
            if holds {
                doomed.push(parts);
            }
        }
        Ok(doomed)
    }
}
