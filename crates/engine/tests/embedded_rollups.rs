//! The rollups the embedded store derives from value segments, through the engine: the
//! engine writes none of them, reads them from the store, and their retention outlives
//! the raw points' (the store side is in the conformance suite).

use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{ManualClock, Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, Query};

const M: i64 = 60 * NANOS_PER_SECOND;
const H: i64 = 60 * M;
const D: i64 = 24 * H;

async fn windows(
    e: &Engine,
    agg: Aggregate,
    step: i64,
    resolution: Option<ResolutionOrRaw>,
) -> Vec<Point> {
    let mut q = Query::raw(
        SeriesSelector {
            measurement: "cpu".into(),
            ..Default::default()
        },
        0,
        6 * D,
    );
    q.agg = Some(agg);
    q.step = Some(step);
    q.resolution = resolution;
    let answer = e.query(&q).await.expect("query");
    answer
        .into_iter()
        .next()
        .map(|s| s.points)
        .unwrap_or_default()
}

fn bits(points: &[Point]) -> Vec<(i64, u64)> {
    points.iter().map(|p| (p.time, p.value.to_bits())).collect()
}

#[tokio::test]
async fn derived_rollups_outlive_raw_retention_and_keep_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap());
    let clock = Arc::new(ManualClock::new(0));
    let config = "[measurements.cpu]\nrollups = [\"1h\", \"1d\"]\n\
                  retention = { raw = \"2d\", \"1h\" = \"4d\" }\n";
    let e = Engine::with_clock(backend.clone(), clock.clone())
        .with_schema(Schema::from_toml(config).unwrap());
    // Six days every 10 minutes, fractional values, newest day first.
    for day in (0..6).rev() {
        let body: String = (0..144)
            .map(|i| {
                let t = day * D + i * 10 * M;
                format!("cpu v={} {t}\n", (t / M) as f64 * 0.013 + 0.1)
            })
            .collect();
        let report = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
        assert_eq!(report.points_written, 144);
    }
    backend.compact().await.unwrap();
    let raw = Some(ResolutionOrRaw::Raw);
    let daily = windows(&e, Aggregate::Sum, D, None).await;
    let hourly = windows(&e, Aggregate::Avg, H, None).await;
    assert_eq!(daily.len(), 6);
    assert_eq!(hourly.len(), 6 * 24);
    assert_eq!(
        bits(&daily),
        bits(&windows(&e, Aggregate::Sum, D, raw).await)
    );
    assert_eq!(
        bits(&hourly),
        bits(&windows(&e, Aggregate::Avg, H, raw).await)
    );

    // At the end of day 6: raw points of days 0–3 expire, the 1h rollup of days 0–1.
    clock.set(6 * D);
    let report = e.apply_retention(false).await.unwrap();
    let dropped = |level: ResolutionOrRaw| {
        report
            .dropped
            .iter()
            .filter(|p| p.resolution == level)
            .count()
    };
    assert_eq!(dropped(ResolutionOrRaw::Raw), 4, "{report:?}");
    assert_eq!(
        dropped(ResolutionOrRaw::parse("1h").unwrap()),
        2,
        "{report:?}"
    );
    assert_eq!(
        windows(&e, Aggregate::Count, D, raw).await.len(),
        2,
        "raw points of days 4–5 only"
    );
    assert_eq!(
        bits(&windows(&e, Aggregate::Sum, D, None).await),
        bits(&daily),
        "the 1d rollup keeps every day"
    );
    let hourly_left = windows(&e, Aggregate::Avg, H, None).await;
    assert_eq!(
        bits(&hourly_left),
        bits(&hourly[2 * 24..]),
        "the 1h rollup keeps days 2–5"
    );
}

/// Raw points of each day 0–5 of `measurement`, one every 10 minutes, compacted.
async fn six_days(e: &Engine, measurement: &str) {
    let body: String = (0..6 * 144)
        .map(|i| format!("{measurement} v={i} {}\n", i * 10 * M))
        .collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
}

async fn raw_days(e: &Engine, measurement: &str) -> usize {
    let mut q = Query::raw(
        SeriesSelector {
            measurement: measurement.into(),
            ..Default::default()
        },
        0,
        6 * D,
    );
    q.agg = Some(Aggregate::Count);
    q.step = Some(D);
    q.resolution = Some(ResolutionOrRaw::Raw);
    let answer = e.query(&q).await.expect("query");
    answer.into_iter().next().map_or(0, |s| s.points.len())
}

/// The defaults' retention (`--retention raw=2d`) reaches every measurement nobody
/// listed, in every database, in one pass; a listed measurement keeps its own.
#[tokio::test]
async fn default_retention_covers_every_unlisted_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap());
    let clock = Arc::new(ManualClock::new(0));
    let config = "[measurements.cpu]\nretention = { raw = \"5d\" }\n";
    let schema = Schema::from_toml_with_retention(config, Some("raw=2d")).unwrap();
    let e = Engine::with_clock(backend.clone(), clock.clone()).with_schema(schema);
    e.create_database("app").await.unwrap();
    let app = e.database(Some("app")).await.unwrap();
    for name in ["node_load1", "node_load5", "cpu"] {
        six_days(&e, name).await;
    }
    six_days(&app, "node_load1").await;
    backend.compact().await.unwrap();
    clock.set(6 * D);
    let report = e.apply_retention(false).await.unwrap();
    let dropped = |m: &str| report.dropped.iter().filter(|p| p.measurement == m).count();
    assert_eq!(dropped("node_load1"), 4, "{report:?}");
    assert_eq!(dropped("node_load5"), 4, "{report:?}");
    assert_eq!(dropped("node_load1 (database app)"), 4, "{report:?}");
    assert_eq!(dropped("cpu"), 1, "its own 5d: {report:?}");
    assert_eq!(raw_days(&e, "node_load1").await, 2);
    assert_eq!(raw_days(&app, "node_load1").await, 2);
    assert_eq!(raw_days(&e, "cpu").await, 5);
}
