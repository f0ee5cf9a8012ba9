//! Registering and listing series.
//!
//! Registration must give one id per key even when several writers register the same key at
//! once. Ids come from one counter document (`$inc`, upsert); the `series` document's unique
//! index on the canonical key `ck` decides which writer's id wins, and the losers re-read.

use std::collections::HashMap;

use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use tickertape_backend::{BackendError, Result, SeriesInfo};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

use crate::error::{is_duplicate_key, map_err};
use crate::find::find_all;
use crate::layout::{self, canonical_key, key_doc, COUNTERS, SERIES};
use crate::{bulk, selector, Shared};

impl Shared {
    /// Removes series documents (`SeriesCatalog::remove_series`): their keys are read
    /// first, for the tag values no other series has; returns how many were deleted. A
    /// key registered again gets a new id from the counter.
    pub(crate) async fn remove(&self, ids: &[SeriesId]) -> Result<u64> {
        let ids: Vec<i64> = ids.iter().map(|&s| layout::sid(s)).collect::<Result<_>>()?;
        let mut keys = Vec::new();
        let mut removed = 0;
        for chunk in ids.chunks(1000) {
            let docs = find_all(
                self.collection(SERIES)
                    .find(doc! { "_id": { "$in": chunk.to_vec() } }),
                "read series to remove",
            )
            .await?;
            for d in &docs {
                keys.push(layout::parse_key(d)?);
            }
            removed += self
                .collection(SERIES)
                .delete_many(doc! { "_id": { "$in": chunk.to_vec() } })
                .await
                .map_err(|e| map_err("remove series", e))?
                .deleted_count;
        }
        self.forget_tag_values(&keys).await?;
        Ok(removed)
    }

    pub(crate) async fn resolve(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        let canonical: Vec<String> = keys.iter().map(canonical_key).collect();
        let mut ids = self.ids_of(&canonical).await?;
        let mut missing: Vec<usize> = Vec::new();
        for (i, ck) in canonical.iter().enumerate() {
            if !ids.contains_key(ck) && !missing.iter().any(|&j| canonical[j] == *ck) {
                missing.push(i);
            }
        }
        if !missing.is_empty() {
            self.register(keys, &canonical, &missing).await?;
            let wanted: Vec<String> = missing.iter().map(|&i| canonical[i].clone()).collect();
            ids.extend(self.ids_of(&wanted).await?);
        }
        canonical
            .iter()
            .map(|ck| {
                ids.get(ck).copied().ok_or_else(|| {
                    BackendError::Storage(format!(
                        "mongodb: series {ck} vanished after registering"
                    ))
                })
            })
            .collect()
    }

    /// The ids already registered for these canonical keys (primary read).
    pub(crate) async fn ids_of(&self, canonical: &[String]) -> Result<HashMap<String, SeriesId>> {
        let mut out = HashMap::new();
        for chunk in canonical.chunks(1000) {
            let docs = find_all(
                self.collection(SERIES)
                    .find(doc! { "ck": { "$in": chunk.to_vec() } })
                    .projection(doc! { "_id": 1, "ck": 1 }),
                "look up series",
            )
            .await?;
            for d in docs {
                let id = layout::need_i64(&d, "_id")?;
                let ck = d
                    .get_str("ck")
                    .map_err(|_| crate::error::corrupt("series document without `ck`"))?;
                out.insert(ck.to_owned(), SeriesId(id as u64));
            }
        }
        Ok(out)
    }

    /// Issues ids for the keys at `missing` and inserts their series documents. A key
    /// registered meanwhile by another writer keeps that writer's id; the id issued here is
    /// never used (ids are not reused).
    async fn register(
        &self,
        keys: &[SeriesKey],
        canonical: &[String],
        missing: &[usize],
    ) -> Result<()> {
        let last = self.issue_ids(missing.len() as i64).await?;
        let first = last - missing.len() as i64 + 1;
        let heads: Vec<Document> = missing
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                doc! {
                    "_id": first + n as i64,
                    "ck": &canonical[i],
                    "k": key_doc(&keys[i]),
                }
            })
            .collect();
        // The tags before the series: a listing never misses a registered series' tag.
        self.record_tag_values(missing.iter().map(|&i| &keys[i]))
            .await?;
        bulk::insert(&self.db, &self.write_concern, SERIES, heads).await?;
        Ok(())
    }

    /// Takes `count` ids from the counter; returns the last one.
    async fn issue_ids(&self, count: i64) -> Result<i64> {
        let counters = self.collection(COUNTERS);
        let mut attempts = 0;
        loop {
            let result = counters
                .find_one_and_update(doc! { "_id": "series" }, doc! { "$inc": { "n": count } })
                .upsert(true)
                .return_document(ReturnDocument::After)
                .await;
            match result {
                Ok(Some(d)) => return layout::need_i64(&d, "n"),
                // `connect` creates the counter, so the upsert only matters for a database
                // whose counter was removed. Two first-ever upserts at once can collide
                // (duplicate key) or, on some servers, return nothing: try again.
                Ok(None) if attempts < 3 => attempts += 1,
                Err(e) if is_duplicate_key(&e) && attempts < 3 => attempts += 1,
                Ok(None) => {
                    return Err(BackendError::Storage(
                        "mongodb: series id counter upsert returned nothing".into(),
                    ))
                }
                Err(e) => return Err(map_err("issue series ids", e)),
            }
        }
    }

    /// The series `selector` matches, sorted by id: an index query narrows them down
    /// (`selector::filter`) and `SeriesSelector::matches` decides on each document.
    pub(crate) async fn find(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        let docs = find_all(
            self.read_db
                .collection::<Document>(SERIES)
                .find(selector::filter(selector))
                .projection(find_projection()),
            "find series",
        )
        .await?;
        let mut out = Vec::new();
        for d in docs {
            let key = layout::parse_key(&d)?;
            if selector.matches(&key) {
                out.push(SeriesInfo {
                    id: SeriesId(layout::need_i64(&d, "_id")? as u64),
                    key,
                });
            }
        }
        // Sorted here, not by the server: an index walk on `k.p` does not come in `_id`
        // order, and a server-side sort of a wide answer would be a blocking in-memory
        // SORT stage with its memory limit.
        out.sort_by_key(|s| s.id);
        Ok(out)
    }

    /// The server's `explain` (verbosity `executionStats`) of the query `find_series` sends
    /// for `selector`: which index answers it and how many keys and documents it examines.
    pub async fn explain_find_series(&self, selector: &SeriesSelector) -> Result<Document> {
        let find = doc! {
            "find": SERIES,
            "filter": selector::filter(selector),
            "projection": find_projection(),
        };
        self.read_db
            .run_command(doc! { "explain": find, "verbosity": "executionStats" })
            .await
            .map_err(|e| map_err("explain find series", e))
    }
}

/// What `find_series` reads of a series document: `k.p` repeats `k.t`, so it stays home.
fn find_projection() -> Document {
    doc! { "_id": 1, "k.m": 1, "k.t": 1, "k.f": 1 }
}
