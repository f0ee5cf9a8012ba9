//! Range reads of many series at once (`read_points`, and `read_segments` as a read of
//! one): the merged points of a range and the nearest point on each side, with one `find`
//! per value collection the range touches (`s: {$in: …}`, [`SERIES_PER_FIND`] series a
//! chunk) instead of one per series, and the neighbours searched in rounds, one `find`
//! per collection and round for every series still without its neighbour there.
//!
//! Every read first takes the series' bounds (`Shared::spans_of`: one `find` on `series`),
//! so a collection is named only for the series whose bounds reach it, and the neighbour
//! search starts at each series' last (or first) slice instead of walking back through
//! empty collections.

use std::collections::{BTreeMap, HashMap};

use mongodb::bson::{doc, Document};
use tickertape_backend::{PointsRange, RangePoints, Result};
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId};

use super::doc::{merge_documents, need_value, written_by};
use super::merge::{merge, Written};
use super::read::Span;
use crate::layout::{need_i64, sid};
use crate::Shared;

/// Series named by one `find` (`s: {$in: …}`): a bound on the filter's size, and on what
/// one cursor carries, whatever the number of series a query reads.
pub(crate) const SERIES_PER_FIND: usize = 500;

/// Which side of a range a neighbour search looks at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

impl Shared {
    /// One made-up open segment of `series`: its merged points in `[start, end)` and the
    /// nearest stored point on each side, which is what `Backend::read_segments` promises.
    pub(crate) async fn read_values(
        &self,
        series: SeriesId,
        start: i64,
        end: i64,
    ) -> Result<Vec<Segment>> {
        let range = PointsRange::with_neighbors(start, end);
        let mut answers = self.read_ranges(&[series], range).await?;
        let points = answers.pop().unwrap_or_default().into_all();
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

    /// `Backend::read_points`: each series' merged points in the range, and its
    /// neighbours when asked, in the order of `series`.
    pub(crate) async fn read_ranges(
        &self,
        series: &[SeriesId],
        range: PointsRange,
    ) -> Result<Vec<RangePoints>> {
        let ids: Vec<i64> = series.iter().map(|&s| sid(s)).collect::<Result<_>>()?;
        if range.start >= range.end && !range.neighbors {
            return Ok(vec![RangePoints::default(); ids.len()]);
        }
        let spans = self.spans_of(&ids, false).await?;
        let found = self.ranges_in(&spans, range).await?;
        // A series asked twice answers twice.
        Ok(ids
            .iter()
            .map(|s| found.get(s).cloned().unwrap_or_default())
            .collect())
    }

    /// [`Self::read_ranges`] of the series of `spans` (their bounds already read).
    pub(crate) async fn ranges_in(
        &self,
        spans: &HashMap<i64, Span>,
        range: PointsRange,
    ) -> Result<HashMap<i64, RangePoints>> {
        let start = range.start;
        let end = range.end.max(start);
        // The documents overlapping the range (for an empty one, spanning `start`),
        // within each series' span.
        let last_asked = if end > start { end - 1 } else { start };
        let mut catalog = self.catalog();
        let mut by_collection: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for (&s, span) in spans {
            let (lo, hi) = (start.max(span.first), last_asked.min(span.last));
            if lo <= hi {
                for c in catalog.values_between(lo, hi).await? {
                    by_collection.entry(c).or_default().push(s);
                }
            }
        }
        // Delete marks overlapping the range come with the documents; a mark deletes only
        // points in its own `[lo, hi]`, inside its slice, so each collection's documents
        // of a series are merged with the marks among them.
        let mut pieces: HashMap<i64, Vec<Vec<Written>>> = HashMap::new();
        for (c, mut wanted) in by_collection {
            wanted.sort_unstable();
            for chunk in wanted.chunks(SERIES_PER_FIND) {
                let filter = doc! {
                    "s": { "$in": chunk.to_vec() },
                    "lo": { "$lt": end.max(start.saturating_add(1)) },
                    "hi": { "$gte": start },
                };
                let docs = self.find_values(c, filter, None, None).await?;
                for (s, docs) in by_series(docs)? {
                    pieces.entry(s).or_default().push(merge_documents(&docs)?);
                }
            }
        }
        let overlap: HashMap<i64, Vec<Written>> =
            pieces.into_iter().map(|(s, p)| (s, merge(p))).collect();
        let (mut before, mut after) = (HashMap::new(), HashMap::new());
        if range.neighbors {
            before = self
                .neighbours(spans, Side::Before, start, &overlap)
                .await?;
            after = self.neighbours(spans, Side::After, end, &overlap).await?;
        }
        let mut out = HashMap::with_capacity(spans.len());
        for &s in spans.keys() {
            let points = overlap.get(&s).map_or_else(Vec::new, |merged| {
                merged
                    .iter()
                    .filter(|(p, _)| p.time >= start && p.time < end)
                    .map(|&(p, _)| p)
                    .collect()
            });
            let answer = RangePoints {
                before: before.remove(&s),
                points,
                after: after.remove(&s),
            };
            if !answer.is_empty() {
                out.insert(s, answer);
            }
        }
        Ok(out)
    }

    /// The nearest point of each series on `side` of `at` (before `at`, or at or after
    /// it): the best of the overlap's points there and of the documents wholly on that
    /// side, whose first or last point (`lo`/`lv`/`lw`, `hi`/`hv`/`hw`) is read without
    /// their points. Each series' collections are searched from the one nearest `at`
    /// outwards, stopping after the first that gave it a candidate: one `find` per
    /// collection and round, for every series searching there.
    async fn neighbours(
        &self,
        spans: &HashMap<i64, Span>,
        side: Side,
        at: i64,
        overlap: &HashMap<i64, Vec<Written>>,
    ) -> Result<HashMap<i64, Point>> {
        let mut best: HashMap<i64, Written> = HashMap::new();
        // Per series, the collections still to search, the next one last.
        let mut todo: HashMap<i64, Vec<i64>> = HashMap::new();
        let mut catalog = self.catalog();
        for (&s, span) in spans {
            let merged = overlap.get(&s).map_or(&[][..], Vec::as_slice);
            let (seen, reach) = match side {
                Side::Before => (
                    merged.iter().rev().find(|(p, _)| p.time < at).copied(),
                    (at > span.first).then(|| (span.first, (at - 1).min(span.last))),
                ),
                Side::After => (
                    merged.iter().find(|(p, _)| p.time >= at).copied(),
                    (span.last >= at).then(|| (at.max(span.first), span.last)),
                ),
            };
            if let Some(seen) = seen {
                best.insert(s, seen);
            }
            if let Some((first, last)) = reach {
                let mut collections = catalog.values_between(first, last).await?;
                if side == Side::After {
                    collections.reverse();
                }
                todo.insert(s, collections);
            }
        }
        loop {
            let mut round: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for (&s, collections) in &todo {
                if let Some(&c) = collections.last() {
                    round.entry(c).or_default().push(s);
                }
            }
            if round.is_empty() {
                break;
            }
            for (c, mut wanted) in round {
                wanted.sort_unstable();
                for chunk in wanted.chunks(SERIES_PER_FIND) {
                    for (s, candidate) in self.edge_points(c, chunk, side, at).await? {
                        let slot = best.entry(s).or_insert(candidate);
                        if better(side, candidate, *slot) {
                            *slot = candidate;
                        }
                    }
                }
                for s in wanted {
                    if best.contains_key(&s) {
                        todo.remove(&s);
                    } else if let Some(collections) = todo.get_mut(&s) {
                        collections.pop();
                    }
                }
            }
            todo.retain(|_, collections| !collections.is_empty());
        }
        Ok(best.into_iter().map(|(s, (p, _))| (s, p)).collect())
    }

    /// Of each series of `chunk`, the nearest point on `side` of `at` among its documents
    /// in collection `c` that lie wholly on that side (delete marks left out).
    async fn edge_points(
        &self,
        c: i64,
        chunk: &[i64],
        side: Side,
        at: i64,
    ) -> Result<HashMap<i64, Written>> {
        let (filter, fields) = match side {
            Side::Before => (
                doc! { "s": { "$in": chunk.to_vec() }, "hi": { "$lt": at }, "k": { "$exists": false } },
                ("hi", "hv", "hw"),
            ),
            Side::After => (
                doc! { "s": { "$in": chunk.to_vec() }, "hi": { "$gte": at }, "lo": { "$gte": at }, "k": { "$exists": false } },
                ("lo", "lv", "lw"),
            ),
        };
        let (t, v, w) = fields;
        // A fresh document of one point holds it as its last only (`hv`); a fresh
        // document's write numbers are its `_id.w` (`written_by`).
        let projection = doc! { "s": 1, t: 1, v: 1, w: 1, "hv": 1, "hw": 1 };
        let docs = self.find_values_projected(c, filter, projection).await?;
        let mut out: HashMap<i64, Written> = HashMap::new();
        for d in &docs {
            let (v, w) = match d.contains_key(v) {
                true => (v, w),
                false => ("hv", "hw"),
            };
            let candidate = (
                Point::new(need_i64(d, t)?, need_value(d, v)?),
                written_by(d, w)?,
            );
            let slot = out.entry(need_i64(d, "s")?).or_insert(candidate);
            if better(side, candidate, *slot) {
                *slot = candidate;
            }
        }
        Ok(out)
    }

    /// Documents of one value collection with only the fields of `projection`.
    async fn find_values_projected(
        &self,
        collection: i64,
        filter: Document,
        projection: Document,
    ) -> Result<Vec<Document>> {
        let name = super::names::value_collection(collection);
        crate::find::find_all_at_once(
            self.read_db
                .collection::<Document>(&name)
                .find(filter)
                .projection(projection),
            "read neighbours",
        )
        .await
    }
}

/// Whether `candidate` is nearer than `current` on `side`: a later time before, an
/// earlier time after; at equal times, the higher write number (the stored value).
fn better(side: Side, candidate: Written, current: Written) -> bool {
    let (c, b) = ((candidate.0.time, candidate.1), (current.0.time, current.1));
    match side {
        Side::Before => c > b,
        Side::After => c.0 < b.0 || (c.0 == b.0 && c.1 > b.1),
    }
}

/// `docs` grouped by their series (`s`).
pub(crate) fn by_series(docs: Vec<Document>) -> Result<BTreeMap<i64, Vec<Document>>> {
    let mut out: BTreeMap<i64, Vec<Document>> = BTreeMap::new();
    for d in docs {
        out.entry(need_i64(&d, "s")?).or_default().push(d);
    }
    Ok(out)
}
