//! The conditional protocol: one conditional update of the active segment itself per series
//! per batch, every series of the batch in one `update` command.
//!
//! **Fast path**: for the active generation `g` (cached per handle; one read of the heads
//! for series not seen yet), the statement
//! `{_id: {s, g}, c <= cap - k, l < first time (or no l)}` →
//! `$push: {t: {$each}, v: {$each}}, $inc: {c: k}, $set: {l, lv}`.
//! No head round trip: the segment's own `l` (last time) is what refuses out-of-order
//! points, and its count `c` what keeps it within capacity.
//!
//! **Slow path** (a statement whose condition failed, or a batch larger than a segment),
//! per series, until every point is stored or refused:
//! 1. read the head's `sg` and the segment's `c`, `l`;
//! 2. refuse the prefix at or before `l`;
//! 3. if there is room, push as many points as fit, filtered on `c` being what was read
//!    (so nothing moved in between); on a miss, start again;
//! 4. if the segment is full: create generation `g + 1` (`pe` = `l`, the exact last time;
//!    `l`, `lv` carried over; `b` = points before it), then move the head with
//!    `{_id, sg: g}` → `$set: {sg: g + 1}`; start again;
//! 5. after a rollover, tidy: seal the full segment, set its `ns`.
//!
//! Crash windows: pushes are single atomic updates, so there are no holes. A writer that
//! stops before 4 leaves a full active segment: the next writer's condition fails and it
//! opens the next one. One that stops between creating and switching leaves a segment
//! nobody points to yet: the next writer's insert finds it and it switches. One that stops
//! before 5 leaves a full open segment, sealed by the next tidy.

use futures::future::try_join_all;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{AppendOutcome, BackendError, Result, SeriesAppend};
use tickertape_core::Point;

use crate::bulk::{self, Update};
use crate::error::{corrupt, map_err};
use crate::layout::{self, segment_id, sid, SEGMENTS, SERIES};
use crate::{FaultPoint, MongoBackend};

/// Slow-path rounds before giving up (each one means another writer changed the segment
/// between our read and our write).
const MAX_ATTEMPTS: usize = 100;

impl MongoBackend {
    pub(crate) async fn append_conditional(
        &self,
        batch: &[(usize, &SeriesAppend)],
    ) -> Result<Vec<AppendOutcome>> {
        let series: Vec<i64> = batch
            .iter()
            .map(|(_, a)| sid(a.series))
            .collect::<Result<_>>()?;
        self.load_active(&series).await?;

        let mut fast = Vec::new();
        let mut statements = Vec::new();
        for (n, ((_, append), &s)) in batch.iter().zip(&series).enumerate() {
            let k = append.points.len() as i64;
            let Some(gen) = self.cached_active(s) else {
                continue;
            };
            if k > self.capacity {
                continue;
            }
            statements.push(Update {
                q: doc! {
                    "_id": segment_id(s, gen),
                    "c": { "$lte": self.capacity - k },
                    "$or": [ { "l": Bson::Null }, { "l": { "$lt": append.points[0].time } } ],
                },
                u: push(&append.points),
                conditional: true,
            });
            fast.push(n);
        }
        let applied = if statements.is_empty() {
            Vec::new()
        } else {
            bulk::update(&self.db, &self.write_concern, SEGMENTS, statements).await?
        };
        let mut stored = vec![false; batch.len()];
        for (&n, ok) in fast.iter().zip(applied) {
            stored[n] = ok;
        }

        let slow = try_join_all(
            batch
                .iter()
                .zip(&series)
                .zip(&stored)
                .filter(|(_, &ok)| !ok)
                .map(|(((_, append), &s), _)| self.append_slow(s, append)),
        )
        .await?;
        let mut slow = slow.into_iter();
        Ok(stored
            .iter()
            .map(|&ok| {
                if ok {
                    AppendOutcome {
                        refused: 0,
                        last_time: None,
                    }
                } else {
                    slow.next().unwrap_or(AppendOutcome {
                        refused: 0,
                        last_time: None,
                    })
                }
            })
            .collect())
    }

    fn cached_active(&self, series: i64) -> Option<i64> {
        let active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        active.get(&series).copied()
    }

    fn cache_active(&self, series: i64, gen: i64) {
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let entry = active.entry(series).or_insert(gen);
        *entry = (*entry).max(gen);
    }

    /// Reads the active generation of the series not in the cache (one query).
    async fn load_active(&self, series: &[i64]) -> Result<()> {
        let missing: Vec<i64> = series
            .iter()
            .copied()
            .filter(|&s| self.cached_active(s).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let heads: Vec<Document> = self
            .collection(SERIES)
            .find(doc! { "_id": { "$in": &missing } })
            .projection(doc! { "sg": 1 })
            .await
            .map_err(|e| map_err("read series heads", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("read series heads", e))?;
        for head in &heads {
            self.cache_active(layout::need_i64(head, "_id")?, layout::need_i64(head, "sg")?);
        }
        match missing.iter().find(|&&s| self.cached_active(s).is_none()) {
            Some(s) => Err(BackendError::Invalid(format!("unknown series {s}"))),
            None => Ok(()),
        }
    }

    /// Steps 1–5 of the module docs for one append.
    async fn append_slow(&self, series: i64, append: &SeriesAppend) -> Result<AppendOutcome> {
        let mut points: &[Point] = &append.points;
        let mut outcome = AppendOutcome {
            refused: 0,
            last_time: None,
        };
        let mut rolled_to = None;
        let segments = self.collection(SEGMENTS);
        for _ in 0..MAX_ATTEMPTS {
            let head = self
                .collection(SERIES)
                .find_one(doc! { "_id": series })
                .projection(doc! { "sg": 1 })
                .await
                .map_err(|e| map_err("read series head", e))?
                .ok_or_else(|| BackendError::Invalid(format!("unknown series {series}")))?;
            let gen = layout::need_i64(&head, "sg")?;
            self.cache_active(series, gen);
            let active = segments
                .find_one(doc! { "_id": segment_id(series, gen) })
                .projection(doc! { "c": 1, "l": 1, "lv": 1, "b": 1 })
                .await
                .map_err(|e| map_err("read active segment", e))?
                .ok_or_else(|| corrupt(format!("active segment {series}/{gen} is missing")))?;
            let count = layout::get_i64(&active, "c")?.unwrap_or(0);
            let last = layout::get_i64(&active, "l")?;

            if let Some(last) = last {
                let refused = points.partition_point(|p| p.time <= last);
                if refused > 0 {
                    outcome.refused += refused;
                    outcome.last_time = Some(last);
                    points = &points[refused..];
                }
            }
            if points.is_empty() {
                break;
            }

            let room = self.capacity - count;
            if room > 0 {
                let fit = &points[..points.len().min(room as usize)];
                let result = segments
                    .update_one(doc! { "_id": segment_id(series, gen), "c": count }, push(fit))
                    .await
                    .map_err(|e| map_err("append to segment", e))?;
                if result.matched_count == 1 {
                    points = &points[fit.len()..];
                    if points.is_empty() {
                        break;
                    }
                }
                continue;
            }

            // Full: open the next segment, then move the head to it.
            self.fault(FaultPoint::SegmentFull)?;
            let last = last.ok_or_else(|| {
                corrupt(format!("full segment {series}/{gen} has no last time `l`"))
            })?;
            let mut next =
                layout::new_segment(series, gen + 1, last, self.capacity as usize, false);
            next.insert("l", last);
            next.insert("lv", layout::get_f64(&active, "lv")?.unwrap_or(f64::NAN));
            next.insert("b", layout::get_i64(&active, "b")?.unwrap_or(0) + count);
            bulk::insert(&self.db, &self.write_concern, SEGMENTS, vec![next]).await?;
            self.fault(FaultPoint::BeforeHeadSwitch)?;
            self.collection(SERIES)
                .update_one(
                    doc! { "_id": series, "sg": gen },
                    doc! { "$set": { "sg": gen + 1 } },
                )
                .await
                .map_err(|e| map_err("move series head", e))?;
            self.cache_active(series, gen + 1);
            rolled_to = Some(gen + 1);
        }
        if !points.is_empty() {
            return Err(BackendError::Unavailable(format!(
                "mongodb: could not append to series {series} in {MAX_ATTEMPTS} attempts"
            )));
        }
        if let Some(gen) = rolled_to {
            self.fault(FaultPoint::BeforeSeal)?;
            let newest = self.cached_active(series).unwrap_or(gen).max(gen);
            self.tidy_quietly(&[(series, newest)]).await;
        }
        Ok(outcome)
    }
}

/// The update appending `points` to an open segment.
fn push(points: &[Point]) -> Document {
    let times: Vec<Bson> = points.iter().map(|p| Bson::Int64(p.time)).collect();
    let values: Vec<Bson> = points.iter().map(|p| Bson::Double(p.value)).collect();
    let last = points[points.len() - 1];
    doc! {
        "$push": { "t": { "$each": times }, "v": { "$each": values } },
        "$inc": { "c": points.len() as i64 },
        "$set": { "l": last.time, "lv": last.value },
    }
}
