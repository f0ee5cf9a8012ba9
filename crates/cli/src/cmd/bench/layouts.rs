//! `tickertape bench layouts`: seed 003's schema simulator. The same small devops-like
//! dataset is written to one MongoDB server in several layouts, each in its own fresh
//! database (dropped afterwards), and each is measured the same way: write throughput and
//! per-request latency, documents, index entries, bytes, round trips, and the four reference
//! queries of `shared/bench/README.md` scaled to the data.
//!
//! Round trips are counted by a TCP relay in this process between the driver and the
//! server: every client → server wire message that is not a monitoring `hello` is one round
//! trip. So the segment layouts, which write through `MongoBackend`, are counted exactly
//! like the layouts written here with the driver.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::TryStreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::query::Aggregate;
use tickertape_core::{Point, SeriesKey, SeriesSelector};

use super::dataset::{FIELDS, HOUR_NS};
use tickertape_engine::{Engine, Query};
use tickertape_mongodb::driver::bson::{doc, DateTime, Document};
use tickertape_mongodb::driver::{Client, Database, IndexModel};
use tickertape_mongodb::{uri_with_database, MongoBackend, MongoOptions, SegmentProtocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// 2016-01-01T00:00:00Z, the start of `shared/bench/gen.py`'s data, in nanoseconds.
const START_NS: i64 = 1_451_606_400_000_000_000;
/// One row every 10 s, as gen.py writes them.
const INTERVAL_NS: i64 = 10_000_000_000;
const MINUTE_NS: i64 = 60_000_000_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The MongoDB server (mongodb://HOST:PORT/); its database name is ignored: every
    /// layout gets a fresh database, dropped at the end.
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
    /// Points written one request each in the one-point-per-request layout (seed 000's
    /// comparison): the first ones of the stream.
    #[arg(long, default_value_t = 300)]
    pub single_points: usize,
    /// Points per value segment.
    #[arg(long, default_value_t = 160)]
    pub segment_capacity: usize,
    /// Runs of each reference query; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub query_runs: usize,
    /// Seconds a layout's writes may take before it is abandoned (reported as such).
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
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
    end: i64,
}

impl Data {
    fn host(&self, series: usize) -> String {
        format!("host_{}", series / FIELDS.len())
    }
    fn field(series: usize) -> &'static str {
        FIELDS[series % FIELDS.len()]
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
                "cpu",
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    PointDocs,
    Segments(SegmentProtocol),
    Native,
    SinglePoints,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::PointDocs => "(a) doc per point, insert_many",
            Layout::Segments(SegmentProtocol::Reserve) => "(b) segments, reserve",
            Layout::Segments(SegmentProtocol::Conditional) => "(c) segments, conditional",
            Layout::Native => "(d) native time series",
            Layout::SinglePoints => "(e) doc per point, 1 per request",
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Layout::PointDocs => "a",
            Layout::Segments(SegmentProtocol::Reserve) => "b",
            Layout::Segments(SegmentProtocol::Conditional) => "c",
            Layout::Native => "d",
            Layout::SinglePoints => "e",
        }
    }
}

/// One layout's measurements; `note` replaces the numbers when the layout could not run.
#[derive(Default)]
struct Outcome {
    points: usize,
    seconds: f64,
    latencies_ms: Vec<f64>,
    documents: u64,
    index_entries: u64,
    data_bytes: u64,
    index_bytes: u64,
    round_trips: u64,
    queries_ms: [Option<f64>; 4],
    note: Option<String>,
}

pub async fn run(args: Args) -> Result<()> {
    if !(args.store.starts_with("mongodb://") || args.store.starts_with("mongodb+srv://")) {
        bail!("bench layouts needs a MongoDB server: --store mongodb://HOST:PORT/");
    }
    if args.series == 0 || args.points_per_series == 0 || args.batch == 0 {
        bail!("--series, --points-per-series and --batch must be at least 1");
    }
    let data = generate(&args);
    let relay = Relay::start(&args.store).await?;
    let uri = relay.uri.clone();
    let layouts = [
        Layout::PointDocs,
        Layout::Segments(SegmentProtocol::Reserve),
        Layout::Segments(SegmentProtocol::Conditional),
        Layout::Native,
        Layout::SinglePoints,
    ];
    let mut results = Vec::new();
    for layout in layouts {
        let db = format!("tt_layouts_{}_{}", std::process::id(), layout.tag());
        eprintln!("bench layouts: {} in database {db}", layout.name());
        let outcome = run_layout(layout, &args, &data, &uri, &db, &relay.count).await;
        let outcome = outcome.unwrap_or_else(|e| Outcome {
            note: Some(format!("failed: {e:#}")),
            ..Outcome::default()
        });
        results.push((layout, outcome));
    }
    println!(
        "{} series × {} points, {} points per request (time-major), segment capacity {}; \
         latency = one write request; Q = median of {} runs",
        args.series, args.points_per_series, args.batch, args.segment_capacity, args.query_runs
    );
    print!("{}", table(&results));
    Ok(())
}

async fn run_layout(
    layout: Layout,
    args: &Args,
    data: &Data,
    uri: &str,
    db_name: &str,
    round_trips: &AtomicU64,
) -> Result<Outcome> {
    let db_uri = uri_with_database(uri, db_name);
    let client = Client::with_uri_str(&db_uri)
        .await
        .context("MongoDB client")?;
    let db = client.database(db_name);
    let timeout = Duration::from_secs(args.timeout);
    let outcome = match layout {
        Layout::PointDocs | Layout::SinglePoints | Layout::Native => {
            let native = layout == Layout::Native;
            if native {
                let created = db
                    .run_command(doc! {
                        "create": "points",
                        "timeseries": {"timeField": "t", "metaField": "m", "granularity": "seconds"},
                    })
                    .await;
                if let Err(e) = created {
                    let _ = db.drop().await;
                    return Ok(Outcome {
                        note: Some(format!("not supported by this server: {e}")),
                        ..Outcome::default()
                    });
                }
            }
            let points = db.collection::<Document>("points");
            points
                .create_index(
                    IndexModel::builder()
                        .keys(doc! { "m.h": 1, "m.f": 1, "t": 1 })
                        .build(),
                )
                .await
                .context("create index {m.h, m.f, t}")?;
            let rows: &[Row] = if layout == Layout::SinglePoints {
                &data.rows[..args.single_points.min(data.rows.len())]
            } else {
                &data.rows
            };
            let batch = if layout == Layout::SinglePoints {
                1
            } else {
                args.batch
            };
            let to_doc = |r: &Row| {
                let time = if native {
                    DateTime::from_millis(r.time / 1_000_000).into()
                } else {
                    tickertape_mongodb::driver::bson::Bson::Int64(r.time)
                };
                doc! { "m": { "h": data.host(r.series), "f": Data::field(r.series) }, "t": time, "v": r.value }
            };
            let bodies: Vec<Vec<Document>> = rows
                .chunks(batch)
                .map(|c| c.iter().map(to_doc).collect())
                .collect();
            let mut outcome = Outcome {
                points: rows.len(),
                ..Outcome::default()
            };
            let before = round_trips.load(Ordering::Relaxed);
            let started = Instant::now();
            let written = tokio::time::timeout(timeout, async {
                for body in bodies {
                    let t = Instant::now();
                    if body.len() == 1 {
                        points.insert_one(&body[0]).await?;
                    } else {
                        points.insert_many(body).await?;
                    }
                    outcome.latencies_ms.push(ms(t.elapsed()));
                }
                anyhow::Ok(())
            })
            .await;
            outcome.seconds = started.elapsed().as_secs_f64();
            outcome.round_trips = round_trips.load(Ordering::Relaxed) - before;
            finish_writes(written, args.timeout, &db, &mut outcome).await?;
            if native && outcome.documents == rows.len() as u64 {
                outcome.note = Some(
                    "the server accepted `timeseries` but collStats counts one document per \
                     point: no buckets are visible on this server"
                        .into(),
                );
            }
            if layout != Layout::SinglePoints {
                outcome.queries_ms = doc_queries(&points, data, native, args.query_runs).await;
            }
            outcome
        }
        Layout::Segments(protocol) => {
            let mut options = MongoOptions::new(&db_uri);
            options.protocol = protocol;
            options.segment_capacity = args.segment_capacity;
            let backend = Arc::new(MongoBackend::connect(options).await?);
            let ids = backend.resolve_series(&data.keys).await?;
            let mut outcome = Outcome {
                points: data.rows.len(),
                ..Outcome::default()
            };
            let before = round_trips.load(Ordering::Relaxed);
            let started = Instant::now();
            let written = tokio::time::timeout(timeout, async {
                for chunk in data.rows.chunks(args.batch) {
                    let mut appends: Vec<SeriesAppend> = Vec::new();
                    for r in chunk {
                        let id = ids[r.series];
                        match appends.iter_mut().find(|a| a.series == id) {
                            Some(a) => a.points.push(Point::new(r.time, r.value)),
                            None => appends.push(SeriesAppend {
                                series: id,
                                points: vec![Point::new(r.time, r.value)],
                            }),
                        }
                    }
                    let t = Instant::now();
                    let outcomes = backend.append(appends).await?;
                    outcome.latencies_ms.push(ms(t.elapsed()));
                    if let Some(o) = outcomes.iter().find(|o| o.refused > 0) {
                        bail!("{} points refused: {o:?}", o.refused);
                    }
                }
                anyhow::Ok(())
            })
            .await;
            outcome.seconds = started.elapsed().as_secs_f64();
            outcome.round_trips = round_trips.load(Ordering::Relaxed) - before;
            finish_writes(written, args.timeout, &db, &mut outcome).await?;
            let engine = Engine::new(backend.clone());
            outcome.queries_ms = segment_queries(&engine, data, args.query_runs).await;
            drop(engine);
            backend.drop_database().await?;
            outcome
        }
    };
    db.drop().await.context("drop database")?;
    client.shutdown().await;
    Ok(outcome)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Sums `collStats` over the database's collections: documents, `nindexes × count` as the
/// index entries (every index here is on single-valued fields, so one entry per document
/// per index), `size` (BSON bytes of the documents) and `totalIndexSize`.
/// After a layout's writes: a timeout becomes a note on the row (the row still reports
/// what was written), a write error ends the run, and the storage figures are read.
async fn finish_writes(
    written: Result<Result<()>, tokio::time::error::Elapsed>,
    timeout_secs: u64,
    db: &Database,
    outcome: &mut Outcome,
) -> Result<()> {
    match written {
        Err(_) => outcome.note = Some(format!("timed out after {timeout_secs} s")),
        Ok(r) => r?,
    }
    storage(db, outcome).await;
    Ok(())
}

async fn storage(db: &Database, outcome: &mut Outcome) {
    let names = match db.list_collection_names().await {
        Ok(n) => n,
        Err(e) => {
            outcome.note = Some(format!("listCollections: {e}"));
            return;
        }
    };
    for name in names.iter().filter(|n| !n.starts_with("system.")) {
        match db.run_command(doc! { "collStats": name }).await {
            Ok(s) => {
                let n = |k: &str| s.get(k).and_then(num).unwrap_or(0);
                outcome.documents += n("count");
                outcome.index_entries += n("count") * n("nindexes");
                outcome.data_bytes += n("size");
                outcome.index_bytes += n("totalIndexSize");
            }
            Err(e) => outcome.note = Some(format!("collStats not supported: {e}")),
        }
    }
}

fn num(b: &tickertape_mongodb::driver::bson::Bson) -> Option<u64> {
    use tickertape_mongodb::driver::bson::Bson;
    match b {
        Bson::Int32(v) => Some(*v as u64),
        Bson::Int64(v) => Some(*v as u64),
        Bson::Double(v) => Some(*v as u64),
        _ => None,
    }
}

/// The reference queries, scaled: Q1 all fields of host_0 over the first half of the data;
/// Q2 max of usage_user per minute over all of it; Q3 the last point of every series;
/// Q4 max of every field of host_0 per hour over all of it.
struct Spans {
    q1_end: i64,
}

fn spans(data: &Data) -> Spans {
    Spans {
        q1_end: START_NS + (data.end - START_NS) / 2,
    }
}

async fn median_of<F, Fut>(runs: usize, mut f: F) -> Option<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize>>,
{
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        match f().await {
            Ok(n) if n > 0 => times.push(ms(t.elapsed())),
            Ok(_) => {
                eprintln!("bench layouts: a reference query returned nothing");
                return None;
            }
            Err(e) => {
                eprintln!("bench layouts: reference query failed: {e:#}");
                return None;
            }
        }
    }
    times.sort_by(f64::total_cmp);
    Some(times[times.len() / 2])
}

async fn doc_queries(
    points: &tickertape_mongodb::driver::Collection<Document>,
    data: &Data,
    native: bool,
    runs: usize,
) -> [Option<f64>; 4] {
    use tickertape_mongodb::driver::bson::Bson;
    let time = |ns: i64| -> Bson {
        if native {
            DateTime::from_millis(ns / 1_000_000).into()
        } else {
            Bson::Int64(ns)
        }
    };
    // Window start of `$t` for a window of `width` ns: in ms for dates (date − date = ms).
    let unit = if native { 1_000_000 } else { 1 };
    let bucket = |width: i64| {
        let offset = doc! { "$subtract": ["$t", time(START_NS)] };
        doc! { "$subtract": [offset.clone(), { "$mod": [offset, width / unit] }] }
    };
    let s = spans(data);
    let host = data.host(0);
    let collect = |pipeline: Vec<Document>| async move {
        let docs: Vec<Document> = points.aggregate(pipeline).await?.try_collect().await?;
        anyhow::Ok(docs.len())
    };
    let q1 = median_of(runs, || async {
        let filter = doc! { "m.h": &host, "t": { "$gte": time(START_NS), "$lt": time(s.q1_end) } };
        let docs: Vec<Document> = points
            .find(filter)
            .sort(doc! { "m.f": 1, "t": 1 })
            .await?
            .try_collect()
            .await?;
        Ok(docs.len())
    })
    .await;
    let q2 = median_of(runs, || {
        collect(vec![
            doc! { "$match": { "m.h": &host, "m.f": FIELDS[0], "t": { "$gte": time(START_NS), "$lt": time(data.end) } } },
            doc! { "$group": { "_id": bucket(MINUTE_NS), "v": { "$max": "$v" } } },
            doc! { "$sort": { "_id": 1 } },
        ])
    })
    .await;
    let q3 = median_of(runs, || {
        collect(vec![
            doc! { "$sort": { "m.h": 1, "m.f": 1, "t": -1 } },
            doc! { "$group": { "_id": "$m", "t": { "$first": "$t" }, "v": { "$first": "$v" } } },
        ])
    })
    .await;
    let q4 = median_of(runs, || {
        collect(vec![
            doc! { "$match": { "m.h": &host, "t": { "$gte": time(START_NS), "$lt": time(data.end) } } },
            doc! { "$group": { "_id": { "f": "$m.f", "w": bucket(HOUR_NS) }, "v": { "$max": "$v" } } },
            doc! { "$sort": { "_id.f": 1, "_id.w": 1 } },
        ])
    })
    .await;
    [q1, q2, q3, q4]
}

async fn segment_queries(engine: &Engine, data: &Data, runs: usize) -> [Option<f64>; 4] {
    let s = spans(data);
    let host = data.host(0);
    let selector = |field: Option<&str>, host: Option<&str>| SeriesSelector {
        measurement: "cpu".into(),
        field: field.map(str::to_owned),
        tags: host
            .map(|h| vec![("hostname".to_owned(), h.to_owned())])
            .unwrap_or_default(),
    };
    let run = |query: Query| async move {
        let answer = engine.query(&query).await?;
        anyhow::Ok(answer.iter().map(|s| s.points.len()).sum::<usize>())
    };
    let windowed = |field: Option<&str>, step: i64, agg: Aggregate| {
        let mut q = Query::raw(selector(field, Some(&host)), START_NS, data.end);
        q.step = Some(step);
        q.agg = Some(agg);
        q
    };
    let q1 = median_of(runs, || {
        run(Query::raw(selector(None, Some(&host)), START_NS, s.q1_end))
    })
    .await;
    let q2 = median_of(runs, || {
        run(windowed(Some(FIELDS[0]), MINUTE_NS, Aggregate::Max))
    })
    .await;
    let q3 = median_of(runs, || {
        let mut q = Query::raw(selector(None, None), START_NS, data.end);
        q.agg = Some(Aggregate::Last);
        run(q)
    })
    .await;
    let q4 = median_of(runs, || run(windowed(None, HOUR_NS, Aggregate::Max))).await;
    [q1, q2, q3, q4]
}

/// Mean, standard deviation, p75, p95, p99, min, max (nearest-rank percentiles).
fn latency_stats(samples: &[f64]) -> Option<[f64; 7]> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let sd = (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let rank = |p: f64| sorted[((p * n).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some([
        mean,
        sd,
        rank(0.75),
        rank(0.95),
        rank(0.99),
        sorted[0],
        sorted[sorted.len() - 1],
    ])
}

fn table(results: &[(Layout, Outcome)]) -> String {
    let header = [
        "layout",
        "points",
        "points/s",
        "mean ms",
        "sd",
        "p75",
        "p95",
        "p99",
        "min",
        "max",
        "docs",
        "index entries",
        "data B",
        "index B",
        "B/point",
        "RT/1k pts",
        "Q1 ms",
        "Q2 ms",
        "Q3 ms",
        "Q4 ms",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for (layout, o) in results {
        let mut row = vec![layout.name().to_owned()];
        if o.points == 0 {
            row.push(o.note.clone().unwrap_or_default());
            row.resize(header.len(), String::new());
            rows.push(row);
            continue;
        }
        let per_point = |b: u64| format!("{:.1}", b as f64 / o.points as f64);
        row.push(o.points.to_string());
        row.push(format!("{:.0}", o.points as f64 / o.seconds.max(1e-9)));
        match latency_stats(&o.latencies_ms) {
            Some(s) => row.extend(s.iter().map(|x| format!("{x:.2}"))),
            None => row.extend(std::iter::repeat_n("-".to_owned(), 7)),
        }
        row.push(o.documents.to_string());
        row.push(o.index_entries.to_string());
        row.push(o.data_bytes.to_string());
        row.push(o.index_bytes.to_string());
        row.push(per_point(o.data_bytes + o.index_bytes));
        row.push(format!(
            "{:.1}",
            o.round_trips as f64 * 1000.0 / o.points as f64
        ));
        for q in o.queries_ms {
            row.push(q.map_or("-".to_owned(), |v| format!("{v:.1}")));
        }
        rows.push(row);
        if let Some(note) = &o.note {
            rows.push(vec![format!("  note: {note}")]);
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .filter(|r| r.len() > 1)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if row.len() == 1 {
            out.push_str(&format!("{}\n", row[0]));
            continue;
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            let rule: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(c, w)| {
                    if c == 0 {
                        "-".repeat(w + 2)
                    } else {
                        format!("{}:", "-".repeat(w + 1))
                    }
                })
                .collect();
            out.push_str(&format!("|{}|\n", rule.join("|")));
        }
    }
    out
}

/// A TCP relay between the driver and the server that counts round trips: client → server
/// wire messages, except the driver's own monitoring (`hello`/`isMaster` heartbeats).
struct Relay {
    uri: String,
    count: Arc<AtomicU64>,
}

impl Relay {
    async fn start(uri: &str) -> Result<Self> {
        if uri.starts_with("mongodb+srv://") {
            bail!("bench layouts counts round trips through a relay to one host; give mongodb://HOST:PORT");
        }
        let rest = &uri["mongodb://".len()..];
        let (hosts_end, tail) = match rest.find(['/', '?']) {
            Some(i) => (i, &rest[i..]),
            None => (rest.len(), ""),
        };
        let authority = &rest[..hosts_end];
        let (creds, host) = match authority.rsplit_once('@') {
            Some((c, h)) => (format!("{c}@"), h),
            None => (String::new(), authority),
        };
        if host.contains(',') {
            bail!("bench layouts needs a single host (one mongod or mongos), not {host}");
        }
        let upstream = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:27017")
        };
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local = listener.local_addr()?;
        let count = Arc::new(AtomicU64::new(0));
        let counter = count.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(&upstream).await {
                        relay(inbound, outbound, counter).await;
                    }
                });
            }
        });
        let path = if tail.is_empty() { "/" } else { tail };
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        Ok(Self {
            uri: format!("mongodb://{creds}{local}{path}{sep}directConnection=true"),
            count,
        })
    }
}

async fn relay(inbound: TcpStream, outbound: TcpStream, counter: Arc<AtomicU64>) {
    let (mut client_read, mut client_write) = inbound.into_split();
    let (mut server_read, mut server_write) = outbound.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    });
    // Client → server: forward everything, and parse message boundaries to count them.
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if server_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        while pending.len() >= 4 {
            let len = i32::from_le_bytes([pending[0], pending[1], pending[2], pending[3]]) as usize;
            if len < 16 || pending.len() < len {
                break;
            }
            if !is_monitoring(&pending[..len]) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            pending.drain(..len);
        }
    }
    down.abort();
}

/// An OP_MSG (opcode 2013) whose body section's first key is `hello`/`isMaster`.
fn is_monitoring(message: &[u8]) -> bool {
    let opcode = i32::from_le_bytes([message[12], message[13], message[14], message[15]]);
    if opcode != 2013 || message.len() < 27 {
        return false;
    }
    // header 16, flagBits 4, section kind 1, document length 4, element type 1, then the key.
    let key = &message[26..];
    let end = key.iter().position(|&b| b == 0).unwrap_or(0);
    let name = &key[..end];
    name.eq_ignore_ascii_case(b"hello") || name.eq_ignore_ascii_case(b"ismaster")
}
