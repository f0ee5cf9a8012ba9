//! The crash windows of layout v2 (`docs/format/mongodb.md`, "Crash windows"): a writer
//! stops after taking its write numbers, or between the partitions of one call; a fold
//! stops after upserting the rollups, or after inserting its merged documents (before it
//! marks its inputs superseded).
//! Every acknowledged point reads back with its last acknowledged value (a failed call's
//! points with their old or their new value, or absent where they had none) and the
//! rollups equal the raw slots bit for bit, right after the stop; then a fresh handle
//! (another process) reads the same, its writes go on, and after its `compact` the rollup
//! documents cover every live document (`rollup_lag_points` 0) and still equal the raw
//! slots. A fold stopped between its write commands is
//! `fold_stops_inside_its_replacements`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use tickertape_backend::{Backend, BackendError, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId};
use tickertape_mongodb::{FaultPlan, FaultPoint, MongoBackend, MongoOptions};

/// Small partitions, so that batches span several.
const PARTITION_NS: i64 = 1_000;

/// 10, 100 and 1000 ns divide a partition: kept beside each. 7 does not: derived from the
/// raw points at each read.
fn kept() -> Vec<Resolution> {
    [10, 100, 1_000]
        .into_iter()
        .map(|ns| Resolution::new(ns).expect("a resolution"))
        .collect()
}

fn checked() -> Vec<Resolution> {
    let mut all = kept();
    all.push(Resolution::new(7).expect("a resolution"));
    all
}

fn offer(backend: &MongoBackend) {
    backend.derive_segment_rollups(Arc::new(|measurement: &str| match measurement {
        "crash" => checked(),
        _ => Vec::new(),
    }));
}

fn crash_options(db: &str, fold_every: Duration) -> MongoOptions {
    let mut options = options(db, 16);
    options.partition_ns = PARTITION_NS;
    // Two slices a collection: a crossing of a slice bound is within a collection or
    // into the next one, so that an append stops between two collections' inserts.
    options.collection_slices = 2;
    options.fold_every = fold_every;
    options.fold_docs = 3;
    options
}

/// Writes batches to a set of series: each call appends to every series some new points
/// (times going forward) and some late ones (earlier times, most already held: they
/// overwrite), with values unique to the call, so the last write of each time is known.
struct Writer {
    series: Vec<SeriesId>,
    rng: Rng,
    next: i64,
    calls: u64,
    model: Model,
}

impl Writer {
    fn new(series: Vec<SeriesId>, seed: u64) -> Self {
        Self {
            series,
            rng: Rng::new(seed),
            next: 100,
            calls: 0,
            model: Model::default(),
        }
    }

    /// One call's appends. `cross`: the new points run over the next partition bound.
    fn batch(&mut self, cross: bool) -> Vec<SeriesAppend> {
        self.calls += 1;
        let start = match cross {
            true => (self.next.div_euclid(PARTITION_NS) + 1) * PARTITION_NS - 12,
            false => self.next,
        };
        let fresh: Vec<i64> = (0..6)
            .map(|i| start + i * 4 + self.rng.range(0, 4))
            .collect();
        self.next = fresh[5] + 1;
        let mut appends = Vec::new();
        for (k, &s) in self.series.iter().enumerate() {
            let mut times = fresh.clone();
            for _ in 0..3 {
                times.push(self.rng.range(90, start));
            }
            times.sort_unstable();
            times.dedup();
            let points = times
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    Point::new(t, (self.calls * 1_000 + k as u64 * 100 + i as u64) as f64)
                })
                .collect();
            appends.push(SeriesAppend::new(s, points).expect("increasing times"));
        }
        appends
    }

    async fn write(&mut self, backend: &MongoBackend, cross: bool) {
        let appends = self.batch(cross);
        backend
            .append(appends.clone())
            .await
            .unwrap_or_else(|e| panic!("append {}: {e}", self.calls));
        self.model.acked(&appends);
    }
}

fn is_injected(e: &BackendError) -> bool {
    matches!(e, BackendError::Storage(m) if m.contains("injected fault"))
}

/// Writes, folds, arms `point` and goes on until it fires; then a fresh handle checks and
/// goes on.
async fn crash_and_continue(point: FaultPoint) {
    let db = fresh_db(&format!("crash_{point:?}"));
    let plan = Arc::new(FaultPlan::new());
    // No background pass but the first (at the rollup plan): the fold that fails is
    // `compact`'s.
    let faulty =
        open_with_faults(crash_options(&db, Duration::from_secs(3600)), plan.clone()).await;
    offer(&faulty);
    let keys = [key("crash", "a", "v"), key("crash", "b", "v")];
    let series = faulty.resolve_series(&keys).await.expect("register");
    let mut w = Writer::new(series.clone(), point as u64 + 1);

    // History: folded documents with rollups, and fresh ones on top, late points among them.
    for i in 0..5 {
        w.write(&faulty, i == 3).await;
    }
    faulty.compact().await.expect("compact");
    for i in 0..3 {
        w.write(&faulty, i == 1).await;
    }

    plan.arm(point, 1);
    let append_point = matches!(
        point,
        FaultPoint::AfterSequence | FaultPoint::BetweenPartitions
    );
    for attempt in 0..10 {
        if append_point {
            // Every other call crosses a partition bound (late points alone span several).
            let appends = w.batch(attempt % 2 == 0);
            match faulty.append(appends.clone()).await {
                Ok(()) => w.model.acked(&appends),
                Err(e) if is_injected(&e) => {
                    w.model.failed(&appends);
                    break;
                }
                Err(e) => panic!("append: {e}"),
            }
        } else {
            w.write(&faulty, attempt % 2 == 0).await;
            match faulty.compact().await {
                Ok(()) => {}
                Err(e) if is_injected(&e) => break,
                Err(e) => panic!("compact: {e}"),
            }
            if plan.fired(point) > 0 {
                break; // the background pass met it
            }
        }
    }
    assert_eq!(plan.fired(point), 1, "{point:?} never fired");
    // What the crash left, as any reader sees it: the stopped handle's own (no fold runs
    // there now; a reader beside a fold of several documents can miss points, see
    // `concurrency::reads_during_a_fold_of_several_documents_miss_no_point`).
    let context = format!("after {point:?}");
    w.model.check(&faulty, &series, &context).await;
    assert_rollups_equal_raw(&faulty, &series, &checked(), PARTITION_NS, &context).await;
    // The process dies there.
    drop(faulty);

    // Another process: it reads the same, and its writes go on (late ones too, and across
    // a bound) before its rollup plan is set, so that no fold runs beside its reads.
    let fresh = connect(crash_options(&db, Duration::from_secs(3600))).await;
    w.model
        .check(&fresh, &series, &format!("{context}, reopened"))
        .await;
    for i in 0..3 {
        w.write(&fresh, i == 0).await;
    }
    offer(&fresh);
    // Waits for the pass the plan starts, if it began first.
    fresh.compact().await.expect("compact");
    let context = format!("{point:?}, then writes and compact");
    w.model.check(&fresh, &series, &context).await;
    assert_rollups_equal_raw(&fresh, &series, &checked(), PARTITION_NS, &context).await;
    assert_eq!(fresh.stats().await.expect("stats").rollup_lag_points, 0);
    assert_rollup_documents_cover(&fresh, &kept()).await;
    for &s in &series {
        let last = read_all(&fresh, s).await.last().copied();
        let head = fresh.heads(&[s]).await.expect("heads")[0].map(|h| h.last);
        assert_eq!(head, last, "{context}: head of {s}");
    }
    fresh.drop_database().await.expect("drop");
}

#[tokio::test]
async fn append_stops_after_taking_write_numbers() {
    crash_and_continue(FaultPoint::AfterSequence).await;
}

#[tokio::test]
async fn append_stops_between_partitions() {
    crash_and_continue(FaultPoint::BetweenPartitions).await;
}

#[tokio::test]
async fn fold_stops_after_the_rollups() {
    crash_and_continue(FaultPoint::AfterRollups).await;
}

#[tokio::test]
async fn fold_stops_after_replacing_the_first_documents() {
    crash_and_continue(FaultPoint::AfterReplace).await;
}

/// Several writers die between partitions in a row, each leaving a different part of its
/// call; the next one's points win wherever they overlap.
#[tokio::test]
async fn repeated_partial_appends() {
    let db = fresh_db("crash_repeated");
    let plan = Arc::new(FaultPlan::new());
    // A collection per slice: every crossing of a slice bound crosses collections.
    let one_slice = || {
        let mut options = crash_options(&db, Duration::from_secs(3600));
        options.collection_slices = 1;
        options
    };
    let faulty = open_with_faults(one_slice(), plan.clone()).await;
    let series = faulty
        .resolve_series(&[key("crash", "r", "v")])
        .await
        .expect("register");
    let mut w = Writer::new(series.clone(), 77);
    w.write(&faulty, false).await;
    plan.arm(FaultPoint::BetweenPartitions, 3);
    for _ in 0..3 {
        let appends = w.batch(true);
        let err = faulty.append(appends.clone()).await.expect_err("fault");
        assert!(is_injected(&err), "{err}");
        w.model.failed(&appends);
    }
    assert_eq!(plan.fired(FaultPoint::BetweenPartitions), 3);
    drop(faulty);
    let fresh = connect(one_slice()).await;
    w.model
        .check(&fresh, &series, "after three partial appends")
        .await;
    w.write(&fresh, true).await;
    offer(&fresh);
    fresh.compact().await.expect("compact");
    w.model.check(&fresh, &series, "after compact").await;
    assert_rollups_equal_raw(&fresh, &series, &checked(), PARTITION_NS, "compacted").await;
    assert_eq!(fresh.stats().await.expect("stats").rollup_lag_points, 0);
    assert_rollup_documents_cover(&fresh, &kept()).await;
    fresh.drop_database().await.expect("drop");
}

/// A fold stops at its second `update` of values, as a process dies there (or as the
/// command fails and the pass gives up): its new documents and the supersede marks of
/// its inputs (one statement per series) are written, `d` of its new documents not yet
/// cleared. Every point of `series_of_three_documents` is still read, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fold_stops_inside_its_replacements() {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tickertape_mongodb::options::ConfigureClient;

    let db = fresh_db("crash_inside_replace");
    let (writer, series) = series_of_three_documents(&db).await;
    drop(writer);

    // The folding process dies when it is about to send its second `update` of values.
    let updates = Arc::new(AtomicU32::new(0));
    let mut folding = options(&db, 2);
    folding.configure_client = Some(ConfigureClient(Arc::new(move |o| {
        let updates = updates.clone();
        o.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
            let CommandEvent::Started(started) = event else {
                return;
            };
            let values = started.command_name == "update"
                && started
                    .command
                    .get_str("update")
                    .is_ok_and(|c| c.starts_with("sv."));
            if values && updates.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("the folding process dies here");
            }
        }));
    })));
    let folder = Arc::new(connect(folding).await);
    let died = tokio::spawn({
        let folder = folder.clone();
        async move { folder.compact().await }
    })
    .await;
    assert!(died.is_err_and(|e| e.is_panic()), "the fold was to die");
    drop(folder);

    let fresh = connect(options(&db, 2)).await;
    for (i, &s) in series.iter().enumerate() {
        assert_eq!(
            times(&read_all(&fresh, s).await),
            vec![10, 20, 30, 40, 50, 60],
            "series {i} after the fold died"
        );
    }
    fresh.drop_database().await.expect("drop");
}
