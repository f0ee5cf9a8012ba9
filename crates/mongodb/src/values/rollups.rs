//! `read_segment_rollup` and the retention of rollups: slots from a rollup document
//! where it covers exactly the points the partition holds, summaries of raw points
//! everywhere else.

use std::collections::BTreeMap;

use mongodb::bson::{doc, Document};
use tickertape_backend::Result;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::SeriesId;

use super::doc::{merge_documents, meta_projection, parse_meta};
use super::merge::points;
use super::names::{rollup_collection, PartitionName};
use super::rollup_doc::RollupDoc;
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::sid;
use crate::Shared;

impl Shared {
    pub(crate) async fn read_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        if end <= start {
            return Ok(Vec::new());
        }
        let Some(&token) = self.known_tokens(&[series]).await?.get(&series) else {
            return Ok(Vec::new());
        };
        let s = sid(series)?;
        let by = self.layout.partitioning;
        let kept = match self.measurement_name(token).await? {
            Some(m) => self.rollups.kept(&m, by).contains(&resolution),
            None => false,
        };
        if !kept {
            // Not derived (its slots may span partitions): from the raw points alone.
            let partitions = self.value_partitions(token).await?;
            let merged = self
                .points_between(token, s, start, end, &partitions)
                .await?;
            return Ok(summarize_slots(&points(&merged), start, end, resolution));
        }
        // Per partition the range touches: does it hold values, a rollup document?
        let mut touched: BTreeMap<i64, (bool, bool)> = BTreeMap::new();
        for p in self.partitions(Some(token)).await? {
            if i128::from(p.start) >= i128::from(end) || by.end_of(p.start) <= i128::from(start) {
                continue;
            }
            let entry = touched.entry(p.start).or_default();
            match p.resolution {
                None => entry.0 = true,
                Some(r) if kept && r == resolution.nanos() => entry.1 = true,
                Some(_) => {}
            }
        }
        let mut out = Vec::new();
        for (p, (values, rollups)) in touched {
            let range = (start.max(p), end.min(by.clamped_end_of(p)));
            let stored = match rollups {
                true => self.rollup_doc(token, resolution, p, s).await?,
                false => None,
            };
            let slots = match (values, stored) {
                (true, Some(r)) => match self.live_versions(token, p, s).await? == r.covers {
                    true => Some(r.slots),
                    false => None,
                },
                // Retention dropped the partition's points: its rollups answer alone.
                (false, Some(r)) => Some(r.slots),
                (false, None) => Some(Vec::new()),
                (true, None) => None,
            };
            let slots = match slots {
                Some(slots) => slots,
                None => self.summarise_raw(token, p, s, range, resolution).await?,
            };
            out.extend(
                slots
                    .into_iter()
                    .filter(|(t, _)| *t >= range.0 && *t < range.1),
            );
        }
        Ok(out)
    }

    async fn rollup_doc(
        &self,
        token: u64,
        resolution: Resolution,
        partition: i64,
        s: i64,
    ) -> Result<Option<RollupDoc>> {
        let collection = rollup_collection(token, resolution.nanos(), partition);
        let found = self
            .read_db
            .collection::<Document>(&collection)
            .find_one(doc! { "_id": s })
            .await
            .map_err(|e| map_err("read rollup", e))?;
        found.as_ref().map(RollupDoc::parse).transpose()
    }

    /// The sorted `(w, u)` of the series' live (not superseded) value documents.
    async fn live_versions(&self, token: u64, partition: i64, s: i64) -> Result<Vec<(i64, i64)>> {
        let docs = find_all(
            self.read_db
                .collection::<Document>(&super::names::value_collection(token, partition))
                .find(doc! { "s": s })
                .projection(meta_projection()),
            "read value versions",
        )
        .await?;
        let mut versions = Vec::new();
        for d in &docs {
            let meta = parse_meta(d)?;
            if meta.superseded.is_none() {
                versions.push(meta.version());
            }
        }
        versions.sort_unstable();
        Ok(versions)
    }

    async fn summarise_raw(
        &self,
        token: u64,
        partition: i64,
        s: i64,
        (start, end): (i64, i64),
        resolution: Resolution,
    ) -> Result<Vec<(i64, Summary)>> {
        let filter = doc! { "s": s, "lo": { "$lt": end }, "hi": { "$gte": start } };
        let docs = self
            .find_values(token, partition, filter, None, None)
            .await?;
        Ok(summarize_slots(
            &points(&merge_documents(&docs)?),
            start,
            end,
            resolution,
        ))
    }

    pub(crate) async fn drop_collection(&self, p: &PartitionName) -> Result<()> {
        let name = p.collection();
        self.collection(&name)
            .drop()
            .await
            .map_err(|e| map_err(&format!("drop {name}"), e))?;
        self.indexed.forget(&name);
        Ok(())
    }
}
