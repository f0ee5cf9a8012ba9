//! Opening a store from `--store`: a directory for the embedded backend (the default), or
//! a `mongodb://` / `mongodb+srv://` URI.

use anyhow::{Context, Result};
use clap::Args;
use std::sync::Arc;
use tickertape_backend::{Backend, TokenStore};
use tickertape_core::schema::Schema;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions, TokenFile};
use tickertape_engine::Engine;
use tickertape_mongodb::{MongoBackend, MongoOptions, ReadMode};

/// The store options every command that opens a store shares.
#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Where data lives: a directory (embedded store) or a MongoDB URI
    /// (mongodb://HOST:PORT/DB).
    #[arg(long, env = "TICKERTAPE_STORE", default_value = "./tickertape-data")]
    pub store: String,
    /// Embedded store: the width of a time partition of raw points (retention drops whole
    /// partitions), fixed when the store is created; an existing store keeps its own.
    #[arg(long, default_value = "1d", value_parser = parse_width)]
    pub partition: i64,
    /// Embedded store: part files kept open at most; the others are opened when a read
    /// needs them, so any number of parts runs within the descriptor limit. Default: 256,
    /// or a quarter of the descriptor limit (RLIMIT_NOFILE) when that is less.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub open_parts: Option<u64>,
    /// MongoDB: the width of a time slice, what a value document never spans and
    /// retention drops per measurement, e.g. `1d` or `6h`; every measurement's points
    /// share one collection per 14 slices, rollups one per resolution and 56 slices.
    /// Without it an existing database keeps its own width and a new one gets 1d; with
    /// it, a database written with another width is refused.
    #[arg(long, value_name = "WIDTH", value_parser = parse_width)]
    pub mongo_partition: Option<i64>,
    /// MongoDB write concern `w` (overrides the URI's `w=`): majority, or a number of members.
    #[arg(long)]
    pub write_concern: Option<String>,
    /// MongoDB: wait for the journal before acknowledging (overrides the URI's `journal=`).
    #[arg(long)]
    pub journal: Option<bool>,
    /// The name of the default database: where a request naming no database (`db`,
    /// `bucket`, `/prometheus/db/<name>/`) or this name reads and writes, and where a store
    /// written before databases existed keeps its data. Name it after the database your
    /// clients already write to (Telegraf's `telegraf`) to keep their older data with them.
    #[arg(long, env = "TICKERTAPE_DEFAULT_DATABASE", default_value = tickertape_engine::DEFAULT_DATABASE)]
    pub default_database: String,
    /// Per-measurement schema (layouts, rollups, retention, change-only filter) in TOML;
    /// measurements it does not list get the defaults.
    #[arg(long, env = "TICKERTAPE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// How long every measurement the config does not list keeps its data, e.g.
    /// `raw=30d,1h=1y` (levels: `raw` and the default rollups, `1h` and `1d`); listed
    /// value-segment measurements without a `retention` of their own take it too. Replaces
    /// `[defaults] retention` of `--config`. Default: kept forever.
    #[arg(long, env = "TICKERTAPE_RETENTION", value_name = "LEVEL=DURATION,...")]
    pub retention: Option<String>,
    /// MongoDB read preference for queries (overrides the URI's `readPreference=`):
    /// primary, primaryPreferred, secondary, secondaryPreferred or nearest.
    #[arg(long)]
    pub read_preference: Option<ReadMode>,
}

impl StoreArgs {
    /// The MongoDB options these flags ask for. Without `--mongo-partition`, an existing
    /// database keeps the layout it was written with (a new one gets the defaults).
    pub fn mongo_options(&self) -> MongoOptions {
        let mut options = MongoOptions::new(&self.store);
        options.adopt_stored_layout = true;
        if let Some(width) = self.mongo_partition {
            options.partition_ns = width;
            options.adopt_stored_layout = false;
        }
        options.w = self.write_concern.clone();
        options.journal = self.journal;
        options.read_mode = self.read_preference;
        options
    }

    /// The schema of `--config` and `--retention`, or the defaults; a bad config is
    /// refused with its key.
    pub fn schema(&self) -> Result<Schema> {
        let retention = self.retention.as_deref();
        let Some(path) = &self.config else {
            return Ok(Schema::from_toml_with_retention("", retention)?);
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config {}", path.display()))?;
        let schema = Schema::from_toml_with_retention(&text, retention)
            .with_context(|| format!("config {}", path.display()))?;
        Ok(schema)
    }

    /// The store opened, with the engine over it and the schema of `--config`.
    pub async fn engine(&self) -> Result<Engine> {
        let schema = self.schema()?;
        let engine = Engine::new(self.open().await?)
            .with_schema(schema)
            .with_default_database(&self.default_database)?;
        if self.config.is_some() || self.retention.is_some() {
            engine
                .check_schema_fits_store()
                .await
                .context("the config and --retention")?;
        }
        Ok(engine)
    }

    pub fn is_mongodb(&self) -> bool {
        self.store.starts_with("mongodb://") || self.store.starts_with("mongodb+srv://")
    }

    pub async fn open(&self) -> Result<Arc<dyn Backend>> {
        if self.is_mongodb() {
            return crate::store::open_mongodb(self).await;
        }
        if self.mongo_partition.is_some() {
            anyhow::bail!(
                "--mongo-partition applies to MongoDB stores only: the embedded store at {} \
                 takes its partition width from --partition",
                self.store
            );
        }
        let mut options = EmbeddedOptions::new(&self.store);
        options.partition_ns = self.partition;
        let open_parts = crate::descriptors::budget(self.open_parts, None).open_parts;
        options.open_parts = usize::try_from(open_parts).unwrap_or(usize::MAX);
        let backend = tokio::task::spawn_blocking(move || EmbeddedBackend::open(options))
            .await
            .context("opening the store")?
            .with_context(|| format!("cannot open the store at {}", self.store))?;
        Ok(Arc::new(backend))
    }
}

/// A partition width: a duration such as `1d` or `6h`.
fn parse_width(text: &str) -> Result<i64, String> {
    match tickertape_core::time::parse_duration(text) {
        Ok(ns) if ns > 0 => Ok(ns),
        Ok(_) => Err("a partition must be longer than 0".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl StoreArgs {
    /// The store's API tokens, without opening its data: the embedded store's token file
    /// can be changed while a server holds the store. On MongoDB, a connection of its own
    /// that does not fold in the background.
    pub async fn token_store(&self) -> Result<Arc<dyn TokenStore>> {
        if !self.is_mongodb() {
            return Ok(Arc::new(TokenFile::new(&self.store)));
        }
        let mut options = self.mongo_options();
        options.fold_every = std::time::Duration::from_secs(365 * 86_400);
        let backend = MongoBackend::connect(options).await?;
        // Dropping the handle stops its background task; the tokens keep its connection.
        Ok(Arc::new(backend.token_store()))
    }
}

async fn open_mongodb(args: &StoreArgs) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(MongoBackend::connect(args.mongo_options()).await?))
}

/// `--db`: the database a command reads or writes (InfluxDB's `db`), on a store opened
/// here or on the server of `--url`.
#[derive(Args, Clone, Debug, Default)]
pub struct DatabaseArg {
    /// The database to read or write: a name `tickertape admin database list` shows.
    /// Default: the default database (--default-database), where everything written
    /// without a database is.
    #[arg(long = "db", env = "TICKERTAPE_DB", value_name = "NAME")]
    pub db: Option<String>,
}

impl DatabaseArg {
    /// The engine of `--store`, working in this database. A database that does not exist
    /// is refused (as a server answers 404): a typo never makes a new namespace.
    pub async fn engine(&self, store: &StoreArgs) -> Result<Engine> {
        let engine = store.engine().await?;
        self.of(&engine).await
    }

    /// `engine`'s view of this database.
    pub async fn of(&self, engine: &Engine) -> Result<Engine> {
        match engine.database(self.db.as_deref()).await {
            Ok(engine) => Ok(engine),
            Err(tickertape_engine::EngineError::UnknownDatabase(name)) => anyhow::bail!(
                "--db {name}: database not found (`tickertape admin database list` shows \
                 the databases; `tickertape admin database create {name}` makes it)"
            ),
            Err(e) => Err(e).context("--db"),
        }
    }

    /// `&db=NAME` (URL-encoded) to append to a server's query string; empty for the
    /// default database, which a server takes a request naming none to mean.
    pub fn url_suffix(&self) -> String {
        match self.db.as_deref().filter(|d| !d.is_empty()) {
            None => String::new(),
            Some(name) => {
                let mut s = form_urlencoded::Serializer::for_suffix(String::from("&"), 1);
                s.append_pair("db", name);
                s.finish()
            }
        }
    }
}
