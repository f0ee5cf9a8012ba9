//! Shared helpers: every test works in its own fresh database on the server named by
//! `TICKERTAPE_MONGODB_URI`, so tests run in parallel against one server.

#![allow(dead_code)]

pub mod counter;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tickertape_backend::{SeriesAppend, SeriesCatalog, ValueStore};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::segment::Segment;
use tickertape_core::{Point, SeriesId, SeriesKey};
use tickertape_mongodb::{FaultPlan, MongoBackend, MongoOptions};

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
    tickertape_mongodb::uri_with_database(&server_uri(), db)
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

/// Options for `db` with `block_points` points a document, day partitions, and no
/// background fold for an hour: a test that wants folds calls `compact` or sets
/// `fold_every` itself.
pub fn options(db: &str, block_points: usize) -> MongoOptions {
    let mut options = MongoOptions::new(uri_with_db(db));
    options.block_points = block_points;
    options.fold_every = Duration::from_secs(3600);
    // Reads beside folds are what the grace protects: a second is ample here, and every
    // `compact` waits it out.
    options.superseded_grace = Duration::from_secs(1);
    options
}

pub async fn open(db: &str, block_points: usize) -> MongoBackend {
    connect(options(db, block_points)).await
}

pub async fn connect(options: MongoOptions) -> MongoBackend {
    let uri = options.uri.clone();
    MongoBackend::connect(options)
        .await
        .unwrap_or_else(|e| panic!("connect to {uri}: {e}"))
}

pub async fn open_with_faults(mut options: MongoOptions, plan: Arc<FaultPlan>) -> MongoBackend {
    options.fault = Some(plan);
    connect(options).await
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

/// Every point of `series`, from one `read_segments` over all time.
pub async fn read_all(backend: &MongoBackend, series: SeriesId) -> Vec<Point> {
    read_range(backend, series, i64::MIN, i64::MAX).await
}

/// The points of `[start, end)` and the nearest point on each side.
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
    assert_increasing(&segments);
    tickertape_core::segment::collect_points(&segments).expect("segments decode")
}

/// What every reader relies on: one point per time, times strictly increasing.
pub fn assert_increasing(segments: &[Segment]) {
    let mut last: Option<i64> = None;
    for s in segments {
        for p in s.points().expect("segment decodes") {
            if let Some(l) = last {
                assert!(p.time > l, "times not increasing: {l} then {}", p.time);
            }
            last = Some(p.time);
        }
    }
}

pub fn times(points: &[Point]) -> Vec<i64> {
    points.iter().map(|p| p.time).collect()
}

/// A small deterministic generator (xorshift64*): the tests need reproducible batches, not
/// good randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `[lo, hi)`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
}

/// What a store may hold after acknowledged and failed appends, under last write wins:
/// per series and time, the values it may read back and whether it may hold none.
#[derive(Default)]
pub struct Model {
    cells: BTreeMap<(SeriesId, i64), Cell>,
}

#[derive(Default)]
struct Cell {
    values: Vec<u64>,
    may_be_absent: bool,
}

impl Model {
    /// An acknowledged call: its points are the last writes of their times.
    pub fn acked(&mut self, appends: &[SeriesAppend]) {
        for a in appends {
            for p in a.points() {
                let cell = self.cells.entry((a.series(), p.time)).or_default();
                *cell = Cell {
                    values: vec![p.value.to_bits()],
                    may_be_absent: false,
                };
            }
        }
    }

    /// A failed call: each of its points may or may not have been stored.
    pub fn failed(&mut self, appends: &[SeriesAppend]) {
        for a in appends {
            for p in a.points() {
                let cell = self.cells.entry((a.series(), p.time)).or_insert(Cell {
                    values: Vec::new(),
                    may_be_absent: true,
                });
                cell.values.push(p.value.to_bits());
            }
        }
    }

    /// Every acknowledged point is read back with its last acknowledged value (or, where
    /// a failed call wrote it later, that call's value); nothing else is read.
    pub async fn check(&self, backend: &MongoBackend, series: &[SeriesId], context: &str) {
        for &s in series {
            let read = read_all(backend, s).await;
            let got: BTreeMap<i64, u64> =
                read.iter().map(|p| (p.time, p.value.to_bits())).collect();
            for (&(_, t), cell) in self.cells.range((s, i64::MIN)..=(s, i64::MAX)) {
                match got.get(&t) {
                    Some(v) => assert!(
                        cell.values.contains(v),
                        "{context}: series {s} time {t} reads {}, expected one of {:?}",
                        f64::from_bits(*v),
                        cell.values
                            .iter()
                            .map(|v| f64::from_bits(*v))
                            .collect::<Vec<_>>()
                    ),
                    None => assert!(
                        cell.may_be_absent,
                        "{context}: acknowledged point of series {s} at {t} lost"
                    ),
                }
            }
            for &t in got.keys() {
                assert!(
                    self.cells.contains_key(&(s, t)),
                    "{context}: series {s} reads a point at {t} never written"
                );
            }
        }
    }
}

pub fn summary_bits(slots: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
    slots.iter().map(|(t, s)| (*t, s.to_bits())).collect()
}

/// `read_segment_rollup` at each of `resolutions` equals `summarize_slots` over the raw
/// points, bit for bit, over the whole span of the points and a few ranges around the
/// partition bounds of `partition_ns`.
pub async fn assert_rollups_equal_raw(
    backend: &MongoBackend,
    series: &[SeriesId],
    resolutions: &[Resolution],
    partition_ns: i64,
    context: &str,
) {
    for &s in series {
        let raw = read_all(backend, s).await;
        let (Some(first), Some(last)) = (raw.first(), raw.last()) else {
            continue;
        };
        for &r in resolutions {
            let w = r.nanos();
            let lo = first.time.div_euclid(w) * w;
            let hi = (last.time.div_euclid(w) + 1) * w;
            let bound = (first.time.div_euclid(partition_ns) + 1) * partition_ns;
            let near = bound.div_euclid(w) * w;
            let ranges = [
                (lo, hi),
                (lo - 4 * w, lo),
                (near - 2 * w, near + 3 * w),
                (lo + w, lo + 5 * w),
            ];
            for (start, end) in ranges {
                let want = summarize_slots(&raw, start, end, r);
                let got = backend
                    .read_segment_rollup(s, r, start, end)
                    .await
                    .unwrap_or_else(|e| panic!("{context}: rollup {r} of [{start}, {end}): {e}"));
                assert_eq!(
                    summary_bits(&got),
                    summary_bits(&want),
                    "{context}: series {s}, rollup {r} of [{start}, {end})"
                );
            }
        }
    }
}

/// The stored rollups are caught up, as documents: for every slice and series in it, one
/// rollup document per resolution of `kept`, whose `v` is exactly the sorted `(w, u)` of
/// the series' live value documents there. (`read_segment_rollup` would answer
/// the same from raw points otherwise; this checks that it need not.)
pub async fn assert_rollup_documents_cover(backend: &MongoBackend, kept: &[Resolution]) {
    use futures::TryStreamExt;
    use mongodb::bson::{doc, Bson, Document};

    let db = mongodb::Client::with_uri_str(uri_with_db(backend.database_name()))
        .await
        .expect("client")
        .database(backend.database_name());
    let names = db.list_collection_names().await.expect("list collections");
    let periods = backend.periods();
    let mut checked = 0;
    for name in names.iter().filter(|n| n.starts_with("sv.")) {
        let docs: Vec<Document> = db
            .collection::<Document>(name)
            .find(doc! { "x": { "$exists": false } })
            .projection(doc! { "z": 0, "ws": 0 })
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("values");
        // Per (series, slice), the live documents' versions.
        let mut live: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
        for d in &docs {
            let id = d.get_document("_id").expect("_id");
            // A fresh document's version is its write number (no `u`).
            let w = id.get_i64("w").expect("w");
            let version = (w, d.get_i64("u").unwrap_or(w));
            let slice = periods.slices().start_of(d.get_i64("hi").expect("hi"));
            live.entry((id.get_i64("s").expect("s"), slice))
                .or_default()
                .push(version);
        }
        for r in kept {
            for ((s, slice), versions) in &mut live {
                versions.sort_unstable();
                let collection = format!("sr.{}.{}", r.nanos(), periods.rollups().start_of(*slice));
                let stored = db
                    .collection::<Document>(&collection)
                    .find_one(doc! { "_id": { "s": *s, "p": *slice } })
                    .await
                    .expect("find rollup")
                    .unwrap_or_else(|| {
                        panic!("no rollup {r} of series {s} slice {slice} in {collection}")
                    });
                let covers: Vec<(i64, i64)> = stored
                    .get_array("v")
                    .expect("v")
                    .iter()
                    .map(|pair| match pair {
                        Bson::Array(p) => (p[0].as_i64().expect("w"), p[1].as_i64().expect("u")),
                        other => panic!("bad `v` entry {other}"),
                    })
                    .collect();
                assert_eq!(
                    &covers, versions,
                    "rollup {r} of series {s} slice {slice} beside {name}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no rollup document checked");
}

/// 200 series of three 2-point documents, A {10, 60}, B {20, 30}, C {40, 50}, whose
/// fold (2-point documents) cuts each into {10, 20}, {30, 40}, {50, 60}, new documents
/// beside A, B and C, which it then marks superseded.
pub async fn series_of_three_documents(db: &str) -> (MongoBackend, Vec<SeriesId>) {
    let writer = open(db, 2).await;
    let keys: Vec<_> = (0..200)
        .map(|i| key("split", &format!("h{i:03}"), "v"))
        .collect();
    let series = writer.resolve_series(&keys).await.expect("register");
    for times in [[10, 60], [20, 30], [40, 50]] {
        let appends = series.iter().map(|&s| append(s, times)).collect();
        writer.append(appends).await.expect("append");
    }
    (writer, series)
}
