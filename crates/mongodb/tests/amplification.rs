//! Write amplification: the bytes of every write command the store sends to MongoDB
//! (the driver's command monitoring, `common::counter`) against the bytes of line protocol
//! that carried the points, for a steady load in real time with the background passes at
//! their real pace; and the rollups a pending pass lets lag, which readers extend with
//! the fresh documents' points themselves, bit for bit the raw answer.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::counter::{breakdown, Counter};
use common::*;
use tickertape_backend::{Backend, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::partition::DEFAULT_PARTITION_NS;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_mongodb::{MongoBackend, MongoOptions};

const SECOND: i64 = 1_000_000_000;
const HOUR: i64 = 3_600 * SECOND;

/// A handle on a fresh database counting its commands, folding every `fold_every`, with
/// the engine's default rollups (1h, 1d) for every measurement.
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

/// 10 measurements × 5 hosts × 2 fields: 100 series, as Telegraf sends them (one line
/// per measurement and host, both fields on it).
fn hundred_series() -> Vec<SeriesKey> {
    let mut keys = Vec::new();
    for m in 0..10 {
        for h in 0..5 {
            for f in 0..2 {
                keys.push(key(&format!("m{m}"), &format!("h{h}"), &format!("f{f}")));
            }
        }
    }
    keys
}

/// One point of every series at `time` (values that move, as measurements do), and the
/// bytes of the line protocol that carries them.
fn body(series: &[SeriesId], time: i64, round: usize) -> (Vec<SeriesAppend>, usize) {
    let value = |i: usize| ((i * 37 + round * 11) % 1000) as f64 * 0.125;
    let appends = series
        .iter()
        .enumerate()
        .map(|(i, &s)| SeriesAppend::new(s, vec![Point::new(time, value(i))]).expect("one point"))
        .collect();
    let mut lp = 0;
    for m in 0..10 {
        for h in 0..5 {
            let i = (m * 5 + h) * 2;
            lp += format!(
                "m{m},host=h{h} f0={},f1={} {time}\n",
                value(i),
                value(i + 1)
            )
            .len();
        }
    }
    (appends, lp)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// 100 series, one point each every 10 s in real time for 160 s (16 bodies), the
/// background pass every 5 s (the default): every write command counted, the passes'
/// included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "160 s of real time: cargo test -p tickertape-mongodb --test amplification -- \
            --ignored --nocapture"]
async fn a_steady_load_writes_at_most_three_times_its_line_protocol() {
    let (b, counter) = counted("amp_steady", Duration::from_secs(5)).await;
    let series = b.resolve_series(&hundred_series()).await.expect("register");
    // The first pass (verify) runs on an empty store before the load begins.
    tokio::time::sleep(Duration::from_secs(6)).await;
    counter.take_written();
    counter.take_written_by();
    let mut lp = 0;
    let ((), seen) = counter
        .count(async {
            for round in 0..16 {
                let began = tokio::time::Instant::now();
                let (appends, bytes) = body(&series, now_ns(), round);
                lp += bytes;
                b.append(appends).await.expect("append");
                tokio::time::sleep_until(began + Duration::from_secs(10)).await;
            }
        })
        .await;
    let written = counter.take_written();
    println!(
        "100 series, a point each every 10 s, 160 s, passes every 5 s: {written} bytes of \
         write commands for {lp} bytes of line protocol ({:.2}×); {} commands ({}); \
         bytes by command: {}",
        written as f64 / lp as f64,
        seen.len(),
        breakdown(&seen),
        counter.take_written_by()
    );
    // What the rollups answer now (lagging, extended by readers) is the raw answer.
    assert_rollups_equal_raw(
        &b,
        &series[..4],
        &[Resolution::HOUR, Resolution::DAY],
        DEFAULT_PARTITION_NS,
        "steady load",
    )
    .await;
    assert!(
        written <= 3 * lp as u64,
        "{written} bytes written for {lp} bytes of line protocol"
    );
    b.drop_database().await.expect("drop");
}

/// A pending pass leaves the stored rollups behind the fresh documents (no rollup write
/// per pass), and a rollup read extends them with those documents' points: the answer is
/// the raw one bit for bit, at the cost of one `find` more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_rollups_are_extended_by_readers() {
    let (b, counter) = counted("amp_lagging", Duration::from_secs(1)).await;
    let series = b
        .resolve_series(&[key("cpu", "a", "v"), key("cpu", "b", "v")])
        .await
        .expect("register");
    // The first pass (verify, which extends rollups) runs before the writes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let day = 19_723 * DEFAULT_PARTITION_NS;
    let written: Vec<SeriesAppend> = series
        .iter()
        .map(|&s| append(s, (0..6).map(|i| day + i * HOUR / 2)))
        .collect();
    b.append(written).await.expect("append");
    b.compact().await.expect("compact");
    // Fresh documents after what the rollups hold, in the last slot and in new ones.
    for round in 0..3 {
        let later: Vec<SeriesAppend> = series
            .iter()
            .map(|&s| {
                let t = day + 5 * HOUR / 2 + (round + 1) * 20 * 60 * SECOND;
                SeriesAppend::new(s, vec![Point::new(t, round as f64 - 0.5)]).expect("one")
            })
            .collect();
        b.append(later).await.expect("append");
    }
    // Pending passes look at the marked slice, and write no rollup document.
    counter.take_written_by();
    let ((), seen) = counter
        .count(tokio::time::sleep(Duration::from_secs(4)))
        .await;
    let passes = breakdown(&seen);
    assert!(passes.contains("find sv."), "no pending pass ran: {passes}");
    assert!(
        !passes.contains("update sr."),
        "rollups rewritten: {passes}"
    );
    // Every fresh document is still uncovered, and readers answer from the stored slots
    // extended with them.
    let (slots, reads) = counter
        .count(b.read_segment_rollups(&series, Resolution::HOUR, day, day + 4 * HOUR))
        .await;
    let slots = slots.expect("read rollups");
    for (i, &s) in series.iter().enumerate() {
        let raw = read_all(&b, s).await;
        assert_eq!(raw.len(), 9, "series {s}");
        let want = summarize_slots(&raw, day, day + 4 * HOUR, Resolution::HOUR);
        assert_eq!(summary_bits(&slots[i]), summary_bits(&want), "series {s}");
    }
    println!(
        "rollup read of 2 series over lagging rollups: {} commands ({})",
        reads.len(),
        breakdown(&reads)
    );
    assert_rollups_equal_raw(
        &b,
        &series,
        &[Resolution::HOUR, Resolution::DAY],
        DEFAULT_PARTITION_NS,
        "lagging rollups",
    )
    .await;
    b.drop_database().await.expect("drop");
}

/// Hours of one measurement's 10 series at a point every 10 s, in compressed time: the
/// bodies back to back, a fold pass over the pending marks after every 16 bodies (the
/// background pass, run now; it folds each series every `fold_docs` (32) fresh
/// documents): the bytes of write commands per 320 bodies, and against the line
/// protocol, as a slice fills — what a day costs beyond the first minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes on the test server: cargo test -p tickertape-mongodb --test amplification \
            -- --ignored --nocapture hours"]
async fn hours_of_a_slice_fold_at_a_bounded_cost() {
    let db = fresh_db("amp_hours");
    let counter = Arc::new(Counter::default());
    let mut opts: MongoOptions = options(&db, tickertape_mongodb::DEFAULT_BLOCK_POINTS);
    opts.fold_every = Duration::from_secs(3600);
    opts.superseded_grace = Duration::ZERO;
    opts.configure_client = Some(counter.hook());
    let b = connect(opts).await;
    b.derive_segment_rollups(Arc::new(|_: &str| vec![Resolution::HOUR, Resolution::DAY]));
    // 5 hosts × 2 fields, as `hundred_series` per measurement.
    let keys: Vec<SeriesKey> = (0..10)
        .map(|i| key("m0", &format!("h{}", i / 2), &format!("f{}", i % 2)))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    let day = 19_723 * DEFAULT_PARTITION_NS;
    let value = |i: usize, round: usize| ((i * 37 + round * 11) % 1000) as f64 * 0.125;
    let (mut lp_all, mut written_all) = (0, 0);
    for block in 0..4 {
        let mut lp = 0;
        let ((), _) = counter
            .count(async {
                for round in block * 320..(block + 1) * 320 {
                    let time = day + round as i64 * 10 * SECOND;
                    let appends = series
                        .iter()
                        .enumerate()
                        .map(|(i, &s)| {
                            SeriesAppend::new(s, vec![Point::new(time, value(i, round))])
                                .expect("one point")
                        })
                        .collect();
                    for h in 0..5 {
                        let (f0, f1) = (value(2 * h, round), value(2 * h + 1, round));
                        lp += format!("m0,host=h{h} f0={f0},f1={f1} {time}\n").len();
                    }
                    b.append(appends).await.expect("append");
                    if round % 16 == 15 {
                        b.fold_pending_now().await.expect("fold pass");
                    }
                }
            })
            .await;
        let written = counter.take_written();
        println!(
            "bodies {}..{} (points {}..{} of each series in the slice): {written} bytes of \
             write commands for {lp} bytes of line protocol ({:.2}×); by command: {}",
            block * 320,
            (block + 1) * 320,
            block * 320,
            (block + 1) * 320,
            written as f64 / lp as f64,
            counter.take_written_by()
        );
        lp_all += lp;
        written_all += written;
    }
    println!(
        "1,280 bodies: {written_all} bytes for {lp_all} bytes of line protocol ({:.2}×)",
        written_all as f64 / lp_all as f64
    );
    assert_rollups_equal_raw(
        &b,
        &series[..2],
        &[Resolution::HOUR, Resolution::DAY],
        DEFAULT_PARTITION_NS,
        "hours of a slice",
    )
    .await;
    b.drop_database().await.expect("drop");
}

/// A raw fold merges the fresh documents with the latest folded ones no larger than what
/// it merges and keeps the older, larger ones: after 60 single-point bodies folded every
/// 4 (15 folds), the series lives in documents of 32, 16, 8 and 4 points (15 in binary;
/// not one document rewritten 15 times), every point reads back, and the rollups still
/// equal the raw points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folds_in_size_tiers_keep_older_documents() {
    use futures::TryStreamExt;
    use mongodb::bson::{doc, Document};

    let db = fresh_db("amp_tiers");
    let mut opts: MongoOptions = options(&db, tickertape_mongodb::DEFAULT_BLOCK_POINTS);
    opts.fold_every = Duration::from_secs(3600);
    opts.fold_docs = 4;
    opts.superseded_grace = Duration::ZERO;
    let b = connect(opts).await;
    b.derive_segment_rollups(Arc::new(|_: &str| vec![Resolution::HOUR, Resolution::DAY]));
    let s = b
        .resolve_series(&[key("cpu", "a", "v")])
        .await
        .expect("register")[0];
    let day = 19_723 * DEFAULT_PARTITION_NS;
    let mut want = Vec::new();
    for i in 0..60_i64 {
        let p = Point::new(day + i * 10 * SECOND, (i * 7 % 13) as f64 - 2.5);
        want.push(p);
        b.append(vec![SeriesAppend::new(s, vec![p]).expect("one")])
            .await
            .expect("append");
        if i % 4 == 3 {
            b.fold_pending_now().await.expect("fold");
        }
    }
    // A last pass deletes what the last fold superseded.
    b.fold_pending_now().await.expect("fold");
    let client = mongodb::Client::with_uri_str(uri_with_db(&db))
        .await
        .expect("client");
    let mut sizes = Vec::new();
    for name in client
        .database(&db)
        .list_collection_names()
        .await
        .expect("list")
    {
        if !name.starts_with("sv.") {
            continue;
        }
        let docs: Vec<Document> = client
            .database(&db)
            .collection::<Document>(&name)
            .find(doc! { "s": s.0 as i64, "x": { "$exists": false } })
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("docs");
        sizes.extend(docs.iter().map(|d| d.get_i64("n").unwrap_or(1)));
    }
    sizes.sort_unstable();
    println!("60 points folded every 4, live documents' sizes: {sizes:?}");
    assert_eq!(sizes, vec![4, 8, 16, 32]);
    assert_eq!(read_all(&b, s).await, want);
    assert_rollups_equal_raw(
        &b,
        &[s],
        &[Resolution::HOUR, Resolution::DAY],
        DEFAULT_PARTITION_NS,
        "tiers",
    )
    .await;
    b.drop_database().await.expect("drop");
}
