//! The model check's reads of many series at once: `read_points` and
//! `read_segment_rollups` of every registered series (in registration order, the
//! reference's ids beside the real ones) over a random range around one series' points,
//! each answer compared bit for bit with the reference's; and the reference's points with
//! what the contract says of each series alone.

use super::rollups::{align, resolutions};
use super::{Check, SEGMENT_ANCHORS};
use rand::seq::SliceRandom;
use rand::Rng;
use tickertape_backend::{PointsRange, RangePoints, ValueStore};
use tickertape_core::query::Summary;
use tickertape_core::segment::collect_points;
use tickertape_core::SeriesId;

type PointBits = Vec<(i64, u64)>;

fn bits(p: &RangePoints) -> (PointBits, PointBits, PointBits) {
    let b = |p: &tickertape_core::Point| (p.time, p.value.to_bits());
    (
        p.before.iter().map(b).collect(),
        p.points.iter().map(b).collect(),
        p.after.iter().map(b).collect(),
    )
}

fn slot_bits(slots: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
    slots.iter().map(|(t, s)| (*t, s.to_bits())).collect()
}

impl Check {
    /// Both stores' ids of every registered series, and the times of one of them.
    async fn batch_and_times(&mut self) -> Option<(Vec<SeriesId>, Vec<SeriesId>, Vec<i64>)> {
        let anchor = self.pick_registered()?;
        let everything = self
            .reference
            .read_segments(anchor.reference, i64::MIN, i64::MAX)
            .await
            .expect("read");
        let times = collect_points(&everything)
            .expect("decode")
            .iter()
            .map(|p| p.time)
            .collect();
        let real = self.registered.iter().map(|r| r.real).collect();
        let reference = self.registered.iter().map(|r| r.reference).collect();
        Some((real, reference, times))
    }

    pub(super) async fn read_points(&mut self) {
        let Some((real_ids, reference_ids, times)) = self.batch_and_times().await else {
            return;
        };
        let (start, end) = self.range_around(&times, &SEGMENT_ANCHORS);
        // `end == i64::MIN` has no neighbour after it on a store that keeps a chain of
        // segments (see `read_segments`): left to that check.
        if end == i64::MIN {
            return;
        }
        let range = PointsRange {
            start,
            end,
            neighbors: self.rng.gen_bool(0.5),
        };
        let context = self.context(&format!("read_points {range:?}"));
        let real = self
            .real()
            .read_points(&real_ids, range)
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        let reference = self
            .reference
            .read_points(&reference_ids, range)
            .await
            .expect("reference read_points");
        assert_eq!(real.len(), real_ids.len(), "{context}: one answer a series");
        for ((got, want), &id) in real.iter().zip(&reference).zip(&reference_ids) {
            assert_eq!(bits(got), bits(want), "{context}: series {id}");
            let all = self
                .reference
                .read_segments(id, i64::MIN, i64::MAX)
                .await
                .expect("read");
            let all = collect_points(&all).expect("decode");
            let contract = RangePoints::from_sorted(&all, range);
            assert_eq!(
                bits(want),
                bits(&contract),
                "{context}: the reference, {id}"
            );
        }
    }

    pub(super) async fn read_segment_rollups(&mut self) {
        let Some((real_ids, reference_ids, times)) = self.batch_and_times().await else {
            return;
        };
        let r = *resolutions().choose(&mut self.rng).expect("resolutions");
        let (start, end) = self.range_around(&times, &SEGMENT_ANCHORS);
        let (Some(start), Some(end)) = (align(start, r), align(end, r)) else {
            return;
        };
        let context = self.context(&format!("read_segment_rollups {r} [{start}, {end})"));
        let real = self
            .real()
            .read_segment_rollups(&real_ids, r, start, end)
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(real.len(), real_ids.len(), "{context}: one answer a series");
        for (got, &id) in real.iter().zip(&reference_ids) {
            let want = self
                .reference
                .read_segment_rollup(id, r, start, end)
                .await
                .expect("reference rollup");
            assert_eq!(slot_bits(got), slot_bits(&want), "{context}: series {id}");
        }
    }
}
