//! Reads of raw points: the series' bounds every read starts from, and `heads` (the
//! ranges and their neighbours are in `range`). Reads never decide a write, so they use
//! the configured read preference; documents superseded by a fold are read too (their
//! points are duplicates). Delete marks (`doc::DeleteMark`) are applied to the points of a
//! range; neighbours and heads come from the documents' first and last points, which a
//! delete rewrote, and leave marks out.
//!
//! Every read first takes the series' bounds (`tf`/`tl` of its series document: the first
//! and last slice it holds points in, never narrower than the truth), so that it names
//! only the collections that can hold its points: a range outside them costs no `find`,
//! and the neighbour search goes straight to the collection of the series' last (or
//! first) slice instead of walking back through empty ones.

use std::collections::HashMap;

use mongodb::bson::{doc, Document};
use tickertape_backend::{Result, SeriesHead};
use tickertape_core::{Point, SeriesId};

use super::doc::need_value;
use super::merge::Written;
use super::names::value_collection;
use crate::error::corrupt;
use crate::find::find_all_at_once;
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
            let docs = find_all_at_once(
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
                    let docs = find_all_at_once(
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
                            super::doc::written_by(&d, "hw")?,
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
        find_all_at_once(find, "read values").await
    }
}
