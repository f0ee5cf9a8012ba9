//! The engine over a real (embedded) backend: schema-driven behaviour that the HTTP tests
//! do not reach — the change-only filter and window planning.

use std::sync::Arc;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_engine::{Engine, Query};
use tickertape_reference::ReferenceBackend;

fn engine(config: &str) -> Engine {
    let backend = ReferenceBackend::default();
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
    let e = engine("[measurements.followers]\nchange_only = true\n");
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

    // Against the stored last value, across bodies; a late point is stored as it is
    // (it falls between two changes, so it is not a repeat of the last value).
    let r = e
        .write_lines(
            "followers v=11 5\nfollowers v=11 2\nfollowers v=12 6\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected, r.points_written), (3, 0, 3));
    assert_eq!(
        raw(&e, "followers").await,
        vec![(1, 10.0), (2, 11.0), (3, 11.0), (6, 12.0)]
    );
}

#[tokio::test]
async fn max_points_bounds_the_answer_and_resolution_is_checked() {
    let e = engine("");
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

/// A change-only series answers windows as if every value had been stored (core::hold):
/// a window without a change has the value that holds, up to the clock's "now"; the
/// rollup path and the raw path agree; `count` counts the stored changes only.
#[tokio::test]
async fn change_only_windows_hold_the_value_until_now() {
    const MIN: i64 = 60 * NANOS_PER_SECOND;
    let backend = ReferenceBackend::default();
    let clock = Arc::new(tickertape_core::time::ManualClock::new(0));
    let e = Engine::with_clock(Arc::new(backend), clock.clone())
        .with_schema(Schema::from_toml("[measurements.followers]\nchange_only = true\n").unwrap());
    // Reported every minute: 10 for minutes 0–4, 20 for 5–6, then 10 again from 7 on.
    let body: String = [10, 10, 10, 10, 10, 20, 20, 10, 10, 10]
        .iter()
        .enumerate()
        .map(|(i, v)| format!("followers v={v} {}\n", i as i64 * MIN))
        .collect();
    let r = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    assert_eq!((r.accepted, r.rejected), (10, 0));
    assert_eq!(raw(&e, "followers").await.len(), 3, "three changes stored");
    clock.set(12 * MIN);

    let windows = |agg: Aggregate, resolution: Option<&str>, start: i64| {
        let mut q = Query::raw(selector("followers"), start, 20 * MIN);
        q.step = Some(MIN);
        q.agg = Some(agg);
        q.resolution = resolution.map(|r| ResolutionOrRaw::parse(r).unwrap());
        let e = e.clone();
        async move { e.query(&q).await.unwrap()[0].points.clone() }
    };
    let expected: Vec<Point> = [10.0, 10.0, 10.0, 10.0, 10.0, 20.0, 20.0, 10.0, 10.0, 10.0]
        .iter()
        .chain([10.0, 10.0, 10.0].iter()) // minutes 10–12 hold; 13+ are after "now"
        .enumerate()
        .map(|(i, &v)| Point::new(i as i64 * MIN, v))
        .collect();
    for agg in [Aggregate::Max, Aggregate::Min] {
        assert_eq!(
            windows(agg, None, 0).await,
            expected,
            "{agg:?} from the 1m rollup"
        );
        assert_eq!(
            windows(agg, Some("raw"), 0).await,
            expected,
            "{agg:?} from raw"
        );
    }
    // A range starting after the last change still sees the value that holds.
    let late = windows(Aggregate::Avg, None, 8 * MIN + 30 * NANOS_PER_SECOND).await;
    assert_eq!(late, expected[8..].to_vec());
    // count: changes per window, not held.
    let counts = windows(Aggregate::Count, None, 0).await;
    assert_eq!(counts.iter().map(|p| p.value).sum::<f64>(), 3.0);

    // Without step: the value holding over a range with no change in it.
    let mut q = Query::raw(selector("followers"), 9 * MIN, 11 * MIN);
    q.agg = Some(Aggregate::Last);
    let last = e.query(&q).await.unwrap();
    assert_eq!(last[0].points, vec![Point::new(9 * MIN, 10.0)]);
    q.agg = Some(Aggregate::Max);
    q.start = 4 * MIN;
    assert_eq!(e.query(&q).await.unwrap()[0].points[0].value, 20.0);
    // After "now" nothing holds yet.
    let mut q = Query::raw(selector("followers"), 13 * MIN, 20 * MIN);
    q.agg = Some(Aggregate::Last);
    assert!(e.query(&q).await.unwrap().is_empty());
    // A change after a window's start: the window also had the value before it.
    let mut q = Query::raw(selector("followers"), 0, 20 * MIN);
    q.step = Some(2 * MIN);
    q.agg = Some(Aggregate::Min);
    e.write_lines(
        &format!("followers v=5 {}\n", 12 * MIN + 1),
        Precision::Nanoseconds,
    )
    .await
    .unwrap();
    let two_minutes = e.query(&q).await.unwrap()[0].points.clone();
    assert_eq!(two_minutes[6], Point::new(12 * MIN, 5.0));
    q.agg = Some(Aggregate::Max);
    assert_eq!(
        e.query(&q).await.unwrap()[0].points[6],
        Point::new(12 * MIN, 10.0)
    );
}

/// A chart (`max_points`) over an open range: the end is "now" on the engine clock, and
/// an open start is refused rather than planned over centuries.
#[tokio::test]
async fn max_points_closes_an_open_end_at_now() {
    const HOUR: i64 = 3_600 * NANOS_PER_SECOND;
    let backend = ReferenceBackend::default();
    let clock = Arc::new(tickertape_core::time::ManualClock::new(10 * HOUR - 1));
    let e = Engine::with_clock(Arc::new(backend), clock);
    let body: String = (0..10).map(|i| format!("m v={i} {}\n", i * HOUR)).collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();

    let mut q = Query::raw(selector("m"), 0, i64::MAX);
    q.max_points = Some(10);
    let points = e.query(&q).await.unwrap()[0].points.clone();
    // Ten hours in at most ten windows: one per hour, as written.
    let expected: Vec<Point> = (0..10).map(|i| Point::new(i * HOUR, i as f64)).collect();
    assert_eq!(points, expected);

    q.start = i64::MIN;
    let err = e.query(&q).await.unwrap_err().to_string();
    assert!(err.contains("max_points needs start"), "{err}");
}

/// A body's points arrive in any order, a later line of the same time wins, and a body
/// sent twice (a client retrying) changes neither the points nor the rollups the store
/// derives from them.
#[tokio::test]
async fn last_write_wins_bodies_sort_and_a_retried_body_changes_no_rollup() {
    let e = Engine::new(Arc::new(ReferenceBackend::default()));
    let s = NANOS_PER_SECOND;
    let body: String = [(30, 3.0), (10, 1.0), (20, 2.0), (10, 1.5)]
        .iter()
        .map(|(t, v)| format!("m v={v} {}\n", t * s))
        .collect();
    for _ in 0..2 {
        let r = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
        assert_eq!((r.accepted, r.rejected, r.points_written), (4, 0, 4));
    }
    assert_eq!(
        raw(&e, "m").await,
        vec![(10 * s, 1.5), (20 * s, 2.0), (30 * s, 3.0)]
    );
    let total = |resolution| {
        let mut q = Query::raw(selector("m"), 0, 60 * s);
        q.agg = Some(Aggregate::Sum);
        q.resolution = Some(resolution);
        q
    };
    let from_rollup = e
        .query(&total(ResolutionOrRaw::Rollup(
            tickertape_core::rollup::Resolution::MINUTE,
        )))
        .await
        .unwrap();
    let from_raw = e.query(&total(ResolutionOrRaw::Raw)).await.unwrap();
    assert_eq!(from_rollup[0].points, vec![Point::new(0, 6.5)]);
    assert_eq!(from_raw[0].points, from_rollup[0].points);
}

/// Past a series limit, the lines that would add a series are refused naming the limit;
/// every line of a series already registered is stored, in the same body and later.
#[tokio::test]
async fn series_limits_refuse_only_lines_that_add_series() {
    use tickertape_engine::SeriesLimits;
    let e = engine("").with_series_limits(SeriesLimits {
        max_series: 3,
        max_series_per_database: 0,
        max_series_per_measurement: 2,
    });
    let r = e
        .write_lines(
            "cpu,h=a v=1 1\ncpu,h=b v=1 1\ncpu,h=c v=1 1\nmem v=1 1\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected), (3, 1));
    assert_eq!(r.errors[0].line, 3);
    let message = &r.errors[0].message;
    assert!(
        message.contains("limit") && message.contains("--max-series-per-measurement is 2"),
        "{message}"
    );
    assert!(message.contains("h=c"), "names the series: {message}");
    // Existing series keep taking points beside refused new ones; the total limit holds.
    let r = e
        .write_lines(
            "disk v=1 2\ncpu,h=a v=2 2\nmem v=2 2\ncpu,h=a w=1 2\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected), (2, 2));
    assert!(
        r.errors[0].message.contains("--max-series is 3"),
        "{:?}",
        r.errors
    );
    assert_eq!(
        r.errors.iter().map(|x| x.line).collect::<Vec<_>>(),
        vec![1, 4]
    );
    assert_eq!(raw(&e, "mem").await, vec![(1, 1.0), (2, 2.0)]);
    let cpu = e
        .query(&Query::raw(selector("cpu"), i64::MIN, i64::MAX))
        .await
        .unwrap();
    let points: Vec<usize> = cpu.iter().map(|s| s.points.len()).collect();
    assert_eq!(points, vec![2, 1], "h=a twice, h=b once, no h=c");
}
