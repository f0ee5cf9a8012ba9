//! `tickertape admin`: operations on a store's deployment rather than its data.

use anyhow::{bail, Context, Result};
use tickertape_backend::{BackendError, DeleteRange, SnapshotTarget};
use tickertape_core::time::{format_duration, format_rfc3339, parse_timestamp};
use tickertape_core::{SeriesSelector, TagCondition};
use tickertape_mongodb::MongoBackend;

use crate::store::{DatabaseArg, StoreArgs};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// MongoDB only: enable sharding on the store's database and shard each partition
    /// collection on its key, the next period's included (docs/format/mongodb.md,
    /// "Sharding"); `--plan` prints the plan as JSON instead. Must be run through a mongos;
    /// on any other server it says so and changes nothing.
    Shard(ShardArgs),
    /// Drop now every time partition past its retention (`retention` in --config): whole
    /// partitions whose newest possible point is older than the retention. `serve` does
    /// the same on a schedule (--retention-every).
    Retention(RetentionArgs),
    /// Compute a measurement's rollups in a range again from its raw points (drops and
    /// refills the rollup partitions it overlaps). The repair for rollups that missed
    /// points when a writer died between its raw and its rollup write. Run it while
    /// nothing writes to the measurement.
    RebuildRollups(RebuildArgs),
    /// Bring the store to its smallest form: the embedded store flushes the points held in
    /// memory and the write-ahead log into part files and merges every time partition into
    /// one file; MongoDB folds every series' value documents, with their rollups. Both do
    /// this in the background as data arrives; a running server does it on
    /// `POST /api/v1/admin/compact`. Embedded: run it while no server has the store open.
    Compact(CompactArgs),
    /// Write every stored raw point as InfluxDB line protocol (ns timestamps), one line per
    /// point, to --out (a file, or `-` for standard output); `tickertape import` reads it
    /// back into any store (docs/scale-out.md). Stale markers are left out; rollups are
    /// not exported (the importing store derives its own). Embedded: run it while no
    /// server has the store open.
    Export(super::export::Args),
    /// API tokens for `serve --auth`: create (prints the token once), list, revoke. Works
    /// while a server runs on the store; it takes a change into account within a second.
    #[command(subcommand)]
    Token(super::token::Command),
    /// Delete the points of the series a selection matches, in [--start, --end) or, with
    /// neither, whole: a series left with no point leaves the catalog (listings, pickers),
    /// and writing its key again starts a new series. Deleted points never come back.
    /// A bucket measurement is deleted whole only. Embedded: run it while no server has
    /// the store open (a server takes `POST /api/v1/admin/delete`).
    Delete(DeleteArgs),
    /// The store's databases (InfluxDB's `db`, namespaces of series): list, create, drop.
    /// Embedded: run it while no server has the store open (a server takes
    /// `POST`/`DELETE /api/v1/admin/databases` and InfluxQL's `CREATE`/`DROP DATABASE`).
    #[command(subcommand)]
    Database(super::database::Command),
    /// Copy an embedded store into --out, a store of its own (`serve --store OUT` opens
    /// it; copy it back to restore): part files hard-linked where the file system allows,
    /// the rest copied. Opens the store itself, so no server may hold it: a running
    /// server takes snapshots on `POST /api/v1/admin/snapshot`. MongoDB stores are backed
    /// up with MongoDB's own tools (docs/backup.md).
    Snapshot(SnapshotArgs),
}

#[derive(clap::Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub database: DatabaseArg,
    /// The measurement whose series to delete (required: a delete names what it deletes).
    #[arg(long, short)]
    pub measurement: String,
    /// Only series with this tag: KEY=VALUE or KEY:VALUE, or KEY!=VALUE, KEY=~REGEX,
    /// KEY!~REGEX (anchored; a missing tag counts as empty); repeat for several (all must
    /// match).
    #[arg(long = "tag", short)]
    pub tags: Vec<String>,
    /// Only series of this field.
    #[arg(long, short)]
    pub field: Option<String>,
    /// Range start, inclusive: RFC 3339 or integer nanoseconds (default: the beginning).
    #[arg(long)]
    pub start: Option<String>,
    /// Range end, exclusive: RFC 3339 or integer nanoseconds (default: the end of time).
    #[arg(long)]
    pub end: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The snapshot's directory: must not exist, or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(clap::Args, Debug)]
pub struct RebuildArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The measurement whose rollups to rebuild.
    #[arg(long, short)]
    pub measurement: String,
    /// Range start, inclusive: RFC 3339 or integer nanoseconds.
    #[arg(long)]
    pub start: String,
    /// Range end, exclusive: RFC 3339 or integer nanoseconds.
    #[arg(long)]
    pub end: String,
}

#[derive(clap::Args, Debug)]
pub struct RetentionArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// List what would be dropped, drop nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(clap::Args, Debug)]
pub struct ShardArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the plan instead, as JSON: every collection (present, and the next period's
    /// partitions) with its shard key, whether it is sharded, and why. Changes nothing;
    /// works on any MongoDB server, a non-mongos included.
    #[arg(long)]
    pub plan: bool,
}

pub async fn run(command: Command) -> Result<()> {
    match command {
        Command::Shard(args) => shard(args).await,
        Command::Retention(args) => retention(args).await,
        Command::RebuildRollups(args) => rebuild_rollups(args).await,
        Command::Compact(args) => compact(args).await,
        Command::Export(args) => super::export::run(args).await,
        Command::Token(command) => super::token::run(command).await,
        Command::Delete(args) => delete(args).await,
        Command::Snapshot(args) => snapshot(args).await,
        Command::Database(command) => super::database::run(command).await,
    }
}

async fn snapshot(args: SnapshotArgs) -> Result<()> {
    let started = std::time::Instant::now();
    if args.store.is_mongodb() {
        // Refused before connecting: `connect` creates the store's collections.
        return Err(BackendError::Unsupported(tickertape_mongodb::BACKUP_TOOLS.into()).into());
    }
    let backend = args.store.open().await.map_err(|e| {
        // redb locks the store's file: a second process is refused with `Unavailable`.
        let held = e
            .chain()
            .any(|c| matches!(c.downcast_ref(), Some(BackendError::Unavailable(_))));
        match held {
            true => e.context(
                "a server holds this store: ask it for the snapshot with \
                 `POST /api/v1/admin/snapshot` (curl -X POST http://HOST:PORT/api/v1/admin/snapshot), \
                 or stop it first",
            ),
            false => e,
        }
    })?;
    let report = backend
        .snapshot(SnapshotTarget::Exact(args.out.clone()))
        .await
        .with_context(|| {
            format!(
                "snapshot of {} into --out {}",
                args.store.store,
                args.out.display()
            )
        })?;
    println!(
        "snapshot of {} in {}: {} files linked, {} copied ({} bytes) in {:.2} s ({:.3} s of it with writes paused)",
        args.store.store,
        report.path.display(),
        report.files_linked,
        report.files_copied,
        report.bytes_copied,
        started.elapsed().as_secs_f64(),
        report.writes_paused.as_secs_f64()
    );
    Ok(())
}

async fn compact(args: CompactArgs) -> Result<()> {
    let backend = args.store.open().await?;
    let before = backend.stats().await?;
    let started = std::time::Instant::now();
    backend.compact().await?;
    let after = backend.stats().await?;
    println!(
        "compacted {} in {:.1} s: {} bytes before, {} after",
        args.store.store,
        started.elapsed().as_secs_f64(),
        before.bytes,
        after.bytes
    );
    Ok(())
}

async fn delete(args: DeleteArgs) -> Result<()> {
    let mut selector = SeriesSelector {
        measurement: args.measurement.clone(),
        field: args.field.clone(),
        ..SeriesSelector::default()
    };
    for text in &args.tags {
        selector.add_condition(tag_condition(text)?);
    }
    let time = |name: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| parse_timestamp(t).with_context(|| format!("--{name} {t:?}")))
            .transpose()
    };
    let range = DeleteRange::new(time("start", &args.start)?, time("end", &args.end)?)
        .context("--start must be before --end")?;
    let engine = args.database.engine(&args.store).await?;
    let report = engine.delete(&selector, range).await?;
    let span = match (range.start(), range.end()) {
        (i64::MIN, None) => "at every time".to_owned(),
        (start, end) => format!(
            "in [{}, {})",
            format_rfc3339(start),
            end.map_or_else(|| "the end of time".to_owned(), format_rfc3339)
        ),
    };
    let database = match args.database.db {
        Some(_) => format!(" in database {}", engine.database_name()),
        None => String::new(),
    };
    println!(
        "deleted the points {span} of {} series of {}{database}; {} series left with no point \
         removed",
        report.series_matched, args.measurement, report.series_removed
    );
    Ok(())
}

/// A `--tag`: the query API's syntax, or `KEY=VALUE` for an equality.
fn tag_condition(text: &str) -> Result<TagCondition> {
    match TagCondition::parse(text) {
        Ok(condition) => Ok(condition),
        Err(e) => match text.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                Ok(TagCondition::Equal(key.to_owned(), value.to_owned()))
            }
            _ => Err(e).with_context(|| format!("--tag {text:?}")),
        },
    }
}

async fn rebuild_rollups(args: RebuildArgs) -> Result<()> {
    let time = |name: &str, text: &str| {
        parse_timestamp(text).with_context(|| format!("--{name} {text:?}"))
    };
    let (start, end) = (time("start", &args.start)?, time("end", &args.end)?);
    if start >= end {
        bail!("--start must be before --end");
    }
    let engine = args.store.engine().await?;
    let report = engine
        .rebuild_rollups(&args.measurement, start, end)
        .await?;
    println!(
        "rebuilt {} rollup partitions of {} for {} series ({} raw points read, once per rollup resolution); {} skipped (raw points past retention)",
        report.rebuilt, args.measurement, report.series, report.points, report.skipped
    );
    Ok(())
}

async fn retention(args: RetentionArgs) -> Result<()> {
    let engine = args.store.engine().await?;
    let report = engine.apply_retention(args.dry_run).await?;
    let verb = if args.dry_run {
        "would drop"
    } else {
        "dropped"
    };
    for p in &report.dropped {
        println!(
            "{verb} {} {} partition {} .. {} (retention {})",
            p.measurement,
            p.resolution,
            format_rfc3339(p.start),
            format_rfc3339(p.end),
            format_duration(p.retention)
        );
    }
    println!(
        "{} partitions {verb}, {} kept",
        report.dropped.len(),
        report.kept
    );
    Ok(())
}

async fn shard(args: ShardArgs) -> Result<()> {
    let store = &args.store;
    if !store.is_mongodb() {
        bail!(
            "admin shard only applies to a MongoDB store (--store mongodb://HOST:PORT/DB); \
             {} is an embedded store, nothing was changed",
            store.store
        );
    }
    if args.plan {
        let backend = MongoBackend::connect(store.mongo_options()).await?;
        let plan = backend.shard_plan().await;
        backend.shutdown().await;
        println!("{}", serde_json::to_string_pretty(&plan?.to_json())?);
        return Ok(());
    }
    // Before connecting: `connect` creates the store's collections, and a refusal must
    // leave the server as it was.
    tickertape_mongodb::ensure_mongos(&store.store).await?;
    let backend = MongoBackend::connect(store.mongo_options()).await?;
    let report = backend.shard().await;
    backend.shutdown().await;
    let report = report?;
    for action in &report.actions {
        println!("{action}");
    }
    Ok(())
}
