//! The writer's sticky failure, driven by real I/O errors: the data file sits behind a
//! switch that fails its writes on a countdown (`IoFaults`, as redb's fuzzer does).
//!
//! What must hold after a failed write: the call that hit it gets an error, every later
//! write is refused until the store is reopened (also once the disk works again), reads
//! go on and never show anything of the failed write, and after a reopen the store holds
//! exactly what was acknowledged before, plus the failed batch only if redb had in fact
//! made it durable — whole, never in part.

use tickertape_backend::BucketRange;
use tickertape_backend::{
    Backend, BackendError, BucketFamily, BucketRead, BucketWrite, SlotChange,
};
use tickertape_backend::{BucketStore, SeriesCatalog, ValueStore};
use tickertape_backend::{SeriesAppend, SeriesInfo};
use tickertape_core::segment::collect_points;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions, IoFaults};

const S: i64 = 1_000_000_000;

fn open(dir: &tempfile::TempDir, faults: Option<IoFaults>) -> EmbeddedBackend {
    let mut options = EmbeddedOptions::new(dir.path());
    options.io_faults = faults;
    EmbeddedBackend::open(options).expect("open the store")
}

fn points(from: i64, to: i64) -> Vec<Point> {
    (from..to).map(|t| Point::new(t * S, t as f64)).collect()
}

async fn series(b: &dyn Backend) -> SeriesId {
    let key = SeriesKey::new("cpu", vec![("host".into(), "a".into())], "usage");
    b.resolve_series(&[key]).await.expect("register")[0]
}

async fn append(b: &dyn Backend, s: SeriesId, from: i64, to: i64) -> Result<(), BackendError> {
    let batch = SeriesAppend::new(s, points(from, to)).expect("points in time order");
    b.append(vec![batch]).await.map(|_| ())
}

async fn stored(b: &dyn Backend, s: SeriesId) -> Vec<Point> {
    let segments = b.read_segments(s, i64::MIN, i64::MAX).await.expect("read");
    collect_points(&segments).expect("decode")
}

fn slot_write(value: f64) -> BucketWrite {
    let family = BucketFamily::raw(1, S).expect("1 s buckets");
    BucketWrite::new(family, SeriesId(1), 0, 0, SlotChange::Set(value)).expect("a valid write")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_io_error_writes_are_refused_until_reopen_and_nothing_half_written_is_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let faults = IoFaults::new();
    let b = open(&dir, Some(faults.clone()));
    let s = series(&b).await;
    append(&b, s, 1, 21).await.expect("a healthy disk stores");
    let before = stored(&b, s).await;

    faults.fail_after(0);
    let failed = append(&b, s, 21, 41).await;
    assert!(
        matches!(&failed, Err(BackendError::Storage(_))),
        "the write that hit the fault hears of it: {failed:?}"
    );
    assert_eq!(
        stored(&b, s).await,
        before,
        "reads never see the failed write"
    );

    faults.heal();
    let refused = append(&b, s, 41, 51).await;
    assert!(
        matches!(&refused, Err(BackendError::Storage(m)) if m.contains("restart")),
        "still refused after the disk healed: {refused:?}"
    );
    let bucket = b.write_buckets(vec![slot_write(1.0)]).await;
    assert!(
        bucket.is_err(),
        "every kind of write is refused: {bucket:?}"
    );
    let new_key = SeriesKey::new("cpu", vec![("host".into(), "b".into())], "usage");
    assert!(b.resolve_series(&[new_key]).await.is_err());
    assert_eq!(stored(&b, s).await, before, "reads go on");
    drop(b);

    let b = open(&dir, None);
    let after = stored(&b, s).await;
    let with_failed: Vec<Point> = before.iter().copied().chain(points(21, 41)).collect();
    assert!(
        after == before || after == with_failed,
        "the failed batch is there whole or not at all: {} points",
        after.len()
    );
    let head = b.heads(&[s]).await.expect("heads")[0].expect("a head");
    assert_eq!(
        head.last,
        *after.last().expect("points"),
        "head matches the data"
    );
    let next = head.last.time / S + 1;
    append(&b, s, next, next + 10)
        .await
        .expect("a reopened store writes");
    assert_eq!(stored(&b, s).await.len(), after.len() + 10);
}

/// The fault at every point of one commit's writes: whatever redb had written when it
/// failed, the reopened store holds the acknowledged points and the failed batch whole or
/// not at all, and its bucket documents likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_anywhere_in_a_commit_keeps_acknowledged_data_and_no_half_batch() {
    let mut failures = 0;
    for budget in 0..24 {
        let dir = tempfile::tempdir().expect("temp dir");
        let faults = IoFaults::new();
        let b = open(&dir, Some(faults.clone()));
        let s = series(&b).await;
        append(&b, s, 1, 6).await.expect("a healthy disk stores");
        faults.fail_after(budget);
        let batch = SeriesAppend::new(s, points(6, 30)).expect("in order");
        let raw = tickertape_backend::RawBatch {
            appends: vec![batch],
            buckets: vec![slot_write(7.0)],
        };
        let result = b
            .write_with_rollups(raw, Box::new(|_| Ok(Vec::new())))
            .await;
        failures += usize::from(result.is_err());
        faults.heal();
        drop(b);

        let b = open(&dir, None);
        let got = stored(&b, s).await;
        let docs = b
            .read_buckets(
                BucketRange {
                    family: BucketFamily::raw(1, S).expect("1 s buckets"),
                    series: SeriesId(1),
                    start: 0,
                    end: 3_600 * S,
                },
                BucketRead::Full,
            )
            .await
            .expect("read buckets");
        let whole = got == points(1, 30) && docs.len() == 1;
        let none = got == points(1, 6) && docs.is_empty();
        assert!(
            whole || none,
            "budget {budget}: {} points and {} documents after reopen",
            got.len(),
            docs.len()
        );
        if result.is_ok() {
            assert!(whole, "budget {budget}: an acknowledged batch survives");
        }
        let infos: Vec<SeriesInfo> = b
            .find_series(&tickertape_core::SeriesSelector {
                measurement: "cpu".into(),
                field: None,
                tags: vec![],
                matchers: Vec::new(),
            })
            .await
            .expect("find");
        assert_eq!(infos.len(), 1, "budget {budget}: the series survives");
    }
    assert!(failures > 0, "the countdown made at least one commit fail");
}
