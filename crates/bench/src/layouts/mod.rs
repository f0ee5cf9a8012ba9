//! `tickertape-bench layouts`: a schema simulator, as the page-view counter pattern's. The
//! same small devops-like dataset is written in several layouts, each into its own fresh
//! store (a MongoDB database, or an embedded store directory, removed afterwards), and each
//! is measured the same way: write throughput and per-request latency, what it takes on the
//! server or on disk, round trips (MongoDB), and the four reference queries of the ingest
//! benchmark scaled to the data.
//!
//! # Layout
//! - `mongo.rs` / `embedded.rs`: the rows each backend runs, a fresh store per row, and
//!   what the store takes afterwards (`collStats`; the store's files).
//! - `docs.rs`: one document per point (rows a, d, e), written with the driver.
//! - `segments.rs`: value points through `Backend::append` (row b: MongoDB's value
//!   partitions, then `Backend::compact`; embedded s).
//! - `pushdocs.rs`: one document per series and partition, `$push` and a rewrite on seal
//!   (row c), written with the driver: the alternative to row b.
//! - `minute.rs`: per-minute buckets `v.S` written with the driver (rows f, g).
//! - `hour.rs`: per-hour buckets `v.M.S` through `Backend::write_buckets` (rows h, i).
//! - `queries.rs`: the reference queries through the engine, and the median of runs.
//! - `report.rs`: latency statistics and the table.
//! - `relay.rs`: the TCP relay that counts round trips to MongoDB.
//!
//! Pre-allocated rows (g, i) create every shell document the writes will touch before the
//! clock of the writes starts; the pre-allocation is timed on its own and its round trips
//! are not counted with the writes', so the rows answer one question: with the documents
//! already there, are the writes themselves faster?
//!
//! Rows that store the last write of a time (b, c, s) also get late points: every request
//! after the first carries `--late-percent` of its size again as re-sends of earlier times
//! (picked at random from everything sent before) with new values, so that their storage
//! is measured with the overwrites a real load has. Their `points` are the dataset's (the
//! distinct points stored, what bytes per point divide by), `late` the re-sends on top.

mod docs;
mod embedded;
mod hour;
mod minute;
mod mongo;
mod pushdocs;
mod queries;
mod relay;
mod report;
mod segments;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tickertape_core::SeriesKey;

use crate::dataset::FIELDS;

/// 2016-01-01T00:00:00Z, the start of the devops dataset, in nanoseconds.
/// A whole hour (and minute), so the data starts at a bucket boundary.
const START_NS: i64 = 1_451_606_400_000_000_000;
/// One row every 10 s, as gen.py writes them.
const INTERVAL_NS: i64 = 10_000_000_000;
const MINUTE_NS: i64 = 60_000_000_000;
/// The measurement every series belongs to.
const MEASUREMENT: &str = "cpu";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write: a MongoDB server (mongodb://HOST:PORT/; its database name is
    /// ignored: every layout gets a fresh database, dropped at the end) or a directory for
    /// the embedded store (created if missing; every layout gets a fresh subdirectory in
    /// it, removed at the end). MongoDB runs rows a–i, the embedded store s, h and i.
    #[arg(long)]
    pub store: String,
    /// Series (host × field, ten fields per host).
    #[arg(long, default_value_t = 20)]
    pub series: usize,
    /// Points per series, one every 10 s from 2016-01-01.
    #[arg(long, default_value_t = 400)]
    pub points_per_series: usize,
    /// Points per write request, cut from the time-major stream (all series' points of
    /// one timestamp, then the next), as a line-protocol body would carry them.
    #[arg(long, default_value_t = 50)]
    pub batch: usize,
    /// Points written one request each in the one-point-per-request layout (the
    /// naive layout value segments replace): the first ones of the stream.
    #[arg(long, default_value_t = 300)]
    pub single_points: usize,
    /// Late points of rows b, c and s: re-sends of earlier times with new values, as a
    /// percentage of each request's points, added to every request after the first.
    #[arg(long, default_value_t = 5.0)]
    pub late_percent: f64,
    /// Runs of each reference query; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub query_runs: usize,
    /// Seconds a layout's writes may take before they are cut short (the row then
    /// reports what was written, with a note); pre-allocation gets the same limit.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Only these rows, by letter (comma-separated, e.g. `--only a,f,g,h,i`). MongoDB:
    /// a b c d e f g h i; embedded: s h i. Default: every row of the backend.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// One point of the dataset.
#[derive(Clone, Copy, Debug)]
struct Row {
    series: usize,
    time: i64,
    value: f64,
}

struct Data {
    rows: Vec<Row>,
    keys: Vec<SeriesKey>,
    /// The first time after the data (exclusive end of every query range).
    end: i64,
}

impl Data {
    fn host(&self, series: usize) -> String {
        format!("host_{}", series / FIELDS.len())
    }
    fn field(series: usize) -> &'static str {
        FIELDS[series % FIELDS.len()]
    }
    /// The series of host_0 (its fields), the subject of Q1 and Q4.
    fn host0_series(&self) -> std::ops::Range<usize> {
        0..FIELDS.len().min(self.keys.len())
    }
}

fn generate(args: &Args) -> Data {
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut current: Vec<f64> = (0..args.series)
        .map(|_| rng.gen_range(0.0..100.0))
        .collect();
    let mut rows = Vec::with_capacity(args.series * args.points_per_series);
    for i in 0..args.points_per_series {
        let time = START_NS + i as i64 * INTERVAL_NS;
        for (series, v) in current.iter_mut().enumerate() {
            *v = (*v + rng.gen_range(-1.0..1.0)).clamp(0.0, 100.0);
            rows.push(Row {
                series,
                time,
                value: *v,
            });
        }
    }
    let keys = (0..args.series)
        .map(|s| {
            SeriesKey::new(
                MEASUREMENT,
                vec![("hostname".into(), format!("host_{}", s / FIELDS.len()))],
                Data::field(s),
            )
        })
        .collect();
    Data {
        rows,
        keys,
        end: START_NS + args.points_per_series as i64 * INTERVAL_NS,
    }
}

/// A row of the table. Letters a–e are the first version's rows and keep their meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    PointDocs,
    /// The product's value partitions through `MongoBackend`: immutable delta documents,
    /// folded by `Backend::compact`.
    ValuePartitions,
    /// One document per series and partition, `$push` per request, rewritten into one
    /// compressed block on seal; written with the driver.
    PushDocs,
    Native,
    SinglePoints,
    /// Per-minute documents `v.S` (the page-view counter pattern), written with the driver.
    MinuteBuckets {
        preallocated: bool,
    },
    /// Per-hour documents `v.M.S` (the MMS schema) through `Backend::write_buckets`.
    HourBuckets {
        preallocated: bool,
    },
    /// Value segments on the embedded store (one protocol: a transaction per batch).
    EmbeddedSegments,
}

impl Layout {
    /// The row's name in the report, `(tag) description`.
    fn name(self) -> &'static str {
        self.tag_and_name().1
    }

    /// The row's letter, as `--only` takes it.
    fn tag(self) -> &'static str {
        self.tag_and_name().0
    }

    fn tag_and_name(self) -> (&'static str, &'static str) {
        match self {
            Layout::PointDocs => ("a", "(a) doc per point, insert_many"),
            Layout::ValuePartitions => ("b", "(b) value partitions, deltas + fold"),
            Layout::PushDocs => ("c", "(c) doc per series+partition, $push"),
            Layout::Native => ("d", "(d) native time series"),
            Layout::SinglePoints => ("e", "(e) doc per point, 1 per request"),
            Layout::MinuteBuckets { preallocated } => match preallocated {
                false => ("f", "(f) minute buckets v.S, upsert"),
                true => ("g", "(g) minute buckets v.S, pre-allocated"),
            },
            Layout::HourBuckets { preallocated } => match preallocated {
                false => ("h", "(h) hour buckets v.M.S, upsert"),
                true => ("i", "(i) hour buckets v.M.S, pre-allocated"),
            },
            Layout::EmbeddedSegments => ("s", "(s) segments, append"),
        }
    }
}

/// The rows of `all` that `--only` asks for (all of them without `--only`); refuses a
/// letter that is not a row of this backend.
fn selected(all: &[Layout], only: &[String]) -> Result<Vec<Layout>> {
    if only.is_empty() {
        return Ok(all.to_vec());
    }
    let tags: Vec<&str> = all.iter().map(|l| l.tag()).collect();
    if let Some(unknown) = only.iter().find(|o| !tags.contains(&o.trim())) {
        bail!(
            "--only: no row {unknown:?} on this backend (rows: {})",
            tags.join(" ")
        );
    }
    Ok(all
        .iter()
        .copied()
        .filter(|l| only.iter().any(|o| o.trim() == l.tag()))
        .collect())
}

/// Pre-allocation before a row's writes: how long it took and how many shells it made.
#[derive(Clone, Copy, Debug, Default)]
struct Prealloc {
    ms: f64,
    documents: u64,
}

/// What a MongoDB database holds after a row's writes (`collStats`, summed).
#[derive(Clone, Copy, Debug, Default)]
struct MongoStorage {
    documents: u64,
    index_entries: u64,
    data_bytes: u64,
    index_bytes: u64,
}

/// A row's store after a seal step (`Backend::compact` for row b, the rewrite for row c),
/// run after the timed writes and their storage figures: a line of its own in the table.
#[derive(Clone, Copy, Debug, Default)]
struct Sealed {
    /// The line's name, e.g. `(b') … after Backend::compact`.
    name: &'static str,
    ms: f64,
    round_trips: Option<u64>,
    storage: MongoStorage,
    queries_ms: [Option<f64>; 4],
}

/// One row's measurements; a `None` is a figure this row or backend does not have.
#[derive(Default)]
struct Outcome {
    /// Points of the dataset acknowledged by the timed writes: the distinct (series, time)
    /// points stored, what bytes per point divide by.
    points: usize,
    /// Late points acknowledged on top of `points`: re-sends of a time written before,
    /// with a new value (see [`Ctx::bodies`]); `None` for a row without late points.
    late: Option<usize>,
    seconds: f64,
    latencies_ms: Vec<f64>,
    prealloc: Option<Prealloc>,
    storage: Option<MongoStorage>,
    /// Embedded: the length of the redb file after the store was closed.
    file_bytes: Option<u64>,
    /// Round trips of the timed writes (MongoDB).
    round_trips: Option<u64>,
    queries_ms: [Option<f64>; 4],
    /// The seal steps after the writes, in order.
    sealed: Vec<Sealed>,
    note: Option<String>,
}

impl Outcome {
    /// Every point the timed writes sent and had acknowledged, late ones included.
    fn sent_points(&self) -> usize {
        self.points + self.late.unwrap_or(0)
    }

    /// Sets [`late`](Self::late) from the bodies sent: those acknowledged are the first
    /// as many as there are latencies.
    fn count_late(&mut self, bodies: &[Body]) {
        let acknowledged = self.latencies_ms.len().min(bodies.len());
        self.late = Some(bodies[..acknowledged].iter().map(|b| b.late).sum());
    }

    fn failed(note: String) -> Self {
        Self {
            note: Some(note),
            ..Self::default()
        }
    }

    /// Sends `requests` (each with the number of points it carries) in order, timing
    /// each, until every one is acknowledged or `limit` passes; then the row notes that
    /// it was cut short and reports the points acknowledged so far. A failed request
    /// fails the row.
    async fn send_all<T, F, Fut>(
        &mut self,
        requests: Vec<(usize, T)>,
        limit: Duration,
        mut send: F,
    ) -> Result<()>
    where
        F: FnMut(T) -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        let latencies = &mut self.latencies_ms;
        let points = &mut self.points;
        let started = Instant::now();
        let all = tokio::time::timeout(limit, async {
            for (n, body) in requests {
                let t = Instant::now();
                send(body).await?;
                latencies.push(ms(t.elapsed()));
                *points += n;
            }
            anyhow::Ok(())
        })
        .await;
        self.seconds = started.elapsed().as_secs_f64();
        match all {
            Err(_) => self.note = Some(cut_short(limit)),
            Ok(r) => r?,
        }
        Ok(())
    }

    /// Runs a pre-allocation (which returns the shells it created) under `limit`, timed.
    async fn preallocate<Fut>(&mut self, limit: Duration, work: Fut) -> Result<()>
    where
        Fut: Future<Output = Result<u64>>,
    {
        let started = Instant::now();
        let documents = match tokio::time::timeout(limit, work).await {
            Err(_) => bail!("pre-allocation did not finish within {} s", limit.as_secs()),
            Ok(r) => r?,
        };
        self.prealloc = Some(Prealloc {
            ms: ms(started.elapsed()),
            documents,
        });
        Ok(())
    }
}

fn cut_short(limit: Duration) -> String {
    format!("writes cut short after {} s (--timeout)", limit.as_secs())
}

/// What every row shares: the dataset, the options and the round-trip counter.
struct Ctx<'a> {
    args: &'a Args,
    data: &'a Data,
    /// Client → server messages so far (MongoDB, through the relay).
    round_trips: Option<&'a AtomicU64>,
}

impl Ctx<'_> {
    fn limit(&self) -> Duration {
        Duration::from_secs(self.args.timeout)
    }
    fn round_trips_now(&self) -> u64 {
        self.round_trips.map_or(0, |c| c.load(Ordering::Relaxed))
    }
    /// The dataset cut into write requests of `--batch` points, time-major.
    fn chunks(&self) -> std::slice::Chunks<'_, Row> {
        self.data.rows.chunks(self.args.batch)
    }

    /// The write requests of the rows with late points: each `--batch` chunk, then (after
    /// the first) `--late-percent` of its size again as late points — distinct rows drawn
    /// at random from every chunk before it, each with a new value. The same bodies for
    /// every row (seeded by `--seed`).
    fn bodies(&self) -> Vec<Body> {
        let mut rng = StdRng::seed_from_u64(self.args.seed ^ LATE_SEED);
        let mut sent = 0;
        self.chunks()
            .map(|chunk| {
                let wanted = (chunk.len() as f64 * self.args.late_percent / 100.0).round();
                let late = (wanted as usize).min(sent);
                let mut rows = chunk.to_vec();
                for i in rand::seq::index::sample(&mut rng, sent.max(1), late) {
                    let mut row = self.data.rows[i];
                    row.value += rng.gen_range(-1.0..1.0);
                    rows.push(row);
                }
                sent += chunk.len();
                Body {
                    rows,
                    chunk: chunk.len(),
                    late,
                }
            })
            .collect()
    }
}

/// Mixed into `--seed` for the late points, so they do not repeat the data's draws.
const LATE_SEED: u64 = 0x1a7e;

/// A write request of the rows with late points; sent with `Outcome::send_all` as
/// `(chunk points, body)`, so that `points` counts the dataset's points alone.
struct Body {
    /// A chunk of the stream, then its late points.
    rows: Vec<Row>,
    /// How many of `rows` are the chunk's.
    chunk: usize,
    /// How many of `rows` are late points (at the end).
    late: usize,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn is_mongodb(store: &str) -> bool {
    store.starts_with("mongodb://") || store.starts_with("mongodb+srv://")
}

pub async fn run(args: Args) -> Result<()> {
    if args.series == 0 || args.points_per_series == 0 || args.batch == 0 {
        bail!("--series, --points-per-series and --batch must be at least 1");
    }
    if !(0.0..=100.0).contains(&args.late_percent) {
        bail!("--late-percent must be between 0 and 100");
    }
    let data = generate(&args);
    let results = if is_mongodb(&args.store) {
        mongo::run(&args, &data).await?
    } else {
        embedded::run(&args, &data).await?
    };
    println!(
        "{} series × {} points, {} points per request (time-major), rows b, c, s with {}% \
         late points on top; latency = one write request; prealloc = shells created before \
         the timed writes; Q = median of {} runs",
        args.series, args.points_per_series, args.batch, args.late_percent, args.query_runs
    );
    print!("{}", report::table(&results));
    Ok(())
}

/// Registers the dataset's series (not timed): their ids, by series index.
async fn resolve(
    backend: &dyn tickertape_backend::Backend,
    data: &Data,
) -> Result<Vec<tickertape_core::SeriesId>> {
    let ids = backend.resolve_series(&data.keys).await?;
    if ids.len() != data.keys.len() {
        bail!(
            "the store returned {} series ids for {} keys",
            ids.len(),
            data.keys.len()
        );
    }
    Ok(ids)
}
