//! Derived rollups of value segments, as `Backend::read_segment_rollup` documents them:
//! every slot is the summary of the series' stored points (computed on each read here), and
//! the slots of a partition whose raw points retention dropped outlive them.
//!
//! A store keeps rollups per time partition, so that retention works on whole
//! partitions. This backend models exactly what a reader can observe of that: when
//! `drop_raw_before` drops a partition's points, the slots of every kept resolution that
//! fits in a partition are set aside ([`Kept`]); a read answers from them for partitions
//! that hold no raw point, and from the raw points everywhere else.

use std::collections::BTreeMap;
use tickertape_core::partition::Partitioning;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId};

/// Slots set aside when raw retention dropped their partition: by (series, resolution in
/// ns), then slot start.
#[derive(Clone, Debug, Default)]
pub struct Kept {
    slots: BTreeMap<(SeriesId, i64), BTreeMap<i64, Summary>>,
}

impl Kept {
    /// Sets aside the slots of `points` (one series' points of the partition
    /// `[start, end)`, which is being dropped) at each of `resolutions`, replacing what
    /// was kept of that partition.
    pub fn keep(
        &mut self,
        series: SeriesId,
        points: &[Point],
        (start, end): (i64, i64),
        resolutions: &[Resolution],
    ) {
        for &r in resolutions {
            let slots = self.slots.entry((series, r.nanos())).or_default();
            slots.retain(|&t, _| t < start || t >= end);
            slots.extend(summarize_slots(points, start, end, r));
        }
    }

    /// Forgets the slots of `series` at `resolution` in partitions `[start, end)`.
    pub fn forget(&mut self, series: SeriesId, resolution: Resolution, (start, end): (i64, i64)) {
        if let Some(slots) = self.slots.get_mut(&(series, resolution.nanos())) {
            slots.retain(|&t, _| t < start || t >= end);
        }
    }

    /// The partitions `by` in which `series` has kept slots at `resolution`.
    pub fn partitions(
        &self,
        series: SeriesId,
        resolution: Resolution,
        by: Partitioning,
    ) -> Vec<i64> {
        let mut starts: Vec<i64> = self
            .slots
            .get(&(series, resolution.nanos()))
            .into_iter()
            .flat_map(|slots| slots.keys().map(|&t| by.start_of(t)))
            .collect();
        starts.dedup();
        starts
    }

    /// The slots of `series` at `resolution` starting in `[start, end)` whose partition
    /// satisfies `answers`, by time.
    pub fn slots(
        &self,
        series: SeriesId,
        resolution: Resolution,
        (start, end): (i64, i64),
        answers: impl Fn(i64) -> bool,
    ) -> Vec<(i64, Summary)> {
        let Some(slots) = self.slots.get(&(series, resolution.nanos())) else {
            return Vec::new();
        };
        slots
            .range(start..end.max(start))
            .filter(|(&t, _)| answers(t))
            .map(|(&t, s)| (t, *s))
            .collect()
    }
}

/// The rollup slots of a series at `resolution` in `[start, end)`: summaries of `raw` (its
/// stored points in the range), and kept slots in the partitions where it holds no raw
/// point at all (`holds_raw` of the partition's start).
pub fn read(
    raw: &[Point],
    kept: &Kept,
    series: SeriesId,
    resolution: Resolution,
    (start, end): (i64, i64),
    by: Partitioning,
    holds_raw: impl Fn(i64) -> bool,
) -> Vec<(i64, Summary)> {
    let mut out = summarize_slots(raw, start, end, resolution);
    out.extend(kept.slots(series, resolution, (start, end), |t| {
        !holds_raw(by.start_of(t))
    }));
    out.sort_by_key(|(t, _)| *t);
    out
}
