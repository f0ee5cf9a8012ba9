//! Online snapshots of the embedded store: taken while points are appended and parts are
//! flushed and merged, they open as stores holding every point acknowledged before the
//! snapshot began; the live store goes on unaffected.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use tickertape_backend::{Backend, SeriesAppend, SnapshotTarget, ValueStore, SNAPSHOTS_DIR};
use tickertape_core::segment::collect_points;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

/// Partitions of 100 ns and a head of 10 points: a few dozen points make several parts,
/// so flushes and merges run all the time while points arrive.
fn open(dir: &Path) -> EmbeddedBackend {
    open_with_head(dir, 10)
}

fn open_with_head(dir: &Path, head_points: usize) -> EmbeddedBackend {
    let mut options = EmbeddedOptions::new(dir);
    options.partition_ns = 100;
    options.head_points = head_points;
    EmbeddedBackend::open(options).expect("open the store")
}

async fn series(b: &dyn Backend) -> SeriesId {
    let key = SeriesKey::new("cpu", vec![("host".into(), "a".into())], "v");
    b.resolve_series(&[key]).await.expect("register")[0]
}

/// Body `n`: the points at times `5n .. 5n+5`, value `t + 0.5`.
fn body(n: i64) -> Vec<Point> {
    (5 * n..5 * n + 5)
        .map(|t| Point::new(t, t as f64 + 0.5))
        .collect()
}

async fn append_body(b: &dyn Backend, s: SeriesId, n: i64) {
    let batch = SeriesAppend::new(s, body(n)).expect("points in time order");
    b.append(vec![batch]).await.expect("append");
}

async fn stored(b: &dyn Backend, s: SeriesId) -> Vec<Point> {
    let segments = b.read_segments(s, i64::MIN, i64::MAX).await.expect("read");
    collect_points(&segments).expect("decode")
}

fn part_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("parts"))
        .expect("list parts")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "part"))
        .collect();
    files.sort();
    files
}

/// The first `bodies` bodies' points, in time order.
fn first_bodies(bodies: i64) -> Vec<Point> {
    (0..bodies).flat_map(body).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_during_appends_holds_every_point_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    // A head of 700 points (140 bodies): at each snapshot some acknowledged points are
    // in parts, the rest only in the log and in memory.
    let live = Arc::new(open_with_head(dir.path(), 700));
    let s = series(live.as_ref()).await;
    const BODIES: i64 = 600;
    // Bodies acknowledged so far (a body's number is stored after its append returned).
    let acknowledged = Arc::new(AtomicI64::new(0));
    let writer = {
        let (live, acknowledged) = (live.clone(), acknowledged.clone());
        tokio::spawn(async move {
            for n in 0..BODIES {
                append_body(live.as_ref(), s, n).await;
                acknowledged.store(n + 1, Ordering::SeqCst);
            }
        })
    };
    let mut snapshots = Vec::new();
    for round in 0..3 {
        // Bounded wait for the writer to get ahead (it has 600 bodies to go).
        for _ in 0..2_000 {
            if acknowledged.load(Ordering::SeqCst) >= 100 * (round + 1) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let before = acknowledged.load(Ordering::SeqCst);
        let target = dir.path().join(format!("{SNAPSHOTS_DIR}/round-{round}"));
        let report = live
            .snapshot(SnapshotTarget::Exact(target.clone()))
            .await
            .expect("snapshot");
        assert_eq!(report.path, target);
        snapshots.push((target, before));
    }
    writer.await.expect("writer");
    assert_eq!(
        stored(live.as_ref(), s).await,
        first_bodies(BODIES),
        "the live store has every point"
    );
    for (target, before) in snapshots {
        let copy = open(&target);
        let got = stored(&copy, s).await;
        // The writer appends one body at a time: the snapshot holds its first k bodies,
        // k at least those acknowledged before the snapshot began.
        let bodies = got.len() as i64 / 5;
        assert!(bodies >= before, "{bodies} bodies < {before} acknowledged");
        assert_eq!(got, first_bodies(bodies), "{}", target.display());
        // The snapshot is a store of its own: written to, the live one does not change.
        append_body(&copy, s, BODIES + 1).await;
    }
    assert_eq!(stored(live.as_ref(), s).await, first_bodies(BODIES));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_are_hard_linked_and_outlive_a_merge_of_the_live_store() {
    let dir = tempfile::tempdir().unwrap();
    let live = open(dir.path());
    let s = series(&live).await;
    for n in 0..80 {
        append_body(&live, s, n).await;
    }
    let target = tempfile::tempdir().unwrap();
    let out = target.path().join("snap");
    let report = live
        .snapshot(SnapshotTarget::Exact(out.clone()))
        .await
        .expect("snapshot");
    let linked = part_files(&out);
    assert!(!linked.is_empty(), "the snapshot has parts");
    assert_eq!(report.files_linked, linked.len() as u64);
    for part in &linked {
        let name = part.file_name().unwrap();
        let original = dir.path().join("parts").join(name);
        assert_eq!(
            std::fs::metadata(part).unwrap().ino(),
            std::fs::metadata(&original).unwrap().ino(),
            "{name:?} is a hard link of the live part"
        );
    }

    // A compaction and a snapshot asked for at once: they run one after the other on the
    // background thread, in either order, and both succeed.
    // Late points into every partition the snapshot's parts cover: the merge rewrites them.
    let late: Vec<Point> = (0..400)
        .step_by(7)
        .map(|t| Point::new(t, 1_000.0 + t as f64))
        .collect();
    let batch = SeriesAppend::new(s, late).expect("points in time order");
    live.append(vec![batch]).await.expect("late points");
    let want_during = stored(&live, s).await;
    let during = target.path().join("during");
    let (compacted, second) = tokio::join!(
        live.compact(),
        live.snapshot(SnapshotTarget::Exact(during.clone()))
    );
    compacted.expect("compact");
    second.expect("snapshot beside a compaction");
    let live_parts: Vec<u64> = part_files(dir.path())
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().ino())
        .collect();
    let gone = linked
        .iter()
        .filter(|p| !live_parts.contains(&std::fs::metadata(p).unwrap().ino()))
        .count();
    assert!(
        gone > 0,
        "the compaction deleted parts the first snapshot links"
    );
    drop(live);
    let copy = open(&out);
    assert_eq!(
        stored(&copy, s).await,
        first_bodies(80),
        "after the live merge"
    );
    let copy = open(&during);
    assert_eq!(stored(&copy, s).await, want_during, "taken beside a merge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_a_snapshot_and_the_snapshots_folder_is_not_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let live = open(dir.path());
    let s = series(&live).await;
    for n in 0..50 {
        append_body(&live, s, n).await;
    }
    // Nothing left to flush or merge in the background: the bytes stay as they are.
    live.compact().await.expect("compact");
    let bytes_before = live.stats().await.unwrap().bytes;
    let first = live
        .snapshot(SnapshotTarget::InStore)
        .await
        .expect("snapshot");
    assert!(first.path.starts_with(dir.path().join(SNAPSHOTS_DIR)));
    let name = first
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.len() == 16 && name.ends_with('Z') && name.as_bytes()[8] == b'T',
        "{name}"
    );
    assert!(first.files_copied >= 2, "redb and the log: {first:?}");
    assert!(first.bytes_copied > 0);
    let second = live
        .snapshot(SnapshotTarget::InStore)
        .await
        .expect("snapshot");
    assert_ne!(
        first.path, second.path,
        "two snapshots never share a directory"
    );
    assert!(
        !second.path.join(SNAPSHOTS_DIR).exists(),
        "a snapshot does not hold the store's snapshots"
    );
    assert_eq!(
        live.stats().await.unwrap().bytes,
        bytes_before,
        "snapshots are not counted as the store's bytes"
    );
    // Reopening the live store does not read its snapshots as data.
    drop(live);
    let live = open(dir.path());
    assert_eq!(stored(&live, s).await, first_bodies(50));
    drop(live);

    let copy = open(&first.path);
    for n in 50..60 {
        append_body(&copy, s, n).await;
    }
    let other = tempfile::tempdir().unwrap();
    let again = copy
        .snapshot(SnapshotTarget::Under(other.path().to_path_buf()))
        .await
        .expect("a snapshot of a snapshot");
    assert!(again.path.starts_with(other.path()));
    drop(copy);
    let copy_of_copy = open(&again.path);
    assert_eq!(stored(&copy_of_copy, s).await, first_bodies(60));
}

#[tokio::test]
async fn a_target_that_holds_files_or_lies_inside_the_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let live = open(dir.path());
    let s = series(&live).await;
    append_body(&live, s, 0).await;
    let full = tempfile::tempdir().unwrap();
    std::fs::write(full.path().join("keep.txt"), b"mine").unwrap();
    let err = live
        .snapshot(SnapshotTarget::Exact(full.path().to_path_buf()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(
        std::fs::read(full.path().join("keep.txt")).unwrap(),
        b"mine"
    );
    for inside in ["parts/x", "wal", "x", SNAPSHOTS_DIR] {
        let target = dir.path().join(inside);
        let err = live
            .snapshot(SnapshotTarget::Exact(target.clone()))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("may only go under"),
            "{inside}: {err}"
        );
    }
    assert!(!dir.path().join("parts/x").exists());
    assert!(!dir.path().join("x").exists());
    let err = live
        .snapshot(SnapshotTarget::Under(dir.path().join("parts")))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("may only go under"), "{err}");
    drop(live);
    let live = open(dir.path());
    assert_eq!(stored(&live, s).await, body(0), "the store opens as before");
}

/// A restored store keeps its API tokens (`tokens.json` is copied with the data).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_keeps_the_api_tokens() {
    use tickertape_backend::TokenStore;
    use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};
    use tickertape_embedded::TokenFile;
    let dir = tempfile::tempdir().unwrap();
    let live = open(dir.path());
    let token = TokenRecord {
        name: "grafana".into(),
        scopes: Scopes::new([Scope::Read]).unwrap(),
        hash: TokenHash::of("tt_x"),
        created: 1,
    };
    TokenFile::new(dir.path())
        .add_token(token.clone())
        .await
        .unwrap();
    let report = live
        .snapshot(SnapshotTarget::InStore)
        .await
        .expect("snapshot");
    let kept = TokenFile::new(&report.path).tokens().await.unwrap();
    assert_eq!(kept, [token]);
}
