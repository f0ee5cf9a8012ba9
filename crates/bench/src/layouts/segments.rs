//! Value points through `Backend::append`: row b on MongoDB (value partitions: a delta
//! document per series and partition per request, folded by `Backend::compact`), row s on
//! the embedded store. One request = one `append` call with every series' points of one
//! body (a `--batch` chunk and its late points, see `Ctx::bodies`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::schema::Schema;
use tickertape_core::{Point, SeriesId};
use tickertape_engine::Engine;

use super::pushdocs::last_writes;
use super::queries::engine_queries;
use super::{mongo, ms, Ctx, Outcome, Row, Sealed};

/// The schema the engine reads the rows with: value segments (the default layout) without
/// rollups, so the store derives none: the bytes compared with row a are raw points alone,
/// the compaction folds points only, and windowed queries read raw points.
const SCHEMA: &str = r#"
[measurements.cpu]
layout = "segments"
rollups = []
"#;

/// How long the MongoDB backend keeps the documents a fold replaced (marked superseded,
/// for readers that saw them before the fold): 60 s (`values::fold::SUPERSEDED_GRACE_MS`
/// in `tickertape-mongodb`), and a second past it. A compaction within the grace leaves
/// them in place; the next one after it deletes them.
const SUPERSEDED_GRACE: Duration = Duration::from_secs(61);

/// What to do after the timed writes and the first storage figures.
pub(super) enum After<'a> {
    /// Nothing (the embedded store: its files are measured once it is closed).
    Nothing,
    /// `Backend::compact`, then `collStats` of `db` and the queries again; after
    /// [`SUPERSEDED_GRACE`], the same again.
    Compact(&'a mongodb::Database),
}

pub(super) async fn run(
    ctx: &Ctx<'_>,
    backend: Arc<dyn Backend>,
    after: After<'_>,
) -> Result<Outcome> {
    // Before anything is written: setting the rollup plan wakes MongoDB's fold task for
    // its first pass, which then finds an empty database rather than adding its round
    // trips to the writes' or the compaction's.
    let schema = Schema::from_toml(SCHEMA).context("the bench's segment schema")?;
    let engine = Engine::new(backend.clone()).with_schema(schema);
    let ids = super::resolve(&*backend, ctx.data).await?;
    let bodies = ctx.bodies();
    let requests: Vec<(usize, Vec<SeriesAppend>)> = bodies
        .iter()
        .map(|body| Ok((body.chunk, appends(&body.rows, &ids)?)))
        .collect::<Result<_>>()?;
    let mut outcome = Outcome::default();
    let before = ctx.round_trips_now();
    let store = &backend;
    outcome
        .send_all(requests, ctx.limit(), |appends| async move {
            store.append(appends).await?;
            Ok(())
        })
        .await?;
    outcome.count_late(&bodies);
    if ctx.round_trips.is_some() {
        outcome.round_trips = Some(ctx.round_trips_now() - before);
    }
    if let After::Compact(db) = after {
        outcome.storage = Some(mongo::storage(db, &mut outcome.note).await);
    }
    outcome.queries_ms = engine_queries(&engine, ctx.data, ctx.args.query_runs).await;
    if let After::Compact(db) = after {
        let first = "(b') the same after Backend::compact";
        let step = compact(ctx, first, &*backend, &engine, db, &mut outcome.note).await?;
        outcome.sealed.push(step);
        tokio::time::sleep(SUPERSEDED_GRACE).await;
        let second = "(b'') 61 s later, compact again";
        let step = compact(ctx, second, &*backend, &engine, db, &mut outcome.note).await?;
        outcome.sealed.push(step);
    }
    Ok(outcome)
}

/// `Backend::compact`, timed and its round trips counted, then the storage and the
/// queries after it.
async fn compact(
    ctx: &Ctx<'_>,
    name: &'static str,
    backend: &dyn Backend,
    engine: &Engine,
    db: &mongodb::Database,
    note: &mut Option<String>,
) -> Result<Sealed> {
    let before = ctx.round_trips_now();
    let started = Instant::now();
    backend.compact().await.context("Backend::compact")?;
    let ms = ms(started.elapsed());
    Ok(Sealed {
        name,
        ms,
        round_trips: ctx.round_trips.map(|_| ctx.round_trips_now() - before),
        storage: mongo::storage(db, note).await,
        queries_ms: engine_queries(engine, ctx.data, ctx.args.query_runs).await,
    })
}

/// One body as one append per series, as the engine makes them (`write::group`): the
/// series' points of the body by time, and of several at one time the last one (the
/// body's own last write wins, as a later body's would).
fn appends(rows: &[Row], ids: &[SeriesId]) -> Result<Vec<SeriesAppend>> {
    let mut per_series: Vec<(SeriesId, Vec<Point>)> = Vec::new();
    // Series → its index in `per_series`.
    let mut index: HashMap<SeriesId, usize> = HashMap::new();
    for r in rows {
        let id = ids[r.series];
        let i = *index.entry(id).or_insert_with(|| {
            per_series.push((id, Vec::new()));
            per_series.len() - 1
        });
        per_series[i].1.push(Point::new(r.time, r.value));
    }
    per_series
        .into_iter()
        .map(|(id, points)| Ok(SeriesAppend::new(id, last_writes(points))?))
        .collect()
}
