//! The commands the backend sends, counted with the driver's command monitoring: an
//! `append` of a 5,000-line body (1,000 series × 50 points, as a devops agent fleet sends)
//! is a fixed handful of round trips whatever the number of series — the first body,
//! a steady-state body, and a body that crosses into the next day partition — and a fold
//! pass over those series is a few per round of 200 series. The counts printed (run with
//! `--nocapture`) go into `docs/BENCHMARKS.md`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::counter::{breakdown, Counter};
use common::*;
use tickertape_backend::{Backend, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::partition::DEFAULT_PARTITION_NS;
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId};
use tickertape_mongodb::MongoBackend;

const SERIES: usize = 1_000;
const POINTS: i64 = 50;
const STEP_NS: i64 = 10_000_000_000;
const DAY: i64 = DEFAULT_PARTITION_NS;
const HOUR: i64 = 3_600_000_000_000;
/// 2024-01-01T00:00:00Z.
const DAY0: i64 = 19_723 * DAY;

/// Every series, `POINTS` points 10 s apart from `start`.
fn body(series: &[SeriesId], start: i64) -> Vec<SeriesAppend> {
    series
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let points = (0..POINTS)
                .map(|i| Point::new(start + i * STEP_NS, (k as i64 * 7 + i) as f64 * 0.25))
                .collect();
            SeriesAppend::new(s, points).expect("increasing times")
        })
        .collect()
}

/// A store of `SERIES` registered series with the engine's standard rollups, counting
/// the commands its handle sends; the three bodies written, their counts printed.
async fn three_bodies(test: &str) -> (MongoBackend, Arc<Counter>, Vec<SeriesId>, Vec<usize>) {
    let db = fresh_db(test);
    let counter = Arc::new(Counter::default());
    // Default layout (day partitions, 100,000-point documents); the background task
    // waits an hour, so it sends nothing but the pass at the rollup plan, just below.
    let mut opts = options(&db, tickertape_mongodb::DEFAULT_BLOCK_POINTS);
    opts.configure_client = Some(counter.hook());
    let b = connect(opts).await;
    b.derive_segment_rollups(Arc::new(|m: &str| match m {
        "cpu" => Resolution::STANDARD.to_vec(),
        _ => Vec::new(),
    }));
    let keys: Vec<_> = (0..SERIES)
        .map(|i| key("cpu", &format!("host_{i:04}"), "usage_user"))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    // The plan's pass (over an empty store) is long over by now.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut counts = Vec::new();
    let bodies = [
        ("first body", DAY0 + 10 * HOUR),
        ("steady state", DAY0 + 10 * HOUR + POINTS * STEP_NS),
        ("crossing midnight", DAY0 + DAY - POINTS / 2 * STEP_NS),
    ];
    for (what, start) in bodies {
        let (result, seen) = counter.count(b.append(body(&series, start))).await;
        result.unwrap_or_else(|e| panic!("{what}: {e}"));
        println!(
            "append, {what}: {} commands ({})",
            seen.len(),
            breakdown(&seen)
        );
        assert!(
            !seen.iter().any(|(name, _)| name == "listCollections"),
            "a fold pass ran in the window of {what}: {}",
            breakdown(&seen)
        );
        counts.push(seen.len());
    }
    (b, counter, series, counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_a_thousand_series_is_a_few_requests() {
    let (b, _, series, counts) = three_bodies("requests_append").await;
    assert!(counts[1] <= 8, "steady state: {} commands", counts[1]);
    assert!(
        counts[2] <= 16,
        "crossing a partition: {} commands",
        counts[2]
    );
    let all = read_all(&b, series[SERIES - 1]).await;
    assert_eq!(all.len() as i64, 3 * POINTS, "the points are all there");
    b.drop_database().await.expect("drop");
}

/// What `compact` sends to fold those series (two partitions, three documents a series
/// in the first, one in the second) and derive their four rollups: commands per round of
/// series, not per series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes on the secantusdb test server (its updates of hundreds of statements \
            take seconds each), a queue for every other test on it; run alone: cargo test -p \
            tickertape-mongodb --test requests -- --ignored --nocapture"]
async fn a_fold_pass_over_a_thousand_series() {
    let (b, counter, series, _) = three_bodies("requests_fold").await;
    let (result, seen) = counter.count(b.compact()).await;
    result.expect("compact");
    println!(
        "compact (fold pass) of {SERIES} series × {} points in 2 partitions, rollups {:?}: \
         {} commands ({})",
        3 * POINTS,
        Resolution::STANDARD.map(|r| r.to_string()),
        seen.len(),
        breakdown(&seen)
    );
    assert!(
        seen.len() < SERIES / 4,
        "a fold pass sends commands per series: {}",
        breakdown(&seen)
    );
    assert_eq!(b.stats().await.expect("stats").rollup_lag_points, 0);
    assert_rollup_documents_cover(&b, &Resolution::STANDARD).await;
    let all = read_all(&b, series[SERIES - 1]).await;
    assert_eq!(all.len() as i64, 3 * POINTS, "the points are all there");
    b.drop_database().await.expect("drop");
}
