//! Retention, per measurement in collections every measurement shares: one
//! measurement's documents of the slices that ended by the cutoff deleted by a range of
//! the index `{m, hi}` (`{m, p}` for rollups), after its rollups are made to cover every
//! point they hold; and a collection dropped whole once retention has left it empty — as
//! MMS drops whole periods, when every measurement in it has expired.
//!
//! Why range deletes and not one collection per retention class: the store learns a
//! measurement's retention only when retention runs (`drop_raw_before`), never when
//! points are written, and a measurement whose retention changes would have its points
//! in the wrong class's collections. A range of one index per measurement and pass costs
//! a delete per document once, where a drop costs nothing per document; collections
//! still go whole once every measurement in them has expired.

use std::collections::BTreeSet;

use mongodb::bson::{doc, Document};
use tickertape_backend::Result;
use tickertape_core::rollup::Resolution;

use super::names::PartitionName;
use super::pass::Slice;
use super::write::PENDING;
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::need_i64;
use crate::Shared;

impl Shared {
    pub(crate) async fn drop_values_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let Some(m) = self.measurement_token(measurement).await? else {
            return Ok(Vec::new());
        };
        let m = m as i64;
        // Documents never span slices: those whose last time is before the start of the
        // slice holding `cutoff` are exactly those of the slices ended by then.
        let before = self.layout.partitioning.start_of(cutoff);
        let mut spans = BTreeSet::new();
        for p in self.partitions().await? {
            if p.resolution.is_some() || p.start >= before {
                continue;
            }
            let collection = p.collection();
            let filter = doc! { "m": m, "hi": { "$lt": before } };
            let slices = self.slices_of(&collection, filter.clone(), "hi").await?;
            spans.extend(slices.iter().map(|&s| self.slice_span(s)));
            if dry_run || slices.is_empty() {
                continue;
            }
            // The rollups outlive the points: bring them up to date first.
            for &start in &slices {
                let slice = Slice {
                    collection: p.start,
                    start,
                };
                self.fold_measurement_slice(slice, m).await?;
            }
            self.delete_and_drop_if_empty(&p, filter).await?;
        }
        Ok(spans.into_iter().collect())
    }

    /// Drops `measurement`'s rollup slots at `resolution` in the slices that end at or
    /// before `cutoff`, or lists those slices.
    pub(crate) async fn drop_rollups_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let Some(m) = self.measurement_token(measurement).await? else {
            return Ok(Vec::new());
        };
        let before = self.layout.partitioning.start_of(cutoff);
        let mut spans = BTreeSet::new();
        for p in self.partitions().await? {
            if p.resolution != Some(resolution.nanos()) || p.start >= before {
                continue;
            }
            let filter = doc! { "m": m as i64, "p": { "$lt": before } };
            let slices = self.slices_of(&p.collection(), filter.clone(), "p").await?;
            spans.extend(slices.iter().map(|&s| self.slice_span(s)));
            if !dry_run && !slices.is_empty() {
                self.delete_and_drop_if_empty(&p, filter).await?;
            }
        }
        Ok(spans.into_iter().collect())
    }

    /// The slices holding the documents of `filter` (placed by their field `time`).
    async fn slices_of(&self, collection: &str, filter: Document, time: &str) -> Result<Vec<i64>> {
        let docs = find_all(
            self.collection(collection)
                .find(filter)
                .projection(doc! { time: 1, "_id": 0 }),
            "list slices past retention",
        )
        .await?;
        let mut slices = BTreeSet::new();
        for d in &docs {
            slices.insert(self.layout.partitioning.start_of(need_i64(d, time)?));
        }
        Ok(slices.into_iter().collect())
    }

    fn slice_span(&self, start: i64) -> (i64, i64) {
        (start, self.layout.partitioning.clamped_end_of(start))
    }

    /// Deletes the documents of `filter`; drops the collection if that left it empty
    /// (with its fold marks). A point written into it between the check and the drop
    /// goes with it, as a point written into a partition retention is dropping.
    async fn delete_and_drop_if_empty(&self, p: &PartitionName, filter: Document) -> Result<()> {
        let collection = p.collection();
        self.collection(&collection)
            .delete_many(filter)
            .await
            .map_err(|e| map_err(&format!("delete expired documents of {collection}"), e))?;
        let left = self
            .collection(&collection)
            .find_one(doc! {})
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|e| map_err(&format!("read {collection}"), e))?;
        if left.is_none() {
            self.drop_collection(p).await?;
            if p.resolution.is_none() {
                self.collection(PENDING)
                    .delete_many(doc! { "_id.c": &collection })
                    .await
                    .map_err(|e| map_err("clear fold marks", e))?;
            }
        }
        Ok(())
    }
}
