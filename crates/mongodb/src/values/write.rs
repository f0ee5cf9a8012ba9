//! `append`: a fixed number of requests per call, however many series it holds — one
//! `$inc` of the write counter, one unordered `insert` per partition collection (the
//! driver's own, so retried once after a transient error), one upsert of the partition's
//! fold mark. Nothing is read first: last write wins needs no head.

use std::collections::BTreeMap;
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
use crate::error::{is_transient_code, map_err, DUPLICATE_KEY};
use crate::layout::{need_i64, sid, COUNTERS};
use crate::options::FaultPoint;
use crate::Shared;

/// The collection of fold marks: `{_id: <value collection>, g: <times marked>}`. A
/// writer marks a partition after inserting into it; a fold pass removes the mark only
/// if `g` did not move while it worked.
pub(crate) const PENDING: &str = "pending";

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
        // Cut every append by partition and by `block_points`; each piece is a document.
        let mut pieces = Vec::new();
        for append in &appends {
            let s = sid(append.series())?;
            let token = tokens[&append.series()];
            let mut by_partition: BTreeMap<i64, Vec<_>> = BTreeMap::new();
            for &p in append.points() {
                by_partition
                    .entry(self.layout.partitioning.start_of(p.time))
                    .or_default()
                    .push(p);
            }
            for (start, points) in by_partition {
                for chunk in points.chunks(self.layout.block_points) {
                    pieces.push((value_collection(token, start), s, chunk.to_vec()));
                }
            }
        }
        // Pieces of later appends get higher write numbers: in one call too, the last
        // write of a time wins.
        let last = self.issue_writes(pieces.len() as i64).await?;
        self.fault(FaultPoint::AfterSequence)?;
        let first = last - pieces.len() as i64 + 1;
        let now = now_ms();
        let mut by_collection: BTreeMap<String, Vec<Document>> = BTreeMap::new();
        let mut points = 0u64;
        for (n, (collection, s, chunk)) in pieces.into_iter().enumerate() {
            points += chunk.len() as u64;
            by_collection.entry(collection).or_default().push(fresh(
                s,
                first + n as i64,
                &chunk,
                now,
            ));
        }
        for (i, (collection, docs)) in by_collection.iter().enumerate() {
            if i > 0 {
                self.fault(FaultPoint::BetweenPartitions)?;
            }
            self.ensure_value_indexes(collection).await?;
            self.insert_values(collection, docs.clone()).await?;
            self.mark_pending(collection).await?;
        }
        self.lag.appended(points);
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

    /// Tells fold passes that `collection` has new documents.
    pub(crate) async fn mark_pending(&self, collection: &str) -> Result<()> {
        self.collection(PENDING)
            .update_one(doc! { "_id": collection }, doc! { "$inc": { "g": 1_i64 } })
            .upsert(true)
            .await
            .map_err(|e| map_err("mark partition for folding", e))?;
        Ok(())
    }

    /// The indexes of a value partition, made once per collection per handle (an
    /// existing index is not an error): by series and last time (ranges, heads, both
    /// neighbours: the one after is among the documents whose last time is past the
    /// range, a short list) and the fold's work list (sparse: only documents waiting hold
    /// `d`). No index by first time: it would cost an entry per document for the rare
    /// read of the neighbour after a range in the past.
    pub(crate) async fn ensure_value_indexes(&self, collection: &str) -> Result<()> {
        if self.indexed.has(collection) {
            return Ok(());
        }
        let sparse = IndexOptions::builder()
            .sparse(true)
            .name("pending".to_owned())
            .build();
        let models = vec![
            IndexModel::builder()
                .keys(doc! { "s": 1, "hi": 1, "hw": 1 })
                .options(
                    IndexOptions::builder()
                        .name("series_last".to_owned())
                        .build(),
                )
                .build(),
            IndexModel::builder()
                .keys(doc! { "d": 1 })
                .options(sparse)
                .build(),
        ];
        self.collection(collection)
            .create_indexes(models)
            .await
            .map_err(|e| map_err(&format!("create indexes of {collection}"), e))?;
        self.indexed.add(collection);
        Ok(())
    }
}
