//! Opening a store from `--store`: a directory for the embedded backend (the default), or
//! a `mongodb://` / `mongodb+srv://` URI.

use anyhow::{Context, Result};
use clap::Args;
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::segment::DEFAULT_SEGMENT_CAPACITY;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

/// The store options every command that opens a store shares.
#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Where data lives: a directory (embedded store) or a MongoDB URI
    /// (mongodb://HOST:PORT/DB).
    #[arg(long, env = "TICKERTAPE_STORE", default_value = "./tickertape-data")]
    pub store: String,
    /// Points per value segment (new segments only).
    #[arg(long, default_value_t = DEFAULT_SEGMENT_CAPACITY)]
    pub segment_capacity: usize,
}

impl StoreArgs {
    pub fn is_mongodb(&self) -> bool {
        self.store.starts_with("mongodb://") || self.store.starts_with("mongodb+srv://")
    }

    pub async fn open(&self) -> Result<Arc<dyn Backend>> {
        if self.is_mongodb() {
            return crate::store::open_mongodb(self).await;
        }
        let mut options = EmbeddedOptions::new(&self.store);
        options.segment_capacity = self.segment_capacity;
        let backend = tokio::task::spawn_blocking(move || EmbeddedBackend::open(options))
            .await
            .context("opening the store")?
            .with_context(|| format!("cannot open the store at {}", self.store))?;
        Ok(Arc::new(backend))
    }
}

async fn open_mongodb(args: &StoreArgs) -> Result<Arc<dyn Backend>> {
    anyhow::bail!(
        "MongoDB stores are not wired into the CLI yet ({})",
        args.store
    )
}
