//! The commands the store sends on the shapes users run, counted with the driver's command
//! monitoring (`common::counter`): a Telegraf body of 60 measurements, the reads a chart
//! of 100 series over 30 days makes (through the engine), a PromQL selector's 7 days of
//! 45 series, a raw read of one series, a host that stopped weeks
//! ago, an idle store, and the collections and indexes 90 days of 60 measurements leave.
//! The counts are printed (run with `--nocapture`) and go into `docs/BENCHMARKS.md`; the
//! asserts hold the layout to its targets: a query reads all its series at once
//! (`read_points`, `read_segment_rollups`), one `find` per collection of its range.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::counter::{breakdown, Counter};
use common::*;
use futures::TryStreamExt;
use mongodb::bson::Document;
use tickertape_backend::{Backend, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::partition::DEFAULT_PARTITION_NS;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::{Resolution, ResolutionOrRaw};
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};
use tickertape_engine::{Engine, Query};
use tickertape_mongodb::{MongoBackend, MongoOptions};

const DAY: i64 = DEFAULT_PARTITION_NS;
const HOUR: i64 = 3_600_000_000_000;
const SECOND: i64 = 1_000_000_000;
/// 2024-01-01T00:00:00Z.
const DAY0: i64 = 19_723 * DAY;
/// Points a day of each series in the month of reads.
const POINTS_A_DAY: i64 = 4;

/// A handle on a fresh database counting its commands, with the default layout and the
/// engine's default rollups (1h, 1d) for every measurement.
async fn counted(test: &str, fold_every: Duration) -> (MongoBackend, Arc<Counter>) {
    let db = fresh_db(test);
    let counter = Arc::new(Counter::default());
    let mut opts: MongoOptions = options(&db, tickertape_mongodb::DEFAULT_BLOCK_POINTS);
    opts.fold_every = fold_every;
    opts.configure_client = Some(counter.hook());
    let b = connect(opts).await;
    b.derive_segment_rollups(Arc::new(|_: &str| vec![Resolution::HOUR, Resolution::DAY]));
    (b, counter)
}

/// 60 measurements × 5 hosts × 2 fields, as Telegraf's inputs send them.
fn telegraf_keys() -> Vec<SeriesKey> {
    let mut keys = Vec::new();
    for m in 0..60 {
        for h in 0..5 {
            for f in 0..2 {
                keys.push(key(&format!("m{m:02}"), &format!("h{h}"), &format!("f{f}")));
            }
        }
    }
    keys
}

/// One point of every series at each of `times`, and the line protocol that carries it
/// (one line per measurement, host and time; both fields on it).
fn telegraf_body(series: &[SeriesId], times: &[i64]) -> (Vec<SeriesAppend>, usize) {
    let appends = series
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let points = times
                .iter()
                .map(|&t| Point::new(t, (i % 97) as f64 * 1.25))
                .collect();
            SeriesAppend::new(s, points).expect("increasing")
        })
        .collect();
    let mut lp = 0;
    for m in 0..60 {
        for h in 0..5 {
            for &t in times {
                lp += format!("m{m:02},host=h{h} f0=12.25,f1=7.5 {t}\n").len();
            }
        }
    }
    (appends, lp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_sixty_measurements_is_a_few_commands() {
    let (b, counter) = counted("shape_body", Duration::from_secs(3600)).await;
    let series = b.resolve_series(&telegraf_keys()).await.expect("register");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The collections are 14 days long from the epoch: DAY0 is day 11 of one.
    let collection_end = (DAY0 / (14 * DAY) + 1) * 14 * DAY;
    let bodies: [(&str, Vec<i64>); 4] = [
        ("first body", vec![DAY0 + 10 * HOUR]),
        ("steady state", vec![DAY0 + 10 * HOUR + 10 * SECOND]),
        (
            "crossing midnight",
            vec![DAY0 + DAY - 5 * SECOND, DAY0 + DAY + 5 * SECOND],
        ),
        (
            "crossing into a new collection",
            vec![collection_end - 5 * SECOND, collection_end + 5 * SECOND],
        ),
    ];
    for (what, times) in bodies {
        let (appends, lp) = telegraf_body(&series, &times);
        counter.take_written();
        let (result, seen) = counter.count(b.append(appends)).await;
        result.unwrap_or_else(|e| panic!("{what}: {e}"));
        let written = counter.take_written();
        println!(
            "append of 60 measurements, {} series, {what}: {} commands ({}); {written} bytes \
             of write commands for {lp} bytes of line protocol ({:.2}×)",
            series.len() * times.len(),
            seen.len(),
            breakdown(&seen),
            written as f64 / lp as f64
        );
        // The first body of a handle also issues the measurements' ids, reads the series'
        // measurements once (cached for good) and makes the collection's indexes.
        assert!(
            what == "first body" || seen.len() <= 8,
            "{what}: {} commands: {}",
            seen.len(),
            breakdown(&seen)
        );
    }
    b.drop_database().await.expect("drop");
}

/// Folds everything written into its final documents with their rollups (`compact`, the
/// same work the background passes do, done now rather than waited for on the slow test
/// server), and checks the rollups cover every point.
async fn folded(b: &MongoBackend) {
    b.compact().await.expect("compact");
    let lag = b.stats().await.expect("stats").rollup_lag_points;
    assert_eq!(lag, 0, "compact leaves every point covered by the rollups");
}

/// The times series `i` of the month of reads holds points at: 4 a day, every sixth day
/// over 35 days up to `now` (the counts are per collection and series, not per point or
/// day, and every day written is a slice the test server folds at its slow pace); the
/// last series stopped 28 days before `now`.
fn month_times(i: usize, now: i64) -> Vec<i64> {
    (0..35)
        .step_by(6)
        .map(|day| now - (35 - day) * DAY)
        .filter(|&from| i < 99 || from < now - 28 * DAY)
        .flat_map(|from| (0..POINTS_A_DAY).map(move |k| from + k * DAY / POINTS_A_DAY))
        .collect()
}

/// How many of `times` lie in `[start, end)`.
fn within(times: &[i64], start: i64, end: i64) -> usize {
    times.iter().filter(|&&t| t >= start && t < end).count()
}

/// 100 series of `cpu` holding `month_times`; the first 45 in rack `r1`, the others in
/// `r2`. Folded, with their rollups.
async fn a_month_of_a_hundred_series(b: &MongoBackend, now: i64) -> Vec<SeriesId> {
    let keys: Vec<SeriesKey> = (0..100)
        .map(|i| {
            let rack = if i < RACK_R1 { "r1" } else { "r2" };
            SeriesKey::new(
                "cpu",
                vec![
                    ("host".into(), format!("host_{i:03}")),
                    ("rack".into(), rack.into()),
                ],
                "usage",
            )
        })
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    // One append a day written, as a collector's bodies would come.
    let mut by_day: BTreeMap<i64, Vec<SeriesAppend>> = BTreeMap::new();
    for (i, &s) in series.iter().enumerate() {
        let mut days: BTreeMap<i64, Vec<Point>> = BTreeMap::new();
        for (k, t) in month_times(i, now).into_iter().enumerate() {
            let value = (i + k) as f64 * 0.5;
            days.entry(t.div_euclid(DAY))
                .or_default()
                .push(Point::new(t, value));
        }
        for (day, points) in days {
            let append = SeriesAppend::new(s, points).expect("increasing");
            by_day.entry(day).or_default().push(append);
        }
    }
    for (_, appends) in by_day {
        b.append(appends).await.expect("append");
    }
    folded(b).await;
    series
}

/// The series of rack `r1`: what one PromQL selector (`cpu_usage{rack="r1"}`) picks.
const RACK_R1: usize = 45;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_name_only_the_collections_of_their_series() {
    let (b, counter) = counted("shape_reads", Duration::from_secs(3600)).await;
    let b = Arc::new(b);
    // The engine offers its default rollups (1h, 1d) before anything is written.
    let engine = Engine::new(b.clone());
    let now = DAY0 + 40 * DAY;
    let series = a_month_of_a_hundred_series(&b, now).await;
    let month = now - 30 * DAY;

    // A chart of every series: the engine's query, its rollup read one call for all.
    let mut chart = Query::raw(
        SeriesSelector {
            measurement: "cpu".into(),
            field: Some("usage".into()),
            ..Default::default()
        },
        month,
        now,
    );
    chart.step = Some(HOUR);
    chart.agg = Some(Aggregate::Avg);
    let (answer, seen) = counter.count(engine.query(&chart)).await;
    let answer = answer.expect("chart");
    assert_eq!(answer.len(), 100, "every series has points in the month");
    // Every point in its own hour: a window each.
    let windows: usize = answer.iter().map(|a| a.points.len()).sum();
    let points_in_month: usize = (0..100)
        .map(|i| within(&month_times(i, now), month, now))
        .sum();
    assert_eq!(windows, points_in_month);
    println!(
        "step=1h avg over 30 days of 100 series (Engine::query): {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 40, "{}", breakdown(&seen));
    // The rollups answered it: the raw answer is the same, bit for bit.
    let mut raw = chart.clone();
    raw.resolution = Some(ResolutionOrRaw::Raw);
    let raw = engine.query(&raw).await.expect("raw chart");
    let bits = |a: &[tickertape_engine::SeriesPoints]| -> Vec<Vec<(i64, u64)>> {
        a.iter()
            .map(|s| {
                s.points
                    .iter()
                    .map(|p| (p.time, p.value.to_bits()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(bits(&answer), bits(&raw), "rollup and raw answers");

    let (slots, seen) = counter
        .count(b.read_segment_rollups(&series, Resolution::HOUR, month, now))
        .await;
    let slots = slots.expect("rollups");
    assert_eq!(slots.iter().map(Vec::len).sum::<usize>(), windows);
    println!(
        "read_segment_rollups 1h, 30 days, 100 series: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );

    // What a PromQL `query_range` over 7 days of one selector reads: the selector's
    // series, then their points over the closed range.
    let week = now - 7 * DAY;
    let rack = SeriesSelector {
        measurement: "cpu".into(),
        field: Some("usage".into()),
        tags: vec![("rack".into(), "r1".into())],
        ..Default::default()
    };
    let (read, seen) = counter
        .count(async {
            let picked = engine.find_series_limited(&rack).await.expect("find");
            engine.read_raw(&picked, week, now).await.expect("read_raw")
        })
        .await;
    assert_eq!(read.len(), RACK_R1);
    let in_week = within(&month_times(0, now), week, now.saturating_add(1));
    assert!(in_week > 0);
    assert!(
        read.iter().all(|p| p.len() == in_week),
        "each series' points of the closed week"
    );
    println!(
        "PromQL-shaped raw read, 7 days of {RACK_R1} series of one selector \
         (find_series_limited + read_raw): {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 20, "{}", breakdown(&seen));

    let (points, seen) = counter.count(read_range(&b, series[0], month, now)).await;
    assert_eq!(
        points.len(),
        within(&month_times(0, now), month, now) + 1,
        "30 days and the neighbour before"
    );
    println!(
        "raw 30 days of one series: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 8, "{}", breakdown(&seen));

    let (points, seen) = counter
        .count(read_range(&b, series[99], now - 7 * DAY, now))
        .await;
    assert_eq!(points.len(), 1, "only the neighbour before: {points:?}");
    println!(
        "7 days of a host stopped 28 days before: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 8, "{}", breakdown(&seen));

    // What `/metrics` asks of the store.
    let (stats, seen) = counter.count(b.stats()).await;
    let stats = stats.expect("stats");
    assert_eq!(stats.series, 100);
    let days_written: usize =
        (0..100).map(|i| month_times(i, now).len()).sum::<usize>() / POINTS_A_DAY as usize;
    assert!(
        stats.segments >= days_written as u64,
        "a document per series and day written at least"
    );
    println!(
        "stats (/metrics) over 3 value collections: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 5, "{}", breakdown(&seen));

    let (heads, seen) = counter.count(b.heads(&series)).await;
    assert!(heads.expect("heads").iter().all(Option::is_some));
    println!(
        "heads of 100 series: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    b.drop_database().await.expect("drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_store_sends_almost_nothing() {
    let (b, counter) = counted("shape_idle", Duration::from_secs(5)).await;
    let s = b
        .resolve_series(&[key("cpu", "a", "v")])
        .await
        .expect("register");
    b.append(vec![append(s[0], [DAY0, DAY0 + SECOND])])
        .await
        .expect("append");
    // The first pass (verify) and a pending one have run.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let ((), seen) = counter
        .count(tokio::time::sleep(Duration::from_secs(10)))
        .await;
    println!(
        "idle store, 10 s, a fold pass every 5 s: {} commands ({})",
        seen.len(),
        breakdown(&seen)
    );
    assert!(seen.len() <= 4, "{}", breakdown(&seen));
    b.drop_database().await.expect("drop");
}

/// Two days of 60 measurements (one series each, a point every 6 hours): day 11 of a
/// value collection and day 0 of the next, with their 1h and 1d rollups: the collections
/// and indexes in the database are exactly those the naming code (which
/// `tickertape-bench year` counts a year with) says. (The names depend on the days
/// written only, not on their points or measurements, and every day written is a slice
/// the slow test server folds.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_what_the_naming_code_says() {
    use tickertape_mongodb::naming::{
        rollup_collection, rollup_indexes, value_collection, value_indexes, FIXED_COLLECTIONS,
    };
    const DAYS: [i64; 2] = [0, 3];
    let (b, _) = counted("shape_catalog", Duration::from_secs(3600)).await;
    let keys: Vec<SeriesKey> = (0..60)
        .map(|m| key(&format!("m{m:02}"), "h", "v"))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    for day in DAYS {
        let from = DAY0 + day * DAY;
        let appends = series
            .iter()
            .map(|&s| append(s, (0..4).map(|k| from + k * 6 * HOUR)))
            .collect();
        b.append(appends).await.expect("append");
    }
    folded(&b).await;
    let db = mongodb::Client::with_uri_str(uri_with_db(b.database_name()))
        .await
        .expect("client")
        .database(b.database_name());
    let mut names = db.list_collection_names().await.expect("list");
    names.sort();
    let mut indexes = 0;
    for name in &names {
        let listed: Vec<_> = db
            .collection::<Document>(name)
            .list_indexes()
            .await
            .expect("list indexes")
            .try_collect()
            .await
            .expect("indexes");
        indexes += listed.len();
    }
    // What the naming code says of these days.
    let periods = b.periods();
    let mut want: Vec<String> = Vec::new();
    let mut want_indexes = 0;
    for day in DAYS {
        let t = DAY0 + day * DAY;
        let mut of_day = vec![(
            value_collection(periods.values().start_of(t)),
            value_indexes().len(),
        )];
        for r in [Resolution::HOUR, Resolution::DAY] {
            of_day.push((
                rollup_collection(r.nanos(), periods.rollups().start_of(t)),
                rollup_indexes().len(),
            ));
        }
        for (name, secondary) in of_day {
            if !want.contains(&name) {
                want.push(name);
                want_indexes += 1 + secondary;
            }
        }
    }
    let present: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("sv.") || n.starts_with("sr."))
        .collect();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(present, want_sorted.iter().collect::<Vec<_>>());
    // Of the fixed collections, those this load made (no tokens, no databases).
    for name in names
        .iter()
        .filter(|n| !n.starts_with("sv.") && !n.starts_with("sr."))
    {
        let (_, secondary) = FIXED_COLLECTIONS
            .iter()
            .find(|(f, _)| f == name)
            .unwrap_or_else(|| panic!("{name} is not a collection of the layout"));
        want_indexes += 1 + secondary;
    }
    println!(
        "days {DAYS:?} of 60 measurements, rollups 1h and 1d: {} collections ({} of them \
         sv./sr.), {indexes} indexes, {} in all",
        names.len(),
        present.len(),
        names.len() + indexes
    );
    assert_eq!(indexes, want_indexes, "the indexes the naming code counts");
    b.drop_database().await.expect("drop");
}
