//! Stale markers in tickertape's own queries: stored (PromQL reads them with
//! `read_raw`), but never returned as values — raw points, neighbours, the latest point —
//! and never counted by aggregates, from raw points or from rollups, whether the engine
//! writes the rollups (reference store) or the store derives them (embedded part files).

use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::model::{is_stale_marker, STALE_NAN_BITS};
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, Query, SeriesRef, SeriesSamples};
use tickertape_reference::ReferenceBackend;

const S: i64 = NANOS_PER_SECOND;
const CONFIG: &str = "[measurements.up]\nrollups = [\"1m\"]\n";

/// Seconds and values: minute 0 holds 1, a marker and 3; minute 1 only a marker; minute
/// 2 holds 5 and ends on a marker.
fn samples() -> Vec<(i64, f64)> {
    let stale = f64::from_bits(STALE_NAN_BITS);
    vec![
        (0, 1.0),
        (10, stale),
        (20, 3.0),
        (70, stale),
        (120, 5.0),
        (130, stale),
    ]
}

async fn loaded(backend: Arc<dyn Backend>) -> Engine {
    let e = Engine::new(backend.clone()).with_schema(Schema::from_toml(CONFIG).unwrap());
    let points: Vec<Point> = samples()
        .into_iter()
        .map(|(t, v)| Point::new(t, v))
        .collect();
    let series = SeriesSamples {
        series: SeriesRef {
            measurement: "up",
            tags: vec![("job", "a")],
            field: "value",
        },
        points: &points,
    };
    let report = e
        .write_samples(&[series], Precision::Seconds)
        .await
        .unwrap();
    assert_eq!(
        (report.rejected, report.points_written),
        (0, 6),
        "{report:?}"
    );
    // The embedded store computes its rollups when the head goes to part files.
    backend.compact().await.unwrap();
    e
}

async fn ask(e: &Engine, tune: impl FnOnce(&mut Query)) -> Vec<(i64, f64)> {
    let selector = SeriesSelector {
        measurement: "up".into(),
        ..Default::default()
    };
    let mut q = Query::raw(selector, 0, 200 * S);
    tune(&mut q);
    let answer = e.query(&q).await.expect("query");
    answer
        .first()
        .map(|s| s.points.iter().map(|p| (p.time / S, p.value)).collect())
        .unwrap_or_default()
}

async fn markers_are_no_values(e: &Engine, store: &str) {
    assert_eq!(
        ask(e, |_| {}).await,
        vec![(0, 1.0), (20, 3.0), (120, 5.0)],
        "{store}: raw points"
    );
    let neighbors = |start: i64, end: i64| {
        move |q: &mut Query| {
            (q.start, q.end, q.neighbors) = (start * S, end * S, true);
        }
    };
    assert_eq!(
        ask(e, neighbors(11, 19)).await,
        vec![(0, 1.0), (20, 3.0)],
        "{store}: the neighbour before is the value before the marker"
    );
    assert_eq!(
        ask(e, neighbors(125, 200)).await,
        vec![(120, 5.0)],
        "{store}: a range holding only a marker"
    );
    for resolution in [
        None,
        Some(ResolutionOrRaw::Raw),
        Some(ResolutionOrRaw::parse("1m").unwrap()),
    ] {
        let counts = ask(e, |q| {
            (q.agg, q.step, q.resolution) = (Some(Aggregate::Count), Some(60 * S), resolution);
        })
        .await;
        assert_eq!(
            counts,
            vec![(0, 2.0), (120, 1.0)],
            "{store}: {resolution:?}"
        );
        let avg = ask(e, |q| {
            (q.agg, q.step, q.resolution) = (Some(Aggregate::Avg), Some(180 * S), resolution);
        })
        .await;
        assert_eq!(avg, vec![(0, 3.0)], "{store}: {resolution:?}");
    }
    assert_eq!(
        ask(e, |q| q.agg = Some(Aggregate::Last)).await,
        vec![(120, 5.0)],
        "{store}: the latest value, though the latest point is a marker"
    );
    assert_eq!(
        ask(e, |q| q.agg = Some(Aggregate::Max)).await,
        vec![(0, 5.0)],
        "{store}: max over the range"
    );
}

/// What PromQL reads: every point, the markers with their bits.
async fn markers_are_stored(e: &Engine, store: &str) {
    let selector = SeriesSelector {
        measurement: "up".into(),
        ..Default::default()
    };
    let series = e.find_series_limited(&selector).await.unwrap();
    let raw = e.read_raw(&series, 0, 200 * S).await.unwrap();
    let markers = raw[0].iter().filter(|p| is_stale_marker(p.value)).count();
    assert_eq!((raw[0].len(), markers), (6, 3), "{store}");
}

#[tokio::test]
async fn reference_store_engine_written_rollups() {
    let e = loaded(Arc::new(ReferenceBackend::default())).await;
    markers_are_no_values(&e, "reference").await;
    markers_are_stored(&e, "reference").await;
}

#[tokio::test]
async fn embedded_store_part_file_rollups() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap());
    let e = loaded(backend).await;
    markers_are_no_values(&e, "embedded").await;
    markers_are_stored(&e, "embedded").await;
}
