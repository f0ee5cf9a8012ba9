//! Folding, off the write path: a series' documents in a slice merged into as few as
//! `block_points` allows, and its rollups derived from the points held.
//!
//! A pass looks at the slices marked pending (or, to verify or compact, at every slice
//! of every value collection), and per series of a slice decides:
//! - **rollups**: when the rollup documents do not cover exactly the series' live
//!   documents, extend them with the new documents' points (when every new point is later
//!   than what they summarise: the common case, cheap) or recompute them from all points.
//!   A pending pass leaves extendable rollups as they are: readers extend them with the
//!   few fresh documents themselves, and the raw fold (at most `fold_docs` documents or
//!   `seal_idle` later) rewrites them; so a rollup document is written once per fold,
//!   not on every pass that saw a new point.
//! - **raw fold**: when `fold_docs` fresh documents wait, or one has waited `seal_idle`,
//!   or a late point overlaps summarised ones (or on `compact`), merge every live
//!   document into new ones of at most `block_points` points, under new write numbers
//!   (each point keeps its own in `ws`); then mark the inputs superseded (`x`), to be
//!   deleted by a later pass after a grace, so a reader that began before the marks still
//!   finds their points. No document is ever overwritten with other points.
//!
//! Two folds (two handles) racing on a series both insert their documents and both mark
//! the inputs: duplicates at worst, which readers merge and the next pass folds (a fold's
//! documents keep `d` until a check after its writes finds no other fold's document
//! beside them); a point is never lost.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::segment::NO_PREVIOUS;

use super::doc::{
    folded, id, mark_of, meta_projection, parse_meta, parse_points, without_deleted, DeleteMark,
    Meta,
};
use super::merge::{merge, points, Written};
use super::names::rollup_collection;
use super::pass::{Left, Scope, Slice};
use super::rollup_doc::{extend, rollup_id, RollupDoc};
use super::write::now_ms;
use crate::bulk::{self, Update};
use crate::find::find_all;

use crate::options::FaultPoint;
use crate::Shared;

/// Series planned and written together.
pub(super) const SERIES_PER_ROUND: usize = 200;

/// Size tiers of a raw fold: the fresh documents are merged with the latest folded
/// documents, newest first, as long as each holds at most this many times the points
/// merged so far; older, larger ones stay as they are. With 1 the documents of a series in
/// a slice are a binary counter of `fold_docs` runs (sizes 32, 64, 128, … from the newest:
/// at most log₂(points / `fold_docs`) + 1 of them), and a point is rewritten about
/// log₂(points / `fold_docs`) times in a slice — 8 for a day at 10 s — not once per
/// `fold_docs` fresh documents (270 times a day). A larger factor merges more often
/// (measured: 4 rewrote the largest document every second fold).
const TIER: i64 = 1;

/// What to do with one series in one round.
struct Plan {
    series: i64,
    m: i64,
    live: Vec<Meta>,
    superseded: Vec<Meta>,
    fold_raw: bool,
    /// Live documents a raw fold leaves as they are (its size tiers).
    kept: Vec<Meta>,
    rollups: RollupWork,
}

enum RollupWork {
    None,
    /// Extend the stored documents with these (uncovered) documents' points.
    Extend(Vec<RollupDoc>, Vec<Meta>),
    Full,
}

impl Shared {
    /// Plans, reads and writes one round of series.
    pub(super) async fn fold_round(
        &self,
        slice: Slice,
        series: &[i64],
        measurement_of: &BTreeMap<i64, i64>,
        resolutions: &[Resolution],
        scope: Scope,
    ) -> Result<Left> {
        let collection = slice.collection_name();
        let metas = find_all(
            self.collection(&collection)
                .find(doc! { "s": { "$in": series.to_vec() }, "hi": self.in_slice(slice) })
                .projection(meta_projection()),
            "read value documents to fold",
        )
        .await?;
        let mut by_series: BTreeMap<i64, Vec<Meta>> = BTreeMap::new();
        for d in &metas {
            let meta = parse_meta(d)?;
            by_series.entry(meta.series).or_default().push(meta);
        }
        let rollup_start = self.layout.periods.rollups().start_of(slice.start);
        let ids: Vec<Bson> = series
            .iter()
            .map(|&s| Bson::Document(rollup_id(s, slice.start)))
            .collect();
        let mut stored: HashMap<(i64, i64), RollupDoc> = HashMap::new();
        for r in resolutions {
            let docs = find_all(
                self.collection(&rollup_collection(r.nanos(), rollup_start))
                    .find(doc! { "s": { "$in": series.to_vec() }, "_id": { "$in": ids.clone() } }),
                "read rollups to fold",
            )
            .await?;
            for d in &docs {
                let doc = RollupDoc::parse(d)?;
                stored.insert((r.nanos(), doc.series), doc);
            }
        }
        let now = now_ms();
        let plans: Vec<Plan> = by_series
            .into_iter()
            .map(|(s, docs)| {
                let m = measurement_of
                    .get(&s)
                    .copied()
                    .unwrap_or_else(|| docs.first().map_or(0, |d| d.m));
                self.plan(s, m, docs, resolutions, &mut stored, scope, now)
            })
            .collect();
        let points = self.read_points_of(&collection, &plans).await?;
        self.write_round(slice, resolutions, plans, &points, now)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        series: i64,
        m: i64,
        docs: Vec<Meta>,
        resolutions: &[Resolution],
        stored: &mut HashMap<(i64, i64), RollupDoc>,
        scope: Scope,
        now: i64,
    ) -> Plan {
        let (mut live, superseded): (Vec<Meta>, Vec<Meta>) =
            docs.into_iter().partition(|m| m.superseded.is_none());
        live.sort_by_key(|m| m.w);
        let versions: Vec<(i64, i64)> = {
            let mut v: Vec<_> = live.iter().map(Meta::version).collect();
            v.sort_unstable();
            v
        };
        let docs: Vec<Option<RollupDoc>> = resolutions
            .iter()
            .map(|r| stored.remove(&(r.nanos(), series)))
            .collect();
        let rolled = docs
            .iter()
            .all(|d| d.as_ref().is_some_and(|d| d.covers == versions));
        // The rollups can be extended only if they all cover the same documents, all
        // of which are still live, and every new point is later than what they hold.
        let covers: Option<BTreeSet<(i64, i64)>> = match docs.first() {
            Some(Some(first))
                if docs
                    .iter()
                    .all(|d| d.as_ref().is_some_and(|d| d.covers == first.covers)) =>
            {
                Some(first.covers.iter().copied().collect())
            }
            _ => None,
        };
        let high = docs
            .first()
            .and_then(|d| d.as_ref())
            .map_or(NO_PREVIOUS, |d| d.high);
        let uncovered: Vec<Meta> = live
            .iter()
            .filter(|m| covers.as_ref().is_none_or(|c| !c.contains(&m.version())))
            .copied()
            .collect();
        // A new delete mark changes what the rollups cover: recomputed, never extended.
        let extendable = covers
            .as_ref()
            .is_some_and(|c| c.iter().all(|v| versions.binary_search(v).is_ok()))
            && uncovered.iter().all(|m| m.lo > high && !m.mark);
        let waiting: Vec<&Meta> = live.iter().filter(|m| m.pending).collect();
        let idle_since = now - self.schedule.seal_idle.as_millis() as i64;
        let fold_raw = match scope {
            Scope::Compact => live.iter().filter(|m| !m.mark).count() > 1 || !waiting.is_empty(),
            Scope::Pending | Scope::Verify => {
                waiting.len() >= self.schedule.docs
                    || waiting.iter().any(|m| m.at.is_none_or(|a| a <= idle_since))
                    || (!waiting.is_empty() && !uncovered.iter().all(|m| m.lo > high))
            }
        };
        // A fold the count of fresh documents calls for merges by size tiers; one for an
        // idle series (its final form), on `compact` or beside a delete mark merges all.
        let tiered = fold_raw
            && scope != Scope::Compact
            && !waiting.iter().any(|m| m.at.is_none_or(|a| a <= idle_since))
            && !live.iter().any(|m| m.mark);
        let mut kept = Vec::new();
        if tiered {
            let mut merged: i64 = waiting.iter().map(|m| m.n).sum();
            let mut settled: Vec<&Meta> = live.iter().filter(|m| !m.pending).collect();
            settled.sort_by_key(|m| std::cmp::Reverse((m.hi, m.w)));
            for m in settled {
                match kept.is_empty() && m.n <= TIER * merged {
                    true => merged += m.n,
                    false => kept.push(*m),
                }
            }
        }
        let rollups = match (rolled || resolutions.is_empty(), fold_raw, extendable) {
            (true, false, _) => RollupWork::None,
            (_, true, _) | (false, false, false) => RollupWork::Full,
            // Readers extend the stored slots with these documents' points themselves
            // (`rollups::derived_slots`), so a pending pass lets the rollups lag behind
            // fresh documents until the raw fold (at most `fold_docs` documents or
            // `seal_idle` later) rewrites them anyway: one rollup write per fold, not one
            // per pass with new points. A folded document no fold will take again (a
            // racing fold's, whose rollups another overwrote) is extended now.
            (false, false, true)
                if scope == Scope::Pending
                    && uncovered.iter().all(|m| m.pending && m.at.is_some()) =>
            {
                RollupWork::None
            }
            (false, false, true) => {
                RollupWork::Extend(docs.into_iter().flatten().collect(), uncovered)
            }
        };
        let rollups = match resolutions.is_empty() {
            true => RollupWork::None,
            false => rollups,
        };
        Plan {
            series,
            m,
            live,
            superseded,
            fold_raw,
            kept,
            rollups,
        }
    }

    /// The points of every document the plans read: all live ones of a series folded or
    /// rolled up in full, the uncovered ones of a series whose rollups are extended.
    async fn read_points_of(
        &self,
        collection: &str,
        plans: &[Plan],
    ) -> Result<HashMap<(i64, i64), Vec<Written>>> {
        // By series too: `_id` alone is a document equality, which some servers (the
        // secantusdb test server) answer by a scan; `s` is the leading key of an index.
        let mut ids: Vec<Bson> = Vec::new();
        let mut series: Vec<i64> = Vec::new();
        for plan in plans {
            let wanted: Vec<&Meta> = match (&plan.rollups, plan.fold_raw) {
                (_, true) | (RollupWork::Full, _) => plan.live.iter().collect(),
                (RollupWork::Extend(_, new), false) => new.iter().collect(),
                (RollupWork::None, false) => Vec::new(),
            };
            if !wanted.is_empty() {
                series.push(plan.series);
            }
            ids.extend(
                wanted
                    .into_iter()
                    .map(|m| Bson::Document(id(m.series, m.w))),
            );
        }
        let mut out = HashMap::new();
        for chunk in ids.chunks(500) {
            let docs = find_all(
                self.collection(collection).find(
                    doc! { "s": { "$in": series.clone() }, "_id": { "$in": chunk.to_vec() } },
                ),
                "read value documents to fold",
            )
            .await?;
            for d in &docs {
                let meta = parse_meta(d)?;
                out.insert((meta.series, meta.w), parse_points(d)?);
            }
        }
        Ok(out)
    }

    async fn write_round(
        &self,
        slice: Slice,
        resolutions: &[Resolution],
        plans: Vec<Plan>,
        read: &HashMap<(i64, i64), Vec<Written>>,
        now: i64,
    ) -> Result<Left> {
        let block = self.layout.block_points;
        let pieces_of = |plan: &Plan, metas: &[Meta]| -> Vec<Vec<Written>> {
            metas
                .iter()
                .filter_map(|m| read.get(&(plan.series, m.w)).cloned())
                .collect()
        };
        // The series' delete marks apply to every merge of its documents.
        let marks_of =
            |plan: &Plan| -> Vec<DeleteMark> { plan.live.iter().filter_map(mark_of).collect() };
        let merged: Vec<Vec<Written>> = plans
            .iter()
            .map(
                |plan| match plan.fold_raw || matches!(plan.rollups, RollupWork::Full) {
                    true => without_deleted(merge(pieces_of(plan, &plan.live)), &marks_of(plan)),
                    false => Vec::new(),
                },
            )
            .collect();
        // What each raw fold writes: every live point, or those of its inputs when it
        // keeps larger documents as they are (no delete mark then).
        let folded_points: Vec<Vec<Written>> = plans
            .iter()
            .zip(&merged)
            .map(|(plan, all)| match (plan.fold_raw, plan.kept.is_empty()) {
                (false, _) => Vec::new(),
                (true, true) => all.clone(),
                (true, false) => merge(pieces_of(plan, &plan.inputs())),
            })
            .collect();
        let outputs: usize = folded_points.iter().map(|m| m.len().div_ceil(block)).sum();
        // The fold's documents are new ones, under write numbers of their own (each point
        // keeps its write number in `ws`), so no document is ever overwritten with other
        // points: readers, a racing fold and a crash all see every input until it is
        // marked superseded, after the outputs exist.
        let mut next_w = match outputs {
            0 => 0,
            n => self.issue_writes(n as i64).await? - n as i64 + 1,
        };
        let start = slice.start;
        let end = self.layout.partitioning.clamped_end_of(start);
        let mut work = RoundWrites::new(resolutions.len());
        let mut left = Left::default();
        for ((plan, merged), to_write) in plans.iter().zip(&merged).zip(&folded_points) {
            let mut versions: Vec<(i64, i64)> = plan.live.iter().map(Meta::version).collect();
            if plan.fold_raw {
                // Delete marks stay live beside the fold's documents, for good: a fold that
                // read its inputs before a delete must still find them. The documents its
                // tiers keep stay live too.
                let marks: Vec<(i64, i64)> = plan
                    .live
                    .iter()
                    .filter(|m| m.mark)
                    .chain(&plan.kept)
                    .map(Meta::version)
                    .collect();
                versions.clear();
                for chunk in to_write.chunks(block) {
                    let w = next_w;
                    next_w += 1;
                    versions.push((w, w));
                    let mut doc = folded(plan.series, plan.m, w, w, chunk);
                    // Waiting until the round has checked that it replaced everything.
                    doc.insert("d", plan.series);
                    work.inserts.push(doc);
                }
                // One statement per series naming its inputs by write number (`_id` is
                // `{s, w}`; a range of write numbers could take in a document written
                // meanwhile, whose points the fold does not hold): 11 bytes an input
                // instead of a ~100-byte statement.
                let inputs: Vec<i64> = plan.inputs().iter().map(|m| m.w).collect();
                left.waiting += inputs.len() as u64;
                left.due_at(now + self.schedule.grace.as_millis() as i64);
                work.supersede.push((
                    doc! { "s": plan.series, "_id.w": { "$in": inputs } },
                    doc! { "$set": { "x": now, "d": plan.series } },
                ));
                work.outputs.insert(plan.series, versions.clone());
                work.marks.insert(plan.series, marks.clone());
                versions.extend(marks);
            }
            versions.sort_unstable();
            for (i, doc) in rollup_docs(plan, &versions, merged, resolutions, (start, end), |m| {
                points(&merge(pieces_of(plan, m)))
            })
            .into_iter()
            .enumerate()
            {
                work.rollups[i].push(rollup_upsert(&doc));
            }
            if !plan.fold_raw {
                let seal = self.schedule.seal_idle.as_millis() as i64;
                for m in plan.live.iter().filter(|m| m.pending) {
                    left.waiting += 1;
                    left.due_at(m.at.map_or(now, |a| a + seal));
                }
            }
            let grace = self.schedule.grace.as_millis() as i64;
            let mut past_grace: Vec<i64> = Vec::new();
            for m in &plan.superseded {
                match m.superseded {
                    Some(x) if x <= now - grace => past_grace.push(m.w),
                    superseded => {
                        left.waiting += 1;
                        left.due_at(superseded.map_or(now, |x| x + grace));
                    }
                }
            }
            if !past_grace.is_empty() {
                // One statement per series; `x` still past the grace (a document marked
                // again meanwhile waits for its new grace).
                work.deletes.push(doc! {
                    "s": plan.series,
                    "_id.w": { "$in": past_grace },
                    "x": { "$lte": now - grace },
                });
            }
        }
        let unsettled = self.apply(slice, resolutions, work).await?;
        if unsettled > 0 {
            left.waiting += unsettled;
            left.due_at(now);
        }
        Ok(left)
    }

    /// Writes a round in its order: rollups, the fold's documents, the supersede marks,
    /// the deletes; then clears `d` of the fold's documents of every series whose live
    /// documents are now exactly those (a racing fold or a late write leaves them
    /// waiting, so that the next pass merges again). Returns the documents left waiting.
    async fn apply(
        &self,
        slice: Slice,
        resolutions: &[Resolution],
        work: RoundWrites,
    ) -> Result<u64> {
        let rollup_start = self.layout.periods.rollups().start_of(slice.start);
        for (r, updates) in resolutions.iter().zip(work.rollups) {
            if !updates.is_empty() {
                let collection = rollup_collection(r.nanos(), rollup_start);
                self.ensure_indexes(&collection).await?;
                bulk::update(&self.db, &self.write_concern, &collection, updates).await?;
            }
        }
        self.fault(FaultPoint::AfterRollups)?;
        let collection = slice.collection_name();
        let inserted =
            bulk::insert(&self.db, &self.write_concern, &collection, work.inserts).await?;
        if inserted.contains(&false) {
            return Err(crate::error::corrupt(format!(
                "{collection}: a fold's new document collided with an existing one"
            )));
        }
        self.fault(FaultPoint::AfterReplace)?;
        bulk::update_many(&self.db, &self.write_concern, &collection, work.supersede).await?;
        bulk::delete_many(&self.db, &self.write_concern, &collection, work.deletes).await?;
        if work.outputs.is_empty() {
            return Ok(0);
        }
        let series: Vec<i64> = work.outputs.keys().copied().collect();
        let metas = find_all(
            self.collection(&collection)
                .find(doc! { "s": { "$in": series }, "hi": self.in_slice(slice), "x": { "$exists": false } })
                .projection(meta_projection()),
            "check a fold",
        )
        .await?;
        // Live beside the outputs may be fresh documents written since (they wait for
        // the next pass as usual), but no other fold's document.
        let mut others: HashMap<i64, usize> = HashMap::new();
        for d in &metas {
            let meta = parse_meta(d)?;
            // A delete mark this round applied is as good as its own documents; one it
            // did not see (a delete that raced it) makes the next pass merge again.
            let ours = work
                .outputs
                .get(&meta.series)
                .is_some_and(|o| o.contains(&meta.version()))
                || work
                    .marks
                    .get(&meta.series)
                    .is_some_and(|m| m.contains(&meta.version()));
            if !ours && meta.at.is_none() {
                *others.entry(meta.series).or_default() += 1;
            }
        }
        let mut settled = Vec::new();
        let mut waiting = 0;
        for (s, outputs) in work.outputs {
            match !others.contains_key(&s) {
                true => settled.extend(outputs.iter().map(|&(w, u)| Update {
                    q: doc! { "_id": id(s, w), "s": s, "u": u, "x": { "$exists": false } },
                    u: doc! { "$unset": { "d": "" } },
                    conditional: false,
                })),
                false => waiting += outputs.len() as u64,
            }
        }
        bulk::update(&self.db, &self.write_concern, &collection, settled).await?;
        Ok(waiting)
    }
}

impl Plan {
    /// The live documents a raw fold merges and supersedes: all but the delete marks and
    /// the documents its tiers keep.
    fn inputs(&self) -> Vec<Meta> {
        self.live
            .iter()
            .filter(|m| !m.mark && !self.kept.contains(m))
            .copied()
            .collect()
    }
}

/// What a round writes, in the order [`Shared::apply`] writes it.
struct RoundWrites {
    /// Per resolution, the rollup upserts.
    rollups: Vec<Vec<Update>>,
    /// The fold's new documents.
    inserts: Vec<Document>,
    /// The fold's inputs, marked superseded: (filter, update), one per series.
    supersede: Vec<(Document, Document)>,
    /// Superseded documents past their grace: a filter per series.
    deletes: Vec<Document>,
    /// Per folded series, the `(w, u)` of its new documents.
    outputs: BTreeMap<i64, Vec<(i64, i64)>>,
    /// Per folded series, the `(w, u)` of the delete marks its merge applied.
    marks: BTreeMap<i64, Vec<(i64, i64)>>,
}

impl RoundWrites {
    fn new(resolutions: usize) -> Self {
        Self {
            rollups: (0..resolutions).map(|_| Vec::new()).collect(),
            inserts: Vec::new(),
            supersede: Vec::new(),
            deletes: Vec::new(),
            outputs: BTreeMap::new(),
            marks: BTreeMap::new(),
        }
    }
}

/// The rollup documents a plan writes, one per resolution (none for `RollupWork::None`):
/// recomputed from `merged` (all live points), or the stored ones extended with the
/// points `fresh` gives of the uncovered documents; covering `versions`.
fn rollup_docs(
    plan: &Plan,
    versions: &[(i64, i64)],
    merged: &[Written],
    resolutions: &[Resolution],
    (start, end): (i64, i64),
    fresh: impl Fn(&[Meta]) -> Vec<tickertape_core::Point>,
) -> Vec<RollupDoc> {
    match &plan.rollups {
        RollupWork::None => Vec::new(),
        RollupWork::Full => {
            let all = points(merged);
            resolutions
                .iter()
                .map(|r| RollupDoc {
                    series: plan.series,
                    m: plan.m,
                    slice: start,
                    covers: versions.to_vec(),
                    high: all.last().map_or(NO_PREVIOUS, |p| p.time),
                    slots: summarize_slots(&all, start, end, *r),
                })
                .collect()
        }
        RollupWork::Extend(docs, new) => {
            let fresh = fresh(new);
            resolutions
                .iter()
                .zip(docs)
                .map(|(r, stored)| {
                    let mut slots = stored.slots.clone();
                    extend(&mut slots, &fresh, *r);
                    RollupDoc {
                        series: plan.series,
                        m: plan.m,
                        slice: start,
                        covers: versions.to_vec(),
                        high: fresh
                            .last()
                            .map_or(stored.high, |p| p.time.max(stored.high)),
                        slots,
                    }
                })
                .collect()
        }
    }
}

/// An upsert that replaces a series' rollup document whatever it held.
fn rollup_upsert(doc: &RollupDoc) -> Update {
    Update {
        q: doc! { "_id": rollup_id(doc.series, doc.slice), "s": doc.series },
        u: doc.to_document(),
        conditional: true,
    }
}
