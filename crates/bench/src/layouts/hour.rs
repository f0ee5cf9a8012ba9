//! Per-hour buckets `v.M.S` through the product (rows h, i): `Backend::write_buckets` with
//! `SlotChange::Set` into the raw family of the measurement at a 10 s interval — one
//! document of 360 slots per series per hour (`BucketGeometry::for_slot(10 s)`) — and,
//! for row i, `Backend::preallocate` of every series' documents first. Queries go through
//! an engine whose schema declares the measurement `layout = "buckets"`, so it reads the
//! same documents.

use std::sync::Arc;
use tickertape_backend::DocumentStart;

use anyhow::{bail, Context, Result};
use tickertape_backend::{
    Backend, BucketFamily, BucketWrite, BucketWriteOutcome, NameKind, SlotChange,
};
use tickertape_core::rollup::BucketGeometry;
use tickertape_core::schema::Schema;
use tickertape_core::SeriesId;
use tickertape_engine::Engine;

use super::queries::engine_queries;
use super::{Ctx, Outcome, Row, INTERVAL_NS, MEASUREMENT, START_NS};

/// The schema the engine reads the rows with: raw buckets of the writes' interval and no
/// rollups (the writes here make none, so windowed queries fold raw slots).
const SCHEMA: &str = r#"
[measurements.cpu]
layout = "buckets"
interval = "10s"
rollups = []
"#;

pub(super) async fn run(
    ctx: &Ctx<'_>,
    backend: Arc<dyn Backend>,
    preallocated: bool,
) -> Result<Outcome> {
    let ids = super::resolve(&*backend, ctx.data).await?;
    // The engine finds the family by the measurement's name-store token: the same call.
    let token = backend
        .tokenize(NameKind::Measurement, &[MEASUREMENT.to_owned()])
        .await?
        .first()
        .copied()
        .context("the name store issued no token for the measurement")?;
    let family = BucketFamily::raw(token, INTERVAL_NS).context("the 10 s bucket family")?;
    let geometry = family.geometry();
    let requests = ctx
        .chunks()
        .map(|chunk| Ok((chunk.len(), writes(chunk, &ids, family, geometry)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut outcome = Outcome::default();
    if preallocated {
        let shells = preallocate(&*backend, family, geometry, &ids, ctx.data.end);
        outcome.preallocate(ctx.limit(), shells).await?;
    }
    let before = ctx.round_trips_now();
    let store = &backend;
    outcome
        .send_all(requests, ctx.limit(), |writes| async move {
            let outcomes = store.write_buckets(writes).await?;
            let refused = outcomes
                .iter()
                .filter(|o| **o != BucketWriteOutcome::Applied)
                .count();
            if refused > 0 {
                bail!("{refused} slot writes refused");
            }
            Ok(())
        })
        .await?;
    if ctx.round_trips.is_some() {
        outcome.round_trips = Some(ctx.round_trips_now() - before);
    }
    let schema = Schema::from_toml(SCHEMA).context("the bench's bucket schema")?;
    let engine = Engine::new(backend.clone()).with_schema(schema);
    outcome.queries_ms = engine_queries(&engine, ctx.data, ctx.args.query_runs).await;
    Ok(outcome)
}

/// One chunk of the stream as slot writes, in stream order.
fn writes(
    chunk: &[Row],
    ids: &[SeriesId],
    family: BucketFamily,
    geometry: BucketGeometry,
) -> Result<Vec<BucketWrite>> {
    chunk
        .iter()
        .map(|r| {
            let (bucket_start, slot) = geometry
                .slot_of(r.time)
                .with_context(|| format!("time {} has no bucket", r.time))?;
            Ok(BucketWrite::new(
                family,
                ids[r.series],
                bucket_start,
                slot,
                SlotChange::Set(r.value),
            )?)
        })
        .collect()
}

/// Shells for every series' documents over `[START_NS, end)`: one `preallocate` call per
/// document period (all series at once), as the engine's pre-allocation pass makes them.
async fn preallocate(
    backend: &dyn Backend,
    family: BucketFamily,
    geometry: BucketGeometry,
    ids: &[SeriesId],
    end: i64,
) -> Result<u64> {
    let mut created = 0;
    for start in geometry.bucket_starts(START_NS, end) {
        created += backend
            .preallocate(DocumentStart::new(family, start)?, ids)
            .await?;
    }
    Ok(created)
}
