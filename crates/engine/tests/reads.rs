//! What the read plan decides, seen from outside: where answers come from and how they
//! are reported, over the embedded backend.

use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{ManualClock, Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector};
use tickertape_engine::{Engine, Query, WriteMode};
use tickertape_reference::ReferenceBackend;

const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;

fn engine(config: &str) -> Engine {
    engine_at(config, 0)
}

/// An engine whose clock says `now`.
fn engine_at(config: &str, now: i64) -> Engine {
    let backend: Arc<dyn Backend> = Arc::new(ReferenceBackend::default());
    Engine::with_clock(backend, Arc::new(ManualClock::new(now)))
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
    let config = "[measurements.hits]\nlayout = \"buckets\"\ninterval = \"1s\"\n\
                  kind = \"counter\"\nrollups = [\"1m\"]\n";
    let e = engine(config);
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

const H: i64 = 60 * M;

const WINDOWED: &str = r#"
[measurements.seg]

[measurements.bkt]
layout = "buckets"
interval = "10s"
rollups = ["1m", "1h"]

[measurements.flags]
change_only = true
"#;

/// `agg` of the points in each window of `step` over `[start, end)`, computed here:
/// every window at its start.
fn expected_windows(
    points: &[Point],
    start: i64,
    end: i64,
    step: i64,
    agg: Aggregate,
) -> Vec<Point> {
    let mut windows: std::collections::BTreeMap<i64, Vec<f64>> = Default::default();
    for p in points.iter().filter(|p| p.time >= start && p.time < end) {
        let window = p.time.div_euclid(step) * step;
        windows.entry(window).or_default().push(p.value);
    }
    windows
        .into_iter()
        .map(|(w, values)| match agg {
            Aggregate::First => Point::new(w, values[0]),
            Aggregate::Last => Point::new(w, values[values.len() - 1]),
            _ => unreachable!("first and last only"),
        })
        .collect()
}

fn bits(points: &[Point]) -> Vec<(i64, u64)> {
    points.iter().map(|p| (p.time, p.value.to_bits())).collect()
}

/// `got == expected`, naming the first point that differs rather than printing all.
fn assert_same(got: &[Point], expected: &[Point], label: &str) {
    let first_difference = got.iter().zip(expected).position(|(g, e)| g != e);
    if let Some(i) = first_difference {
        panic!(
            "{label}: point {i} is {:?}, expected {:?}",
            got[i], expected[i]
        );
    }
    assert_eq!(got.len(), expected.len(), "{label}: number of points");
}

/// The query API's rule: with `step` (or `max_points`) every window is reported at its
/// start, as InfluxDB's `GROUP BY time()` does, `first` and `last` included; only `agg`
/// without a step reports the chosen point's own time. 26 hours of 10 s data, value
/// segments (at :03, :13 …) and buckets (each point at its slot's start), through the
/// rollups and through `resolution=raw`, which agree bit for bit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windowed_first_and_last_are_reported_at_the_window_start() {
    let e = engine(WINDOWED);
    let written: Vec<Point> = (0..26 * 360)
        .map(|i: i64| Point::new(i * 10 * S + 3 * S, ((i * 7) % 13) as f64 + 0.5))
        .collect();
    let body: String = written
        .iter()
        .map(|p| {
            format!(
                "seg v={:?} {t}\nbkt v={:?} {t}\n",
                p.value,
                p.value,
                t = p.time
            )
        })
        .collect();
    let r = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    assert_eq!(r.rejected, 0, "{:?}", r.errors);
    // A bucket point lands on its 10 s slot's start.
    let in_slots: Vec<Point> = written
        .iter()
        .map(|p| Point::new(p.time - 3 * S, p.value))
        .collect();

    for (measurement, stored) in [("seg", &written), ("bkt", &in_slots)] {
        for (start, end) in [(0, 26 * H), (17 * S, 26 * H - 25 * S)] {
            for agg in [Aggregate::First, Aggregate::Last] {
                for step in [M, 5 * M, H] {
                    let mut q = query(measurement, start, end);
                    q.step = Some(step);
                    q.agg = Some(agg);
                    let label = format!("{measurement} {agg:?} step {step} [{start}, {end})");
                    let via_rollup = points(&e, &q).await;
                    let expected = expected_windows(stored, start, end, step, agg);
                    assert_same(&via_rollup, &expected, &label);
                    q.resolution = Some(ResolutionOrRaw::Raw);
                    assert_eq!(bits(&points(&e, &q).await), bits(&via_rollup), "{label}");
                }
                // A chart: 26 hours in at most 30 points is a step of one hour.
                let mut q = query(measurement, start, end);
                q.max_points = Some(30);
                q.agg = Some(agg);
                let expected = expected_windows(stored, start, end, H, agg);
                let label = format!("{measurement} {agg:?} max_points [{start}, {end})");
                assert_same(&points(&e, &q).await, &expected, &label);
            }
        }
        // Without a step, first and last are the points themselves.
        let mut q = query(measurement, 0, 26 * H);
        q.agg = Some(Aggregate::First);
        assert_eq!(points(&e, &q).await, vec![stored[0]]);
        q.agg = Some(Aggregate::Last);
        assert_eq!(points(&e, &q).await, vec![stored[stored.len() - 1]]);
    }
}

/// A change-only series' held windows are reported at their start too, `first` and
/// `last` included, on the rollup and the raw path alike.
#[tokio::test]
async fn held_windows_are_reported_at_the_window_start() {
    let e = engine_at(WINDOWED, 5 * M);
    // Changes at 0:20 (to 1), 2:30 (to 2) and 2:45 (to 3); "now" is 5:00, the last
    // window the value is held into.
    let body = format!(
        "flags v=1 {}\nflags v=2 {}\nflags v=3 {}\n",
        20 * S,
        2 * M + 30 * S,
        2 * M + 45 * S
    );
    e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    for resolution in [None, Some(ResolutionOrRaw::Raw)] {
        let mut q = query("flags", 30 * S, 10 * M);
        q.step = Some(M);
        q.resolution = resolution;
        q.agg = Some(Aggregate::First);
        let firsts = vec![
            Point::new(0, 1.0),
            Point::new(M, 1.0),
            Point::new(2 * M, 1.0),
            Point::new(3 * M, 3.0),
            Point::new(4 * M, 3.0),
            Point::new(5 * M, 3.0),
        ];
        assert_eq!(points(&e, &q).await, firsts, "{resolution:?}");
        q.agg = Some(Aggregate::Last);
        let lasts = vec![
            Point::new(0, 1.0),
            Point::new(M, 1.0),
            Point::new(2 * M, 3.0),
            Point::new(3 * M, 3.0),
            Point::new(4 * M, 3.0),
            Point::new(5 * M, 3.0),
        ];
        assert_eq!(points(&e, &q).await, lasts, "{resolution:?}");
    }
}

/// A query selecting more series, or answering more points, than the limits allow is
/// refused with a message naming the limit, its value and how to narrow the query; a
/// narrower query on the same engine is answered.
#[tokio::test]
async fn over_wide_queries_are_refused_naming_the_limit() {
    use tickertape_engine::{EngineError, OverLimit, QueryLimits};
    let limits = QueryLimits {
        max_series: 3,
        max_points: 10,
        ..QueryLimits::default()
    };
    let e = engine("").with_query_limits(limits);
    let body: String = (0..4)
        .flat_map(|h| (0..4).map(move |t| format!("cpu,host=h{h} v={t} {}\n", t + 1)))
        .collect();
    let r = e
        .write_lines_as(&body, Precision::Seconds, WriteMode::Set)
        .await
        .unwrap();
    assert_eq!(r.rejected, 0, "{:?}", r.errors);
    let all = query("cpu", 0, 10 * S);
    match e.query(&all).await {
        Err(EngineError::OverLimit(over)) => {
            let m = over.to_string();
            assert!(
                m.contains("4 series") && m.contains("limit of 3") && m.contains("tag="),
                "{m}"
            );
        }
        other => panic!("expected the series limit, got {other:?}"),
    }
    match e.list_series(&all.selector).await {
        Err(EngineError::OverLimit(over)) => assert_eq!(
            over,
            OverLimit::Series {
                selected: 4,
                limit: 3
            }
        ),
        other => panic!("expected the series limit on a listing, got {other:?}"),
    }
    let mut one_host = all.clone();
    one_host.selector.tags = vec![("host".into(), "h1".into())];
    assert_eq!(points(&e, &one_host).await.len(), 4);
    assert_eq!(e.list_series(&one_host.selector).await.unwrap().len(), 1);
    // Three series of four points each: 12 points, over the limit of 10.
    let e = engine("").with_query_limits(QueryLimits {
        max_series: 10,
        max_points: 10,
        ..QueryLimits::default()
    });
    let three_hosts: String = body.lines().take(12).map(|l| format!("{l}\n")).collect();
    e.write_lines_as(&three_hosts, Precision::Seconds, WriteMode::Set)
        .await
        .unwrap();
    match e.query(&all).await {
        Err(EngineError::OverLimit(over)) => {
            let m = over.to_string();
            assert!(
                m.contains("limit of 10 points") && m.contains("step="),
                "{m}"
            );
        }
        other => panic!("expected the points limit, got {other:?}"),
    }
    let mut windows = all.clone();
    windows.step = Some(10 * S);
    windows.agg = Some(Aggregate::Max);
    assert_eq!(e.query(&windows).await.unwrap().len(), 3);
}
