//! The conditional protocol: one conditional update of the active segment itself per series
//! per batch, every series of the batch in one `update` command.
//!
//! **Fast path**: for the active generation `g` (cached per handle; one read of the heads
//! for series not seen yet), the statement
//! `{_id: {s, g}, c <= cap - k, x absent, l < first time (or no l)}` →
//! `$push: {t: {$each}, v: {$each}}, $inc: {c: k}, $set: {l, lv}`.
//! No head round trip: the segment's own `l` (last time) is what refuses out-of-order
//! points, its count `c` what keeps it within capacity. A batch is never split between two
//! segments (a split would let another writer's points in between, and the refused points
//! would no longer be a prefix of the batch): a batch that does not fit goes whole into the
//! next segment, and the one it did not fit in is closed with room left.
//!
//! **Slow path** (a statement whose condition failed, or a batch larger than a segment),
//! per series, until the batch is stored or refused:
//! 1. read the head's `sg` and the segment's `c`, `l`, `x`;
//! 2. refuse the prefix at or before `l` (nothing of the batch is stored yet);
//! 3. if the batch fits an open segment, push it filtered on `c` being what was read and `x`
//!    absent (so nothing moved in between); on a miss, start again;
//! 4. if it does not fit, close the segment (`$set: {x: true}`: no push matches it any more,
//!    so its `c` and `l` are final) and start again;
//! 5. on a closed segment, create generation `g + 1` (empty; `pe` = `l`, the exact last time;
//!    `l`, `lv` carried over; `b` = points before it), then move the head with
//!    `{_id, sg: g}` → `$set: {sg: g + 1}`; start again. A batch larger than a segment is
//!    instead inserted as generations `g + 1 …` already filled, in one ordered insert, and
//!    the head moved past them;
//! 6. after a rollover, tidy: seal the closed segment, set its `ns`.
//!
//! Crash windows: pushes are single atomic updates, so there are no holes. A writer that
//! stops before 4 or 5 leaves the active segment open or closed: the next writer's condition
//! fails and it closes it (again) and opens the next one. One that stops between creating
//! and switching leaves a segment nobody points to yet: the next writer's insert finds it and
//! it switches. One that stops before 6 leaves a closed open segment, sealed by the next tidy.

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
                    "x": { "$exists": false },
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
            self.cache_active(
                layout::need_i64(head, "_id")?,
                layout::need_i64(head, "sg")?,
            );
        }
        match missing.iter().find(|&&s| self.cached_active(s).is_none()) {
            Some(s) => Err(BackendError::Invalid(format!("unknown series {s}"))),
            None => Ok(()),
        }
    }

    /// Steps 1–6 of the module docs for one append.
    async fn append_slow(&self, series: i64, append: &SeriesAppend) -> Result<AppendOutcome> {
        let mut points: &[Point] = &append.points;
        let mut outcome = AppendOutcome {
            refused: 0,
            last_time: None,
        };
        let mut rolled = Vec::new();
        let segments = self.collection(SEGMENTS);
        let mut done = false;
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
                .projection(doc! { "c": 1, "l": 1, "lv": 1, "b": 1, "x": 1, "pe": 1 })
                .await
                .map_err(|e| map_err("read active segment", e))?
                .ok_or_else(|| corrupt(format!("active segment {series}/{gen} is missing")))?;
            let count = layout::get_i64(&active, "c")?.unwrap_or(0);
            let last = layout::get_i64(&active, "l")?;
            let closed = matches!(active.get("x"), Some(Bson::Boolean(true)));

            if let Some(last) = last {
                let refused = points.partition_point(|p| p.time <= last);
                if refused > 0 {
                    outcome.refused += refused;
                    outcome.last_time = Some(last);
                    points = &points[refused..];
                }
            }
            if points.is_empty() {
                done = true;
                break;
            }

            let k = points.len() as i64;
            if !closed && k <= self.capacity - count {
                let result = segments
                    .update_one(
                        doc! {
                            "_id": segment_id(series, gen),
                            "c": count,
                            "x": { "$exists": false },
                        },
                        push(points),
                    )
                    .await
                    .map_err(|e| map_err("append to segment", e))?;
                if result.matched_count == 1 {
                    done = true;
                    break;
                }
                continue;
            }
            if !closed {
                self.fault(FaultPoint::SegmentFull)?;
                segments
                    .update_one(
                        doc! { "_id": segment_id(series, gen) },
                        doc! { "$set": { "x": true } },
                    )
                    .await
                    .map_err(|e| map_err("close segment", e))?;
                continue;
            }

            // Closed, so `count` and `last` are final: open what follows. A segment closed
            // empty (the series' first, before a batch larger than a segment) hands on its
            // own `pe` and no last point.
            let last = match last {
                Some(last) => Some((last, layout::get_f64(&active, "lv")?.unwrap_or(f64::NAN))),
                None => None,
            };
            let before = layout::get_i64(&active, "b")?.unwrap_or(0) + count;
            let prev_end = match last {
                Some((time, _)) => time,
                None => layout::need_i64(&active, "pe")?,
            };
            if k <= self.capacity {
                let next = self.next_segment(series, gen + 1, prev_end, last, before, &[]);
                bulk::insert(&self.db, &self.write_concern, SEGMENTS, vec![next]).await?;
                self.fault(FaultPoint::BeforeHeadSwitch)?;
                self.switch_head(series, gen, gen + 1).await?;
                rolled.push(gen + 1);
                continue;
            }
            let chain = self.chain(series, gen, prev_end, last, before, points);
            let length = chain.len();
            let inserted =
                bulk::insert_in_order(&self.db, &self.write_concern, SEGMENTS, chain).await?;
            if inserted == 0 {
                // Another writer opened generation g + 1 first: start again.
                continue;
            }
            if inserted < length {
                return Err(BackendError::Storage(format!(
                    "mongodb: another writer opened segment {series}/{} while this batch of \
                     {k} points was being laid out; only part of it was stored",
                    gen + 1 + inserted as i64
                )));
            }
            self.fault(FaultPoint::BeforeHeadSwitch)?;
            let newest = gen + length as i64;
            self.switch_head(series, gen, newest).await?;
            rolled.extend((gen + 1..=newest).step_by(3));
            rolled.push(newest);
            done = true;
            break;
        }
        if !done {
            return Err(BackendError::Unavailable(format!(
                "mongodb: could not append to series {series} in {MAX_ATTEMPTS} attempts"
            )));
        }
        if !rolled.is_empty() {
            self.fault(FaultPoint::BeforeSeal)?;
            let newest = self.cached_active(series).unwrap_or(0);
            let targets: Vec<(i64, i64)> = rolled
                .into_iter()
                .map(|g| (series, g))
                .chain(std::iter::once((series, newest)))
                .collect();
            self.tidy_quietly(&targets).await;
        }
        Ok(outcome)
    }

    /// Moves the head from any generation in `from..to` to `to`; never backwards.
    async fn switch_head(&self, series: i64, from: i64, to: i64) -> Result<()> {
        self.collection(SERIES)
            .update_one(
                doc! { "_id": series, "sg": { "$gte": from, "$lt": to } },
                doc! { "$set": { "sg": to } },
            )
            .await
            .map_err(|e| map_err("move series head", e))?;
        self.cache_active(series, to);
        Ok(())
    }

    /// Generation `gen` after a closed segment: its `pe` is `prev_end`, the series' last
    /// point so far is `last` (none for a series without points), `before` points precede
    /// it, and it holds `points` (may be empty).
    fn next_segment(
        &self,
        series: i64,
        gen: i64,
        prev_end: i64,
        last: Option<(i64, f64)>,
        before: i64,
        points: &[Point],
    ) -> Document {
        let mut segment = layout::new_segment(series, gen, prev_end, self.capacity as usize, false);
        segment.insert(
            "t",
            points
                .iter()
                .map(|p| Bson::Int64(p.time))
                .collect::<Vec<_>>(),
        );
        segment.insert(
            "v",
            points
                .iter()
                .map(|p| Bson::Double(p.value))
                .collect::<Vec<_>>(),
        );
        segment.insert("c", points.len() as i64);
        if let Some((l, lv)) = points.last().map(|p| (p.time, p.value)).or(last) {
            segment.insert("l", l);
            segment.insert("lv", lv);
        }
        segment.insert("b", before);
        segment
    }

    /// A batch larger than a segment, laid out as filled generations after `gen`: all but
    /// the last closed.
    fn chain(
        &self,
        series: i64,
        gen: i64,
        mut prev_end: i64,
        last: Option<(i64, f64)>,
        mut before: i64,
        points: &[Point],
    ) -> Vec<Document> {
        let chunks: Vec<&[Point]> = points.chunks(self.capacity as usize).collect();
        let mut out = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.iter().enumerate() {
            let mut segment =
                self.next_segment(series, gen + 1 + i as i64, prev_end, last, before, chunk);
            if i + 1 < chunks.len() {
                segment.insert("x", true);
            }
            out.push(segment);
            prev_end = chunk[chunk.len() - 1].time;
            before += chunk.len() as i64;
        }
        out
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
