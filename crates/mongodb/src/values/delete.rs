//! Deleting points (`ValueStore::delete_points`): a delete mark in each slice the range
//! touches where the series holds documents, then the documents holding deleted points
//! rewritten without them.
//!
//! The delete takes a write number `W` first: every point stored before it carries a
//! lower one, every point stored after a higher one. Then, per slice the range touches
//! (within the series' bounds) and series:
//! 1. a **delete mark** (`doc::DeleteMark`, a document with `k`, under `_id {s, w: W}`):
//!    the series' points in the range (clipped to the slice) with a write number below
//!    `W` are deleted. Readers apply it to every range they merge, and so do folds, which
//!    keep it live for good; a fold that read its inputs before the mark and finds it after
//!    its own writes leaves its documents waiting, so the next pass merges them again with
//!    the mark. So a fold racing the delete — of this handle or of any other, or one that
//!    crashed halfway — never brings a deleted point back.
//! 2. every document (live and superseded) overlapping the range that holds a deleted
//!    point is rewritten: a live one gets a replacement first (a folded document of the
//!    remaining points, `ws` keeping each one's write number, under a new write number,
//!    holding `d` so that the next fold pass merges it), then the old documents are
//!    deleted; a superseded one is deleted (its points are in the fold's documents). The
//!    points are gone from the store, and neighbours and heads, read from the documents'
//!    first and last points, answer without them.
//! 3. the series' rollup documents of those slices are deleted (`sr.…`, `_id` = `{s,
//!    p}`): until the fold recomputes them (the mark is a live document they do not
//!    cover), readers summarise the raw points.
//!
//! A point written at a deleted time after `W` has a higher number and is never touched:
//! a later write wins over the delete. The delete holds the handle's fold lock, so its own
//! background fold waits (`docs/format/mongodb.md`, "Deleting points and series").

use std::collections::{BTreeSet, HashMap};

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{DeleteRange, Result};
use tickertape_core::SeriesId;

use super::doc::{delete_mark, folded, id, parse_meta, parse_points, DeleteMark};
use super::merge::Written;
use super::names::value_collection;
use super::rollup_doc::rollup_id;
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::{need_i64, sid};
use crate::Shared;

/// Series per request: the `$in` lists stay far under the 16 MiB command limit.
const SERIES_PER_SCAN: usize = 1000;

impl Shared {
    /// Deletes the points of `series` in `range` (see the module docs).
    pub(crate) async fn delete_values(
        &self,
        series: &[SeriesId],
        range: DeleteRange,
    ) -> Result<()> {
        let tokens = self.known_tokens(series).await?;
        let mut measurement_of: HashMap<i64, i64> = HashMap::new();
        for (s, token) in tokens {
            measurement_of.insert(sid(s)?, token as i64);
        }
        let mut ids: Vec<i64> = measurement_of.keys().copied().collect();
        ids.sort_unstable();
        let _no_fold = self.fold_lock.lock().await;
        // First: an append with a lower write number widened its series' bounds before
        // it took its number, so the bounds read next cover its points.
        let delete_w = self.issue_writes(1).await?;
        let spans = self.spans_of(&ids, true).await?;
        let (Some(first), Some(last)) = (
            spans.values().map(|s| s.first).min(),
            spans.values().map(|s| s.last).max(),
        ) else {
            return Ok(());
        };
        let (lo, hi) = (first.max(range.start()), last.min(range.last()));
        if lo > hi {
            return Ok(());
        }
        let slices = self.layout.partitioning;
        let mut catalog = self.catalog();
        let mut rollups_gone: BTreeSet<(i64, i64)> = BTreeSet::new();
        for c in catalog.values_between(lo, hi).await? {
            let collection = value_collection(c);
            for chunk in ids.chunks(SERIES_PER_SCAN) {
                // Marks for the series holding documents there, the only ones a fold can
                // write points of; then the scan, which sees every document inserted
                // before the marks (a fold inserting later finds them).
                let holding = self.series_holding(&collection, chunk, range).await?;
                if holding.is_empty() {
                    continue;
                }
                let marks = holding
                    .iter()
                    .map(|&(s, slice)| {
                        let last_of_slice =
                            (slices.end_of(slice) - 1).min(i128::from(i64::MAX)) as i64;
                        let mark = DeleteMark {
                            w: delete_w,
                            lo: range.start().max(slice),
                            hi: range.last().min(last_of_slice),
                        };
                        delete_mark(s, measurement_of.get(&s).copied().unwrap_or(0), mark)
                    })
                    .collect();
                self.insert_values(&collection, marks).await?;
                let series: Vec<i64> = holding
                    .iter()
                    .map(|&(s, _)| s)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                self.rewrite_partition(c, &series, range, delete_w).await?;
                rollups_gone.extend(holding);
            }
        }
        self.delete_rollups(&rollups_gone).await
    }

    /// The (series, slice) pairs of `ids` with a document in `collection` overlapping
    /// `range`.
    async fn series_holding(
        &self,
        collection: &str,
        ids: &[i64],
        range: DeleteRange,
    ) -> Result<Vec<(i64, i64)>> {
        let docs = find_all(
            self.collection(collection)
                .find(doc! {
                    "s": { "$in": ids.to_vec() },
                    "lo": { "$lte": range.last() },
                    "hi": { "$gte": range.start() },
                    "k": { "$exists": false },
                })
                .projection(doc! { "s": 1, "hi": 1 }),
            "find series to delete from",
        )
        .await?;
        let mut holding = BTreeSet::new();
        for d in &docs {
            let slice = self.layout.partitioning.start_of(need_i64(d, "hi")?);
            holding.insert((need_i64(d, "s")?, slice));
        }
        Ok(holding.into_iter().collect())
    }

    /// One scan of value collection `c`: every document of `ids` holding a point of
    /// `range` written before `delete_w` is rewritten without it. Returns whether any was.
    async fn rewrite_partition(
        &self,
        c: i64,
        ids: &[i64],
        range: DeleteRange,
        delete_w: i64,
    ) -> Result<bool> {
        let collection = value_collection(c);
        let docs = find_all(
            self.collection(&collection).find(doc! {
                "s": { "$in": ids.to_vec() },
                "lo": { "$lte": range.last() },
                "hi": { "$gte": range.start() },
            }),
            "read value documents to delete from",
        )
        .await?;
        let deleted = |(point, w): &Written| range.contains(point.time) && *w < delete_w;
        let mut replacements: Vec<(i64, i64, Vec<Written>)> = Vec::new();
        let mut doomed: Vec<Document> = Vec::new();
        for d in &docs {
            let meta = parse_meta(d)?;
            let points = parse_points(d)?;
            if !points.iter().any(deleted) {
                continue;
            }
            let kept: Vec<Written> = points.into_iter().filter(|p| !deleted(p)).collect();
            if meta.superseded.is_none() && !kept.is_empty() {
                replacements.push((meta.series, meta.m, kept));
            }
            doomed.push(doc! { "_id": id(meta.series, meta.w), "s": meta.series });
        }
        if doomed.is_empty() {
            return Ok(false);
        }
        if !replacements.is_empty() {
            let last = self.issue_writes(replacements.len() as i64).await?;
            let first = last - replacements.len() as i64 + 1;
            let docs: Vec<Document> = replacements
                .iter()
                .zip(first..)
                .map(|((s, m, kept), w)| {
                    let mut d = folded(*s, *m, w, w, kept);
                    d.insert("d", *s);
                    d
                })
                .collect();
            self.insert_values(&collection, docs).await?;
        }
        let marks: Vec<(String, i64)> = replacements
            .iter()
            .filter_map(|(_, _, kept)| kept.first())
            .map(|(p, _)| {
                (
                    collection.clone(),
                    self.layout.partitioning.start_of(p.time),
                )
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let filter = doc! { "$or": doomed.into_iter().map(Bson::Document).collect::<Vec<_>>() };
        self.collection(&collection)
            .delete_many(doc! { "s": { "$in": ids.to_vec() }, "$and": [filter] })
            .await
            .map_err(|e| map_err("delete value documents", e))?;
        self.mark_pending(&marks).await?;
        Ok(true)
    }

    /// Deletes the rollup documents of these (series, slice) pairs at every resolution
    /// kept (the rollup collections that exist over those slices).
    async fn delete_rollups(&self, gone: &BTreeSet<(i64, i64)>) -> Result<()> {
        let (Some(first), Some(last)) = (
            gone.iter().map(|&(_, p)| p).min(),
            gone.iter().map(|&(_, p)| p).max(),
        ) else {
            return Ok(());
        };
        let by = self.layout.periods.rollups();
        for name in self.partitions().await? {
            if name.resolution.is_none()
                || name.start > by.start_of(last)
                || name.start < by.start_of(first)
            {
                continue;
            }
            let pairs: Vec<&(i64, i64)> = gone
                .iter()
                .filter(|(_, p)| by.start_of(*p) == name.start)
                .collect();
            for chunk in pairs.chunks(SERIES_PER_SCAN) {
                let series: Vec<i64> = chunk.iter().map(|&&(s, _)| s).collect();
                let ids: Vec<Bson> = chunk
                    .iter()
                    .map(|&&(s, p)| Bson::Document(rollup_id(s, p)))
                    .collect();
                self.collection(&name.collection())
                    .delete_many(doc! { "s": { "$in": series }, "_id": { "$in": ids } })
                    .await
                    .map_err(|e| map_err("delete rollup documents", e))?;
            }
        }
        Ok(())
    }
}
