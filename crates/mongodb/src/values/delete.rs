//! Deleting points (`ValueStore::delete_points`): a delete mark in each partition the
//! range touches where the series holds documents, then the documents holding deleted
//! points rewritten without them.
//!
//! The delete takes a write number `W` first: every point stored before it carries a
//! lower one, every point stored after a higher one. Then, per partition the range
//! touches and series:
//! 1. a **delete mark** (`doc::DeleteMark`, a document with `k`, under `_id {s, w: W}`):
//!    the series' points in the range (clipped to the partition) with a write number below
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
//! 3. the series' rollup documents in those partitions are deleted (`sr.…`, `_id` =
//!    series): until the fold recomputes them (the mark is a live document they do not
//!    cover), readers summarise the raw points.
//!
//! A point written at a deleted time after `W` has a higher number and is never touched:
//! a later write wins over the delete. The delete holds the handle's fold lock, so its own
//! background fold waits (`docs/format/mongodb.md`, "Deleting points and series").

use std::collections::BTreeMap;

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{DeleteRange, Result};
use tickertape_core::SeriesId;

use super::doc::{delete_mark, folded, id, parse_meta, parse_points, DeleteMark};
use super::merge::Written;
use super::names::{value_collection, PartitionName};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::sid;
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
        let mut by_token: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
        for (s, token) in tokens {
            by_token.entry(token).or_default().push(sid(s)?);
        }
        let _no_fold = self.fold_lock.lock().await;
        let delete_w = self.issue_writes(1).await?;
        for (token, mut ids) in by_token {
            ids.sort_unstable();
            let partitions = self.partitions(Some(token)).await?;
            let by = self.layout.partitioning;
            let touched: Vec<i64> = partitions
                .iter()
                .filter(|p| p.resolution.is_none())
                .map(|p| p.start)
                .filter(|&p| {
                    let last = (by.end_of(p) - 1).min(i128::from(i64::MAX)) as i64;
                    range.overlaps(p, last)
                })
                .collect();
            for &p in &touched {
                let last_of_partition = (by.end_of(p) - 1).min(i128::from(i64::MAX)) as i64;
                let mark = DeleteMark {
                    w: delete_w,
                    lo: range.start().max(p),
                    hi: range.last().min(last_of_partition),
                };
                let collection = value_collection(token, p);
                for chunk in ids.chunks(SERIES_PER_SCAN) {
                    // Marks for the series holding documents there, the only ones a fold
                    // can write points of; then the scan, which sees every document
                    // inserted before the marks (a fold inserting later finds them).
                    let holding = self.series_holding(&collection, chunk, range).await?;
                    if holding.is_empty() {
                        continue;
                    }
                    let marks = holding.iter().map(|&s| delete_mark(s, mark)).collect();
                    self.insert_values(&collection, marks).await?;
                    self.rewrite_partition(token, p, &holding, range, delete_w)
                        .await?;
                }
            }
            for &p in &touched {
                for chunk in ids.chunks(SERIES_PER_SCAN) {
                    self.delete_rollups(&partitions, p, chunk).await?;
                }
            }
        }
        Ok(())
    }

    /// The series of `ids` with a document in `collection` overlapping `range`.
    async fn series_holding(
        &self,
        collection: &str,
        ids: &[i64],
        range: DeleteRange,
    ) -> Result<Vec<i64>> {
        let docs = find_all(
            self.collection(collection)
                .find(doc! {
                    "s": { "$in": ids.to_vec() },
                    "lo": { "$lte": range.last() },
                    "hi": { "$gte": range.start() },
                    "k": { "$exists": false },
                })
                .projection(doc! { "s": 1 }),
            "find series to delete from",
        )
        .await?;
        let mut series = docs
            .iter()
            .map(|d| crate::layout::need_i64(d, "s"))
            .collect::<Result<Vec<i64>>>()?;
        series.sort_unstable();
        series.dedup();
        Ok(series)
    }

    /// One scan of partition `p`: every document of `ids` holding a point of `range`
    /// written before `delete_w` is rewritten without it. Returns whether any was.
    async fn rewrite_partition(
        &self,
        token: u64,
        p: i64,
        ids: &[i64],
        range: DeleteRange,
        delete_w: i64,
    ) -> Result<bool> {
        let collection = value_collection(token, p);
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
        let mut replacements: Vec<(i64, Vec<Written>)> = Vec::new();
        let mut doomed: Vec<Document> = Vec::new();
        for d in &docs {
            let meta = parse_meta(d)?;
            let points = parse_points(d)?;
            if !points.iter().any(deleted) {
                continue;
            }
            let kept: Vec<Written> = points.into_iter().filter(|p| !deleted(p)).collect();
            if meta.superseded.is_none() && !kept.is_empty() {
                replacements.push((meta.series, kept));
            }
            doomed.push(doc! { "_id": id(meta.series, meta.w), "s": meta.series, "u": meta.u });
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
                .map(|((s, kept), w)| {
                    let mut d = folded(*s, w, w, kept);
                    d.insert("d", *s);
                    d
                })
                .collect();
            self.insert_values(&collection, docs).await?;
        }
        let filter = doc! { "$or": doomed.into_iter().map(Bson::Document).collect::<Vec<_>>() };
        self.collection(&collection)
            .delete_many(doc! { "s": { "$in": ids.to_vec() }, "$and": [filter] })
            .await
            .map_err(|e| map_err("delete value documents", e))?;
        self.mark_pending(&collection).await?;
        Ok(true)
    }

    /// Deletes the rollup documents of `ids` in partition `p` (every resolution kept).
    async fn delete_rollups(
        &self,
        partitions: &[PartitionName],
        p: i64,
        ids: &[i64],
    ) -> Result<()> {
        for name in partitions
            .iter()
            .filter(|n| n.start == p && n.resolution.is_some())
        {
            self.collection(&name.collection())
                .delete_many(doc! { "_id": { "$in": ids.to_vec() } })
                .await
                .map_err(|e| map_err("delete rollup documents", e))?;
        }
        Ok(())
    }
}
