//! Tag keys and values for the dashboard's pickers (`Backend::list_tag_keys`,
//! `list_tag_values`), read from the `series` collection through its index on
//! `{k.m, k.p, k.f}`.
//!
//! Cost: tag keys read the keys of every series of the measurement; tag values read the
//! series in the index range of the key's pairs starting with the prefix. The documents
//! stream through a cursor and only the answer is kept, but at a million series of one
//! measurement this is a scan of the measurement, where the embedded store answers from
//! its index in memory (`docs/format/mongodb.md`, "Listing tag keys and values").

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use tickertape_backend::{NameQuery, Result};

use crate::error::map_err;
use crate::layout::{self, tag_pair, SERIES};
use crate::selector::upper_bound;
use crate::MongoBackend;

impl MongoBackend {
    pub(crate) async fn tag_keys(
        &self,
        measurement: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        let mut first = query.collector();
        self.each_series_key(doc! { "k.m": measurement }, "list tag keys", |key| {
            key.tags.iter().for_each(|(k, _)| first.offer(k));
        })
        .await?;
        Ok(first.finish())
    }

    pub(crate) async fn tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        // The pairs `key\0prefix…`: one index range, as a `=~ ^prefix` selector reads.
        let low = tag_pair(key, query.prefix());
        let mut range = doc! { "$gte": &low };
        if let Some(high) = upper_bound(&low) {
            range.insert("$lt", high);
        }
        let filter = doc! { "k.m": measurement, "k.p": { "$elemMatch": range } };
        let mut first = query.collector();
        self.each_series_key(filter, "list tag values", |series| {
            if let Some((_, value)) = series.tags.iter().find(|(k, _)| k == key) {
                first.offer(value);
            }
        })
        .await?;
        Ok(first.finish())
    }

    /// Calls `each` with the key of every series `filter` finds, one document at a time.
    async fn each_series_key(
        &self,
        filter: Document,
        what: &str,
        mut each: impl FnMut(&tickertape_core::SeriesKey),
    ) -> Result<()> {
        let mut cursor = self
            .read_db
            .collection::<Document>(SERIES)
            .find(filter)
            .projection(doc! { "_id": 0, "k": 1 })
            .await
            .map_err(|e| map_err(what, e))?;
        while let Some(d) = cursor.try_next().await.map_err(|e| map_err(what, e))? {
            each(&layout::parse_key(&d)?);
        }
        Ok(())
    }
}
