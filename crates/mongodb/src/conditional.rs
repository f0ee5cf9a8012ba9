//! The conditional protocol: one conditional update of the active segment itself per series
//! per batch, every series of the batch in one `update` command.
//!
//! **Fast path**: for the active generation `g` (cached per handle; one read of the heads
//! for series not seen yet), the statement
//! `{_id: {s, g}, c <= cap - k, x absent, l < first time (or no l)}` →
//! `$push: {t: {$each}, v: {$each}}, $inc: {c: k}, $set: {l, lv}`.
//! No head round trip: the segment's own `l` (last time) is what refuses out-of-order
//! points, its count `c` what keeps it within capacity.
//!
//! **Slow path** (a statement whose condition failed, or a batch larger than a segment),
//! per series, until the batch is stored or refused:
//! 1. read the head's `sg` and the active segment;
//! 2. refuse the prefix at or before `l` (nothing of the batch is stored yet);
//! 3. if the batch fits, push it filtered on `c` being what was read and `x` absent (so
//!    nothing moved in between); on a miss, start again;
//! 4. if it does not fit: in one update with the same filter, push the points that fit,
//!    close the segment (`x: true`), set `l`/`lv` to the batch's *last* point and park the
//!    rest of the batch in `r` (carry-over). This update commits the whole batch at once:
//!    from here on every other writer's points at or before the batch's end are refused,
//!    and nobody can slip points in between — which keeps the refused points a prefix;
//! 5. on a closed segment (ours or anyone's), create generation `g + 1` from it: `pe` = its
//!    last stored time, points = the first `cap` of its carry-over (closed with the rest
//!    carried over again if more remain), `l`/`lv` carried over, `b` = points before it.
//!    Every writer builds the same document, so whichever insert lands first is the one;
//!    then move the head `{_id, sg: g}` → `$set: {sg: g + 1}`; repeat while the active
//!    segment is closed;
//! 6. after a rollover, tidy: seal the closed segment (dropping `r`), set its `ns`.
//!
//! Crash windows: pushes are single atomic updates, so there are no holes. A writer that
//! stops after 4 leaves a closed active segment with a carry-over: the next writer's fast
//! path fails (`x`), its slow path creates the next segment from the carry-over, so the
//! stopped writer's points appear then, in order. One that stops between creating and
//! switching leaves a segment nobody points to yet: the next writer's insert finds it and it
//! switches. One that stops before 6 leaves a closed open segment, sealed by the next tidy.

use futures::future::try_join_all;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{AppendOutcome, BackendError, Result, SeriesAppend};
use tickertape_core::{Point, SeriesId};

use crate::bulk::{self, Update};
use crate::error::{corrupt, map_err};
use crate::find::find_all;
use crate::layout::{self, segment_id, sid, SEGMENTS, SERIES};
use crate::{FaultPoint, MongoBackend};

/// Slow-path misses before giving up (each one means another writer changed the segment
/// between our read and our write).
const MAX_ATTEMPTS: usize = 100;

impl MongoBackend {
    pub(crate) async fn append_conditional(
        &self,
        batch: &[(usize, &SeriesAppend)],
    ) -> Result<Vec<AppendOutcome>> {
        let series: Vec<i64> = batch
            .iter()
            .map(|(_, a)| sid(a.series()))
            .collect::<Result<_>>()?;
        self.load_active(&series).await?;

        let mut fast = Vec::new();
        let mut statements = Vec::new();
        for (n, ((_, append), &s)) in batch.iter().zip(&series).enumerate() {
            let k = append.points().len() as i64;
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
                    "$or": [ { "l": Bson::Null }, { "l": { "$lt": append.points()[0].time } } ],
                },
                u: push(append.points()),
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
                    AppendOutcome::all_new()
                } else {
                    slow.next().unwrap_or(AppendOutcome::all_new())
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
        let heads = find_all(
            self.collection(SERIES)
                .find(doc! { "_id": { "$in": &missing } })
                .projection(doc! { "sg": 1 }),
            "read series heads",
        )
        .await?;
        for head in &heads {
            self.cache_active(
                layout::need_i64(head, "_id")?,
                layout::need_i64(head, "sg")?,
            );
        }
        match missing.iter().find(|&&s| self.cached_active(s).is_none()) {
            Some(s) => Err(BackendError::UnknownSeries(SeriesId(*s as u64))),
            None => Ok(()),
        }
    }

    /// Steps 1–6 of the module docs for one append.
    async fn append_slow(&self, series: i64, append: &SeriesAppend) -> Result<AppendOutcome> {
        let mut points: &[Point] = append.points();
        let mut outcome = AppendOutcome::all_new();
        let mut committed = false;
        let mut rolled = Vec::new();
        let mut misses = 0;
        while misses < MAX_ATTEMPTS {
            let (gen, active) = self.read_active(series).await?;
            if active.closed {
                // Step 5, for this writer's batch or another's.
                let next = self.open_after(series, gen, &active).await?;
                rolled.push(next);
                continue;
            }
            if committed {
                break;
            }
            if let Some(last) = active.last {
                let refused = points.partition_point(|p| p.time <= last);
                if refused > 0 {
                    outcome.refused += refused;
                    outcome.last_time = Some(last);
                    points = &points[refused..];
                }
            }
            let Some(&end) = points.last() else {
                committed = true;
                break;
            };
            let room = (self.capacity - active.count).max(0) as usize;
            let filter = doc! {
                "_id": segment_id(series, gen),
                "c": active.count,
                "x": { "$exists": false },
            };
            let update = if points.len() <= room {
                push(points)
            } else {
                // Step 4: fill, close, carry the rest over.
                let (fit, rest) = points.split_at(room);
                doc! {
                    "$push": {
                        "t": { "$each": times(fit) },
                        "v": { "$each": values(fit) },
                    },
                    "$inc": { "c": fit.len() as i64 },
                    "$set": {
                        "l": end.time,
                        "lv": end.value,
                        "x": true,
                        "r": { "t": times(rest), "v": values(rest) },
                    },
                }
            };
            let result = self
                .collection(SEGMENTS)
                .update_one(filter, update)
                .await
                .map_err(|e| map_err("append to segment", e))?;
            if result.matched_count == 1 {
                committed = true;
                if points.len() <= room {
                    break;
                }
                self.fault(FaultPoint::SegmentFull)?;
            } else {
                misses += 1;
            }
            // Start again: after a carry-over, to open what follows.
        }
        if !committed {
            return Err(BackendError::Unavailable(format!(
                "mongodb: could not append to series {series} in {MAX_ATTEMPTS} attempts"
            )));
        }
        if !rolled.is_empty() {
            self.fault(FaultPoint::BeforeSeal)?;
            let targets: Vec<(i64, i64)> = rolled.into_iter().map(|g| (series, g)).collect();
            self.tidy_quietly(&targets).await;
        }
        Ok(outcome)
    }

    /// The head's active generation and that segment (primary reads).
    async fn read_active(&self, series: i64) -> Result<(i64, Active)> {
        let head = self
            .collection(SERIES)
            .find_one(doc! { "_id": series })
            .projection(doc! { "sg": 1 })
            .await
            .map_err(|e| map_err("read series head", e))?
            .ok_or(BackendError::UnknownSeries(SeriesId(series as u64)))?;
        let gen = layout::need_i64(&head, "sg")?;
        self.cache_active(series, gen);
        let doc = self
            .collection(SEGMENTS)
            .find_one(doc! { "_id": segment_id(series, gen) })
            .await
            .map_err(|e| map_err("read active segment", e))?
            .ok_or_else(|| corrupt(format!("active segment {series}/{gen} is missing")))?;
        Ok((gen, Active::parse(doc)?))
    }

    /// Step 5: creates the generation after the closed `active` one (or finds it created)
    /// and moves the head to it. Returns the new generation.
    async fn open_after(&self, series: i64, gen: i64, active: &Active) -> Result<i64> {
        let stored = layout::parse_segment(&active.doc)?;
        let prev_end = stored
            .points()?
            .last()
            .map_or(stored.segment.prev_end, |p| p.time);
        let (times, values) = carry_over(&active.doc)?;
        if times.len() != values.len() {
            return Err(corrupt(format!(
                "segment {series}/{gen}: carry-over `r` is uneven"
            )));
        }
        let cap = self.capacity as usize;
        let now = times.len().min(cap);
        let mut next = layout::new_segment(series, gen + 1, prev_end, cap, false);
        next.insert("t", times[..now].to_vec());
        next.insert("v", values[..now].to_vec());
        next.insert("c", now as i64);
        if let Some(last) = active.last {
            next.insert("l", last);
            next.insert(
                "lv",
                layout::get_f64(&active.doc, "lv")?.unwrap_or(f64::NAN),
            );
        }
        next.insert(
            "b",
            layout::get_i64(&active.doc, "b")?.unwrap_or(0) + active.count,
        );
        if times.len() > cap {
            next.insert("x", true);
            next.insert(
                "r",
                doc! { "t": times[cap..].to_vec(), "v": values[cap..].to_vec() },
            );
        }
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
        Ok(gen + 1)
    }
}

/// The active segment as the slow path needs it.
struct Active {
    doc: Document,
    count: i64,
    last: Option<i64>,
    closed: bool,
}

impl Active {
    fn parse(doc: Document) -> Result<Self> {
        Ok(Self {
            count: layout::get_i64(&doc, "c")?.unwrap_or(0),
            last: layout::get_i64(&doc, "l")?,
            closed: matches!(doc.get("x"), Some(Bson::Boolean(true))),
            doc,
        })
    }
}

/// The carry-over `r` of a closed segment: times and values, as stored.
fn carry_over(doc: &Document) -> Result<(Vec<Bson>, Vec<Bson>)> {
    let Ok(r) = doc.get_document("r") else {
        return Ok((Vec::new(), Vec::new()));
    };
    let array = |field: &str| {
        r.get_array(field)
            .cloned()
            .map_err(|_| corrupt(format!("carry-over without `{field}`")))
    };
    Ok((array("t")?, array("v")?))
}

fn times(points: &[Point]) -> Vec<Bson> {
    points.iter().map(|p| Bson::Int64(p.time)).collect()
}

fn values(points: &[Point]) -> Vec<Bson> {
    points.iter().map(|p| Bson::Double(p.value)).collect()
}

/// The update appending `points` (not empty) to an open segment.
fn push(points: &[Point]) -> Document {
    let last = points[points.len() - 1];
    doc! {
        "$push": { "t": { "$each": times(points) }, "v": { "$each": values(points) } },
        "$inc": { "c": points.len() as i64 },
        "$set": { "l": last.time, "lv": last.value },
    }
}
