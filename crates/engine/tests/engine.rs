//! The engine over a real (embedded) backend: schema-driven behaviour that the HTTP tests
//! do not reach — the change-only filter and window planning.

use std::sync::Arc;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, Query};

fn engine(dir: &std::path::Path, config: &str) -> Engine {
    let backend = EmbeddedBackend::open(EmbeddedOptions::new(dir)).expect("open");
    Engine::new(Arc::new(backend)).with_schema(Schema::from_toml(config).expect("config"))
}

fn selector(measurement: &str) -> SeriesSelector {
    SeriesSelector {
        measurement: measurement.into(),
        ..Default::default()
    }
}

async fn raw(engine: &Engine, measurement: &str) -> Vec<(i64, f64)> {
    let q = Query::raw(selector(measurement), i64::MIN, i64::MAX);
    let answer = engine.query(&q).await.expect("query");
    answer
        .first()
        .map(|s| s.points.iter().map(|p| (p.time, p.value)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn change_only_skips_repeated_values_but_not_late_points() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "[measurements.followers]\nchange_only = true\n");
    let r = e
        .write_lines(
            "followers v=10 1\nfollowers v=10 2\nfollowers v=11 3\nfollowers v=11 4\nother v=1 1\nother v=1 2\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected, r.points_written), (6, 0, 6));
    assert_eq!(raw(&e, "followers").await, vec![(1, 10.0), (3, 11.0)]);
    assert_eq!(
        raw(&e, "other").await,
        vec![(1, 1.0), (2, 1.0)],
        "unlisted: every point"
    );

    // Against the stored last value, across bodies; an old point is still refused.
    let r = e
        .write_lines(
            "followers v=11 5\nfollowers v=11 2\nfollowers v=12 6\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected), (2, 1));
    assert_eq!(r.errors[0].line, 2);
    assert_eq!(
        raw(&e, "followers").await,
        vec![(1, 10.0), (3, 11.0), (6, 12.0)]
    );
}

#[tokio::test]
async fn max_points_bounds_the_answer_and_resolution_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "");
    let body: String = (0..600)
        .map(|i| format!("m v={} {}\n", i % 7, i * 10 * NANOS_PER_SECOND))
        .collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    let end = 6_000 * NANOS_PER_SECOND;
    let mut q = Query::raw(selector("m"), 0, end);
    q.max_points = Some(20);
    let answer = e.query(&q).await.unwrap();
    let points = &answer[0].points;
    assert!(points.len() <= 20 && points.len() >= 10, "{}", points.len());
    // 6000 s in at most 20 windows: the nice step is 5 min, answered as averages.
    assert_eq!(points[1].time - points[0].time, 300 * NANOS_PER_SECOND);
    let first_window: f64 = (0..30).map(|i| (i % 7) as f64).sum::<f64>() / 30.0;
    assert_eq!(points[0], Point::new(0, first_window));

    let mut q = Query::raw(selector("m"), 0, end);
    q.step = Some(120 * NANOS_PER_SECOND);
    q.agg = Some(Aggregate::Max);
    q.resolution = Some(ResolutionOrRaw::parse("5m").unwrap());
    let err = e.query(&q).await.unwrap_err().to_string();
    assert!(err.contains("resolution 5m does not divide"), "{err}");
    q.resolution = Some(ResolutionOrRaw::Raw);
    assert_eq!(e.query(&q).await.unwrap()[0].points.len(), 50);
}
