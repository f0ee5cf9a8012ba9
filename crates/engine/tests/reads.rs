//! What the read plan decides, seen from outside: where answers come from and how they
//! are reported, over the embedded backend.

use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{ManualClock, Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, Query, WriteMode};

const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;

fn engine(dir: &std::path::Path, config: &str) -> Engine {
    let backend: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir)).expect("open"));
    Engine::with_clock(backend, Arc::new(ManualClock::new(0)))
        .with_schema(Schema::from_toml(config).expect("config"))
}

fn query(measurement: &str, start: i64, end: i64) -> Query {
    let selector = SeriesSelector {
        measurement: measurement.into(),
        ..Default::default()
    };
    Query::raw(selector, start, end)
}

async fn points(e: &Engine, q: &Query) -> Vec<Point> {
    let answer = e.query(q).await.expect("query");
    assert!(answer.len() <= 1, "one series expected");
    answer
        .into_iter()
        .next()
        .map(|s| s.points)
        .unwrap_or_default()
}

/// A counter's rollups summarise increments, so its `max` is read from raw slots even
/// when a rollup resolution is forced: three increments of 1 into one second are a
/// total of 3, not a maximum of 1.
#[tokio::test]
async fn a_forced_rollup_does_not_answer_a_counters_max() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[measurements.hits]\nlayout = \"buckets\"\ninterval = \"1s\"\n\
                  kind = \"counter\"\nrollups = [\"1m\"]\n";
    let e = engine(dir.path(), config);
    let body = "hits n=1 5\nhits n=1 5\nhits n=1 5\nhits n=2 70\n";
    let r = e
        .write_lines_as(body, Precision::Seconds, WriteMode::Increment)
        .await
        .unwrap();
    assert_eq!(r.rejected, 0, "{:?}", r.errors);
    let mut q = query("hits", 0, 2 * M);
    q.agg = Some(Aggregate::Max);
    assert_eq!(points(&e, &q).await, vec![Point::new(0, 3.0)]);
    q.resolution = Some(ResolutionOrRaw::parse("1m").unwrap());
    assert_eq!(points(&e, &q).await, vec![Point::new(0, 3.0)], "forced 1m");
    q.step = Some(M);
    let per_minute = vec![Point::new(0, 3.0), Point::new(M, 2.0)];
    assert_eq!(points(&e, &q).await, per_minute, "forced 1m, per window");
}
