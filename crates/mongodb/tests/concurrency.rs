//! Several writers at once — tasks sharing a handle and separate handles (as separate
//! processes would have) — on the same series and on different series. Every acknowledged
//! point is readable exactly once, in order; nothing is read that was not written.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::SeriesId;
use tickertape_mongodb::{MongoBackend, SegmentProtocol};

const WRITERS: i64 = 4;
const BATCHES: i64 = 12;

/// Writer `w` appends batches of 1–3 points with times `≡ w (mod WRITERS)`, racing the
/// others on one series: some batches are refused in part or whole. Returns the
/// acknowledged and the tried times.
async fn race_one_series(
    backend: Arc<MongoBackend>,
    s: SeriesId,
    w: i64,
) -> (Vec<i64>, Vec<i64>, usize) {
    let mut acked = Vec::new();
    let mut tried = Vec::new();
    let mut errors = 0;
    let mut j = 0;
    for b in 0..BATCHES {
        let size = 1 + (b + w) % 3;
        let batch: Vec<i64> = (j..j + size).map(|k| 1_000 + k * WRITERS + w).collect();
        j += size;
        tried.extend(&batch);
        match backend.append(vec![append(s, batch.clone())]).await {
            Ok(out) => acked.extend(&batch[out[0].refused..]),
            // Allowed by the contract (nothing acknowledged); counted to keep it rare.
            Err(_) => errors += 1,
        }
    }
    (acked, tried, errors)
}

async fn same_series(protocol: SegmentProtocol, separate_handles: bool, capacity: usize) {
    let db = fresh_db(&format!("same_{protocol}_{separate_handles}"));
    let shared = Arc::new(open(&db, protocol, capacity).await);
    let s = shared
        .resolve_series(&[key("race", "a", "v")])
        .await
        .unwrap()[0];
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let backend = if separate_handles {
            Arc::new(open(&db, protocol, capacity).await)
        } else {
            shared.clone()
        };
        tasks.push(tokio::spawn(race_one_series(backend, s, w)));
    }
    let mut acked = BTreeSet::new();
    let mut tried = BTreeSet::new();
    let mut errors = 0;
    for task in tasks {
        let (a, t, e) = task.await.unwrap();
        acked.extend(a);
        tried.extend(t);
        errors += e;
    }
    let read = times(&read_all(&shared, s).await);
    let read_set: BTreeSet<i64> = read.iter().copied().collect();
    assert_eq!(
        read.len(),
        read_set.len(),
        "a point was read twice: {read:?}"
    );
    assert!(
        read.windows(2).all(|w| w[0] < w[1]),
        "out of order: {read:?}"
    );
    assert!(
        read_set.is_subset(&tried),
        "read points never written: {read:?}"
    );
    let lost: Vec<_> = acked.difference(&read_set).collect();
    assert!(lost.is_empty(), "acknowledged points lost: {lost:?}");
    assert!(!acked.is_empty());
    eprintln!(
        "{protocol} capacity {capacity}: {} acknowledged, {errors} failed appends",
        acked.len()
    );
    assert!(errors <= 3, "{errors} appends failed");
    let head = shared.heads(&[s]).await.unwrap()[0].expect("a head");
    assert_eq!(Some(&head.last.time), read.last());
    shared.drop_database().await.unwrap();
}

#[tokio::test]
async fn same_series_shared_handle_reserve() {
    same_series(SegmentProtocol::Reserve, false, 4).await;
}

#[tokio::test]
async fn same_series_separate_handles_reserve() {
    same_series(SegmentProtocol::Reserve, true, 4).await;
}

/// Capacity 2: batches of 3 points span segments (reserve: split at the boundary;
/// conditional: laid out as a chain of new segments).
#[tokio::test]
async fn same_series_batches_larger_than_a_segment_reserve() {
    same_series(SegmentProtocol::Reserve, true, 2).await;
}

#[tokio::test]
async fn same_series_batches_larger_than_a_segment_conditional() {
    same_series(SegmentProtocol::Conditional, true, 2).await;
}

#[tokio::test]
async fn same_series_shared_handle_conditional() {
    same_series(SegmentProtocol::Conditional, false, 4).await;
}

#[tokio::test]
async fn same_series_separate_handles_conditional() {
    same_series(SegmentProtocol::Conditional, true, 4).await;
}

/// Each writer owns some series and writes them all in each call (one bulk command per
/// call); writers share series ids but not series. Everything is acknowledged and read back.
async fn different_series(protocol: SegmentProtocol) {
    let db = fresh_db(&format!("diff_{protocol}"));
    let first = open(&db, protocol, 4).await;
    let keys: Vec<_> = (0..8).map(|i| key("many", &format!("h{i}"), "v")).collect();
    let ids = first.resolve_series(&keys).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS as usize {
        let backend = open(&db, protocol, 4).await;
        let mine: Vec<SeriesId> = ids
            .iter()
            .copied()
            .skip(w)
            .step_by(WRITERS as usize)
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut t = 0;
            for b in 0..6 {
                let n = 1 + b % 3;
                let appends: Vec<SeriesAppend> =
                    mine.iter().map(|&s| append(s, t..t + n)).collect();
                t += n;
                let out = backend.append(appends).await.unwrap();
                assert!(out.iter().all(|o| o.refused == 0));
            }
            t
        }));
    }
    let mut last = 0;
    for task in tasks {
        last = task.await.unwrap();
    }
    for &s in &ids {
        assert_eq!(
            times(&read_all(&first, s).await),
            (0..last).collect::<Vec<_>>()
        );
    }
    first.drop_database().await.unwrap();
}

#[tokio::test]
async fn different_series_reserve() {
    different_series(SegmentProtocol::Reserve).await;
}

#[tokio::test]
async fn different_series_conditional() {
    different_series(SegmentProtocol::Conditional).await;
}
