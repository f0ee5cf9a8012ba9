//! The embedded rows: value segments (s) and per-hour buckets with and without
//! pre-allocation (h, i), each in a fresh store directory under `--store`, removed
//! afterwards. Bytes = the length of the redb file once the store is closed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use tickertape_backend::Backend;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

use super::{hour, segments, selected, Args, Ctx, Data, Layout, Outcome};

const ROWS: [Layout; 3] = [
    Layout::EmbeddedSegments,
    Layout::HourBuckets {
        preallocated: false,
    },
    Layout::HourBuckets { preallocated: true },
];

pub(super) async fn run(args: &Args, data: &Data) -> Result<Vec<(Layout, Outcome)>> {
    let rows = selected(&ROWS, &args.only)?;
    let root = PathBuf::from(&args.store);
    let created_root = !root.exists();
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let ctx = Ctx {
        args,
        data,
        round_trips: None,
    };
    let mut results = Vec::new();
    for layout in rows {
        let dir = root.join(format!(
            "tt_layouts_{}_{}",
            std::process::id(),
            layout.tag()
        ));
        eprintln!("bench layouts: {} in {}", layout.name(), dir.display());
        let outcome = run_row(layout, &ctx, &dir)
            .await
            .unwrap_or_else(|e| Outcome::failed(format!("failed: {e:#}")));
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            eprintln!("bench layouts: cannot remove {}: {e}", dir.display());
        }
        results.push((layout, outcome));
    }
    if created_root {
        // Only if empty: never anything this run did not create.
        let _ = std::fs::remove_dir(&root);
    }
    Ok(results)
}

async fn run_row(layout: Layout, ctx: &Ctx<'_>, dir: &Path) -> Result<Outcome> {
    if dir.exists() {
        anyhow::bail!("{} exists already; not writing into it", dir.display());
    }
    // The embedded store keeps raw points in part files, not segments of a capacity.
    let options = EmbeddedOptions::new(dir);
    let backend = tokio::task::spawn_blocking(move || EmbeddedBackend::open(options))
        .await
        .context("opening the store")??;
    let backend: Arc<dyn Backend> = Arc::new(backend);
    let outcome = match layout {
        Layout::EmbeddedSegments => {
            segments::run(ctx, backend.clone(), segments::After::Nothing).await
        }
        Layout::HourBuckets { preallocated } => hour::run(ctx, backend.clone(), preallocated).await,
        other => Err(anyhow::anyhow!("row {} runs on MongoDB only", other.tag())),
    };
    close(backend).await;
    let mut outcome = outcome?;
    // The redb file, the log and the part files: every file of the store.
    outcome.file_bytes = Some(dir_bytes(dir)?);
    Ok(outcome)
}

/// Apparent size of every file under `dir`.
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += match meta.is_dir() {
            true => dir_bytes(&entry.path())?,
            false => meta.len(),
        };
    }
    Ok(total)
}

/// Drops the last handle of the store off the async threads: dropping it joins the
/// writer thread, which first drains its queue, so the file is complete afterwards.
async fn close(backend: Arc<dyn Backend>) {
    let _ = tokio::task::spawn_blocking(move || drop(backend)).await;
}
