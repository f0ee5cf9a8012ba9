//! Seed 000's crash windows: a writer stops after reserving slots but before filling them,
//! after finding the segment full but before opening the next, after opening it but before
//! moving the head, after moving the head but before sealing. Then a fresh handle goes on:
//! no hole or time-0 point is ever returned, no acknowledged point is lost, the series keeps
//! accepting writes, and the `pe`/`ns` bounds still select every neighbour.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use tickertape_backend::{AppendOutcome, Backend, BackendError};
use tickertape_core::SeriesId;
use tickertape_mongodb::{FaultPlan, FaultPoint, MongoBackend, SegmentProtocol};

const CAPACITY: usize = 4;

/// Appends 3-point batches from `next` on until `point` fires once; returns the next time
/// not yet tried. Acknowledged times go to `acked`, every tried time to `tried`.
async fn write_until_fault(
    backend: &MongoBackend,
    plan: &FaultPlan,
    point: FaultPoint,
    s: SeriesId,
    mut next: i64,
    acked: &mut BTreeSet<i64>,
    tried: &mut BTreeSet<i64>,
) -> (i64, Vec<i64>) {
    plan.arm(point, 1);
    for _ in 0..20 {
        let batch: Vec<i64> = (next..next + 3).collect();
        next += 3;
        tried.extend(&batch);
        match backend.append(vec![append(s, batch.clone())]).await {
            Ok(out) => {
                assert_eq!(out, vec![AppendOutcome::all_new()]);
                acked.extend(&batch);
            }
            Err(BackendError::Storage(message)) => {
                assert!(message.contains("injected fault"), "{message}");
                assert_eq!(plan.fired(point), 1);
                return (next, batch);
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    panic!("{point:?} never fired");
}

/// Every range around the stored points selects them and both neighbours.
async fn assert_neighbours(backend: &MongoBackend, s: SeriesId, stored: &[i64]) {
    let mut starts: BTreeSet<i64> = BTreeSet::new();
    for &t in stored {
        starts.extend([t - 1, t, t + 1]);
    }
    for &start in &starts {
        for width in [0, 2, 7] {
            let end = start + width;
            let got = times(&read_range(backend, s, start, end).await);
            let before = stored.iter().rev().find(|&&t| t < start);
            // Half-open: the points in [start, end), the last before start and the first
            // at or after end.
            let after = stored.iter().find(|&&t| t >= end);
            for t in stored
                .iter()
                .filter(|&&t| t >= start && t < end)
                .chain(before)
                .chain(after)
            {
                assert!(got.contains(t), "[{start}, {end}) misses {t}: {got:?}");
            }
        }
    }
}

async fn crash_and_continue(protocol: SegmentProtocol, point: FaultPoint) {
    let db = fresh_db(&format!("crash_{point:?}_{protocol}"));
    let plan = Arc::new(FaultPlan::new());
    let faulty = open_with_faults(&db, protocol, CAPACITY, plan.clone()).await;
    let s = faulty
        .resolve_series(&[key("crash", "a", "v")])
        .await
        .unwrap()[0];
    let mut acked = BTreeSet::new();
    let mut tried = BTreeSet::new();

    // Start at 100 so that a point at time 0 can only be a hole mistaken for a point.
    faulty.append(vec![append(s, [100])]).await.unwrap();
    acked.insert(100);
    tried.insert(100);
    let (mut next, failed) =
        write_until_fault(&faulty, &plan, point, s, 101, &mut acked, &mut tried).await;

    // The failed writer's retry: its points are either stored or refused, never doubled.
    let retry = faulty
        .append(vec![append(s, failed.clone())])
        .await
        .unwrap();
    if retry[0].refused == 0 {
        acked.extend(&failed);
    } else {
        assert_eq!(retry[0].refused, failed.len());
    }

    // Another writer (a fresh handle, as another process) goes on, across several segments.
    let other = open(&db, protocol, CAPACITY).await;
    for _ in 0..8 {
        let batch: Vec<i64> = (next..next + 2).collect();
        next += 2;
        tried.extend(&batch);
        let out = other.append(vec![append(s, batch.clone())]).await.unwrap();
        assert_eq!(out[0].refused, 0, "the series must keep accepting writes");
        acked.extend(&batch);
    }

    let read: Vec<i64> = times(&read_all(&other, s).await);
    let read_set: BTreeSet<i64> = read.iter().copied().collect();
    assert_eq!(
        read.len(),
        read_set.len(),
        "a point was returned twice: {read:?}"
    );
    assert!(
        !read_set.contains(&0),
        "a hole was read as a point at time 0: {read:?}"
    );
    assert!(
        read_set.is_subset(&tried),
        "read points never written: {read:?}"
    );
    let lost: Vec<_> = acked.difference(&read_set).collect();
    assert!(
        lost.is_empty(),
        "acknowledged points lost: {lost:?}; read {read:?}"
    );
    if point == FaultPoint::AfterReserve {
        // Reserved but never filled: holes, skipped by readers.
        assert!(failed.iter().all(|t| !read_set.contains(t)), "{read:?}");
    }
    assert_neighbours(&other, s, &read).await;

    // Full segments get sealed, also the ones with holes, once they are old enough.
    let segments = other.read_segments(s, i64::MIN, i64::MAX).await.unwrap();
    assert!(
        sealed_count(&segments) + 4 >= segments.len(),
        "{} of {} segments sealed",
        sealed_count(&segments),
        segments.len()
    );
    let head = other.heads(&[s]).await.unwrap()[0].expect("a head");
    assert_eq!(head.last.time, *read.last().unwrap());
    other.drop_database().await.unwrap();
}

#[tokio::test]
async fn reserve_stops_after_reserving() {
    crash_and_continue(SegmentProtocol::Reserve, FaultPoint::AfterReserve).await;
}

#[tokio::test]
async fn reserve_stops_when_segment_full() {
    crash_and_continue(SegmentProtocol::Reserve, FaultPoint::SegmentFull).await;
}

#[tokio::test]
async fn reserve_stops_before_head_switch() {
    crash_and_continue(SegmentProtocol::Reserve, FaultPoint::BeforeHeadSwitch).await;
}

#[tokio::test]
async fn reserve_stops_before_seal() {
    crash_and_continue(SegmentProtocol::Reserve, FaultPoint::BeforeSeal).await;
}

#[tokio::test]
async fn conditional_stops_when_segment_full() {
    crash_and_continue(SegmentProtocol::Conditional, FaultPoint::SegmentFull).await;
}

#[tokio::test]
async fn conditional_stops_before_head_switch() {
    crash_and_continue(SegmentProtocol::Conditional, FaultPoint::BeforeHeadSwitch).await;
}

#[tokio::test]
async fn conditional_stops_before_seal() {
    crash_and_continue(SegmentProtocol::Conditional, FaultPoint::BeforeSeal).await;
}

/// Seed 000's "pointer below −1": several writers die after finding the segment full; the
/// next one opens the segment and the dead writers' slots stay holes.
#[tokio::test]
async fn reserve_pointer_far_below_zero() {
    let db = fresh_db("far_below");
    let plan = Arc::new(FaultPlan::new());
    let faulty = open_with_faults(&db, SegmentProtocol::Reserve, CAPACITY, plan.clone()).await;
    let s = faulty
        .resolve_series(&[key("crash", "b", "v")])
        .await
        .unwrap()[0];
    faulty.append(vec![append(s, [1, 2, 3, 4])]).await.unwrap();
    plan.arm(FaultPoint::SegmentFull, 3);
    for t in [5, 6, 7] {
        assert!(faulty.append(vec![append(s, [t])]).await.is_err());
    }
    assert_eq!(plan.fired(FaultPoint::SegmentFull), 3);
    let other = open(&db, SegmentProtocol::Reserve, CAPACITY).await;
    let out = other.append(vec![append(s, [8, 9, 10])]).await.unwrap();
    assert_eq!(out[0].refused, 0);
    let read = times(&read_all(&other, s).await);
    assert_eq!(read, vec![1, 2, 3, 4, 8, 9, 10]);
    assert_neighbours(&other, s, &read).await;
}
