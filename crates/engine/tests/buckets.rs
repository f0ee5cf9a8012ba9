//! Buckets, counters, rollups, retention and pre-allocation through the engine, over the
//! reference backend (the backend side of each is in the conformance suite, on every
//! backend).

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{ManualClock, Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_engine::{CounterDisplay, Engine, Query, WriteMode};
use tickertape_reference::ReferenceBackend;

const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;
const H: i64 = 60 * M;
const D: i64 = 24 * H;

fn open() -> Arc<dyn Backend> {
    Arc::new(ReferenceBackend::default())
}

fn engine_on(backend: Arc<dyn Backend>, config: &str, clock: Arc<ManualClock>) -> Engine {
    Engine::with_clock(backend, clock).with_schema(Schema::from_toml(config).expect("config"))
}

fn query(measurement: &str, start: i64, end: i64) -> Query {
    Query::raw(
        SeriesSelector {
            measurement: measurement.into(),
            ..Default::default()
        },
        start,
        end,
    )
}

async fn points(e: &Engine, q: &Query) -> Vec<Point> {
    let answer = e.query(q).await.expect("query");
    assert!(
        answer.len() <= 1,
        "one series expected, got {}",
        answer.len()
    );
    answer
        .into_iter()
        .next()
        .map(|s| s.points)
        .unwrap_or_default()
}

fn bits(points: &[Point]) -> Vec<(i64, u64)> {
    points.iter().map(|p| (p.time, p.value.to_bits())).collect()
}

const CONFIG: &str = r#"
[measurements.seg]
rollups = ["1m", "5m", "1h"]

[measurements.bkt]
layout = "buckets"
interval = "10s"
rollups = ["1m", "1h"]
"#;

/// Rollups are exact: a windowed query read from the rollups answers exactly — bit
/// for bit — what the same query computed from raw points answers, on random data, for
/// value segments and buckets, every aggregate, steps the rollups divide and ranges that
/// cut slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollup_answers_equal_raw_answers() {
    let clock = Arc::new(ManualClock::new(0));
    let e = engine_on(open(), CONFIG, clock);
    let mut rng = StdRng::seed_from_u64(7);
    let mut t_seg = -3 * H;
    let mut t_bkt = -3 * H;
    for _ in 0..40 {
        let mut body = String::new();
        for _ in 0..rng.gen_range(1..60) {
            t_seg += rng.gen_range(1..30) * S + rng.gen_range(0..1000);
            t_bkt += rng.gen_range(1..4) * 10 * S;
            let v: f64 = rng.gen_range(-1e3..1e3) / 3.0;
            body.push_str(&format!(
                "seg,h=a v={v:?} {t_seg}\nbkt,h=a v={v:?} {t_bkt}\n"
            ));
        }
        let report = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
        assert_eq!(report.rejected, 0, "{:?}", report.errors);
    }
    let end = t_seg.max(t_bkt) + 1;
    for measurement in ["seg", "bkt"] {
        // `None`: `agg` without `step`, one summary of the range, read from rollup slots
        // and raw edges like one window.
        for (step, agg) in [
            (Some(M), Aggregate::Sum),
            (Some(5 * M), Aggregate::Avg),
            (Some(10 * M), Aggregate::Min),
            (Some(H), Aggregate::Max),
            (Some(2 * H), Aggregate::Count),
            (Some(15 * M), Aggregate::First),
            (Some(H), Aggregate::Last),
            (Some(3 * M), Aggregate::Avg),
            (None, Aggregate::Sum),
            (None, Aggregate::Avg),
            (None, Aggregate::Min),
            (None, Aggregate::Count),
        ] {
            for _ in 0..4 {
                let start = rng.gen_range(-3 * H..0);
                let stop = rng.gen_range(start + 1..end);
                let mut q = query(measurement, start, stop);
                q.step = step;
                q.agg = Some(agg);
                let via_rollup = points(&e, &q).await;
                q.resolution = Some(ResolutionOrRaw::Raw);
                let via_raw = points(&e, &q).await;
                assert_eq!(
                    bits(&via_rollup),
                    bits(&via_raw),
                    "{measurement} step {step:?} {agg:?} [{start}, {stop})"
                );
                assert!(!via_raw.is_empty() || step.is_some_and(|s| stop - start < s));
            }
        }
    }
}

/// `agg` without `step` reads the rollups too: a range of whole hours answers from the
/// 1h rollup even after the raw points' partitions are gone.
#[tokio::test]
async fn whole_range_aggregates_outlive_raw_retention() {
    let config = "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\n\
                  rollups = [\"1h\"]\nretention = { raw = \"1d\" }\n";
    let clock = Arc::new(ManualClock::new(0));
    let e = engine_on(open(), config, clock.clone());
    let body: String = (0..360)
        .map(|i| format!("bkt v={} {}\n", i % 7, i * 20 * S))
        .collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    let mut q = query("bkt", 0, 2 * H);
    q.agg = Some(Aggregate::Sum);
    let before = points(&e, &q).await;
    let expected: f64 = (0..360).map(|i| (i % 7) as f64).sum();
    assert_eq!(before, vec![Point::new(0, expected)]);

    clock.set(30 * D);
    let report = e.apply_retention(false).await.unwrap();
    assert!(!report.dropped.is_empty(), "{report:?}");
    q.resolution = Some(ResolutionOrRaw::Raw);
    assert!(points(&e, &q).await.is_empty(), "the raw points are gone");
    q.resolution = None;
    assert_eq!(points(&e, &q).await, before, "the 1h rollup still answers");
}

/// The windows of a bucket measurement really come from the stored rollups: points written
/// while the schema kept no rollup are missing from the rollup answer and present in the
/// raw one. (Value segments have no such window: the store derives their rollups from the
/// points it holds.)
#[tokio::test]
async fn windows_are_read_from_the_rollups() {
    let backend = open();
    let clock = Arc::new(ManualClock::new(0));
    let without = engine_on(
        backend.clone(),
        "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\nrollups = []",
        clock.clone(),
    );
    without
        .write_lines("bkt v=1 0\nbkt v=2 10000000000", Precision::Nanoseconds)
        .await
        .unwrap();
    let with = engine_on(backend, CONFIG, clock);
    with.write_lines("bkt v=4 70000000000", Precision::Nanoseconds)
        .await
        .unwrap();
    let mut q = query("bkt", 0, 2 * M);
    q.step = Some(M);
    q.agg = Some(Aggregate::Sum);
    assert_eq!(points(&with, &q).await, vec![Point::new(M, 4.0)]);
    q.resolution = Some(ResolutionOrRaw::Raw);
    assert_eq!(
        points(&with, &q).await,
        vec![Point::new(0, 3.0), Point::new(M, 4.0)]
    );
}

/// Gauge buckets: a point lands on its slot's start; a second value for a taken slot is
/// refused with its line number, the rest of the body stored.
#[tokio::test]
async fn gauge_buckets_take_one_value_per_slot() {
    let e = engine_on(open(), CONFIG, Arc::new(ManualClock::new(0)));
    let r = e
        .write_lines(
            "bkt v=1 12000000000\nbkt v=2 15000000000\nbkt v=0 20000000000\nbkt v=5 3\n",
            Precision::Nanoseconds,
        )
        .await
        .unwrap();
    assert_eq!((r.accepted, r.rejected, r.points_written), (3, 1, 3));
    assert_eq!(r.errors[0].line, 2);
    assert!(
        r.errors[0].message.contains("already holds a value"),
        "{}",
        r.errors[0].message
    );
    assert_eq!(
        points(&e, &query("bkt", -H, H)).await,
        vec![
            Point::new(0, 5.0),
            Point::new(10 * S, 1.0),
            Point::new(20 * S, 0.0)
        ]
    );
}

const COUNTERS: &str = r#"
[measurements.pageviews]
layout = "buckets"
interval = "1s"
kind = "counter"
rollups = ["1m", "1h"]
"#;

/// Counters: `mode=inc` adds into the slot; plain writes to a counter and
/// increments to a gauge are refused per line; `display` shows totals or rates.
#[tokio::test]
async fn counters_add_and_display() {
    let config = format!("{COUNTERS}\n[measurements.temp]\n");
    let e = engine_on(open(), &config, Arc::new(ManualClock::new(0)));
    let inc = |body: &'static str| {
        let e = e.clone();
        async move {
            e.write_lines_as(body, Precision::Seconds, WriteMode::Increment)
                .await
                .unwrap()
        }
    };
    let r = inc("pageviews,page=home n=1 0\npageviews,page=home n=1 0\ntemp v=3 0\npageviews,page=home n=5 59\n").await;
    assert_eq!((r.accepted, r.rejected), (3, 1));
    assert_eq!(r.errors[0].line, 3);
    assert!(r.errors[0].message.contains("is a gauge"), "{:?}", r.errors);
    inc("pageviews,page=home n=3 61\npageviews,page=home n=1 0\n").await;
    let r = e
        .write_lines("pageviews,page=home n=1 0", Precision::Seconds)
        .await
        .unwrap();
    assert_eq!(r.rejected, 1);
    assert!(r.errors[0].message.contains("mode=inc"), "{:?}", r.errors);

    assert_eq!(
        points(&e, &query("pageviews", 0, 2 * M)).await,
        vec![
            Point::new(0, 3.0),
            Point::new(59 * S, 5.0),
            Point::new(61 * S, 3.0)
        ]
    );
    let mut q = query("pageviews", 0, 2 * M);
    q.step = Some(M);
    q.display = Some(CounterDisplay::Total);
    assert_eq!(
        points(&e, &q).await,
        vec![Point::new(0, 8.0), Point::new(M, 3.0)]
    );
    q.display = Some(CounterDisplay::AvgPerSec);
    assert_eq!(
        points(&e, &q).await,
        vec![Point::new(0, 8.0 / 60.0), Point::new(M, 3.0 / 60.0)]
    );
    let mut q = query("temp", 0, M);
    q.display = Some(CounterDisplay::Total);
    let err = e.query(&q).await.unwrap_err().to_string();
    assert!(err.contains("display applies to counters"), "{err}");
}

/// A counter's windows answer over its per-second totals, however many increments made
/// each total: from rollups (`sum`) or raw slots (the rest), equal to `resolution=raw`
/// and to totals computed here, with and without rollups (the latter reads whole hour
/// documents' totals for `step=1h` where it may).
#[tokio::test]
async fn counter_windows_answer_over_slot_totals_not_increments() {
    let config = format!(
        "{COUNTERS}\n[measurements.bare]\nlayout = \"buckets\"\ninterval = \"1s\"\n\
         kind = \"counter\"\nrollups = []\n"
    );
    let e = engine_on(open(), &config, Arc::new(ManualClock::new(0)));
    let mut rng = StdRng::seed_from_u64(3);
    let mut totals = std::collections::BTreeMap::<i64, f64>::new();
    // 40 requests of 1–5 increments each into 30 seconds spread over three hours.
    let seconds: Vec<i64> = (0..30).map(|_| rng.gen_range(0..3 * 3_600)).collect();
    for _ in 0..40 {
        let body: String = (0..rng.gen_range(1..=5))
            .map(|_| {
                let t = seconds[rng.gen_range(0..seconds.len())];
                let n = rng.gen_range(1..4);
                *totals.entry(t * S).or_default() += n as f64;
                format!("pageviews n={n} {t}\nbare n={n} {t}\n")
            })
            .collect();
        let r = e
            .write_lines_as(&body, Precision::Seconds, WriteMode::Increment)
            .await
            .unwrap();
        assert_eq!(r.rejected, 0, "{:?}", r.errors);
    }
    let model: Vec<Point> = totals.iter().map(|(&t, &v)| Point::new(t, v)).collect();
    for measurement in ["pageviews", "bare"] {
        assert_eq!(points(&e, &query(measurement, 0, 3 * H)).await, model);
        for agg in [
            Aggregate::Avg,
            Aggregate::Min,
            Aggregate::Max,
            Aggregate::Sum,
            Aggregate::Count,
            Aggregate::First,
            Aggregate::Last,
        ] {
            for step in [M, 5 * M, H] {
                let mut q = query(measurement, 0, 3 * H);
                q.step = Some(step);
                q.agg = Some(agg);
                let expected =
                    tickertape_core::query::aggregate_windows(&model, 0, 3 * H, step, agg);
                let got = points(&e, &q).await;
                assert_eq!(bits(&got), bits(&expected), "{measurement} {agg:?} {step}");
                q.resolution = Some(ResolutionOrRaw::Raw);
                assert_eq!(bits(&points(&e, &q).await), bits(&got), "{measurement} raw");
            }
        }
        // A chart of a counter without agg: its totals per window.
        let mut q = query(measurement, 0, 3 * H);
        q.max_points = Some(3);
        let hourly = tickertape_core::query::aggregate_windows(&model, 0, 3 * H, H, Aggregate::Sum);
        assert_eq!(points(&e, &q).await, hourly);
    }
}

const RETAINED: &str = r#"
[measurements.bkt]
layout = "buckets"
interval = "10s"
rollups = ["1m", "1h"]
retention = { raw = "2d", "1m" = "10d" }
"#;

/// Retention drops whole partitions once the newest point they can hold is older than the
/// retention, per resolution; time comes from the injected clock.
#[tokio::test]
async fn retention_drops_whole_partitions_by_resolution() {
    let backend = open();
    let clock = Arc::new(ManualClock::new(0));
    let e = engine_on(backend.clone(), RETAINED, clock.clone());
    // One point a day for 6 days, at noon.
    let body: String = (0..6)
        .map(|d| format!("bkt v={d} {}\n", d * D + 12 * H))
        .collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    let before = backend.list_partitions().await.unwrap().len();

    clock.set(6 * D);
    let dry = e.apply_retention(true).await.unwrap();
    assert_eq!(
        backend.list_partitions().await.unwrap().len(),
        before,
        "dry run"
    );
    let report = e.apply_retention(false).await.unwrap();
    assert_eq!(report, dry);
    // Raw day partitions [d, d+1) with d + 1 <= 6 - 2: days 0..=3 dropped.
    let raw_dropped: Vec<i64> = report
        .dropped
        .iter()
        .filter(|p| p.resolution == ResolutionOrRaw::Raw)
        .map(|p| p.start / D)
        .collect();
    assert_eq!(raw_dropped, vec![0, 1, 2, 3]);
    assert!(report
        .dropped
        .iter()
        .all(|p| p.resolution == ResolutionOrRaw::Raw && p.measurement == "bkt"));
    assert_eq!(
        points(&e, &query("bkt", 0, 7 * D)).await,
        vec![
            Point::new(4 * D + 12 * H, 4.0),
            Point::new(5 * D + 12 * H, 5.0)
        ]
    );
    // The 1m rollup (10d) still answers for the dropped days.
    let mut q = query("bkt", 0, 6 * D);
    q.step = Some(D);
    q.agg = Some(Aggregate::Sum);
    q.resolution = Some(ResolutionOrRaw::parse("1m").unwrap());
    assert_eq!(points(&e, &q).await.len(), 6);

    clock.set(30 * D);
    let report = e.apply_retention(false).await.unwrap();
    assert!(report
        .dropped
        .iter()
        .any(|p| p.resolution.to_string() == "1m"));
    assert!(
        report
            .dropped
            .iter()
            .all(|p| p.resolution.to_string() != "1h"),
        "1h is kept forever"
    );
}

/// Pre-allocated documents read as nothing; a written 0 reads as 0.
#[tokio::test]
async fn preallocated_buckets_hold_no_points() {
    let backend = open();
    let clock = Arc::new(ManualClock::new(30 * M));
    let config =
        "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"1s\"\npreallocate = true\n";
    let e = engine_on(backend.clone(), config, clock.clone());
    e.write_lines("bkt v=1 0", Precision::Nanoseconds)
        .await
        .unwrap();
    assert_eq!(e.preallocate_next_period().await.unwrap(), 1);
    assert_eq!(
        e.preallocate_next_period().await.unwrap(),
        0,
        "already there"
    );
    e.write_lines(&format!("bkt v=0 {}", H + 5 * S), Precision::Nanoseconds)
        .await
        .unwrap();
    assert_eq!(
        points(&e, &query("bkt", 0, 2 * H)).await,
        vec![Point::new(0, 1.0), Point::new(H + 5 * S, 0.0)]
    );
}

/// `agg=avg` (and sum, count, min, max) over whole bucket documents comes from their
/// `n`/`sum`/`min`/`max`; the answer equals the raw one, ragged edges included.
#[tokio::test]
async fn whole_documents_answer_from_their_totals() {
    let config = "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\nrollups = []\n";
    let e = engine_on(open(), config, Arc::new(ManualClock::new(0)));
    let mut rng = StdRng::seed_from_u64(3);
    let body: String = (0..1_500)
        .map(|i| {
            format!(
                "bkt v={:?} {}\n",
                rng.gen_range(-1e4..1e4) / 7.0,
                i * 10 * S
            )
        })
        .collect();
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    for agg in [
        Aggregate::Avg,
        Aggregate::Sum,
        Aggregate::Count,
        Aggregate::Min,
        Aggregate::Max,
    ] {
        for (start, end) in [(0, 4 * H), (17 * S, 3 * H + 20 * M), (20 * M, 40 * M)] {
            let mut q = query("bkt", start, end);
            q.step = Some(H);
            q.agg = Some(agg);
            let from_totals = points(&e, &q).await;
            q.resolution = Some(ResolutionOrRaw::Raw);
            let from_raw = points(&e, &q).await;
            assert_eq!(
                bits(&from_totals),
                bits(&from_raw),
                "{agg:?} [{start}, {end})"
            );
            assert!(!from_raw.is_empty());
        }
    }
}

/// `agg=last` without a step on buckets (no series head): the latest point of each
/// series, found partition by partition from the end of the range.
#[tokio::test]
async fn last_point_of_bucket_series() {
    let e = engine_on(open(), CONFIG, Arc::new(ManualClock::new(0)));
    let body = format!(
        "bkt,h=a v=1 {}\nbkt,h=a v=2 {}\nbkt,h=b v=3 {}\nbkt,h=a v=4 {}\n",
        -3 * D,
        10 * S,
        2 * D,
        5 * D + 20 * S
    );
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    let mut q = query("bkt", i64::MIN, i64::MAX);
    q.agg = Some(Aggregate::Last);
    let answer = e.query(&q).await.unwrap();
    let lasts: Vec<Point> = answer.iter().map(|s| s.points[0]).collect();
    assert_eq!(
        lasts,
        vec![Point::new(5 * D + 20 * S, 4.0), Point::new(2 * D, 3.0)]
    );
    let mut q = query("bkt", -4 * D, D);
    q.agg = Some(Aggregate::Last);
    let answer = e.query(&q).await.unwrap();
    assert_eq!(answer.len(), 1, "b has no point before 1d");
    assert_eq!(answer[0].points, vec![Point::new(10 * S, 2.0)]);
}

/// Bucket rollups that missed points (written while the schema kept none, as after a crash
/// between the raw and the rollup write on MongoDB) are computed again from raw points;
/// the rollups of value segments, which the store derives, have nothing to rebuild.
#[tokio::test]
async fn rebuilt_rollups_match_raw_points_again() {
    let backend = open();
    let clock = Arc::new(ManualClock::new(0));
    let without = engine_on(
        backend.clone(),
        "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\nrollups = []",
        clock.clone(),
    );
    let with = engine_on(backend, CONFIG, clock);
    let mut rng = StdRng::seed_from_u64(5);
    let mut t = 0;
    for i in 0..20 {
        let body: String = (0..30)
            .map(|_| {
                t += rng.gen_range(1..20) * 10 * S;
                format!("bkt,h=a v={:?} {t}\n", rng.gen_range(-1e3..1e3) / 3.0)
            })
            .collect();
        let e = if i % 3 == 0 { &without } else { &with };
        e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    }
    let mut q = query("bkt", 0, t + 1);
    q.step = Some(H);
    q.agg = Some(Aggregate::Sum);
    let stale = points(&with, &q).await;
    q.resolution = Some(ResolutionOrRaw::Raw);
    let raw = points(&with, &q).await;
    assert_ne!(
        bits(&stale),
        bits(&raw),
        "the test must start from stale rollups"
    );

    let report = with.rebuild_rollups("bkt", 0, t + 1).await.unwrap();
    assert_eq!(report.series, 1);
    assert!(report.rebuilt >= 2 && report.skipped == 0, "{report:?}");
    q.resolution = None;
    assert_eq!(bits(&points(&with, &q).await), bits(&raw));
    let err = with
        .rebuild_rollups("bkt", i64::MIN, i64::MAX)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("partitions"), "{err}");
    let err = with
        .rebuild_rollups("seg", 0, t + 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nothing to rebuild"), "{err}");
}

/// Retention holds in every database: the schema is by measurement name, and a named
/// database's partitions of that measurement expire as the default database's do.
#[tokio::test]
async fn retention_drops_the_partitions_of_every_database() {
    let config = "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\n\
                  rollups = []\nretention = { raw = \"1d\" }\n";
    let clock = Arc::new(ManualClock::new(0));
    let e = engine_on(open(), config, clock.clone());
    assert!(e.create_database("app").await.unwrap());
    let app = e.database(Some("app")).await.unwrap();
    for engine in [&e, &app] {
        engine
            .write_lines("bkt v=1 0\n", Precision::Nanoseconds)
            .await
            .unwrap();
    }
    let q = query("bkt", 0, H);
    assert_eq!(points(&app, &q).await, [Point::new(0, 1.0)]);
    clock.set(30 * D);
    let report = e.apply_retention(false).await.unwrap();
    let mut dropped: Vec<&str> = report
        .dropped
        .iter()
        .map(|p| p.measurement.as_str())
        .collect();
    dropped.sort();
    assert_eq!(dropped, ["bkt", "bkt (database app)"], "{report:?}");
    assert!(points(&app, &q).await.is_empty());
    assert!(points(&e, &q).await.is_empty());
}
