//! `stats`: what `/metrics` shows of the store, from the server's own counters (`dbStats`,
//! collection metadata): no collection is scanned, and the commands do not grow with the
//! number of collections: `dbStats`, one `listCollections` and one `aggregate` whose
//! `$collStats` stages read every counted collection's metadata count (`$unionWith`).

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{Result, StorageStats};

use crate::error::map_err;
use crate::layout::SERIES;
use crate::Shared;

impl Shared {
    /// Data plus index bytes from `dbStats`; series and value documents from each
    /// collection's metadata count; the rollup lag as this handle knows it. Three
    /// commands, whatever the number of collections.
    pub(crate) async fn read_stats(&self) -> Result<StorageStats> {
        let reply = self
            .db
            .run_command(doc! { "dbStats": 1, "scale": 1 })
            .await
            .map_err(|e| map_err("dbStats", e))?;
        let number = |field: &str| match reply.get(field) {
            Some(Bson::Int32(v)) => (*v).max(0) as u64,
            Some(Bson::Int64(v)) => (*v).max(0) as u64,
            Some(Bson::Double(v)) if *v > 0.0 => *v as u64,
            _ => 0,
        };
        let counts = self.metadata_counts().await?;
        let segments = counts
            .iter()
            .filter(|(name, _)| name.starts_with("sv."))
            .map(|(_, n)| n)
            .sum();
        Ok(StorageStats {
            bytes: number("dataSize") + number("indexSize"),
            segments,
            series: counts
                .iter()
                .filter(|(name, _)| name == SERIES)
                .map(|(_, n)| n)
                .sum(),
            memory_points: 0,
            index_memory_bytes: 0,
            rollup_lag_points: self.lag.points(),
        })
    }
}

impl Shared {
    /// The metadata count (`$collStats`, no scan) of `series` and of every value
    /// collection, by collection name, from one `aggregate` (on a sharded cluster, one row
    /// per shard, which the callers add up). When a collection went between the listing
    /// and the count (retention dropped it), the counts are taken one collection at a
    /// time instead, a missing collection counting 0.
    async fn metadata_counts(&self) -> Result<Vec<(String, u64)>> {
        let mut names = vec![SERIES.to_owned()];
        names.extend(
            self.partitions()
                .await?
                .into_iter()
                .filter(|p| p.resolution.is_none())
                .map(|p| p.collection()),
        );
        let stage = || doc! { "$collStats": { "count": {} } };
        let mut pipeline = vec![stage()];
        pipeline.extend(
            names[1..]
                .iter()
                .map(|name| doc! { "$unionWith": { "coll": name, "pipeline": [stage()] } }),
        );
        let rows: std::result::Result<Vec<Document>, _> =
            match self.collection(SERIES).aggregate(pipeline).await {
                Ok(cursor) => cursor.try_collect().await,
                Err(e) => Err(e),
            };
        let Ok(rows) = rows else {
            let mut counts = Vec::with_capacity(names.len());
            for name in names {
                let n = self
                    .collection(&name)
                    .estimated_document_count()
                    .await
                    .map_err(|e| map_err("count documents", e))?;
                counts.push((name, n));
            }
            return Ok(counts);
        };
        let prefix = format!("{}.", self.db.name());
        Ok(rows
            .iter()
            .filter_map(|row| {
                let name = row.get_str("ns").ok()?.strip_prefix(&prefix)?.to_owned();
                let n = match row.get("count") {
                    Some(Bson::Int32(v)) => (*v).max(0) as u64,
                    Some(Bson::Int64(v)) => (*v).max(0) as u64,
                    Some(Bson::Double(v)) if *v > 0.0 => *v as u64,
                    _ => 0,
                };
                Some((name, n))
            })
            .collect())
    }
}
