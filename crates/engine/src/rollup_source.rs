//! What a body's bucket rollups are computed from: the slots each raw bucket write stored,
//! once the backend said which were refused (a gauge slot already taken). Value segments
//! have none here: the backend derives their rollups from the points it holds.

use tickertape_backend::{BackendError, BucketWrite, BucketWriteOutcome, RawOutcome};
use tickertape_core::query::without_stale_markers;
use tickertape_core::rollup::{rollup_updates, Resolution};
use tickertape_core::{Point, SeriesId};

/// The points of one group that were stored, as its rollups see them (bucket points at
/// their slot's start time).
pub(crate) struct Stored {
    pub(crate) group: usize,
    pub(crate) points: Vec<Point>,
}

/// What a body's rollups are computed from, once the raw writes' outcome is known. Owned,
/// so that a backend may run the computation on its writer thread, in the transaction
/// of the raw writes (`Backend::write_with_rollups`).
#[derive(Default)]
pub(crate) struct RollupSource {
    /// One per group, in group order.
    pub(crate) groups: Vec<RollupGroup>,
    /// The group of each append of the batch, in order.
    pub(crate) append_groups: Vec<usize>,
    /// `(group, point index, slot start)` of each raw bucket write of the batch, in order.
    pub(crate) bucket_sources: Vec<(usize, usize, i64)>,
}

pub(crate) struct RollupGroup {
    pub(crate) series: SeriesId,
    /// The measurement's name-store token; `None` when it has no buckets and no rollups.
    pub(crate) measurement: Option<u64>,
    pub(crate) rollups: Vec<Resolution>,
    pub(crate) points: Vec<Point>,
}

impl RollupSource {
    /// The outcome of the raw writes when none is refused.
    pub(crate) fn all_stored(&self) -> RawOutcome {
        RawOutcome {
            buckets: vec![BucketWriteOutcome::Applied; self.bucket_sources.len()],
        }
    }

    /// The points each group's bucket writes stored: those not refused as a taken slot,
    /// at their slot's start time.
    pub(crate) fn stored(&self, outcome: &RawOutcome) -> Vec<Stored> {
        let mut stored: Vec<Stored> = Vec::new();
        for (&(g, i, slot_time), write) in self.bucket_sources.iter().zip(&outcome.buckets) {
            if *write == BucketWriteOutcome::SlotTaken {
                continue;
            }
            let point = Point::new(slot_time, self.groups[g].points[i].value);
            match stored.last_mut() {
                Some(s) if s.group == g => s.points.push(point),
                _ => stored.push(Stored {
                    group: g,
                    points: vec![point],
                }),
            }
        }
        stored
    }

    /// The rollup writes of exactly the slots the raw bucket writes stored: one summary
    /// delta per touched slot of each rollup, merged into the stored slot.
    pub(crate) fn rollup_writes(
        &self,
        outcome: &RawOutcome,
    ) -> Result<Vec<BucketWrite>, BackendError> {
        let mut writes = Vec::new();
        for s in self.stored(outcome) {
            let group = &self.groups[s.group];
            let Some(measurement) = group.measurement else {
                continue;
            };
            if s.points.is_empty() || group.rollups.is_empty() {
                continue;
            }
            // Stale markers are in no rollup; left out first, each slot gets one update.
            let mut points = without_stale_markers(s.points);
            // Bucket points may arrive in any order; rollup runs are per slot either way,
            // and sorting keeps one update per slot.
            points.sort_by_key(|p| p.time);
            let updates = rollup_updates(&points, &group.rollups).map_err(|e| {
                BackendError::Invalid(format!("rollups of series {}: {e}", group.series))
            })?;
            for u in &updates {
                writes.push(BucketWrite::rollup(measurement, group.series, u, &points)?);
            }
        }
        Ok(writes)
    }
}

/// How many points the raw writes stored: every appended point (the last write of a time
/// wins, nothing is refused) and every bucket write applied.
pub(crate) fn stored_count(source: &RollupSource, outcome: &RawOutcome) -> u64 {
    let appended = source
        .append_groups
        .iter()
        .map(|&g| source.groups[g].points.len());
    let slotted = outcome
        .buckets
        .iter()
        .filter(|b| **b == BucketWriteOutcome::Applied);
    (appended.sum::<usize>() + slotted.count()) as u64
}

/// Whether the raw bucket writes stored every slot they were given.
pub(crate) fn nothing_refused(outcome: &RawOutcome) -> bool {
    outcome
        .buckets
        .iter()
        .all(|b| *b == BucketWriteOutcome::Applied)
}
