//! What an operator asks of the store itself, through the engine: which store it is, its
//! statistics, a compaction, a snapshot, and how this database's raw points are laid
//! out. Callers (the server's admin routes, `/metrics`, the CLI's export) never hold the
//! backend: the engine is the one way in, and it answers in the database's own names.

use crate::{Engine, EngineError};
use std::sync::Arc;
use tickertape_backend::{SlotKind, SnapshotReport, SnapshotTarget, StorageStats};

impl Engine {
    /// The store's kind, as `--store` names it ("embedded", "mongodb", …).
    pub fn store_kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// The store's statistics, for `/metrics`.
    pub async fn store_stats(&self) -> Result<StorageStats, EngineError> {
        Ok(self.backend.stats().await?)
    }

    /// Flushes what the store holds in memory and merges its files; returns when
    /// everything mergeable is merged.
    pub async fn compact(&self) -> Result<(), EngineError> {
        Ok(self.backend.compact().await?)
    }

    /// A consistent copy of the store at `target`.
    pub async fn snapshot(&self, target: SnapshotTarget) -> Result<SnapshotReport, EngineError> {
        Ok(self.backend.snapshot(target).await?)
    }

    /// The measurements of this database whose raw points lie in bucket documents, each
    /// with its slots' interval (ns), by the names its users write: the partitions say
    /// how the store wrote a measurement, the schema how it is read.
    pub async fn stored_bucket_intervals(&self) -> Result<Vec<(String, i64)>, EngineError> {
        let partitions = self.backend.list_partitions().await?;
        let stored_names = self.measurement_names(&partitions).await?;
        let mut out: Vec<(String, i64)> = partitions
            .iter()
            .filter_map(|p| match p.family().slots() {
                SlotKind::Raw { interval_ns } => {
                    let stored = stored_names.get(&p.family().measurement())?;
                    let name = self.namespace().user(stored)?;
                    Some((name.to_string(), interval_ns))
                }
                SlotKind::Rollup(_) => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Whether this engine (with its clones) is the last holder of the store, so that
    /// dropping it closes the store (joins its threads once they flushed).
    pub fn holds_the_store_alone(&self) -> bool {
        Arc::strong_count(&self.backend) == 1
    }
}
