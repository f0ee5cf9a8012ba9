//! The collection `tag_values`: one document per (measurement, tag key, value) some
//! registered series has, so that the dashboard's pickers (`Backend::list_tag_keys`,
//! `list_tag_values`) read a short range of the `_id` index instead of the series
//! (`docs/format/mongodb.md`, "`tag_values`").
//!
//! `_id` is `measurement NUL key NUL value`: the values of one key are the contiguous range
//! after `measurement NUL key NUL`, in order, and those starting with `p` a sub-range, as
//! `k.p` is laid out for the tag index. Entries are written before the series document
//! that has them (`register`), removed only when a delete removes the last series that
//! had them (`forget_tag_values`): a listing may name a value whose series all lost their
//! points to retention, never miss one a series has (but for a registration racing the
//! removal of the last other series with that value, whose entry may then go missing). A name holding NUL could
//! make two entries' `_id` equal or split one wrongly; line protocol names do not.

use mongodb::bson::{doc, Document};
use std::collections::BTreeSet;
use tickertape_backend::{NameQuery, Result};
use tickertape_core::SeriesKey;

use crate::bulk;
use crate::error::{corrupt, map_err};
use crate::find::find_all;
use crate::layout::{self, META, SERIES, TAG_VALUES};
use crate::selector::prefix_range;
use crate::Shared;

/// Series documents read per round trip of the backfill.
const BACKFILL_BATCH: usize = 1000;

/// `_id` of the `meta` document that says every series' tags are in `tag_values`.
const BACKFILLED: &str = "tag_values";

fn entry_id(measurement: &str, key: &str, value: &str) -> String {
    format!("{measurement}\0{key}\0{value}")
}

/// The entries of `keys`' tags, each once.
fn entries<'a>(keys: impl IntoIterator<Item = &'a SeriesKey>) -> Vec<Document> {
    let ids: BTreeSet<String> = keys
        .into_iter()
        .flat_map(|k| {
            k.tags
                .iter()
                .map(|(key, value)| entry_id(&k.measurement, key, value))
        })
        .collect();
    ids.into_iter().map(|id| doc! { "_id": id }).collect()
}

/// `{_id: {$gte: low, $lt: …}}`: every `_id` starting with `low`.
fn starting_with(low: &str) -> Document {
    doc! { "_id": prefix_range(low) }
}

impl Shared {
    /// Records the tags of series about to be registered. An entry already there is a
    /// duplicate key, which `bulk::insert` reports as not inserted, not as a failure.
    pub(crate) async fn record_tag_values<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a SeriesKey>,
    ) -> Result<()> {
        let entries = entries(keys);
        if !entries.is_empty() {
            bulk::insert(&self.db, &self.write_concern, TAG_VALUES, entries).await?;
        }
        Ok(())
    }

    /// Removes the entries of `removed` (keys of series just removed) that no registered
    /// series has any more: one indexed `find` (`k.m`, `k.p`) per entry, then one delete.
    pub(crate) async fn forget_tag_values(&self, removed: &[SeriesKey]) -> Result<()> {
        let mut unused = Vec::new();
        let pairs: BTreeSet<(&str, &str, &str)> = removed
            .iter()
            .flat_map(|k| {
                k.tags
                    .iter()
                    .map(|(key, value)| (k.measurement.as_str(), key.as_str(), value.as_str()))
            })
            .collect();
        for (m, key, value) in pairs {
            let still = self
                .collection(SERIES)
                .find_one(doc! { "k.m": m, "k.p": layout::tag_pair(key, value) })
                .projection(doc! { "_id": 1 })
                .await
                .map_err(|e| map_err("look for a tag value's series", e))?;
            if still.is_none() {
                unused.push(entry_id(m, key, value));
            }
        }
        if !unused.is_empty() {
            self.collection(TAG_VALUES)
                .delete_many(doc! { "_id": { "$in": unused } })
                .await
                .map_err(|e| map_err("forget tag values", e))?;
        }
        Ok(())
    }

    /// The values of `key`: one index range, read in order, at most `limit` entries.
    pub(crate) async fn tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        let before_value = entry_id(measurement, key, "");
        let docs = find_all(
            self.collection(TAG_VALUES)
                .find(starting_with(&format!("{before_value}{}", query.prefix())))
                .sort(doc! { "_id": 1 })
                .limit(query.limit() as i64),
            "list tag values",
        )
        .await?;
        docs.iter()
            .map(|d| {
                let id = d
                    .get_str("_id")
                    .map_err(|_| corrupt("tag_values entry without a string _id"))?;
                id.strip_prefix(&before_value)
                    .map(str::to_owned)
                    .ok_or_else(|| corrupt(format!("tag_values entry {id:?} outside its range")))
            })
            .collect()
    }

    /// The keys: a skip scan, one `findOne` per key. Each finds the first entry past every
    /// value of the key before it (`measurement NUL key \x01` sorts after all of them).
    pub(crate) async fn tag_keys(
        &self,
        measurement: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        let before_key = format!("{measurement}\0");
        let wanted = starting_with(&format!("{before_key}{}", query.prefix()));
        let mut keys = Vec::new();
        let mut from = format!("{before_key}{}", query.prefix());
        while keys.len() < query.limit() {
            let mut filter = wanted.clone();
            if let Ok(range) = filter.get_document_mut("_id") {
                range.insert("$gte", &from);
            }
            let next = self
                .collection(TAG_VALUES)
                .find_one(filter)
                .sort(doc! { "_id": 1 })
                .await
                .map_err(|e| map_err("list tag keys", e))?;
            let Some(next) = next else { break };
            let id = next
                .get_str("_id")
                .map_err(|_| corrupt("tag_values entry without a string _id"))?;
            let key = id
                .strip_prefix(&before_key)
                .and_then(|rest| rest.split('\0').next())
                .ok_or_else(|| corrupt(format!("tag_values entry {id:?} outside its range")))?;
            from = format!("{before_key}{key}\u{1}");
            keys.push(key.to_owned());
        }
        Ok(keys)
    }

    /// Records the tags of every series registered before `tag_values` existed, once per
    /// store (the `meta` mark). Safe with several handles at once: entries are idempotent.
    pub(crate) async fn backfill_tag_values(&self) -> Result<()> {
        let done = self
            .collection(META)
            .find_one(doc! { "_id": BACKFILLED })
            .await
            .map_err(|e| map_err("read backfill state", e))?;
        if done.is_some() {
            return Ok(());
        }
        let mut after = i64::MIN;
        let mut series = 0_u64;
        loop {
            let docs = find_all(
                self.collection(SERIES)
                    .find(doc! { "_id": { "$gt": after } })
                    .projection(doc! { "_id": 1, "k": 1 })
                    .sort(doc! { "_id": 1 })
                    .limit(BACKFILL_BATCH as i64),
                "read series for the tag_values backfill",
            )
            .await?;
            let Some(last) = docs.last() else { break };
            after = layout::need_i64(last, "_id")?;
            let keys = docs
                .iter()
                .map(layout::parse_key)
                .collect::<Result<Vec<_>>>()?;
            self.record_tag_values(&keys).await?;
            series += docs.len() as u64;
            if docs.len() < BACKFILL_BATCH {
                break;
            }
        }
        let mark = doc! { "_id": BACKFILLED, "v": 1_i64 };
        bulk::insert(&self.db, &self.write_concern, META, vec![mark]).await?;
        if series > 0 {
            tracing::info!(series, "tags of existing series recorded in tag_values");
        }
        Ok(())
    }
}
