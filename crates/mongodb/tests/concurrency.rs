//! Two handles on one database (as two processes would have) write the same series at
//! overlapping times while both fold in the background and `compact` runs beside them.
//! Under last write wins: no acknowledged point is lost, and every time holds the value of
//! a write of it that no other write of it followed (a call that returned before another
//! started loses to it); afterwards the derived rollups equal the raw slots. Folds whose
//! output needs several documents a series have two tests of their own: a read beside
//! one, and two of them racing, lose no point (they found a fold that overwrote documents
//! with other points, since replaced by one that inserts new documents).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::*;
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;
use tickertape_backend::{Backend, SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId};
use tickertape_mongodb::options::ConfigureClient;
use tickertape_mongodb::{MongoBackend, MongoOptions};

const PARTITION_NS: i64 = 1_000;
const CALLS: u64 = 30;

fn kept() -> Vec<Resolution> {
    [10, 100, 1_000]
        .into_iter()
        .map(|ns| Resolution::new(ns).expect("a resolution"))
        .collect()
}

fn racing_options(db: &str) -> MongoOptions {
    // Folds write one document per series and partition: with several (block_points 8),
    // racing folds lose points, see `racing_folds_of_several_documents_lose_no_point`.
    let mut options = options(db, 4_096);
    options.partition_ns = PARTITION_NS;
    options.fold_every = Duration::from_millis(40);
    options.fold_docs = 2;
    options
}

/// One `append` call: when it began and returned (tickets of one counter, so `a.end <
/// b.begin` means `a` returned before `b` started), what it wrote.
struct Call {
    begin: u64,
    end: u64,
    appends: Vec<SeriesAppend>,
}

/// Handle `h` makes `CALLS` calls, each to every series: 6 times drawn from `[0, 3000)`
/// (three partitions, so both handles write many of the same times), values unique to the
/// handle, call and point.
async fn writer(
    backend: Arc<MongoBackend>,
    h: u64,
    series: Vec<SeriesId>,
    ticket: Arc<AtomicU64>,
) -> Vec<Call> {
    let mut rng = Rng::new(h + 11);
    let mut calls = Vec::new();
    for c in 0..CALLS {
        let appends: Vec<SeriesAppend> = series
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                let mut times: Vec<i64> = (0..6).map(|_| rng.range(0, 3_000)).collect();
                times.sort_unstable();
                times.dedup();
                let points = times
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| {
                        let value = h * 1_000_000 + c * 1_000 + k as u64 * 10 + i as u64;
                        Point::new(t, value as f64)
                    })
                    .collect();
                SeriesAppend::new(s, points).expect("increasing times")
            })
            .collect();
        let begin = ticket.fetch_add(1, Ordering::SeqCst);
        backend
            .append(appends.clone())
            .await
            .unwrap_or_else(|e| panic!("handle {h}, call {c}: {e}"));
        let end = ticket.fetch_add(1, Ordering::SeqCst);
        calls.push(Call {
            begin,
            end,
            appends,
        });
    }
    calls
}

/// `compact` over and over until `stop`.
async fn compactor(backend: Arc<MongoBackend>, stop: Arc<AtomicBool>) -> u32 {
    let mut passes = 0;
    while !stop.load(Ordering::SeqCst) {
        backend.compact().await.expect("compact beside writers");
        passes += 1;
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    passes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_write_the_same_times() {
    let db = fresh_db("race_same_times");
    let a = Arc::new(connect(racing_options(&db)).await);
    let b = Arc::new(connect(racing_options(&db)).await);
    for h in [&a, &b] {
        h.derive_segment_rollups(Arc::new(|m: &str| match m {
            "race" => kept(),
            _ => Vec::new(),
        }));
    }
    let keys: Vec<_> = (0..3).map(|i| key("race", &format!("h{i}"), "v")).collect();
    let series = a.resolve_series(&keys).await.expect("register");
    assert_eq!(b.resolve_series(&keys).await.expect("register"), series);

    let ticket = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let compactors = [
        tokio::spawn(compactor(a.clone(), stop.clone())),
        tokio::spawn(compactor(b.clone(), stop.clone())),
    ];
    let writers = [
        tokio::spawn(writer(a.clone(), 1, series.clone(), ticket.clone())),
        tokio::spawn(writer(b.clone(), 2, series.clone(), ticket.clone())),
    ];
    let mut calls = Vec::new();
    for w in writers {
        calls.extend(w.await.expect("writer"));
    }
    stop.store(true, Ordering::SeqCst);
    let mut passes = 0;
    for c in compactors {
        passes += c.await.expect("compactor");
    }
    eprintln!("{passes} compactions beside the writers");

    // Per series and time, the calls that wrote it and their values.
    let mut writes: BTreeMap<(SeriesId, i64), Vec<(&Call, u64)>> = BTreeMap::new();
    for call in &calls {
        for a in &call.appends {
            for p in a.points() {
                writes
                    .entry((a.series(), p.time))
                    .or_default()
                    .push((call, p.value.to_bits()));
            }
        }
    }
    let check = |read: &BTreeMap<(SeriesId, i64), u64>, context: &str| {
        for (&(s, t), candidates) in &writes {
            let got = read
                .get(&(s, t))
                .unwrap_or_else(|| panic!("{context}: acknowledged point {s}@{t} lost"));
            let Some(&(winner, _)) = candidates.iter().find(|(_, v)| v == got) else {
                panic!(
                    "{context}: {s}@{t} reads {}, written by no call",
                    f64::from_bits(*got)
                );
            };
            if let Some((later, _)) = candidates.iter().find(|(c, _)| c.begin > winner.end) {
                panic!(
                    "{context}: {s}@{t} holds the value of call [{}, {}], but call [{}, {}] \
                     began after it returned",
                    winner.begin, winner.end, later.begin, later.end
                );
            }
        }
        assert_eq!(
            read.len(),
            writes.len(),
            "{context}: points read that were never written"
        );
    };
    let read = |h: Arc<MongoBackend>| {
        let series = series.clone();
        async move {
            let mut out = BTreeMap::new();
            for s in series {
                for p in read_all(&h, s).await {
                    out.insert((s, p.time), p.value.to_bits());
                }
            }
            out
        }
    };
    check(&read(a.clone()).await, "read by a, folds running");
    check(&read(b.clone()).await, "read by b, folds running");

    // Both handles' folds may have raced on a series: a later pass covers it.
    let mut lag = u64::MAX;
    for _ in 0..5 {
        a.compact().await.expect("compact");
        lag = a.stats().await.expect("stats").rollup_lag_points;
        if lag == 0 {
            break;
        }
    }
    assert_eq!(lag, 0, "rollup lag after compacting");
    assert_rollup_documents_cover(&a, &kept()).await;
    check(&read(a.clone()).await, "read by a, compacted");
    for h in [&a, &b] {
        assert_rollups_equal_raw(h, &series, &kept(), PARTITION_NS, "after the race").await;
    }
    a.drop_database().await.expect("drop");
}

/// Stops a handle's `update` commands of value partitions (a fold replacing documents)
/// at the one numbered `at` (from 0), before it is sent, until the test lets it go.
struct Gate {
    at: u32,
    seen: AtomicU32,
    reached: tokio::sync::mpsc::UnboundedSender<()>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Gate {
    /// The client hook that installs a gate, the signal that a command reached it, and
    /// the release.
    fn install(
        at: u32,
    ) -> (
        ConfigureClient,
        tokio::sync::mpsc::UnboundedReceiver<()>,
        mpsc::Sender<()>,
    ) {
        let (reached, reached_rx) = tokio::sync::mpsc::unbounded_channel();
        let (release_tx, release) = mpsc::channel();
        let gate = Arc::new(Gate {
            at,
            seen: AtomicU32::new(0),
            reached,
            release: Mutex::new(release),
        });
        let configure = ConfigureClient(Arc::new(move |options: &mut ClientOptions| {
            let gate = gate.clone();
            options.command_event_handler = Some(mongodb::event::EventHandler::callback(
                move |event: CommandEvent| {
                    let CommandEvent::Started(started) = event else {
                        return;
                    };
                    let replaces = started.command_name == "update"
                        && started
                            .command
                            .get_str("update")
                            .is_ok_and(|c| c.starts_with("sv."));
                    if replaces && gate.seen.fetch_add(1, Ordering::SeqCst) == gate.at {
                        // The driver calls this on the task that runs the fold: hand the
                        // worker's other tasks to another thread while it waits.
                        tokio::task::block_in_place(|| {
                            let _ = gate.reached.send(());
                            let _ = gate.release.lock().map(|r| r.recv());
                        });
                    }
                },
            ));
        }));
        (configure, reached_rx, release_tx)
    }
}

/// A reader beside a fold that has replaced some of a series' documents and not yet the
/// others (here: between its two `update` commands; on MongoDB also inside one, which
/// applies its statements one by one) must still find every point. The series whose
/// replacements the two commands split has A = {10, 20} and B = {30, 40} rewritten and C
/// = {40, 50} not yet: 60 is in no document a reader can find until the second command.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_during_a_fold_of_several_documents_miss_no_point() {
    let db = fresh_db("race_read_fold");
    let (reader, series) = series_of_three_documents(&db).await;
    let (hook, mut reached, release) = Gate::install(1);
    let mut folding = options(&db, 2);
    folding.configure_client = Some(hook);
    let folder = Arc::new(connect(folding).await);
    let fold = tokio::spawn({
        let folder = folder.clone();
        async move { folder.compact().await }
    });
    reached
        .recv()
        .await
        .expect("the fold reaches its second update");
    let mut incomplete = Vec::new();
    for (i, &s) in series.iter().enumerate() {
        let read = times(&read_all(&reader, s).await);
        if read != [10, 20, 30, 40, 50, 60] {
            incomplete.push((i, read));
        }
    }
    release.send(()).expect("release the fold");
    fold.await.expect("join").expect("fold");
    assert_eq!(incomplete, vec![], "series read during the fold");
    reader.drop_database().await.expect("drop");
}

/// Two folds of one series on two handles, whose reads saw different documents (a write
/// landed between them), and whose merged points need several documents each: the one
/// that writes second must not replace a document the first never read with a piece of a
/// merge whose other pieces it failed to write.
///
/// Documents of 2 points: A {10, 11}, B {12, 13}, C {14, 15}. Fold 1 reads A, B, C and
/// stops before writing; D {5} is appended; fold 2 reads A, B, C, D and stops before
/// writing. Fold 1 writes A, B, C. Fold 2's replacements of A, B, C fail (their versions
/// moved), but D's succeeds: D becomes {15}, the last piece of fold 2's merge, and the
/// point at 5 (in its failed first piece) is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_folds_of_several_documents_lose_no_point() {
    let db = fresh_db("race_fold_chunks");
    let writer = open(&db, 2).await;
    let s = writer
        .resolve_series(&[key("fold", "a", "v")])
        .await
        .expect("register")[0];
    for times in [[10, 11], [12, 13], [14, 15]] {
        writer.append(vec![append(s, times)]).await.expect("append");
    }
    let folder = |configure: ConfigureClient| {
        let mut options = options(&db, 2);
        options.configure_client = Some(configure);
        connect(options)
    };
    let (hook1, mut reached1, release1) = Gate::install(0);
    let (hook2, mut reached2, release2) = Gate::install(0);
    let first = Arc::new(folder(hook1).await);
    let second = Arc::new(folder(hook2).await);

    let fold1 = tokio::spawn({
        let first = first.clone();
        async move { first.compact().await }
    });
    reached1
        .recv()
        .await
        .expect("fold 1 reaches its replacements");
    writer.append(vec![append(s, [5])]).await.expect("append D");
    let fold2 = tokio::spawn({
        let second = second.clone();
        async move { second.compact().await }
    });
    reached2
        .recv()
        .await
        .expect("fold 2 reaches its replacements");
    release1.send(()).expect("release fold 1");
    fold1.await.expect("join").expect("fold 1");
    release2.send(()).expect("release fold 2");
    fold2.await.expect("join").expect("fold 2");

    assert_eq!(
        times(&read_all(&writer, s).await),
        vec![5, 10, 11, 12, 13, 14, 15],
        "a point lost to racing folds"
    );
    writer.compact().await.expect("compact");
    assert_eq!(
        times(&read_all(&writer, s).await),
        vec![5, 10, 11, 12, 13, 14, 15],
        "after another fold"
    );
    writer.drop_database().await.expect("drop");
}
