//! Shared helpers: every test works in its own fresh database on the server named by
//! `TICKERTAPE_MONGODB_URI`, so tests run in parallel against one server.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::segment::{Segment, SegmentBody};
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_mongodb::{FaultPlan, MongoBackend, MongoOptions, SegmentProtocol};

pub const PROTOCOLS: [SegmentProtocol; 2] =
    [SegmentProtocol::Reserve, SegmentProtocol::Conditional];

/// The server under test. A missing variable fails the test: it never passes silently.
pub fn server_uri() -> String {
    match std::env::var("TICKERTAPE_MONGODB_URI") {
        Ok(uri) if !uri.trim().is_empty() => uri,
        _ => panic!(
            "TICKERTAPE_MONGODB_URI is not set. Start a test server with \
             `scripts/mongo-test-server` (it prints `PID URI`) and run \
             `TICKERTAPE_MONGODB_URI=<URI> cargo test -p tickertape-mongodb`"
        ),
    }
}

/// `server_uri()` with its database replaced by `db`.
pub fn uri_with_db(db: &str) -> String {
    let uri = server_uri();
    let (base, query) = match uri.split_once('?') {
        Some((b, q)) => (b.to_owned(), format!("?{q}")),
        None => (uri.clone(), String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let hosts_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &base[..hosts_end])
}

/// A database name no other test uses.
pub fn fresh_db(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "tt_{}_{}_{}_{}",
        test.chars().take(24).collect::<String>(),
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn options(db: &str, protocol: SegmentProtocol, capacity: usize) -> MongoOptions {
    let mut options = MongoOptions::new(uri_with_db(db));
    options.protocol = protocol;
    options.segment_capacity = capacity;
    options
}

pub async fn open(db: &str, protocol: SegmentProtocol, capacity: usize) -> MongoBackend {
    MongoBackend::connect(options(db, protocol, capacity))
        .await
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
}

pub async fn open_with_faults(
    db: &str,
    protocol: SegmentProtocol,
    capacity: usize,
    plan: Arc<FaultPlan>,
) -> MongoBackend {
    let mut options = options(db, protocol, capacity);
    options.fault = Some(plan);
    MongoBackend::connect(options)
        .await
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
}

pub fn key(measurement: &str, host: &str, field: &str) -> SeriesKey {
    SeriesKey::new(measurement, vec![("host".into(), host.into())], field)
}

pub fn points(times: impl IntoIterator<Item = i64>) -> Vec<Point> {
    times
        .into_iter()
        .map(|t| Point::new(t, t as f64 * 0.5))
        .collect()
}

pub fn append(series: SeriesId, times: impl IntoIterator<Item = i64>) -> SeriesAppend {
    SeriesAppend::new(series, points(times)).expect("points in time order")
}

/// Every point of `series` in `[start, end]` plus the neighbours, from one `read_segments`.
pub async fn read_all(backend: &MongoBackend, series: SeriesId) -> Vec<Point> {
    read_range(backend, series, i64::MIN, i64::MAX).await
}

pub async fn read_range(
    backend: &MongoBackend,
    series: SeriesId,
    start: i64,
    end: i64,
) -> Vec<Point> {
    let segments = backend
        .read_segments(series, start, end)
        .await
        .unwrap_or_else(|e| panic!("read_segments: {e}"));
    assert_chain(&segments);
    tickertape_core::segment::collect_points(&segments).expect("segments decode")
}

/// The layout invariants a reader can check: segments sorted by `prev_end`, every point
/// inside `[prev_end, next_start]`, times strictly increasing across the chain.
pub fn assert_chain(segments: &[Segment]) {
    let mut last: Option<i64> = None;
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            assert!(
                segments[i - 1].prev_end <= s.prev_end,
                "not sorted by prev_end"
            );
        }
        for p in s.points().expect("segment decodes") {
            assert!(
                s.prev_end <= p.time && p.time <= s.next_start,
                "point {} outside [{}, {}]",
                p.time,
                s.prev_end,
                s.next_start
            );
            if let Some(l) = last {
                assert!(p.time > l, "times not increasing: {l} then {}", p.time);
            }
            last = Some(p.time);
        }
    }
}

pub fn sealed_count(segments: &[Segment]) -> usize {
    segments
        .iter()
        .filter(|s| matches!(s.body, SegmentBody::Sealed(_)))
        .count()
}

pub fn times(points: &[Point]) -> Vec<i64> {
    points.iter().map(|p| p.time).collect()
}
