//! The reserve protocol: seed 000's two updates, generalised to batches.
//!
//! 1. **Reserve** (one `findOneAndUpdate` of the series head per series):
//!    filter `{_id, ld < first time}` (or no `ld` yet), update `$inc: {sp: -k, n: k}`,
//!    `$set: {ld, lv}`, returning the document as updated. `sp + k`, the pointer before
//!    this batch, says where the batch goes: slot position `cap - sp_before + i` of generation `sg`, which spills
//!    into generation `sg + 1` (and further) when it reaches `cap` — a pointer below zero,
//!    whatever its value, means "segment full".
//! 2. **Roll over** (only a batch that spills): for each next generation, create the segment
//!    (pre-allocated with nulls, `pe` = the previous segment's `pe`, a safe lower bound), then
//!    move the head to it with `{_id, sg: h-1}` → `$set: {sg: h}, $inc: {sp: cap}`. Both steps
//!    are idempotent, so every writer whose reservation spilled does them; the first wins.
//! 3. **Fill** (one `update` command for every series of the batch): per (series, segment)
//!    one `$set` of the reserved slots plus `$inc: {c: filled}`, filtered on the segment not
//!    being sealed yet.
//! 4. **Tidy** (only a batch that spilled or filled a segment's last slot): seal the full
//!    segments and tighten `pe`/`ns`, see `tidy`.
//!
//! Crash windows: a writer that stops after 1 leaves holes (null slots) that readers skip;
//! one that stops before 2 leaves the pointer below −1, and the next spilling writer opens
//! the segment instead; one that stops before 4 leaves a full open segment, which the next
//! tidy seals.

use std::collections::BTreeMap;

use futures::future::try_join_all;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use tickertape_backend::{AppendOutcome, BackendError, Result, SeriesAppend};
use tickertape_core::Point;

use crate::bulk::{self, Update};
use crate::error::{corrupt, map_err};
use crate::layout::{self, segment_id, sid, SEGMENTS, SERIES};
use crate::{FaultPoint, MongoBackend};

/// Reservation attempts before giving up (each failed one means another writer moved the
/// series' last time between our two reads).
const MAX_ATTEMPTS: usize = 100;

/// What the head's reservation gave one append.
struct Reservation {
    series: i64,
    /// The active generation when the slots were reserved.
    gen: i64,
    /// The slot pointer before this reservation.
    sp_before: i64,
    /// The points that were not refused, in order.
    accepted: Vec<Point>,
    outcome: AppendOutcome,
}

impl Reservation {
    /// Where each accepted point goes: `(generation, slot, point)`.
    fn slots(&self, capacity: i64) -> Vec<(i64, i64, Point)> {
        let base = capacity - self.sp_before;
        self.accepted
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let position = base + i as i64;
                (
                    self.gen + position.div_euclid(capacity),
                    position.rem_euclid(capacity),
                    *p,
                )
            })
            .collect()
    }
}

impl MongoBackend {
    pub(crate) async fn append_reserve(
        &self,
        batch: &[(usize, &SeriesAppend)],
    ) -> Result<Vec<AppendOutcome>> {
        let reservations =
            try_join_all(batch.iter().map(|(_, append)| self.reserve(append))).await?;
        if reservations.iter().any(|r| !r.accepted.is_empty()) {
            self.fault(FaultPoint::AfterReserve)?;
        }
        let cap = self.capacity;
        let placed: Vec<Vec<(i64, i64, Point)>> =
            reservations.iter().map(|r| r.slots(cap)).collect();

        // Roll over where a reservation spilled past its generation.
        try_join_all(reservations.iter().zip(&placed).filter_map(|(r, slots)| {
            let last_gen = slots.last().map(|s| s.0)?;
            (last_gen > r.gen).then(|| self.roll_over(r.series, r.gen, last_gen))
        }))
        .await?;

        // Fill: one statement per (series, generation), all in one command.
        let mut groups: BTreeMap<(i64, i64), Vec<(i64, Point)>> = BTreeMap::new();
        for (r, slots) in reservations.iter().zip(&placed) {
            for &(gen, slot, point) in slots {
                groups
                    .entry((r.series, gen))
                    .or_default()
                    .push((slot, point));
            }
        }
        let keys: Vec<(i64, i64)> = groups.keys().copied().collect();
        let statements: Vec<Update> = groups
            .into_iter()
            .map(|((series, gen), slots)| {
                let mut set = Document::new();
                for (slot, point) in &slots {
                    set.insert(format!("t.{slot}"), Bson::Int64(point.time));
                    set.insert(format!("v.{slot}"), Bson::Double(point.value));
                }
                Update {
                    q: doc! { "_id": segment_id(series, gen), "z": { "$exists": false } },
                    u: doc! { "$set": set, "$inc": { "c": slots.len() as i64 } },
                    conditional: true,
                }
            })
            .collect();
        if !statements.is_empty() {
            let applied = bulk::update(&self.db, &self.write_concern, SEGMENTS, statements).await?;
            if let Some(((series, gen), _)) = keys.iter().zip(&applied).find(|(_, ok)| !**ok) {
                // Only a segment sealed after its slots were reserved: the writer stalled
                // for more than two segments' worth of other writes. Nothing here was
                // acknowledged; retrying refuses these points as out of order.
                return Err(BackendError::Storage(format!(
                    "mongodb: segment {series}/{gen} was sealed before this writer filled the \
                     slots it had reserved; its points were not stored"
                )));
            }
        }

        // Seal and tighten where a segment filled up.
        let targets: Vec<(i64, i64)> = reservations
            .iter()
            .zip(&placed)
            .filter_map(|(r, slots)| {
                let &(last_gen, last_slot, _) = slots.last()?;
                (last_gen > r.gen || last_slot == cap - 1).then_some((r.series, last_gen))
            })
            .collect();
        if !targets.is_empty() {
            self.fault(FaultPoint::BeforeSeal)?;
            self.tidy_quietly(&targets).await;
        }
        Ok(reservations.into_iter().map(|r| r.outcome).collect())
    }

    /// Step 1: reserves slots for the points after the series' last time, refusing the
    /// prefix at or before it.
    async fn reserve(&self, append: &SeriesAppend) -> Result<Reservation> {
        let series = sid(append.series())?;
        let heads = self.collection(SERIES);
        let mut points: &[Point] = append.points();
        let mut outcome = AppendOutcome::all_new();
        for _ in 0..MAX_ATTEMPTS {
            let (Some(first), Some(last)) = (points.first(), points.last()) else {
                // Everything refused.
                return Ok(Reservation {
                    series,
                    gen: 0,
                    sp_before: 0,
                    accepted: Vec::new(),
                    outcome,
                });
            };
            let after = heads
                .find_one_and_update(
                    doc! {
                        "_id": series,
                        "$or": [ { "ld": Bson::Null }, { "ld": { "$lt": first.time } } ],
                    },
                    doc! {
                        "$inc": { "sp": -(points.len() as i64), "n": points.len() as i64 },
                        "$set": { "ld": last.time, "lv": last.value },
                    },
                )
                .projection(doc! { "sg": 1, "sp": 1 })
                .return_document(ReturnDocument::After)
                .await
                .map_err(|e| map_err("reserve slots", e))?;
            if let Some(head) = after {
                // The document as this update left it (seed 000's `new: true`): `sg` and
                // `sp` as of this reservation, whatever other writers do next.
                return Ok(Reservation {
                    series,
                    gen: layout::need_i64(&head, "sg")?,
                    sp_before: layout::need_i64(&head, "sp")? + points.len() as i64,
                    accepted: points.to_vec(),
                    outcome,
                });
            }
            // The condition failed: unknown series, or points at or before `ld`.
            let head = heads
                .find_one(doc! { "_id": series })
                .projection(doc! { "ld": 1 })
                .await
                .map_err(|e| map_err("read series head", e))?
                .ok_or(BackendError::UnknownSeries(append.series()))?;
            if let Some(ld) = layout::get_i64(&head, "ld")? {
                let refused = points.partition_point(|p| p.time <= ld);
                outcome.refused += refused;
                if refused > 0 {
                    outcome.last_time = Some(ld);
                }
                points = &points[refused..];
            }
            // Otherwise another writer moved `ld` between the two reads: try again.
        }
        Err(BackendError::Unavailable(format!(
            "mongodb: could not reserve slots for series {} in {MAX_ATTEMPTS} attempts",
            append.series()
        )))
    }

    /// Step 2: makes generations `from + 1 ..= to` exist and moves the head to `to`.
    async fn roll_over(&self, series: i64, from: i64, to: i64) -> Result<()> {
        let segments = self.collection(SEGMENTS);
        for gen in from + 1..=to {
            self.fault(FaultPoint::SegmentFull)?;
            let previous = segments
                .find_one(doc! { "_id": segment_id(series, gen - 1) })
                .projection(doc! { "pe": 1 })
                .await
                .map_err(|e| map_err("read full segment", e))?
                .ok_or_else(|| corrupt(format!("segment {series}/{} is missing", gen - 1)))?;
            let prev_end = layout::need_i64(&previous, "pe")?;
            let segment = layout::new_segment(series, gen, prev_end, self.capacity as usize, true);
            bulk::insert(&self.db, &self.write_concern, SEGMENTS, vec![segment]).await?;
            self.fault(FaultPoint::BeforeHeadSwitch)?;
            self.collection(SERIES)
                .update_one(
                    doc! { "_id": series, "sg": gen - 1 },
                    doc! { "$set": { "sg": gen }, "$inc": { "sp": self.capacity } },
                )
                .await
                .map_err(|e| map_err("move series head", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reservation(gen: i64, sp_before: i64, n: usize) -> Reservation {
        Reservation {
            series: 1,
            gen,
            sp_before,
            accepted: (0..n).map(|i| Point::new(i as i64, 0.0)).collect(),
            outcome: AppendOutcome::all_new(),
        }
    }

    fn places(r: &Reservation) -> Vec<(i64, i64)> {
        r.slots(4).into_iter().map(|(g, s, _)| (g, s)).collect()
    }

    #[test]
    fn slots_fill_in_time_order_and_spill_into_the_next_generations() {
        assert_eq!(places(&reservation(0, 4, 2)), vec![(0, 0), (0, 1)]);
        assert_eq!(places(&reservation(0, 1, 3)), vec![(0, 3), (1, 0), (1, 1)]);
        // A pointer already below zero (a writer died after finding the segment full).
        assert_eq!(places(&reservation(2, -1, 2)), vec![(3, 1), (3, 2)]);
        assert_eq!(places(&reservation(0, 0, 9)).last(), Some(&(3, 0)));
    }
}
