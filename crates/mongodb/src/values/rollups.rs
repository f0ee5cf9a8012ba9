//! `read_segment_rollups`: slots from a rollup document where it covers exactly the
//! points the slice holds, or covers them but for fresh documents all later than its
//! slots (extended here with their points, as a fold would), summaries of raw points
//! everywhere else; many series at once.

use std::collections::{BTreeMap, HashMap};

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{PointsRange, Result};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::SeriesId;

use super::doc::{id, merge_documents, meta_projection, parse_meta, Meta};
use super::merge::points;
use super::names::{rollup_collection, value_collection, PartitionName};
use super::range::SERIES_PER_FIND;
use super::read::Span;
use super::rollup_doc::{extend, rollup_id, RollupDoc};
use crate::error::map_err;
use crate::find::find_all_at_once;
use crate::layout::sid;
use crate::Shared;

impl Shared {
    /// `read_segment_rollups`: per series and slice the range touches (within the
    /// series' span), its rollup document where it covers exactly the slice's live
    /// documents (or the slice holds none: retention deleted its points), or extended
    /// with the points of the fresh documents it lags behind ([`Extension`]), else the
    /// slice's raw points summarised. For all the series at once: the bounds (one `find`),
    /// one `find` per rollup collection and per value collection of the range for the
    /// documents' versions (not their points), one more per value collection holding
    /// documents to extend with and one per value collection holding slices to summarise
    /// — each by chunks of [`SERIES_PER_FIND`] series.
    pub(crate) async fn read_rollups(
        &self,
        series: &[SeriesId],
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<Vec<(i64, Summary)>>> {
        let ids: Vec<i64> = series.iter().map(|&s| sid(s)).collect::<Result<_>>()?;
        if end <= start {
            return Ok(vec![Vec::new(); ids.len()]);
        }
        let spans = self.spans_of(&ids, false).await?;
        let slices = self.layout.partitioning;
        // The series that hold points in the range, by whether their measurement's
        // rollups are kept at this resolution (the measurement comes with the bounds).
        let (mut kept, mut not_kept) = (HashMap::new(), HashMap::new());
        for (s, span) in spans {
            if start.max(span.first) > (end - 1).min(span.last) {
                continue;
            }
            let derived = self
                .rollups
                .kept(&span.measurement, slices)
                .contains(&resolution);
            match derived {
                true => kept.insert(s, span),
                false => not_kept.insert(s, span),
            };
        }
        let mut answered: HashMap<i64, Vec<(i64, Summary)>> = HashMap::new();
        if !not_kept.is_empty() {
            // Not derived (its slots may span slices): from the raw points alone.
            let raw = self
                .ranges_in(&not_kept, PointsRange::new(start, end))
                .await?;
            for (s, read) in raw {
                answered.insert(s, summarize_slots(&read.points, start, end, resolution));
            }
        }
        if !kept.is_empty() {
            answered.extend(self.derived_slots(&kept, resolution, start, end).await?);
        }
        // A series asked twice answers twice.
        Ok(ids
            .iter()
            .map(|s| answered.get(s).cloned().unwrap_or_default())
            .collect())
    }

    /// The slots of the series of `spans` (each holding points in `[start, end)`), whose
    /// measurements keep rollups at `resolution`.
    async fn derived_slots(
        &self,
        spans: &HashMap<i64, Span>,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<HashMap<i64, Vec<(i64, Summary)>>> {
        let slices = self.layout.partitioning;
        let (first_slice, last_slice) = (slices.start_of(start), slices.start_of(end - 1));
        let whole = |first: i64, last: i64| match slices.end_of(last) > i128::from(i64::MAX) {
            true => doc! { "$gte": first },
            false => doc! { "$gte": first, "$lt": slices.end_of(last) as i64 },
        };
        let (lo, hi) = spans.values().fold((i64::MAX, i64::MIN), |(lo, hi), span| {
            (
                lo.min(start.max(span.first)),
                hi.max((end - 1).min(span.last)),
            )
        });
        let mut wanted: Vec<i64> = spans.keys().copied().collect();
        wanted.sort_unstable();
        let mut catalog = self.catalog();
        // Each series' rollup documents of the slices the range touches: a range of its
        // `_id`s (the built-in index), one per series, `s` named for routing.
        let mut stored: HashMap<(i64, i64), RollupDoc> = HashMap::new();
        for c in catalog.rollups_between(resolution.nanos(), lo, hi).await? {
            let collection = rollup_collection(resolution.nanos(), c);
            for chunk in wanted.chunks(SERIES_PER_FIND) {
                let ranges: Vec<Document> = chunk
                    .iter()
                    .map(|&s| doc! { "_id": { "$gte": rollup_id(s, first_slice), "$lte": rollup_id(s, last_slice) } })
                    .collect();
                let docs = find_all_at_once(
                    self.read_db
                        .collection::<Document>(&collection)
                        .find(doc! { "s": { "$in": chunk.to_vec() }, "$or": ranges }),
                    "read rollups",
                )
                .await?;
                for d in &docs {
                    let r = RollupDoc::parse(d)?;
                    stored.insert((r.series, r.slice), r);
                }
            }
        }
        // The live documents' versions per series and slice, of every slice the range
        // touches whole.
        let values = catalog.values_between(lo, hi).await?;
        let mut live: BTreeMap<(i64, i64), Vec<Meta>> = BTreeMap::new();
        for &c in &values {
            for chunk in wanted.chunks(SERIES_PER_FIND) {
                let docs = find_all_at_once(
                    self.read_db
                        .collection::<Document>(&value_collection(c))
                        .find(doc! { "s": { "$in": chunk.to_vec() }, "hi": whole(first_slice, last_slice) })
                        .projection(meta_projection()),
                    "read value versions",
                )
                .await?;
                for d in &docs {
                    let meta = parse_meta(d)?;
                    if meta.superseded.is_none() {
                        live.entry((meta.series, slices.start_of(meta.hi)))
                            .or_default()
                            .push(meta);
                    }
                }
            }
        }
        let mut touched: Vec<(i64, i64)> = stored.keys().chain(live.keys()).copied().collect();
        touched.sort_unstable();
        touched.dedup();
        let mut answered: BTreeMap<(i64, i64), Vec<(i64, Summary)>> = BTreeMap::new();
        // Per value collection, the (series, slice) pairs summarised from raw points.
        let mut raw: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        // Per value collection, the rollups extended with the uncovered documents' points.
        let mut extended: BTreeMap<i64, Vec<Extension>> = BTreeMap::new();
        for key in touched {
            let metas = live.remove(&key);
            match (stored.remove(&key), metas) {
                (Some(r), Some(metas)) => match Extension::of(r, metas) {
                    Ok(Extension {
                        stored, uncovered, ..
                    }) if uncovered.is_empty() => {
                        answered.insert(key, stored.slots);
                    }
                    Ok(extension) => extended
                        .entry(self.layout.periods.values().start_of(key.1))
                        .or_default()
                        .push(extension),
                    Err(()) => raw
                        .entry(self.layout.periods.values().start_of(key.1))
                        .or_default()
                        .push(key),
                },
                (Some(r), None) => {
                    answered.insert(key, r.slots);
                }
                (None, Some(_)) => raw
                    .entry(self.layout.periods.values().start_of(key.1))
                    .or_default()
                    .push(key),
                (None, None) => {}
            }
        }
        for (c, extensions) in extended {
            let (slots, changed) = self.extend_slots(c, extensions, resolution).await?;
            answered.extend(slots);
            if !changed.is_empty() {
                let keys = raw.entry(c).or_default();
                keys.extend(changed);
                keys.sort_unstable();
            }
        }
        for (c, keys) in raw {
            let (lo_slice, hi_slice) =
                keys.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &(_, p)| {
                    (lo.min(p), hi.max(p))
                });
            let mut series: Vec<i64> = keys.iter().map(|&(s, _)| s).collect();
            series.dedup();
            for chunk in series.chunks(SERIES_PER_FIND) {
                let filter = doc! {
                    "s": { "$in": chunk.to_vec() },
                    "lo": { "$lt": end },
                    "hi": whole(lo_slice, hi_slice),
                };
                let docs = self.find_values(c, filter, None, None).await?;
                let mut per_slice: BTreeMap<(i64, i64), Vec<Document>> = BTreeMap::new();
                for d in docs {
                    let meta = parse_meta(&d)?;
                    let key = (meta.series, slices.start_of(meta.hi));
                    if keys.binary_search(&key).is_ok() {
                        per_slice.entry(key).or_default().push(d);
                    }
                }
                for (key, docs) in per_slice {
                    let slice = key.1;
                    let range = (start.max(slice), end.min(slices.clamped_end_of(slice)));
                    let merged = points(&merge_documents(&docs)?);
                    answered.insert(key, summarize_slots(&merged, range.0, range.1, resolution));
                }
            }
        }
        let mut out: HashMap<i64, Vec<(i64, Summary)>> = HashMap::new();
        for ((s, _), slots) in answered {
            out.entry(s)
                .or_default()
                .extend(slots.into_iter().filter(|(t, _)| *t >= start && *t < end));
        }
        Ok(out)
    }

    /// The slots of `extensions` (all in value collection `c`): each stored document's
    /// slots extended with its uncovered documents' points, read with one `find` per
    /// [`SERIES_PER_FIND`] series; and the (series, slice) pairs whose documents changed
    /// meanwhile (a fold deleted one past its grace), to summarise from raw points.
    async fn extend_slots(
        &self,
        c: i64,
        extensions: Vec<Extension>,
        resolution: Resolution,
    ) -> Result<(Vec<((i64, i64), Slots)>, Vec<(i64, i64)>)> {
        let mut out = Vec::with_capacity(extensions.len());
        let mut changed = Vec::new();
        for chunk in extensions.chunks(SERIES_PER_FIND) {
            let series: Vec<i64> = chunk.iter().map(|e| e.stored.series).collect();
            let ids: Vec<Bson> = chunk
                .iter()
                .flat_map(|e| {
                    e.uncovered
                        .iter()
                        .map(|m| Bson::Document(id(m.series, m.w)))
                })
                .collect();
            let filter = doc! { "s": { "$in": series }, "_id": { "$in": ids } };
            let mut docs: HashMap<(i64, i64), Vec<Document>> = HashMap::new();
            for d in self.find_values(c, filter, None, None).await? {
                let meta = parse_meta(&d)?;
                docs.entry((meta.series, self.layout.partitioning.start_of(meta.hi)))
                    .or_default()
                    .push(d);
            }
            for e in chunk {
                let key = (e.stored.series, e.stored.slice);
                let found = docs.remove(&key).unwrap_or_default();
                if found.len() != e.uncovered.len() {
                    changed.push(key);
                    continue;
                }
                let mut slots = e.stored.slots.clone();
                extend(&mut slots, &points(&merge_documents(&found)?), resolution);
                out.push((key, slots));
            }
        }
        Ok((out, changed))
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

type Slots = Vec<(i64, Summary)>;

/// A stored rollup document and the series' live documents of its slice it does not
/// cover, when its slots plus their points are exactly the slots of every live point:
/// every document it covers is still live, and every uncovered one is points (no delete
/// mark) all later than what it summarises — the same rule a fold extends by.
struct Extension {
    stored: RollupDoc,
    uncovered: Vec<Meta>,
}

impl Extension {
    fn of(stored: RollupDoc, live: Vec<Meta>) -> std::result::Result<Self, ()> {
        let mut versions: Vec<(i64, i64)> = live.iter().map(Meta::version).collect();
        versions.sort_unstable();
        if !stored
            .covers
            .iter()
            .all(|v| versions.binary_search(v).is_ok())
        {
            return Err(());
        }
        let uncovered: Vec<Meta> = live
            .into_iter()
            .filter(|m| stored.covers.binary_search(&m.version()).is_err())
            .collect();
        match uncovered.iter().all(|m| !m.mark && m.lo > stored.high) {
            true => Ok(Self { stored, uncovered }),
            false => Err(()),
        }
    }
}
