//! Deleting points (`ValueStore::delete_points`): the documents holding deleted points
//! are rewritten without them, under the one rule's write numbers.
//!
//! The delete takes a write number `W` first: every point stored before it carries a
//! lower one, every point stored after a higher one. It then reads every document of the
//! series (live and superseded) overlapping the range in each partition the range touches,
//! and for each holding a point of the range with a write number below `W`:
//! - a live one gets a replacement, inserted first: a folded document (`ws` keeps each
//!   remaining point's write number) under a new write number, holding `d` so that the
//!   next fold pass merges it and recomputes the rollups; then the old one is deleted;
//! - a superseded one is deleted (its points are in the fold's documents, which are live).
//!
//! The series' rollup documents in those partitions are deleted (`sr.…`, `_id` = series):
//! until the fold recomputes them, readers summarise the raw points, which no longer hold
//! the deleted ones. A point written at a deleted time after `W` has a higher number and
//! is never touched: a later write wins over the delete.
//!
//! Folds: the delete holds the handle's fold lock, so this handle's background fold never
//! runs beside it. A fold of another handle that read the old documents before the delete
//! and inserts its merged documents after the delete's scan would bring the deleted points
//! back in them (their `ws` keeps numbers below `W`): the delete therefore scans the
//! partitions again until a scan of each finds nothing to rewrite (at most [`SCANS`]
//! rounds over the partitions, a short pause apart), which catches a fold that finishes
//! within that time (`docs/format/mongodb.md`, "Deleting points and series").

use std::collections::BTreeMap;
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{DeleteRange, Result};
use tickertape_core::SeriesId;

use super::doc::{folded, id, parse_meta, parse_points};
use super::merge::Written;
use super::names::{value_collection, PartitionName};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::sid;
use crate::Shared;

/// Scans of the range at most, until one finds nothing left to delete.
const SCANS: usize = 4;
/// Series per scan: the `$in` lists stay far under the 16 MiB command limit.
const SERIES_PER_SCAN: usize = 1000;
/// Pause between scans, so a racing fold's insert lands before the next.
const SCAN_PAUSE: Duration = Duration::from_millis(200);

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
            // Every partition once, then again those where a scan rewrote something.
            let mut pending = touched.clone();
            for scan in 0..SCANS {
                if pending.is_empty() {
                    break;
                }
                if scan > 0 {
                    tokio::time::sleep(SCAN_PAUSE).await;
                }
                let mut again = Vec::new();
                for &p in &pending {
                    let mut rewrote = false;
                    for chunk in ids.chunks(SERIES_PER_SCAN) {
                        rewrote |= self
                            .rewrite_partition(token, p, chunk, range, delete_w)
                            .await?;
                    }
                    if rewrote {
                        again.push(p);
                    }
                }
                pending = again;
            }
            for &p in &touched {
                for chunk in ids.chunks(SERIES_PER_SCAN) {
                    self.delete_rollups(&partitions, p, chunk).await?;
                }
            }
        }
        Ok(())
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
