//! The MongoDB rows: each in a fresh database (dropped afterwards) on the server of
//! `--store`, reached through the counting relay; storage figures from `collStats`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mongodb::bson::{doc, Bson};
use mongodb::{Client, Database};
use tickertape_backend::Backend;
use tickertape_mongodb::{uri_with_database, MongoBackend, MongoOptions};

use super::relay::Relay;
use super::{
    docs, hour, minute, pushdocs, segments, selected, Args, Ctx, Data, Layout, MongoStorage,
    Outcome,
};

/// Row b's background fold task: a pass a day, longer than any run, and none that would
/// fold (`fold_docs` = `usize::MAX`, and `seal_idle`, the age of a fresh document that
/// folds it, a century). Its one early pass, when the engine sets its rollup plan, runs
/// on the empty database (see `segments::run`).
const FOLD_EVERY: Duration = Duration::from_secs(86_400);
const SEAL_IDLE: Duration = Duration::from_secs(100 * 365 * 86_400);

const ROWS: [Layout; 9] = [
    Layout::PointDocs,
    Layout::ValuePartitions,
    Layout::PushDocs,
    Layout::Native,
    Layout::SinglePoints,
    Layout::MinuteBuckets {
        preallocated: false,
    },
    Layout::MinuteBuckets { preallocated: true },
    Layout::HourBuckets {
        preallocated: false,
    },
    Layout::HourBuckets { preallocated: true },
];

pub(super) async fn run(args: &Args, data: &Data) -> Result<Vec<(Layout, Outcome)>> {
    let rows = selected(&ROWS, &args.only)?;
    let relay = Relay::start(&args.store).await?;
    let ctx = Ctx {
        args,
        data,
        round_trips: Some(&relay.count),
    };
    let mut results = Vec::new();
    for layout in rows {
        let db = format!("tt_layouts_{}_{}", std::process::id(), layout.tag());
        eprintln!("bench layouts: {} in database {db}", layout.name());
        let outcome = run_row(layout, &ctx, &relay.uri, &db)
            .await
            .unwrap_or_else(|e| Outcome::failed(format!("failed: {e:#}")));
        results.push((layout, outcome));
    }
    Ok(results)
}

/// One row in database `db_name`, which is dropped afterwards (also after a failure).
async fn run_row(layout: Layout, ctx: &Ctx<'_>, uri: &str, db_name: &str) -> Result<Outcome> {
    let db_uri = uri_with_database(uri, db_name);
    let client = Client::with_uri_str(&db_uri)
        .await
        .context("MongoDB client")?;
    let db = client.database(db_name);
    let outcome = write_and_query(layout, ctx, &db_uri, &db).await;
    let dropped = db.drop().await.context("drop database");
    client.shutdown().await;
    let outcome = outcome?;
    dropped?;
    Ok(outcome)
}

async fn write_and_query(
    layout: Layout,
    ctx: &Ctx<'_>,
    db_uri: &str,
    db: &Database,
) -> Result<Outcome> {
    match layout {
        Layout::PointDocs => docs::run(ctx, db, docs::Shape::Batched).await,
        Layout::Native => docs::run(ctx, db, docs::Shape::Native).await,
        Layout::SinglePoints => docs::run(ctx, db, docs::Shape::OnePerRequest).await,
        Layout::MinuteBuckets { preallocated } => minute::run(ctx, db, preallocated).await,
        Layout::PushDocs => pushdocs::run(ctx, db).await,
        Layout::ValuePartitions => {
            with_backend(db_uri, db, |b| {
                segments::run(ctx, b, segments::After::Compact(db))
            })
            .await
        }
        Layout::HourBuckets { preallocated } => {
            with_backend(db_uri, db, |b| hour::run(ctx, b, preallocated)).await
        }
        Layout::EmbeddedSegments => anyhow::bail!("row s runs on the embedded store only"),
    }
}

/// Runs `row` over a `MongoBackend` on `db_uri`, then reads the database's storage unless
/// the row did.
///
/// The background fold task folds nothing (see [`FOLD_EVERY`]): row b's round trips are the
/// writes' alone, and its storage after the writes is the most the deltas take (nothing
/// folded yet); its folding is measured as `Backend::compact`, on its own.
async fn with_backend<F, Fut>(db_uri: &str, db: &Database, row: F) -> Result<Outcome>
where
    F: FnOnce(Arc<dyn Backend>) -> Fut,
    Fut: std::future::Future<Output = Result<Outcome>>,
{
    let mut options = MongoOptions::new(db_uri);
    options.fold_every = FOLD_EVERY;
    options.fold_docs = usize::MAX;
    options.seal_idle = SEAL_IDLE;
    let backend = Arc::new(MongoBackend::connect(options).await?);
    let mut outcome = row(backend.clone()).await?;
    if outcome.storage.is_none() {
        outcome.storage = Some(storage(db, &mut outcome.note).await);
    }
    backend.drop_database().await?;
    Ok(outcome)
}

/// Sums `collStats` over the database's collections: documents, `nindexes × count` as the
/// index entries (every index here is on single-valued fields, so one entry per document
/// per index), `size` (BSON bytes of the documents) and `totalIndexSize`. What cannot be
/// read becomes the row's note.
pub(super) async fn storage(db: &Database, note: &mut Option<String>) -> MongoStorage {
    let mut total = MongoStorage::default();
    let names = match db.list_collection_names().await {
        Ok(n) => n,
        Err(e) => {
            *note = Some(format!("listCollections: {e}"));
            return total;
        }
    };
    for name in names.iter().filter(|n| !n.starts_with("system.")) {
        match db.run_command(doc! { "collStats": name }).await {
            Ok(s) => {
                let n = |k: &str| s.get(k).and_then(num).unwrap_or(0);
                total.documents += n("count");
                total.index_entries += n("count") * n("nindexes");
                total.data_bytes += n("size");
                total.index_bytes += n("totalIndexSize");
            }
            Err(e) => *note = Some(format!("collStats not supported: {e}")),
        }
    }
    total
}

fn num(b: &Bson) -> Option<u64> {
    match b {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        Bson::Double(v) if *v >= 0.0 => Some(*v as u64),
        _ => None,
    }
}
