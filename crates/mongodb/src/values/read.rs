//! Reads of raw points: `read_segments` (the points of a range and the nearest point on
//! each side) and `heads`. Reads never decide a write, so they use the configured read
//! preference; documents superseded by a fold are read too (their points are duplicates).
//! Delete marks (`doc::DeleteMark`) are applied to the points of a range; neighbours and
//! heads come from the documents' first and last points, which a delete rewrote, and
//! leave marks out.
//!
//! Every read first takes the series' bounds (`tf`/`tl` of its series document: the first
//! and last slice it holds points in, never narrower than the truth), so that it names
//! only the collections that can hold its points: a range outside them costs no `find`,
//! and the neighbour search goes straight to the collection of the series' last (or
//! first) slice instead of walking back through empty ones.

use std::collections::HashMap;

use mongodb::bson::{doc, Document};
use tickertape_backend::{Result, SeriesHead};
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId};

use super::doc::{merge_documents, need_value};
use super::merge::{merge, Written};
use super::names::value_collection;
use crate::error::corrupt;
use crate::find::find_all;
use crate::layout::{get_i64, need_i64, sid, SERIES};
use crate::Shared;

/// The times a series may hold points at, from its bounds: `[first, last]`, both
/// inclusive (the first time of its first slice, the last of its last); and its
/// measurement, read with them (what its rollups are kept by).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub first: i64,
    pub last: i64,
    pub measurement: String,
}

impl Shared {
    /// The span of each of `series` that holds points (absent: none, or unregistered),
    /// from one `find` on `series`. `primary`: read from the primary (the write path's
    /// decisions), else with the read preference of queries.
    pub(crate) async fn spans_of(
        &self,
        series: &[i64],
        primary: bool,
    ) -> Result<HashMap<i64, Span>> {
        let db = match primary {
            true => &self.db,
            false => &self.read_db,
        };
        let slices = self.layout.partitioning;
        let mut out = HashMap::new();
        for chunk in series.chunks(1000) {
            let docs = find_all(
                db.collection::<Document>(SERIES)
                    .find(doc! { "_id": { "$in": chunk.to_vec() }, "tl": { "$exists": true } })
                    .projection(doc! { "tf": 1, "tl": 1, "k.m": 1 }),
                "read series bounds",
            )
            .await?;
            for d in &docs {
                let (Some(tf), Some(tl)) = (get_i64(d, "tf")?, get_i64(d, "tl")?) else {
                    continue;
                };
                let last = (slices.end_of(tl) - 1).min(i128::from(i64::MAX)) as i64;
                let measurement = d
                    .get_document("k")
                    .and_then(|k| k.get_str("m"))
                    .map_err(|_| corrupt("series document without `k.m`"))?
                    .to_owned();
                out.insert(
                    need_i64(d, "_id")?,
                    Span {
                        first: tf,
                        last,
                        measurement,
                    },
                );
            }
        }
        Ok(out)
    }

    /// One made-up open segment: the merged points in `[start, end)` and the nearest
    /// stored point before `start` and at or after `end` (none when the series holds no
    /// point there), which is what `Backend::read_segments` promises.
    pub(crate) async fn read_values(
        &self,
        series: SeriesId,
        start: i64,
        end: i64,
    ) -> Result<Vec<Segment>> {
        let end = end.max(start);
        let s = sid(series)?;
        let Some(span) = self.spans_of(&[s], false).await?.remove(&s) else {
            return Ok(Vec::new());
        };
        // The documents overlapping the range (for an empty one, spanning `start`),
        // within the span.
        let mut catalog = self.catalog();
        let last_asked = if end > start { end - 1 } else { start };
        let overlap = match (start.max(span.first), last_asked.min(span.last)) {
            (lo, hi) if lo <= hi => {
                let collections = catalog.values_between(lo, hi).await?;
                self.points_between(s, start, end, &collections).await?
            }
            _ => Vec::new(),
        };
        let before = match start > span.first {
            true => {
                let last = (start - 1).min(span.last);
                let collections = catalog.values_between(span.first, last).await?;
                self.nearest_before(s, start, &collections, &overlap)
                    .await?
            }
            false => None,
        };
        let after = match span.last >= end {
            true => {
                let first = end.max(span.first);
                let collections = catalog.values_between(first, span.last).await?;
                self.nearest_after(s, end, &collections, &overlap).await?
            }
            false => None,
        };
        let mut points: Vec<Point> = before.into_iter().collect();
        points.extend(
            overlap
                .iter()
                .filter(|(p, _)| p.time >= start && p.time < end)
                .map(|&(p, _)| p),
        );
        points.extend(after);
        if points.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Segment {
            series,
            prev_end: NO_PREVIOUS,
            next_start: NO_NEXT,
            body: SegmentBody::Open(points.into_iter().map(Some).collect()),
        }])
    }

    /// The merged points of the documents of `s` in `collections` that overlap `[start,
    /// end)`, and for an empty range of the documents that span `start` (they hold the
    /// nearest points on both sides): points outside the range included. One `find` per
    /// collection.
    pub(crate) async fn points_between(
        &self,
        s: i64,
        start: i64,
        end: i64,
        collections: &[i64],
    ) -> Result<Vec<Written>> {
        let mut found: Vec<Vec<Written>> = Vec::new();
        for &c in collections {
            // Delete marks overlapping the range come with the documents; a mark deletes
            // only points in its own `[lo, hi]`, inside its slice.
            let filter = doc! { "s": s, "lo": { "$lt": end.max(start.saturating_add(1)) }, "hi": { "$gte": start } };
            let docs = self.find_values(c, filter, None, None).await?;
            found.push(merge_documents(&docs)?);
        }
        Ok(merge(found))
    }

    /// The latest point before `start`: the best of the overlap's points before it and,
    /// walking `collections` back (ascending as given), the document with the highest
    /// last time (its `hi`, `hv`, `hw`: no need to read its points).
    async fn nearest_before(
        &self,
        s: i64,
        start: i64,
        collections: &[i64],
        overlap: &[Written],
    ) -> Result<Option<Point>> {
        let mut best: Option<Written> = overlap.iter().rev().find(|(p, _)| p.time < start).copied();
        for &c in collections.iter().rev() {
            let filter = doc! { "s": s, "hi": { "$lt": start }, "k": { "$exists": false } };
            let sort = doc! { "hi": -1, "hw": -1 };
            let docs = self.find_values(c, filter, Some(sort), Some(1)).await?;
            if let Some(d) = docs.first() {
                let candidate = (
                    Point::new(need_i64(d, "hi")?, need_value(d, "hv")?),
                    need_i64(d, "hw")?,
                );
                best = Some(match best {
                    Some(b) if (b.0.time, b.1) >= (candidate.0.time, candidate.1) => b,
                    _ => candidate,
                });
            }
            if best.is_some() {
                break;
            }
        }
        Ok(best.map(|(p, _)| p))
    }

    /// The earliest point at or after `end`, as [`Self::nearest_before`] the other way.
    async fn nearest_after(
        &self,
        s: i64,
        end: i64,
        collections: &[i64],
        overlap: &[Written],
    ) -> Result<Option<Point>> {
        let mut best: Option<Written> = overlap.iter().find(|(p, _)| p.time >= end).copied();
        for &c in collections {
            let filter = doc! { "s": s, "hi": { "$gte": end }, "lo": { "$gte": end }, "k": { "$exists": false } };
            let sort = doc! { "lo": 1, "lw": -1 };
            let docs = self.find_values(c, filter, Some(sort), Some(1)).await?;
            if let Some(d) = docs.first() {
                let candidate = (
                    Point::new(need_i64(d, "lo")?, need_value(d, "lv")?),
                    need_i64(d, "lw")?,
                );
                best = Some(match best {
                    Some(b)
                        if b.0.time < candidate.0.time
                            || (b.0.time == candidate.0.time && b.1 >= candidate.1) =>
                    {
                        b
                    }
                    _ => candidate,
                });
            }
            if best.is_some() {
                break;
            }
        }
        Ok(best.map(|(p, _)| p))
    }

    /// The latest point of each series: from the bounds, the collection of each series'
    /// last slice first (documents of that slice and later), then that whole collection,
    /// then the collections before it down to the first slice; one `find` per collection
    /// and step for all the series still unanswered there. Read from the primary: the
    /// write path decides on heads (change-only points).
    pub(crate) async fn value_heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        let ids: Vec<i64> = series.iter().map(|&s| sid(s)).collect::<Result<_>>()?;
        let spans = self.spans_of(&ids, true).await?;
        let slices = self.layout.partitioning;
        let by = self.layout.periods.values();
        // Per series, the steps still to try: (collection, documents from this time on).
        let mut steps: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        let mut catalog = self.catalog();
        for (&s, span) in &spans {
            let last_slice = slices.start_of(span.last);
            let mut todo = vec![(by.start_of(span.last), last_slice)];
            let older = catalog.values_between(span.first, span.last).await?;
            todo.extend(older.into_iter().rev().map(|c| (c, i64::MIN)));
            todo.reverse(); // popped from the back
            steps.insert(s, todo);
        }
        let mut found: HashMap<i64, Written> = HashMap::new();
        loop {
            let mut by_step: HashMap<i64, (i64, Vec<i64>)> = HashMap::new();
            for (&s, todo) in &steps {
                if let Some(&(c, from)) = todo.last() {
                    let entry = by_step.entry(c).or_insert((from, Vec::new()));
                    entry.0 = entry.0.min(from);
                    entry.1.push(s);
                }
            }
            if by_step.is_empty() {
                break;
            }
            for (c, (from, mut wanted)) in by_step {
                wanted.sort_unstable();
                for chunk in wanted.chunks(1000) {
                    let docs = find_all(
                        self.collection(&value_collection(c))
                            .find(doc! {
                                "s": { "$in": chunk.to_vec() },
                                "hi": { "$gte": from },
                                "k": { "$exists": false },
                            })
                            .projection(doc! { "s": 1, "hi": 1, "hv": 1, "hw": 1 }),
                        "read heads",
                    )
                    .await?;
                    for d in docs {
                        let s = need_i64(&d, "s")?;
                        let candidate = (
                            Point::new(need_i64(&d, "hi")?, need_value(&d, "hv")?),
                            need_i64(&d, "hw")?,
                        );
                        let slot = found.entry(s).or_insert(candidate);
                        if (candidate.0.time, candidate.1) > (slot.0.time, slot.1) {
                            *slot = candidate;
                        }
                    }
                }
                for s in wanted {
                    match found.contains_key(&s) {
                        true => {
                            steps.remove(&s);
                        }
                        false => {
                            if let Some(todo) = steps.get_mut(&s) {
                                todo.pop();
                            }
                        }
                    }
                }
            }
            steps.retain(|_, todo| !todo.is_empty());
        }
        ids.iter()
            .map(|s| Ok(found.get(s).map(|&(last, _)| SeriesHead { last })))
            .collect()
    }

    /// Documents of one value collection (read preference of queries).
    pub(crate) async fn find_values(
        &self,
        collection: i64,
        filter: Document,
        sort: Option<Document>,
        limit: Option<i64>,
    ) -> Result<Vec<Document>> {
        let collection = self
            .read_db
            .collection::<Document>(&value_collection(collection));
        let mut find = collection.find(filter);
        if let Some(sort) = sort {
            find = find.sort(sort);
        }
        if let Some(limit) = limit {
            find = find.limit(limit);
        }
        find_all(find, "read values").await
    }
}
