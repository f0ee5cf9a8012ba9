//! The model check's operations on the rollups every backend derives from value
//! segments: reads of a kept (or not kept) resolution over random aligned ranges, compared
//! bit for bit with the reference, and compactions, after which the store has caught up
//! and reads its derived slots rather than raw points.

use super::{Check, SEGMENT_ANCHORS};
use rand::seq::SliceRandom;
use std::sync::Arc;
use tickertape_backend::ValueStore;
use tickertape_backend::{Backend, SegmentRollupPlan};
use tickertape_core::query::Summary;
use tickertape_core::rollup::Resolution;
use tickertape_core::segment::collect_points;

/// The resolutions read: 4 and 8 ns divide the suite's 16 ns partitions, 5 ns does not,
/// and 1 m is wider than a partition; the plan keeps all but 8 ns.
pub(super) fn resolutions() -> [Resolution; 4] {
    [4, 8, 5, 60_000_000_000].map(|ns| Resolution::new(ns).expect("a valid resolution"))
}

/// The plan both backends get: every measurement keeps 4 ns, 5 ns and 1 m.
pub(super) fn plan() -> SegmentRollupPlan {
    Arc::new(|_: &str| {
        resolutions()
            .into_iter()
            .filter(|r| r.nanos() != 8)
            .collect()
    })
}

/// Offers the plan, as the engine does at every start.
pub(super) fn offer(backend: &dyn Backend) {
    backend.derive_segment_rollups(plan());
}

impl Check {
    /// One resolution over a random range around the series' points, aligned to it.
    pub(super) async fn read_segment_rollup(&mut self) {
        let Some(series) = self.pick_registered() else {
            return;
        };
        let everything = self
            .reference
            .read_segments(series.reference, i64::MIN, i64::MAX)
            .await
            .expect("read");
        let times: Vec<i64> = collect_points(&everything)
            .expect("decode")
            .iter()
            .map(|p| p.time)
            .collect();
        let r = *resolutions().choose(&mut self.rng).expect("resolutions");
        let (start, end) = self.range_around(&times, &SEGMENT_ANCHORS);
        let (Some(start), Some(end)) = (align(start, r), align(end, r)) else {
            return;
        };
        let context = self.context(&format!("read_segment_rollup {r} [{start}, {end})"));
        let real = self
            .real()
            .read_segment_rollup(series.real, r, start, end)
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        let reference = self
            .reference
            .read_segment_rollup(series.reference, r, start, end)
            .await
            .expect("reference rollup");
        assert_eq!(bits(&real), bits(&reference), "{context}");
    }

    /// A compaction of the real store (the reference keeps nothing in pieces).
    pub(super) async fn compact(&mut self) {
        let context = self.context("compact");
        self.real()
            .compact()
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
    }
}

/// `t` rounded down to a multiple of `r`, if that is an `i64`.
pub(super) fn align(t: i64, r: Resolution) -> Option<i64> {
    t.checked_sub(t.rem_euclid(r.nanos()))
}

fn bits(slots: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
    slots.iter().map(|(t, s)| (*t, s.to_bits())).collect()
}
