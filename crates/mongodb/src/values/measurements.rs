//! The measurement ids in value and rollup documents (`m`): a registry of its own
//! (`measurements`: `{_id: <name>, t: <id>}`, ids from the `measurements` counter), apart
//! from the name store's tokens, which clients see and which must count only the names
//! they tokenized. Ids never change once issued, so a handle caches them for good.

use std::collections::HashMap;

use mongodb::bson::doc;
use mongodb::options::ReturnDocument;
use tickertape_backend::{BackendError, Result};
use tickertape_core::SeriesId;

use crate::error::{corrupt, map_err};
use crate::find::find_all;
use crate::layout::{need_i64, sid, COUNTERS, SERIES};
use crate::{bulk, Shared};

/// The registry collection.
pub(crate) const MEASUREMENTS: &str = "measurements";

impl Shared {
    /// The measurement id of each series; every series must be registered.
    pub(crate) async fn tokens_of(&self, series: &[SeriesId]) -> Result<HashMap<SeriesId, u64>> {
        let known = self.known_tokens(series).await?;
        match series.iter().find(|s| !known.contains_key(s)) {
            Some(&unknown) => Err(BackendError::UnknownSeries(unknown)),
            None => Ok(known),
        }
    }

    /// The measurement id of each registered series among `series` (cached; a miss reads
    /// the series documents, and issues ids for measurements that have none yet).
    pub(crate) async fn known_tokens(&self, series: &[SeriesId]) -> Result<HashMap<SeriesId, u64>> {
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for &s in series {
            match self.tokens.token(sid(s)?) {
                Some(t) => {
                    out.insert(s, t);
                }
                None => missing.push(sid(s)?),
            }
        }
        missing.sort_unstable();
        missing.dedup();
        for chunk in missing.chunks(1000) {
            let docs = find_all(
                self.collection(SERIES)
                    .find(doc! { "_id": { "$in": chunk.to_vec() } })
                    .projection(doc! { "k.m": 1 }),
                "read series measurements",
            )
            .await?;
            let mut measurement_of = Vec::new();
            for d in &docs {
                let m = d
                    .get_document("k")
                    .and_then(|k| k.get_str("m"))
                    .map_err(|_| corrupt("series document without `k.m`"))?;
                measurement_of.push((need_i64(d, "_id")?, m.to_owned()));
            }
            let mut names: Vec<String> = measurement_of.iter().map(|(_, m)| m.clone()).collect();
            names.sort();
            names.dedup();
            let ids = self.measurement_ids(&names).await?;
            for (s, m) in measurement_of {
                let token = ids[&m];
                self.tokens.set_token(s, token);
                out.insert(SeriesId(s as u64), token);
            }
        }
        Ok(out)
    }

    /// The id of each measurement, issuing ids for names that have none.
    async fn measurement_ids(&self, names: &[String]) -> Result<HashMap<String, u64>> {
        let mut ids = self.lookup_measurements(names).await?;
        let missing: Vec<&String> = names.iter().filter(|n| !ids.contains_key(*n)).collect();
        if !missing.is_empty() {
            let last = self
                .collection(COUNTERS)
                .find_one_and_update(
                    doc! { "_id": MEASUREMENTS },
                    doc! { "$inc": { "n": missing.len() as i64 } },
                )
                .upsert(true)
                .return_document(ReturnDocument::After)
                .await
                .map_err(|e| map_err("issue measurement ids", e))?
                .ok_or_else(|| corrupt("measurement counter upsert returned nothing"))?;
            let first = need_i64(&last, "n")? - missing.len() as i64 + 1;
            let docs = missing
                .iter()
                .enumerate()
                .map(|(i, name)| doc! { "_id": name.as_str(), "t": first + i as i64 })
                .collect();
            // A name registered meanwhile by another handle keeps its id (duplicate key):
            // read them all back.
            bulk::insert(&self.db, &self.write_concern, MEASUREMENTS, docs).await?;
            ids = self.lookup_measurements(names).await?;
        }
        Ok(ids)
    }

    async fn lookup_measurements(&self, names: &[String]) -> Result<HashMap<String, u64>> {
        let docs = find_all(
            self.collection(MEASUREMENTS)
                .find(doc! { "_id": { "$in": names.to_vec() } }),
            "read measurement ids",
        )
        .await?;
        let mut out = HashMap::new();
        for d in &docs {
            let name = d
                .get_str("_id")
                .map_err(|_| corrupt("measurement id without a name"))?;
            let token = need_i64(d, "t")? as u64;
            self.tokens.set_name(token, name.to_owned());
            out.insert(name.to_owned(), token);
        }
        Ok(out)
    }

    /// The id of a measurement, if it has one.
    pub(crate) async fn measurement_token(&self, measurement: &str) -> Result<Option<u64>> {
        let found = self.lookup_measurements(&[measurement.to_owned()]).await?;
        Ok(found.get(measurement).copied())
    }

    /// The measurement name of an id.
    pub(crate) async fn measurement_name(&self, token: u64) -> Result<Option<String>> {
        if let Some(name) = self.tokens.name(token) {
            return Ok(Some(name));
        }
        let found = self
            .collection(MEASUREMENTS)
            .find_one(doc! { "t": token as i64 })
            .await
            .map_err(|e| map_err("read measurement name", e))?;
        let Some(d) = found else { return Ok(None) };
        let name = d
            .get_str("_id")
            .map_err(|_| corrupt("measurement id without a name"))?;
        self.tokens.set_name(token, name.to_owned());
        Ok(Some(name.to_owned()))
    }
}
