//! `append`: a fixed number of requests per call, however many series and measurements
//! it holds — one `$inc` of the write counter, one unordered `insert` per value
//! collection touched (the driver's own, so retried once after a transient error), one
//! `update` of the fold marks of the slices touched; and, the first time this handle
//! writes a series into a slice outside what it knows of the series' bounds, one
//! `update` of those bounds, before the insert. Nothing is read first: last write wins
//! needs no head.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind;
use mongodb::options::{IndexOptions, ReturnDocument};
use mongodb::IndexModel;
use tickertape_backend::{BackendError, Result, SeriesAppend};
use tickertape_core::SeriesId;

use super::doc::fresh;
use super::names::value_collection;
use super::WRITES_COUNTER;
use crate::bulk::{self, Update};
use crate::error::{is_transient_code, map_err, DUPLICATE_KEY};
use crate::layout::{need_i64, sid, COUNTERS, SERIES};
use crate::naming::{rollup_indexes, value_indexes, IndexSpec, PartitionName};
use crate::options::FaultPoint;
use crate::Shared;

/// The collection of fold marks: `{_id: {c: <value collection>, p: <slice start>}, g:
/// <times marked>}`. A writer marks a slice after inserting into it; a fold pass removes
/// the mark only if `g` did not move while it worked.
pub(crate) const PENDING: &str = "pending";

/// The fold mark of one slice of a value collection.
pub(crate) fn pending_id(collection: &str, slice: i64) -> Document {
    doc! { "c": collection, "p": slice }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Shared {
    pub(crate) async fn append_values(&self, appends: Vec<SeriesAppend>) -> Result<()> {
        if appends.is_empty() {
            return Ok(());
        }
        let series: Vec<SeriesId> = appends.iter().map(SeriesAppend::series).collect();
        let tokens = self.tokens_of(&series).await?;
        let slices = self.layout.partitioning;
        let collections = self.layout.periods.values();
        // Cut every append by slice and by `block_points`; each piece is a document.
        let mut pieces = Vec::new();
        let mut bounds: HashMap<i64, (i64, i64)> = HashMap::new();
        for append in &appends {
            let s = sid(append.series())?;
            let m = tokens[&append.series()] as i64;
            let mut by_slice: BTreeMap<i64, Vec<_>> = BTreeMap::new();
            for &p in append.points() {
                by_slice.entry(slices.start_of(p.time)).or_default().push(p);
            }
            for (slice, points) in by_slice {
                let seen = bounds.entry(s).or_insert((slice, slice));
                *seen = (seen.0.min(slice), seen.1.max(slice));
                for chunk in points.chunks(self.layout.block_points) {
                    pieces.push((slice, s, m, chunk.to_vec()));
                }
            }
        }
        // Before the insert: a reader bounds its neighbour search by these, so they must
        // never be narrower than the points stored (wider only costs a read a find).
        self.widen_bounds(bounds).await?;
        // Pieces of later appends get higher write numbers: in one call too, the last
        // write of a time wins.
        let last = self.issue_writes(pieces.len() as i64).await?;
        self.fault(FaultPoint::AfterSequence)?;
        let first = last - pieces.len() as i64 + 1;
        let now = now_ms();
        let mut by_collection: BTreeMap<i64, Vec<Document>> = BTreeMap::new();
        let mut touched: BTreeSet<(i64, i64)> = BTreeSet::new();
        let mut points = 0u64;
        for (n, (slice, s, m, chunk)) in pieces.into_iter().enumerate() {
            points += chunk.len() as u64;
            let start = collections.start_of(slice);
            touched.insert((start, slice));
            by_collection.entry(start).or_default().push(fresh(
                s,
                m,
                first + n as i64,
                &chunk,
                now,
            ));
        }
        for (i, (start, docs)) in by_collection.into_iter().enumerate() {
            if i > 0 {
                self.fault(FaultPoint::BetweenPartitions)?;
            }
            let collection = value_collection(start);
            self.ensure_indexes(&collection).await?;
            self.insert_values(&collection, docs).await?;
        }
        let marks = touched
            .into_iter()
            .map(|(start, slice)| (value_collection(start), slice))
            .collect::<Vec<_>>();
        self.mark_pending(&marks).await?;
        self.lag.appended(points);
        Ok(())
    }

    /// Records in the series documents that each series holds points in its slices
    /// `[first, last]` (`tf`/`tl`, widened with `$min`/`$max`), for the series whose
    /// bounds this handle has not widened that far yet: one `update` for them all.
    async fn widen_bounds(&self, bounds: HashMap<i64, (i64, i64)>) -> Result<()> {
        let wanted: Vec<(i64, (i64, i64))> = bounds
            .into_iter()
            .filter(|&(s, b)| !self.bounds.covers(s, b))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let updates = wanted
            .iter()
            .map(|&(s, (first, last))| Update {
                q: doc! { "_id": s },
                u: doc! { "$min": { "tf": first }, "$max": { "tl": last } },
                conditional: false,
            })
            .collect();
        bulk::update(&self.db, &self.write_concern, SERIES, updates).await?;
        for (s, b) in wanted {
            self.bounds.widened(s, b);
        }
        Ok(())
    }
    /// Takes `count` write numbers; returns the last one.
    pub(crate) async fn issue_writes(&self, count: i64) -> Result<i64> {
        let reply = self
            .collection(COUNTERS)
            .find_one_and_update(
                doc! { "_id": WRITES_COUNTER },
                doc! { "$inc": { "n": count } },
            )
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
            .map_err(|e| map_err("issue write numbers", e))?
            .ok_or_else(|| {
                BackendError::Storage("mongodb: write counter upsert returned nothing".into())
            })?;
        need_i64(&reply, "n")
    }

    /// Unordered insert; a duplicate key is a document this write stored before (a retry
    /// after a lost reply, by the driver or by the client): its content is the same.
    pub(super) async fn insert_values(&self, collection: &str, docs: Vec<Document>) -> Result<()> {
        let result = self
            .collection(collection)
            .insert_many(docs)
            .ordered(false)
            .await;
        let Err(e) = result else { return Ok(()) };
        if let ErrorKind::InsertMany(failure) = &*e.kind {
            if failure.write_concern_error.is_none() {
                let errors = failure.write_errors.as_deref().unwrap_or_default();
                if let Some(other) = errors.iter().find(|w| w.code != DUPLICATE_KEY) {
                    let text = format!(
                        "mongodb: insert into {collection} failed ({}): {}",
                        other.code, other.message
                    );
                    return Err(match is_transient_code(other.code) {
                        true => BackendError::Unavailable(text),
                        false => BackendError::Storage(text),
                    });
                }
                return Ok(());
            }
        }
        Err(map_err(&format!("insert into {collection}"), e))
    }

    /// Tells fold passes that these slices (value collection, slice start) have new
    /// documents: one `update` for them all.
    pub(crate) async fn mark_pending(&self, marks: &[(String, i64)]) -> Result<()> {
        if marks.is_empty() {
            return Ok(());
        }
        // An upsert by `_id` alone: two writers creating one mark at once are both
        // applied (the server retries the loser's upsert as an update).
        let updates = |marks: &[(String, i64)]| -> Vec<Update> {
            marks
                .iter()
                .map(|(collection, slice)| Update {
                    q: doc! { "_id": pending_id(collection, *slice) },
                    u: doc! { "$inc": { "g": 1_i64 } },
                    conditional: true,
                })
                .collect()
        };
        let applied = bulk::update(&self.db, &self.write_concern, PENDING, updates(marks)).await?;
        let missed: Vec<(String, i64)> = marks
            .iter()
            .zip(applied)
            .filter(|(_, applied)| !applied)
            .map(|(mark, _)| mark.clone())
            .collect();
        // A duplicate key: another writer created the mark meanwhile; it exists now.
        if !missed.is_empty() {
            bulk::update(&self.db, &self.write_concern, PENDING, updates(&missed)).await?;
        }
        Ok(())
    }

    /// The indexes of a value or rollup collection (`naming`), made once per collection
    /// per handle (an existing index is not an error).
    pub(crate) async fn ensure_indexes(&self, collection: &str) -> Result<()> {
        if self.indexed.has(collection) {
            return Ok(());
        }
        let specs = match PartitionName::parse(collection) {
            Some(p) if p.resolution.is_some() => rollup_indexes(),
            _ => value_indexes(),
        };
        let models = specs
            .into_iter()
            .map(|IndexSpec { name, keys, sparse }| {
                let mut options = IndexOptions::builder().name(name.to_owned()).build();
                options.sparse = sparse.then_some(true);
                IndexModel::builder().keys(keys).options(options).build()
            })
            .collect::<Vec<_>>();
        self.collection(collection)
            .create_indexes(models)
            .await
            .map_err(|e| map_err(&format!("create indexes of {collection}"), e))?;
        self.indexed.add(collection);
        Ok(())
    }
}
