//! The store the benches run their in-process server on: an embedded store in a fresh
//! directory, with the schema of `--config` (the defaults without it).
//!
//! The bench opens the library crates directly rather than through the CLI's `--store`
//! handling: it only ever needs a local embedded store, and the CLI is a binary, not a
//! library.

use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;
use tickertape_core::schema::Schema;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::Engine;

/// The embedded store at `dir` opened, with the engine over it.
pub async fn open_engine(dir: &Path, config: Option<&Path>) -> Result<Engine> {
    let schema = match config {
        Some(path) => read_schema(path)?,
        None => Schema::default(),
    };
    let options = EmbeddedOptions::new(dir);
    let backend = tokio::task::spawn_blocking(move || EmbeddedBackend::open(options))
        .await
        .context("opening the store")?
        .with_context(|| format!("cannot open the store at {}", dir.display()))?;
    Ok(Engine::new(Arc::new(backend)).with_schema(schema))
}

/// A new embedded store in `dir` served on a free loopback port with the default settings
/// until the bench ends; its base URL.
pub async fn serve_new_store(dir: &Path) -> Result<String> {
    let engine = open_engine(dir, None).await?;
    serve_engine(engine).await
}

/// `engine` served on a free loopback port with the default settings until the bench
/// ends; its base URL.
pub async fn serve_engine(engine: Engine) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(tickertape_server::serve(
        listener,
        engine,
        tickertape_server::ServerConfig::default(),
        std::future::pending(),
    ));
    Ok(url)
}

/// The schema of a TOML config; a bad config is refused with its key.
fn read_schema(path: &Path) -> Result<Schema> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the config {}", path.display()))?;
    Schema::from_toml(&text).with_context(|| format!("config {}", path.display()))
}
