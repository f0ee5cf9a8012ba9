//! Reads of raw points: `read_segments` (the points of a range and the nearest point on
//! each side) and `heads`. Reads never decide a write, so they use the configured read
//! preference; documents superseded by a fold are read too (their points are duplicates).
//! Delete marks (`doc::DeleteMark`) are applied to the points of a range; neighbours and
//! heads come from the documents' first and last points, which a delete rewrote, and
//! leave marks out.

use std::collections::HashMap;

use mongodb::bson::{doc, Document};
use tickertape_backend::{Result, SeriesHead};
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId};

use super::doc::{merge_documents, need_value};
use super::merge::{merge, Written};
use super::names::value_collection;
use crate::find::find_all;
use crate::layout::{need_i64, sid};
use crate::Shared;

impl Shared {
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
        let Some(&token) = self.known_tokens(&[series]).await?.get(&series) else {
            return Ok(Vec::new());
        };
        let s = sid(series)?;
        let partitions = self.value_partitions(token).await?;
        let overlap = self
            .points_between(token, s, start, end, &partitions)
            .await?;
        let before = self
            .nearest_before(token, s, start, &partitions, &overlap)
            .await?;
        let after = self
            .nearest_after(token, s, end, &partitions, &overlap)
            .await?;
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

    /// The merged points of the documents that overlap `[start, end)`, and for an empty
    /// range of the documents that span `start` (they hold the nearest points on both
    /// sides): points outside the range included.
    pub(crate) async fn points_between(
        &self,
        token: u64,
        s: i64,
        start: i64,
        end: i64,
        partitions: &[i64],
    ) -> Result<Vec<Written>> {
        let by = self.layout.partitioning;
        let last_touched = by.start_of(end.saturating_sub(1).max(start));
        let mut found: Vec<Vec<Written>> = Vec::new();
        for &p in partitions
            .iter()
            .filter(|&&p| p >= by.start_of(start) && p <= last_touched)
        {
            // Delete marks overlapping the range come with the documents: each
            // partition's are applied to its points (a mark is per partition).
            let filter = doc! { "s": s, "lo": { "$lt": end.max(start.saturating_add(1)) }, "hi": { "$gte": start } };
            let docs = self.find_values(token, p, filter, None, None).await?;
            found.push(merge_documents(&docs)?);
        }
        Ok(merge(found))
    }

    /// The latest point before `start`: the best of the overlap's points before it and,
    /// walking partitions back, the document with the highest last time (its `hi`, `hv`,
    /// `hw`: no need to read its points).
    async fn nearest_before(
        &self,
        token: u64,
        s: i64,
        start: i64,
        partitions: &[i64],
        overlap: &[Written],
    ) -> Result<Option<Point>> {
        let mut best: Option<Written> = overlap.iter().rev().find(|(p, _)| p.time < start).copied();
        for &p in partitions.iter().rev().filter(|&&p| p < start) {
            let filter = doc! { "s": s, "hi": { "$lt": start }, "k": { "$exists": false } };
            let sort = doc! { "hi": -1, "hw": -1 };
            let docs = self
                .find_values(token, p, filter, Some(sort), Some(1))
                .await?;
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
        token: u64,
        s: i64,
        end: i64,
        partitions: &[i64],
        overlap: &[Written],
    ) -> Result<Option<Point>> {
        let by = self.layout.partitioning;
        let mut best: Option<Written> = overlap.iter().find(|(p, _)| p.time >= end).copied();
        for &p in partitions
            .iter()
            .filter(|&&p| by.end_of(p) > i128::from(end))
        {
            let filter = doc! { "s": s, "hi": { "$gte": end }, "lo": { "$gte": end }, "k": { "$exists": false } };
            let sort = doc! { "lo": 1, "lw": -1 };
            let docs = self
                .find_values(token, p, filter, Some(sort), Some(1))
                .await?;
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

    /// The latest point of each series: per measurement, partitions newest first, the
    /// document with the highest `(hi, hw)` of each series still unanswered. Read from the
    /// primary: the write path decides on heads (change-only points).
    pub(crate) async fn value_heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        let tokens = self.known_tokens(series).await?;
        let mut by_token: HashMap<u64, Vec<i64>> = HashMap::new();
        for s in series {
            if let Some(&token) = tokens.get(s) {
                by_token.entry(token).or_default().push(sid(*s)?);
            }
        }
        let mut found: HashMap<i64, Written> = HashMap::new();
        for (token, mut wanted) in by_token {
            wanted.sort_unstable();
            wanted.dedup();
            for p in self.value_partitions(token).await?.into_iter().rev() {
                if wanted.is_empty() {
                    break;
                }
                let mut answered = Vec::new();
                for chunk in wanted.chunks(1000) {
                    let docs = find_all(
                        self.collection(&value_collection(token, p))
                            .find(
                                doc! { "s": { "$in": chunk.to_vec() }, "k": { "$exists": false } },
                            )
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
                        answered.push(s);
                    }
                }
                wanted.retain(|s| !answered.contains(s));
            }
        }
        series
            .iter()
            .map(|s| Ok(found.get(&sid(*s)?).map(|&(last, _)| SeriesHead { last })))
            .collect()
    }

    /// Documents of one value partition (read preference of queries).
    pub(crate) async fn find_values(
        &self,
        token: u64,
        partition: i64,
        filter: Document,
        sort: Option<Document>,
        limit: Option<i64>,
    ) -> Result<Vec<Document>> {
        let collection = self
            .read_db
            .collection::<Document>(&value_collection(token, partition));
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
