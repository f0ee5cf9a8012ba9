//! Pack files seen from outside: weeks and four-week periods that are over end up in one
//! file each, and every read, late write, retention drop, delete and reopen answers as if
//! the parts were in files of their own.

use std::path::Path;
use std::sync::Arc;
use tickertape_backend::{Backend, DeleteRange, SeriesAppend, SnapshotTarget, ValueStore};
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::segment::collect_points;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions, DATA_FILE};

/// Partitions of 100 ns (a "day"), a head of 500 points.
fn open(dir: &Path) -> EmbeddedBackend {
    let mut options = EmbeddedOptions::new(dir);
    options.partition_ns = 100;
    options.head_points = 500;
    EmbeddedBackend::open(options).expect("open the store")
}

async fn series(b: &dyn Backend, measurement: &str, host: &str) -> SeriesId {
    let key = SeriesKey::new(measurement, vec![("host".into(), host.into())], "v");
    b.resolve_series(&[key]).await.expect("register")[0]
}

async fn append(b: &dyn Backend, s: SeriesId, points: Vec<Point>) {
    let batch = SeriesAppend::new(s, points).expect("points in time order");
    b.append(vec![batch]).await.expect("append");
}

async fn stored(b: &dyn Backend, s: SeriesId, start: i64, end: i64) -> Vec<Point> {
    let segments = b.read_segments(s, start, end).await.expect("read");
    collect_points(&segments).expect("decode")
}

/// (`.pack` files, `.part` files) in the store.
fn files(dir: &Path) -> (usize, usize) {
    let names: Vec<String> = std::fs::read_dir(dir.join("parts"))
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let count = |suffix: &str| names.iter().filter(|n| n.ends_with(suffix)).count();
    (count(".pack"), count(".part"))
}

fn points(times: impl Iterator<Item = i64>, value: f64) -> Vec<Point> {
    times.map(|t| Point::new(t, value + t as f64)).collect()
}

/// 40 "days" of two measurements, written a few days at a time as a live store gets them.
async fn forty_days(b: &dyn Backend) -> Vec<(SeriesId, f64)> {
    let mut all = Vec::new();
    for (m, host, base) in [("cpu", "a", 0.0), ("cpu", "b", 0.5), ("mem", "a", 1e6)] {
        all.push((series(b, m, host).await, base));
    }
    for chunk in (0..4_000).collect::<Vec<i64>>().chunks(250) {
        for &(s, base) in &all {
            append(b, s, points(chunk.iter().copied(), base)).await;
        }
    }
    b.compact().await.expect("compact");
    all
}

/// Each series' points over the whole range and across partition and pack edges, with
/// their neighbours.
async fn check_reads(b: &dyn Backend, all: &[(SeriesId, f64)], want: impl Fn(usize) -> Vec<Point>) {
    for (i, &(s, _)) in all.iter().enumerate() {
        let want = want(i);
        assert_eq!(stored(b, s, i64::MIN, i64::MAX).await, want, "series {i}");
        for (start, end) in [(695, 705), (2795, 2805), (3495, 3505), (0, 1), (3999, 5000)] {
            let inside: Vec<Point> = want
                .iter()
                .copied()
                .filter(|p| p.time >= start && p.time < end)
                .collect();
            let got = stored(b, s, start, end).await;
            let got_inside: Vec<Point> = got
                .iter()
                .copied()
                .filter(|p| p.time >= start && p.time < end)
                .collect();
            assert_eq!(got_inside, inside, "series {i} in [{start}, {end})");
            let before = want.iter().rev().find(|p| p.time < start);
            assert_eq!(
                got.first().filter(|p| p.time < start),
                before,
                "before {start}"
            );
        }
    }
}

/// 40 days: days 0–27 (a four-week period over for more than a week) in one pack, days
/// 28–34 (a week that is over) in another, days 35–39 (this week) a part each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periods_that_are_over_are_packed_and_read_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let all = forty_days(&b).await;
    assert_eq!(files(dir.path()), (2, 5));
    let want = |i: usize| points(0..4_000, all[i].1);
    check_reads(&b, &all, want).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("copy");
    b.snapshot(SnapshotTarget::Exact(copy.clone()))
        .await
        .expect("snapshot");
    drop(b);
    let b = open(dir.path());
    assert_eq!(files(dir.path()), (2, 5), "reopened");
    check_reads(&b, &all, want).await;
    drop(b);
    let restored = open(&copy);
    assert_eq!(files(&copy), (2, 5), "the snapshot");
    check_reads(&restored, &all, want).await;
}

/// A late write to a packed day replaces that day's part with a part of its own; the
/// pack keeps the other days, and reads see the new value before and after a reopen.
/// Retention then empties the oldest days one by one: the pack is packed again as it
/// empties, and goes when no part is left in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_writes_retention_and_deletes_in_packed_days() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let r50 = Resolution::new(50).unwrap();
    b.derive_segment_rollups(Arc::new(move |_: &str| vec![r50]));
    let all = forty_days(&b).await;
    let (cpu_a, _) = all[0];
    append(&b, cpu_a, vec![Point::new(150, -1.0)]).await;
    b.compact().await.unwrap();
    let mut want_a = points(0..4_000, 0.0);
    want_a[150] = Point::new(150, -1.0);
    assert_eq!(stored(&b, cpu_a, i64::MIN, i64::MAX).await, want_a);
    assert_eq!(files(dir.path()), (2, 6), "the late day beside its pack");

    // cpu's raw points before day 20 go; its rollups and mem's points stay.
    let dropped = b.drop_raw_before("cpu", 2_000, false).await.unwrap();
    assert_eq!(dropped.len(), 20);
    let kept_a: Vec<Point> = want_a.iter().copied().filter(|p| p.time >= 2_000).collect();
    assert_eq!(stored(&b, cpu_a, i64::MIN, i64::MAX).await, kept_a);
    let (mem, mem_base) = all[2];
    assert_eq!(
        stored(&b, mem, i64::MIN, i64::MAX).await,
        points(0..4_000, mem_base)
    );
    let slots = b.read_segment_rollup(cpu_a, r50, 0, 4_000).await.unwrap();
    let want_slots = summarize_slots(&want_a, 0, 4_000, r50);
    assert_eq!(slots.len(), want_slots.len());
    for ((t, got), (u, want)) in slots.iter().zip(&want_slots) {
        assert_eq!(
            (t, got.count, got.sum.to_bits()),
            (u, want.count, want.sum.to_bits())
        );
    }
    let delete = DeleteRange::new(Some(2_500), Some(2_600)).unwrap();
    b.delete_points(&[mem], delete).await.unwrap();
    b.compact().await.unwrap();
    let mem_left: Vec<Point> = points(0..4_000, mem_base)
        .into_iter()
        .filter(|p| !(2_500..2_600).contains(&p.time))
        .collect();
    assert_eq!(stored(&b, mem, i64::MIN, i64::MAX).await, mem_left);
    let (packs, parts) = files(dir.path());
    assert!(packs + parts <= 12, "{packs} packs, {parts} parts");
    drop(b);

    let b = open(dir.path());
    assert_eq!(
        stored(&b, cpu_a, i64::MIN, i64::MAX).await,
        kept_a,
        "reopened"
    );
    assert_eq!(
        stored(&b, mem, i64::MIN, i64::MAX).await,
        mem_left,
        "reopened"
    );
    // Everything before day 35 of every measurement and kind goes: the packs with it.
    for m in ["cpu", "mem"] {
        b.drop_raw_before(m, 3_500, false).await.unwrap();
        b.drop_segment_rollup_before(m, r50, 3_500, false)
            .await
            .unwrap();
    }
    b.compact().await.unwrap();
    assert_eq!(
        files(dir.path()),
        (0, 5),
        "no pack is left when its days are gone"
    );
    assert_eq!(
        stored(&b, mem, i64::MIN, i64::MAX).await,
        points(3_500..4_000, mem_base)
    );
}

/// A pack the manifest does not name (a crash before the transaction that records it) and
/// the old file of a part the manifest places in a pack (a crash before it was deleted)
/// are deleted at open; the store reads as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_deletes_packs_and_parts_the_manifest_does_not_name() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let all = forty_days(&b).await;
    drop(b);
    let parts = dir.path().join("parts");
    let mut packs: Vec<_> = std::fs::read_dir(&parts)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    packs.sort();
    let stray_pack = parts.join("00000000000000099999.pack");
    std::fs::copy(&packs[0], &stray_pack).unwrap();
    // A part the manifest places in a pack.
    let packed: redb::TableDefinition<u64, (u64, u64, u64)> =
        redb::TableDefinition::new("packed_parts");
    let id = {
        use redb::ReadableTable;
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(packed).unwrap();
        let first = table.first().unwrap().expect("a packed part");
        first.0.value()
    };
    let stray_part = parts.join(format!("{id:020}.part"));
    std::fs::write(&stray_part, b"an old copy").unwrap();
    let b = open(dir.path());
    assert!(!stray_pack.exists() && !stray_part.exists());
    assert_eq!(files(dir.path()), (2, 5));
    check_reads(&b, &all, |i| points(0..4_000, all[i].1)).await;
}
