//! The write-ahead log, head and part files seen from outside: flushes, merges,
//! compaction, retention drops, late points across all of them, and what open does with
//! the leftovers of a crash.

use std::path::Path;
use std::sync::Arc;
use tickertape_backend::ValueStore;
use tickertape_backend::{Backend, DeleteRange, Expiry, SeriesAppend, SeriesCatalog};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution, ResolutionOrRaw};
use tickertape_core::segment::collect_points;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

/// Partitions of 100 ns and a head of 10 points: a few dozen points make several parts.
fn open(dir: &Path) -> EmbeddedBackend {
    let mut options = EmbeddedOptions::new(dir);
    options.partition_ns = 100;
    options.head_points = 10;
    EmbeddedBackend::open(options).expect("open the store")
}

async fn series(b: &dyn Backend, measurement: &str) -> SeriesId {
    let key = SeriesKey::new(measurement, vec![("host".into(), "a".into())], "v");
    b.resolve_series(&[key]).await.expect("register")[0]
}

async fn append(b: &dyn Backend, s: SeriesId, points: Vec<Point>) {
    let batch = SeriesAppend::new(s, points).expect("points in time order");
    b.append(vec![batch]).await.expect("append");
}

async fn stored(b: &dyn Backend, s: SeriesId) -> Vec<Point> {
    let segments = b.read_segments(s, i64::MIN, i64::MAX).await.expect("read");
    collect_points(&segments).expect("decode")
}

fn files(dir: &Path, folder: &str, suffix: &str) -> usize {
    std::fs::read_dir(dir.join(folder))
        .expect("list")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .count()
}

fn points(times: impl Iterator<Item = i64>, value: f64) -> Vec<Point> {
    times.map(|t| Point::new(t, value + t as f64)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_points_replace_values_in_parts_and_compaction_keeps_the_last_write() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let s = series(&b, "cpu").await;
    // 300 points over 3 partitions, 10 per body: many flushes, parts merged.
    for chunk in (0..300).collect::<Vec<i64>>().chunks(10) {
        append(&b, s, points(chunk.iter().copied(), 0.0)).await;
    }
    // Late: every 7th time again, with new values, long after it was flushed.
    append(&b, s, points((0..300).step_by(7), 1_000.0)).await;
    let want: Vec<Point> = (0..300)
        .map(|t| match t % 7 {
            0 => Point::new(t, 1_000.0 + t as f64),
            _ => Point::new(t, t as f64),
        })
        .collect();
    assert_eq!(stored(&b, s).await, want, "before compaction");
    let head = b.heads(&[s]).await.unwrap()[0].expect("a head");
    assert_eq!(head.last, Point::new(299, 299.0));

    b.compact().await.expect("compact");
    assert_eq!(
        files(dir.path(), "parts", ".part"),
        3,
        "one part per partition"
    );
    assert_eq!(stored(&b, s).await, want, "after compaction");
    // Every range with its neighbours, across partition edges.
    for (start, end) in [(95, 105), (100, 100), (-5, 3), (298, 400), (150, 151)] {
        let segments = b.read_segments(s, start, end).await.unwrap();
        let got = collect_points(&segments).unwrap();
        let expect = tickertape_core::query::select_range(&want, start, end, true);
        assert_eq!(got, expect, "[{start}, {end})");
    }
    drop(b);
    let b = open(dir.path());
    assert_eq!(stored(&b, s).await, want, "after reopen");
    assert_eq!(
        b.heads(&[s]).await.unwrap()[0].map(|h| h.last),
        Some(Point::new(299, 299.0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_drops_whole_partitions_of_one_measurement_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let cpu = series(&b, "cpu").await;
    let mem = series(&b, "mem").await;
    append(&b, cpu, points(0..300, 0.0)).await;
    append(&b, mem, points(0..300, 0.0)).await;
    b.compact().await.unwrap();
    // 250 cuts the third partition: only [0, 100) and [100, 200) go.
    let listed = b.drop_raw_before("cpu", 250, true).await.unwrap();
    assert_eq!(listed, vec![(0, 100), (100, 200)]);
    assert_eq!(stored(&b, cpu).await.len(), 300, "a dry run drops nothing");
    let dropped = b.drop_raw_before("cpu", 250, false).await.unwrap();
    assert_eq!(dropped, listed);
    assert_eq!(stored(&b, cpu).await, points(200..300, 0.0));
    assert_eq!(
        stored(&b, mem).await,
        points(0..300, 0.0),
        "other measurements stay"
    );
    assert!(b
        .drop_raw_before("nothing", 250, false)
        .await
        .unwrap()
        .is_empty());
    drop(b);
    let b = open(dir.path());
    assert_eq!(stored(&b, cpu).await, points(200..300, 0.0), "after reopen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_deletes_part_files_no_manifest_entry_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = {
        let mut options = EmbeddedOptions::new(dir.path());
        options.head_points = 1_000_000;
        let b = EmbeddedBackend::open(options).unwrap();
        let s = series(&b, "cpu").await;
        append(&b, s, points(0..50, 0.0)).await;
        s
    };
    // A crash during a flush or merge leaves files no manifest entry names.
    let parts = dir.path().join("parts");
    std::fs::write(parts.join("00000000000000000999.part.tmp"), b"half a part").unwrap();
    std::fs::write(parts.join("00000000000000000998.part"), b"not named").unwrap();
    let b = open(dir.path());
    assert_eq!(stored(&b, s).await, points(0..50, 0.0));
    assert!(!parts.join("00000000000000000999.part.tmp").exists());
    assert!(!parts.join("00000000000000000998.part").exists());
}

/// Forty measurements written over three partitions end as three part files, not 120:
/// a part holds every measurement of its partition. With two part files kept open at
/// most, every series reads back whole, before and after a reopen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_is_one_part_for_every_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let open_small = |dir: &Path| {
        let mut options = EmbeddedOptions::new(dir);
        options.partition_ns = 100;
        options.head_points = 500;
        options.open_parts = 2;
        EmbeddedBackend::open(options).expect("open the store")
    };
    let b = open_small(dir.path());
    let mut all = Vec::new();
    for m in 0..40 {
        all.push(series(&b, &format!("m{m}")).await);
    }
    for chunk in (0..300).collect::<Vec<i64>>().chunks(50) {
        for (i, &s) in all.iter().enumerate() {
            append(&b, s, points(chunk.iter().copied(), i as f64)).await;
        }
    }
    b.compact().await.expect("compact");
    assert_eq!(
        files(dir.path(), "parts", ".part"),
        3,
        "one part per partition"
    );
    for (i, &s) in all.iter().enumerate() {
        assert_eq!(stored(&b, s).await, points(0..300, i as f64), "series {i}");
    }
    drop(b);
    let b = open_small(dir.path());
    for (i, &s) in all.iter().enumerate().rev() {
        assert_eq!(
            stored(&b, s).await,
            points(0..300, i as f64),
            "after reopen {i}"
        );
        let neighbours = b.read_segments(s, 150, 150).await.unwrap();
        let got = collect_points(&neighbours).unwrap();
        assert_eq!(
            got,
            vec![
                Point::new(149, i as f64 + 149.0),
                Point::new(150, i as f64 + 150.0)
            ]
        );
    }
}

fn bits(slots: Vec<(i64, Summary)>) -> Vec<(i64, [u64; 8])> {
    slots.into_iter().map(|(t, s)| (t, s.to_bits())).collect()
}

/// Retention of one measurement rewrites the shared parts without its raw blocks (or its
/// rollup blocks at one resolution) and nothing else: its rollups still answer, the other
/// measurement keeps everything; a late write of the other measurement into a dropped
/// partition merges it again, and the dropped measurement's rollup blocks are carried over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_of_one_measurement_in_shared_parts() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let (r10, r50) = (Resolution::new(10).unwrap(), Resolution::new(50).unwrap());
    b.derive_segment_rollups(Arc::new(move |m: &str| match m {
        "cpu" => vec![r10, r50],
        _ => vec![r50],
    }));
    let cpu = series(&b, "cpu").await;
    let mem = series(&b, "mem").await;
    append(&b, cpu, points(0..300, 0.0)).await;
    append(&b, mem, points(0..300, 1.0)).await;
    b.compact().await.unwrap();
    assert_eq!(files(dir.path(), "parts", ".part"), 3);
    let cpu_r10 = bits(summarize_slots(&points(0..300, 0.0), 0, 300, r10));
    let rollup = |s, r, end| {
        let b = &b;
        async move { bits(b.read_segment_rollup(s, r, 0, end).await.unwrap()) }
    };
    assert_eq!(rollup(cpu, r10, 300).await, cpu_r10);

    let dropped = b.drop_raw_before("cpu", 250, false).await.unwrap();
    assert_eq!(dropped, vec![(0, 100), (100, 200)]);
    assert_eq!(stored(&b, cpu).await, points(200..300, 0.0));
    assert_eq!(
        stored(&b, mem).await,
        points(0..300, 1.0),
        "mem keeps its points"
    );
    assert_eq!(
        rollup(cpu, r10, 300).await,
        cpu_r10,
        "cpu's rollups outlive its points"
    );
    assert_eq!(
        files(dir.path(), "parts", ".part"),
        3,
        "rewritten, not split"
    );
    assert!(b
        .drop_raw_before("cpu", 250, true)
        .await
        .unwrap()
        .is_empty());

    // A late point of mem in the first partition: a second part there, merged with the
    // first at compaction; cpu's rollup blocks (no raw block left) are carried.
    append(&b, mem, vec![Point::new(50, -5.0)]).await;
    b.compact().await.unwrap();
    assert_eq!(files(dir.path(), "parts", ".part"), 3);
    assert_eq!(rollup(cpu, r10, 300).await, cpu_r10, "carried by the merge");
    let mut mem_points = points(0..300, 1.0);
    mem_points[50] = Point::new(50, -5.0);
    assert_eq!(stored(&b, mem).await, mem_points);
    assert_eq!(
        rollup(mem, r50, 300).await,
        bits(summarize_slots(&mem_points, 0, 300, r50))
    );

    // cpu's 10 ns rollup goes from the first partition; its 50 ns one and mem stay.
    let dropped = b
        .drop_segment_rollup_before("cpu", r10, 100, false)
        .await
        .unwrap();
    assert_eq!(dropped, vec![(0, 100)]);
    assert_eq!(rollup(cpu, r10, 300).await[..], cpu_r10[10..]);
    let cpu_r50 = bits(summarize_slots(&points(0..300, 0.0), 0, 300, r50));
    assert_eq!(rollup(cpu, r50, 300).await, cpu_r50);
    assert_eq!(stored(&b, mem).await, mem_points);
    drop(b);
    let b = open(dir.path());
    assert_eq!(stored(&b, cpu).await, points(200..300, 0.0), "after reopen");
    assert_eq!(stored(&b, mem).await, mem_points, "after reopen");
}

/// A delete of one series rewrites the shared parts it has points in: the other series of
/// its measurement and of other measurements keep every point and their rollups; cpu's
/// rollup blocks whose raw points retention dropped are carried through the rewrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_in_shared_parts_touches_its_series_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let r50 = Resolution::new(50).unwrap();
    b.derive_segment_rollups(Arc::new(move |_: &str| vec![r50]));
    let cpu = series(&b, "cpu").await;
    let mem = series(&b, "mem").await;
    let key = SeriesKey::new("mem", vec![("host".into(), "b".into())], "v");
    let mem_b = b.resolve_series(&[key]).await.unwrap()[0];
    for (i, s) in [cpu, mem, mem_b].into_iter().enumerate() {
        append(&b, s, points(0..300, i as f64)).await;
    }
    b.compact().await.unwrap();
    b.drop_raw_before("cpu", 100, false).await.unwrap();
    let range = DeleteRange::new(Some(50), Some(250)).unwrap();
    b.delete_points(&[mem], range).await.unwrap();
    let mut left = points(0..50, 1.0);
    left.extend(points(250..300, 1.0));
    assert_eq!(stored(&b, mem).await, left);
    assert_eq!(stored(&b, mem_b).await, points(0..300, 2.0));
    assert_eq!(stored(&b, cpu).await, points(100..300, 0.0));
    let rollup = |s| {
        let b = &b;
        async move { bits(b.read_segment_rollup(s, r50, 0, 300).await.unwrap()) }
    };
    assert_eq!(
        rollup(cpu).await,
        bits(summarize_slots(&points(0..300, 0.0), 0, 300, r50))
    );
    assert_eq!(rollup(mem).await, bits(summarize_slots(&left, 0, 300, r50)));
    assert_eq!(
        rollup(mem_b).await,
        bits(summarize_slots(&points(0..300, 2.0), 0, 300, r50))
    );
    assert_eq!(files(dir.path(), "parts", ".part"), 3);
}

/// The ids of the part files, ascending.
fn part_ids(dir: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = std::fs::read_dir(dir.join("parts"))
        .expect("list")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".part")?.parse().ok()
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// A retention pass over several measurements sharing a partition rewrites the
/// partition's part once for all of them (the new part takes the next id), and drops
/// exactly what each one names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_retention_pass_rewrites_a_shared_partition_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let mut all = Vec::new();
    for m in ["cpu", "mem", "disk", "net"] {
        let s = series(&b, m).await;
        append(&b, s, points(0..200, 0.0)).await;
        all.push(s);
    }
    b.compact().await.unwrap();
    let before = part_ids(dir.path());
    assert_eq!(before.len(), 2, "one part per partition");
    let expiries: Vec<Expiry> = ["cpu", "mem", "disk", "nothing"]
        .into_iter()
        .map(|m| Expiry {
            measurement: m.into(),
            level: ResolutionOrRaw::Raw,
            cutoff: 100,
        })
        .collect();
    let listed = b.drop_expired(&expiries, true).await.unwrap();
    assert_eq!(
        listed,
        vec![vec![(0, 100)], vec![(0, 100)], vec![(0, 100)], vec![]]
    );
    assert_eq!(part_ids(dir.path()), before, "a dry run changes nothing");
    let dropped = b.drop_expired(&expiries, false).await.unwrap();
    assert_eq!(dropped, listed);
    let after = part_ids(dir.path());
    let next = before.iter().max().unwrap() + 1;
    assert_eq!(
        after,
        vec![before[1], next],
        "partition [0, 100) rewritten once"
    );
    for s in &all[..3] {
        assert_eq!(stored(&b, *s).await, points(100..200, 0.0));
    }
    assert_eq!(
        stored(&b, all[3]).await,
        points(0..200, 0.0),
        "net keeps its points"
    );
}
