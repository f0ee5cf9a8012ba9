//! Samples for PromQL over the whole time a store keeps: raw points where the raw
//! retention keeps them, and before that the rollup slots that outlive them.
//!
//! Which level answers which stretch of a read is decided once per series from its
//! measurement's schema and the clock ([`HistoryPlan::new`], no I/O): the raw points from
//! the first whole slot of the finest rollup after the raw retention's horizon, each
//! rollup before that from where its own retention keeps it (a boundary between two
//! levels falls on a slot of both), the coarsest as far back as the read goes. A
//! measurement without a raw retention, without rollups, or not in value segments is
//! read raw throughout, as before.

use crate::batch_read::SERIES_PER_BATCH;
use crate::side_by_side::side_by_side;
use crate::{Engine, EngineError, QueryBudget};
use futures::StreamExt;
use std::collections::HashMap;
use tickertape_backend::SeriesInfo;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{Resolution, ResolutionOrRaw};
use tickertape_core::schema::{Layout, MeasurementSchema};
use tickertape_core::{Point, SeriesId};

/// One series' samples over a read: its rollup slots before `raw_from`, then its raw
/// points (stale markers kept) from `raw_from` on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesHistory {
    /// `(resolution, slot start, summary)` in time order; every slot ends at or before
    /// `raw_from`.
    pub slots: Vec<(Resolution, i64, Summary)>,
    pub raw_from: i64,
    pub points: Vec<Point>,
}

/// Where a read of `[start, end]` is answered from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct HistoryPlan {
    /// `(resolution, from, to)`: slots starting in `[from, to)`, earliest level first.
    pub(crate) levels: Vec<(Resolution, i64, i64)>,
    /// Raw points from here (at most `start` when no level is read).
    pub(crate) raw_from: i64,
}

impl HistoryPlan {
    /// The plan for one series of a measurement with `schema` whose raw points are kept
    /// `raw_keep` (ns; `None`: forever) at `now` (ns). Slots are read from `lead_slots`
    /// slots before the one holding `start`, for the reader that widens its windows there.
    pub(crate) fn new(
        schema: &MeasurementSchema,
        raw_keep: Option<i64>,
        now: i64,
        start: i64,
        end: i64,
        lead_slots: i64,
    ) -> Self {
        let raw_only = Self {
            levels: Vec::new(),
            raw_from: start,
        };
        let Some(raw_keep) = raw_keep else {
            return raw_only;
        };
        let mut rollups = schema.rollups.clone();
        rollups.sort();
        let (Layout::Segments, Some(&finest)) = (schema.layout, rollups.first()) else {
            return raw_only;
        };
        let horizon = now.saturating_sub(raw_keep);
        if start >= horizon {
            return raw_only;
        }
        // Whole slots of the finest rollup up to the raw points.
        let raw_from = align_up(horizon, finest.nanos());
        let mut levels = Vec::new();
        let mut upper = raw_from;
        for (i, &r) in rollups.iter().enumerate() {
            let res = r.nanos();
            let first = align_down(start, res).saturating_sub(lead_slots.saturating_mul(res));
            let kept_from = match (
                schema.retention_ns(ResolutionOrRaw::Rollup(r)),
                rollups.get(i + 1),
            ) {
                // Kept from its horizon on, handing over to the next coarser rollup on a
                // slot of both.
                (Some(keep), Some(coarser)) => {
                    align_up(now.saturating_sub(keep), lcm(res, coarser.nanos())).max(first)
                }
                (Some(keep), None) => align_up(now.saturating_sub(keep), res).max(first),
                (None, _) => first,
            };
            // `upper` is a slot boundary of the finer level; this one's slots stop at or
            // before it (a finer level that kept nothing leaves a gap rather than two
            // levels answering one time).
            let to = align_down(upper, res);
            if kept_from < to {
                levels.push((r, kept_from, to));
                upper = kept_from;
            }
            if kept_from <= first {
                break;
            }
        }
        // No slot that starts after the read.
        let levels = levels
            .into_iter()
            .rev()
            .filter_map(|(r, from, to)| {
                let to = to.min(align_up(end.saturating_add(1), r.nanos()));
                (from < to).then_some((r, from, to))
            })
            .collect();
        Self { levels, raw_from }
    }
}

fn align_down(t: i64, unit: i64) -> i64 {
    t.div_euclid(unit).saturating_mul(unit)
}

fn align_up(t: i64, unit: i64) -> i64 {
    align_down(t.saturating_add(unit - 1), unit)
}

fn lcm(a: i64, b: i64) -> i64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    (a / x).saturating_mul(b)
}

impl Engine {
    /// Each series' samples in `[start, end]` (ns, both ends included) as a
    /// [`SeriesHistory`]: rollup slots where the raw retention has dropped the raw points
    /// (read from `lead_slots` slots earlier), raw points, stale markers kept, after.
    /// Series of one plan (a selector's usually share their measurement's) are read
    /// [`SERIES_PER_BATCH`] at a time, one backend call per level, the batches side by
    /// side (`side_by_side.rs`). Refused past
    /// `--max-query-series`; slots and points charged to `budget` as each batch comes.
    pub async fn read_history_with(
        &self,
        series: &[SeriesInfo],
        start: i64,
        end: i64,
        lead_slots: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<SeriesHistory>, EngineError> {
        self.check_series_limit(series.len())?;
        let now = self.now_nanos();
        let policy = self.policy_retention().await?;
        let mut by_plan: HashMap<HistoryPlan, Vec<usize>> = HashMap::new();
        for (i, info) in series.iter().enumerate() {
            let schema = self.schema.for_measurement(&info.key.measurement);
            let raw_keep = schema.raw_retention_ns_under(policy);
            let plan = HistoryPlan::new(schema, raw_keep, now, start, end, lead_slots);
            by_plan.entry(plan).or_default().push(i);
        }
        let chunks: Vec<(&HistoryPlan, &[usize])> = by_plan
            .iter()
            .flat_map(|(plan, indices)| {
                indices
                    .chunks(SERIES_PER_BATCH)
                    .map(move |chunk| (plan, chunk))
            })
            .collect();
        // Owned, so that the reads' futures borrow nothing (spawned tasks).
        let jobs: Vec<(HistoryPlan, Vec<SeriesInfo>)> = chunks
            .iter()
            .map(|(plan, chunk)| {
                let batch = chunk.iter().map(|&i| series[i].clone()).collect();
                ((*plan).clone(), batch)
            })
            .collect();
        let engine = self.clone();
        let mut reads = side_by_side(jobs, move |(plan, batch)| {
            let engine = engine.clone();
            async move { engine.read_history_batch(&batch, &plan, start, end).await }
        });
        let mut out = vec![SeriesHistory::default(); series.len()];
        for (_, chunk) in &chunks {
            let Some(read) = reads.next().await else {
                break;
            };
            for (&i, history) in chunk.iter().zip(read?) {
                budget.charge_points(history.slots.len() + history.points.len())?;
                out[i] = history;
            }
            crate::checkpoint(budget).await;
        }
        Ok(out)
    }

    /// `plan` executed for every series of `batch`: one rollup read per level (levels
    /// are planned for value segments only), one raw read.
    async fn read_history_batch(
        &self,
        batch: &[SeriesInfo],
        plan: &HistoryPlan,
        start: i64,
        end: i64,
    ) -> Result<Vec<SeriesHistory>, EngineError> {
        let mut out = vec![
            SeriesHistory {
                raw_from: plan.raw_from,
                ..SeriesHistory::default()
            };
            batch.len()
        ];
        let ids: Vec<SeriesId> = batch.iter().map(|info| info.id).collect();
        for &(r, from, to) in &plan.levels {
            let read = self.backend.read_segment_rollups(&ids, r, from, to).await?;
            for (history, slots) in out.iter_mut().zip(read) {
                history
                    .slots
                    .extend(slots.into_iter().map(|(t, summary)| (r, t, summary)));
            }
        }
        if plan.raw_from <= end {
            let raw = self
                .read_raw_batch(batch, plan.raw_from.max(start), end)
                .await?;
            for (history, points) in out.iter_mut().zip(raw) {
                history.points = points;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const H: i64 = 3_600_000_000_000;
    const D: i64 = 24 * H;

    fn schema(rollups: &[Resolution], retention: &[(ResolutionOrRaw, i64)]) -> MeasurementSchema {
        MeasurementSchema {
            rollups: rollups.to_vec(),
            retention: retention.iter().copied().collect::<BTreeMap<_, _>>(),
            ..MeasurementSchema::default()
        }
    }

    #[test]
    fn without_a_raw_retention_or_rollups_everything_is_raw() {
        let now = 100 * D;
        let keep_all = schema(&[Resolution::HOUR], &[]);
        assert!(HistoryPlan::new(&keep_all, None, now, 0, now, 2)
            .levels
            .is_empty());
        let no_rollups = schema(&[], &[(ResolutionOrRaw::Raw, 7 * D)]);
        assert!(HistoryPlan::new(&no_rollups, Some(7 * D), now, 0, now, 2)
            .levels
            .is_empty());
        // A read within the raw retention reads raw too.
        let s = schema(&[Resolution::HOUR], &[(ResolutionOrRaw::Raw, 7 * D)]);
        let plan = HistoryPlan::new(&s, Some(7 * D), now, now - 6 * D, now, 2);
        assert_eq!(plan.levels, []);
        assert_eq!(plan.raw_from, now - 6 * D);
    }

    #[test]
    fn slots_answer_before_the_raw_horizon_and_raw_points_after() {
        let now = 100 * D + 30 * 60_000_000_000; // half past midnight
        let s = schema(&[Resolution::HOUR], &[(ResolutionOrRaw::Raw, 7 * D)]);
        let plan = HistoryPlan::new(&s, Some(7 * D), now, 70 * D + 5, now, 2);
        // The raw points from the first whole hour after the horizon.
        assert_eq!(plan.raw_from, 93 * D + H);
        assert_eq!(
            plan.levels,
            [(Resolution::HOUR, 70 * D - 2 * H, 93 * D + H)]
        );
    }

    #[test]
    fn each_rollup_answers_where_its_own_retention_keeps_it() {
        let now = 400 * D;
        let s = schema(
            &[Resolution::DAY, Resolution::HOUR],
            &[
                (ResolutionOrRaw::Raw, 7 * D),
                (ResolutionOrRaw::Rollup(Resolution::HOUR), 30 * D),
            ],
        );
        let plan = HistoryPlan::new(&s, Some(7 * D), now, 300 * D, now, 1);
        assert_eq!(plan.raw_from, 393 * D);
        assert_eq!(
            plan.levels,
            [
                (Resolution::DAY, 299 * D, 370 * D),
                (Resolution::HOUR, 370 * D, 393 * D),
            ]
        );
        // A read that ends before the raw points reads no slot past its end.
        let plan = HistoryPlan::new(&s, Some(7 * D), now, 300 * D, 300 * D + 5 * H, 1);
        assert_eq!(plan.levels, [(Resolution::DAY, 299 * D, 301 * D)]);
        assert_eq!(plan.raw_from, 393 * D);
    }
}
