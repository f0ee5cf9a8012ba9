//! `read_segment_rollup`: slots from a rollup document where it covers exactly the points
//! the slice holds, summaries of raw points everywhere else.

use std::collections::BTreeMap;

use mongodb::bson::{doc, Document};
use tickertape_backend::Result;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::SeriesId;

use super::doc::{merge_documents, meta_projection, parse_meta};
use super::merge::points;
use super::names::{rollup_collection, value_collection, PartitionName};
use super::rollup_doc::{rollup_id, RollupDoc};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::sid;
use crate::Shared;

impl Shared {
    /// Per slice the range touches (within the series' span): its rollup document where
    /// it covers exactly the slice's live documents (or the slice holds none: retention
    /// deleted its points), else the slice's raw points summarised. One `find` per rollup
    /// collection and per value collection of the range, for the documents' versions
    /// (not their points), and one more per value collection holding slices to summarise.
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
        let s = sid(series)?;
        let Some(span) = self.spans_of(&[s], false).await?.remove(&s) else {
            return Ok(Vec::new());
        };
        let (lo, hi) = (start.max(span.first), (end - 1).min(span.last));
        if lo > hi {
            return Ok(Vec::new());
        }
        // The measurement comes with the bounds: no lookup of its id.
        let kept = self
            .rollups
            .kept(&span.measurement, self.layout.partitioning)
            .contains(&resolution);
        let mut catalog = self.catalog();
        let values = catalog.values_between(lo, hi).await?;
        if !kept {
            // Not derived (its slots may span slices): from the raw points alone.
            let merged = self.points_between(s, start, end, &values).await?;
            return Ok(summarize_slots(&points(&merged), start, end, resolution));
        }
        let slices = self.layout.partitioning;
        let (first_slice, last_slice) = (slices.start_of(lo), slices.start_of(hi));
        let whole = |first: i64, last: i64| match slices.end_of(last) > i128::from(i64::MAX) {
            true => doc! { "$gte": first },
            false => doc! { "$gte": first, "$lt": slices.end_of(last) as i64 },
        };
        let mut stored: BTreeMap<i64, RollupDoc> = BTreeMap::new();
        for c in catalog.rollups_between(resolution.nanos(), lo, hi).await? {
            let collection = rollup_collection(resolution.nanos(), c);
            let docs = find_all(
                self.read_db.collection::<Document>(&collection).find(doc! {
                    "s": s,
                    "_id": { "$gte": rollup_id(s, first_slice), "$lte": rollup_id(s, last_slice) },
                }),
                "read rollups",
            )
            .await?;
            for d in &docs {
                let r = RollupDoc::parse(d)?;
                stored.insert(r.slice, r);
            }
        }
        // The live documents' versions per slice, of every slice the range touches whole.
        let mut live: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for &c in &values {
            let docs = find_all(
                self.read_db
                    .collection::<Document>(&value_collection(c))
                    .find(doc! { "s": s, "hi": whole(first_slice, last_slice) })
                    .projection(meta_projection()),
                "read value versions",
            )
            .await?;
            for d in &docs {
                let meta = parse_meta(d)?;
                if meta.superseded.is_none() {
                    live.entry(slices.start_of(meta.hi))
                        .or_default()
                        .push(meta.version());
                }
            }
        }
        let mut touched: Vec<i64> = stored.keys().chain(live.keys()).copied().collect();
        touched.sort_unstable();
        touched.dedup();
        let mut answered: BTreeMap<i64, Vec<(i64, Summary)>> = BTreeMap::new();
        let mut raw: Vec<i64> = Vec::new();
        for slice in touched {
            let versions = live.get_mut(&slice).map(|v| {
                v.sort_unstable();
                v.clone()
            });
            match (stored.remove(&slice), versions) {
                (Some(r), Some(v)) if v == r.covers => {
                    answered.insert(slice, r.slots);
                }
                (Some(r), None) => {
                    answered.insert(slice, r.slots);
                }
                (_, Some(_)) => raw.push(slice),
                (None, None) => {}
            }
        }
        if !raw.is_empty() {
            let mut by_collection: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for &slice in &raw {
                by_collection
                    .entry(self.layout.periods.values().start_of(slice))
                    .or_default()
                    .push(slice);
            }
            for (c, wanted) in by_collection {
                let (lo_slice, hi_slice) = (wanted[0], wanted[wanted.len() - 1]);
                let filter = doc! { "s": s, "lo": { "$lt": end }, "hi": whole(lo_slice, hi_slice) };
                let docs = self.find_values(c, filter, None, None).await?;
                let mut per_slice: BTreeMap<i64, Vec<Document>> = BTreeMap::new();
                for d in docs {
                    let slice = slices.start_of(parse_meta(&d)?.hi);
                    if wanted.binary_search(&slice).is_ok() {
                        per_slice.entry(slice).or_default().push(d);
                    }
                }
                for (slice, docs) in per_slice {
                    let range = (start.max(slice), end.min(slices.clamped_end_of(slice)));
                    let merged = points(&merge_documents(&docs)?);
                    answered.insert(
                        slice,
                        summarize_slots(&merged, range.0, range.1, resolution),
                    );
                }
            }
        }
        Ok(answered
            .into_values()
            .flatten()
            .filter(|(t, _)| *t >= start && *t < end)
            .collect())
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
