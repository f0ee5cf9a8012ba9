//! `stats`: what `/metrics` shows of the store, from the server's own counters (`dbStats`,
//! collection metadata): no collection is scanned.

use mongodb::bson::{doc, Bson};
use tickertape_backend::{Result, StorageStats};

use crate::error::map_err;
use crate::layout::SERIES;
use crate::Shared;

impl Shared {
    /// Data plus index bytes from `dbStats`; series and value documents from each
    /// collection's metadata count; the rollup lag as this handle knows it.
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
        let count = |collection: String| async move {
            self.collection(&collection)
                .estimated_document_count()
                .await
                .map_err(|e| map_err("count documents", e))
        };
        let mut segments = 0;
        for p in self.partitions().await? {
            if p.resolution.is_none() {
                segments += count(p.collection()).await?;
            }
        }
        Ok(StorageStats {
            bytes: number("dataSize") + number("indexSize"),
            segments,
            series: count(SERIES.to_owned()).await?,
            memory_points: 0,
            index_memory_bytes: 0,
            rollup_lag_points: self.lag.points(),
        })
    }
}
