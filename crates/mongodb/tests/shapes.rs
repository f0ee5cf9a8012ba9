//! The commands the store sends on the shapes users run, counted with the driver's command
//! monitoring (`common::counter`): a Telegraf body of 60 measurements, the reads a chart
//! of 100 series over 30 days makes, a raw read of one series, a host that stopped weeks
//! ago, an idle store, and the collections and indexes 90 days of 60 measurements leave.
//! The counts are printed (run with `--nocapture`) and go into `docs/BENCHMARKS.md`; the
//! asserts hold the layout to its targets where the `Backend` trait allows (a read is of
//! one series, so a chart of 100 series is 100 reads).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::counter::{breakdown, Counter};
use common::*;
use futures::TryStreamExt;
use mongodb::bson::Document;
use tickertape_backend::{Backend, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::partition::DEFAULT_PARTITION_NS;
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_mongodb::{MongoBackend, MongoOptions};

const DAY: i64 = DEFAULT_PARTITION_NS;
const HOUR: i64 = 3_600_000_000_000;
const SECOND: i64 = 1_000_000_000;
/// 2024-01-01T00:00:00Z.
const DAY0: i64 = 19_723 * DAY;

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

/// Waits (bounded) until the background passes have derived the rollups of everything
/// written: on the slow test server, the passes' own pace, not `compact`'s full fold.
async fn caught_up(b: &MongoBackend) {
    for _ in 0..1_800 {
        if b.stats().await.expect("stats").rollup_lag_points == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    panic!("the rollups did not catch up within an hour");
}

/// 100 series of `cpu`, one point every 30 minutes over 35 days up to `now`; the last
/// series stopped 28 days before `now`. Their rollups derived by the background passes.
async fn a_month_of_a_hundred_series(b: &MongoBackend, now: i64) -> Vec<SeriesId> {
    let keys: Vec<SeriesKey> = (0..100)
        .map(|i| key("cpu", &format!("host_{i:03}"), "usage"))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    let stopped = now - 28 * DAY;
    for day in 0..35 {
        let from = now - (35 - day) * DAY;
        let appends: Vec<SeriesAppend> = series
            .iter()
            .enumerate()
            .filter(|&(i, _)| i < 99 || from < stopped)
            .map(|(i, &s)| {
                let points = (0..48)
                    .map(|k| Point::new(from + k * HOUR / 2, (i as i64 + k) as f64 * 0.5))
                    .collect();
                SeriesAppend::new(s, points).expect("increasing")
            })
            .collect();
        b.append(appends).await.expect("append");
    }
    caught_up(b).await;
    series
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_name_only_the_collections_of_their_series() {
    let (b, counter) = counted("shape_reads", Duration::from_secs(1)).await;
    let now = DAY0 + 40 * DAY;
    let series = a_month_of_a_hundred_series(&b, now).await;
    let month = now - 30 * DAY;

    let (slots, seen) = counter
        .count(async {
            let mut n = 0;
            for &s in &series {
                n += b
                    .read_segment_rollup(s, Resolution::HOUR, month, now)
                    .await
                    .expect("rollup")
                    .len();
            }
            n
        })
        .await;
    assert!(slots > 0);
    println!(
        "step=1h avg over 30 days of 100 series (read_segment_rollup 1h per series): {} \
         commands, {:.1} per series ({})",
        seen.len(),
        seen.len() as f64 / 100.0,
        breakdown(&seen)
    );

    let (points, seen) = counter.count(read_range(&b, series[0], month, now)).await;
    assert_eq!(
        points.len(),
        30 * 48 + 1,
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

/// 20 days of 60 measurements (one series each, a point every 6 hours) from day 11 of a
/// value collection, so across two of them, with their 1h and 1d rollups: the collections
/// and indexes in the database are exactly those the naming code (which
/// `tickertape-bench year` counts a year with) says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_what_the_naming_code_says() {
    use tickertape_mongodb::naming::{
        rollup_collection, rollup_indexes, value_collection, value_indexes, FIXED_COLLECTIONS,
    };
    const DAYS: i64 = 20;
    let (b, _) = counted("shape_catalog", Duration::from_secs(1)).await;
    let keys: Vec<SeriesKey> = (0..60)
        .map(|m| key(&format!("m{m:02}"), "h", "v"))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    for day in 0..DAYS {
        let from = DAY0 + day * DAY;
        let appends = series
            .iter()
            .map(|&s| append(s, (0..4).map(|k| from + k * 6 * HOUR)))
            .collect();
        b.append(appends).await.expect("append");
    }
    caught_up(&b).await;
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
    for day in 0..DAYS {
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
        "{DAYS} days of 60 measurements, rollups 1h and 1d: {} collections ({} of them \
         sv./sr.), {indexes} indexes, {} in all",
        names.len(),
        present.len(),
        names.len() + indexes
    );
    assert_eq!(indexes, want_indexes, "the indexes the naming code counts");
    b.drop_database().await.expect("drop");
}
