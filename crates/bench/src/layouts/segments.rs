//! Value segments (seed 000) through `Backend::append`: rows b and c on MongoDB (the two
//! append protocols), row s on the embedded store. One request = one `append` call with
//! every series' points of one `--batch` chunk.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::schema::Schema;
use tickertape_core::{Point, SeriesId};
use tickertape_engine::Engine;

use super::queries::engine_queries;
use super::{Ctx, Outcome, Row};

/// The schema the engine reads the rows with: segments (the default layout) without
/// rollups. The writes here go to the backend, not through the engine, so no rollup
/// documents exist; with the default rollups a windowed query would read those (empty)
/// and answer only the ragged edges from raw points.
const SCHEMA: &str = r#"
[measurements.cpu]
layout = "segments"
rollups = []
"#;

pub(super) async fn run(ctx: &Ctx<'_>, backend: Arc<dyn Backend>) -> Result<Outcome> {
    let ids = super::resolve(&*backend, ctx.data).await?;
    let requests: Vec<(usize, Vec<SeriesAppend>)> = ctx
        .chunks()
        .map(|chunk| Ok((chunk.len(), appends(chunk, &ids)?)))
        .collect::<Result<_>>()?;
    let mut outcome = Outcome::default();
    let before = ctx.round_trips_now();
    let store = &backend;
    outcome
        .send_all(requests, ctx.limit(), |appends| async move {
            let outcomes = store.append(appends).await?;
            if let Some(o) = outcomes.iter().find(|o| o.refused > 0) {
                bail!("{} points refused: {o:?}", o.refused);
            }
            Ok(())
        })
        .await?;
    if ctx.round_trips.is_some() {
        outcome.round_trips = Some(ctx.round_trips_now() - before);
    }
    let schema = Schema::from_toml(SCHEMA).context("the bench's segment schema")?;
    let engine = Engine::new(backend.clone()).with_schema(schema);
    outcome.queries_ms = engine_queries(&engine, ctx.data, ctx.args.query_runs).await;
    Ok(outcome)
}

/// One chunk of the time-major stream as one append per series, in time order.
fn appends(chunk: &[Row], ids: &[SeriesId]) -> Result<Vec<SeriesAppend>> {
    let mut per_series: Vec<(SeriesId, Vec<Point>)> = Vec::new();
    for r in chunk {
        let id = ids[r.series];
        let point = Point::new(r.time, r.value);
        match per_series.iter_mut().find(|(s, _)| *s == id) {
            Some((_, points)) => points.push(point),
            None => per_series.push((id, vec![point])),
        }
    }
    per_series
        .into_iter()
        .map(|(id, points)| Ok(SeriesAppend::new(id, points)?))
        .collect()
}
