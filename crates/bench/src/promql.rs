//! PromQL's query targets: `rate(x[5m])` over 24 hours at a 60 s step for 100 series, and
//! the peak of that rate over each hour as a subquery,
//! `max_over_time(rate(x[5m])[1h:1m])`, through Prometheus' `query_range` on the
//! in-process server over a fresh embedded store — and, with `--vm-url`, the same queries
//! of the same points on VictoriaMetrics, asked alternately in the same run.
//!
//! The series are counters written as line protocol (measurement `bench_requests_total`,
//! field `value`, one point per `--interval`; VictoriaMetrics gets the same samples in
//! Prometheus' text format), compacted into part files as a day of data would be, then
//! queried `--runs` times; every answer is checked (series and steps).

use crate::store::{open_engine, serve_engine};
use anyhow::{bail, ensure, Context, Result};
use std::time::{Duration, Instant};
use tickertape_engine::QueryLimits;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Series (one counter per instance).
    #[arg(long, default_value_t = 100)]
    series: usize,
    /// Hours of data, ending at --end.
    #[arg(long, default_value_t = 24)]
    hours: i64,
    /// Seconds between two points of a series.
    #[arg(long, default_value_t = 10)]
    interval: i64,
    /// The query's step, in seconds.
    #[arg(long, default_value_t = 60)]
    step: i64,
    /// Timed queries (after one untimed warm-up).
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// The end of the data and of the queried range, Unix seconds.
    #[arg(long, default_value_t = 1_700_086_400)]
    end: i64,
    /// A VictoriaMetrics to load the same samples into and ask the same queries of,
    /// alternately (`http://127.0.0.1:8428`; start it with `-retentionPeriod=100y`, the
    /// data being older than its default month, and on an empty `-storageDataPath`).
    #[arg(long)]
    vm_url: Option<String>,
    /// The VictoriaMetrics at `--vm-url` holds this data already (an earlier run with
    /// the same data arguments loaded it): ask it without loading again.
    #[arg(long, requires = "vm_url")]
    vm_loaded: bool,
    /// The store's schema (TOML, as `serve --config`): e.g. a raw retention, applied
    /// once after loading (end the data near now with `--end`, or it all expires).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// A query to time instead of the default three (repeatable).
    #[arg(long = "query")]
    queries: Vec<String>,
    /// Also time the own API's `step=1h&agg=avg` over the same range and series.
    #[arg(long)]
    own_api: bool,
    /// The server's `--max-query-points` (a query over more raw points is refused).
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_POINTS)]
    max_query_points: usize,
    /// Keep the store in this directory and, when a run with the same data arguments
    /// loaded it before, query it without loading again (to profile a query over a
    /// large store run after run). Default: a temporary directory.
    #[arg(long)]
    store: Option<std::path::PathBuf>,
}

/// The file in a `--store` directory naming the data a run loaded into it.
const LOADED_MARK: &str = "bench-promql-loaded";

impl Args {
    /// What decides the data a run loads (not the queries).
    fn data_key(&self) -> String {
        format!(
            "series={} hours={} interval={} end={} config={:?}",
            self.series, self.hours, self.interval, self.end, self.config
        )
    }
}

/// The queries timed unless `--query` names others, each asked of every store.
const QUERIES: [&str; 3] = [
    "rate(bench_requests_total[5m])",
    "sum(rate(bench_requests_total[5m]))",
    "max_over_time(rate(bench_requests_total[5m])[1h:1m])",
];

/// The own API's query `--own-api` times beside PromQL's.
const OWN_API: &str = "own API step=1h&agg=avg";

/// A store that answers Prometheus' `query_range`.
struct Target {
    name: &'static str,
    /// Its `…/api/v1/query_range`.
    query_range: String,
}

pub async fn run(args: Args) -> Result<()> {
    let temporary = tempfile::tempdir().context("a temporary store directory")?;
    let dir = args.store.as_deref().unwrap_or(temporary.path());
    let mark = dir.join(LOADED_MARK);
    let loaded_before = std::fs::read_to_string(&mark).ok() == Some(args.data_key());
    let engine = open_engine(dir, args.config.as_deref())
        .await?
        .with_query_limits(QueryLimits {
            max_points: args.max_query_points,
            ..QueryLimits::default()
        });
    let url = serve_engine(engine.clone()).await?;
    let client = reqwest::Client::new();
    let start = args.end - args.hours * 3600;
    if loaded_before {
        println!("querying the store loaded before in {}", dir.display());
    } else {
        let _ = std::fs::remove_file(&mark);
        let written = load(&client, &url, &args, start).await?;
        let r = client
            .post(format!("{url}/api/v1/admin/compact"))
            .send()
            .await?;
        ensure!(r.status().is_success(), "compact answered {}", r.status());
        let dropped = engine.apply_retention(false).await?.dropped.len();
        println!(
            "loaded {written} points in {} series; compacted; retention dropped {dropped} partitions",
            args.series
        );
        if args.store.is_some() {
            std::fs::write(&mark, args.data_key()).context("marking the store loaded")?;
        }
    }
    let mut targets = vec![Target {
        name: "tickertape",
        query_range: format!("{url}/prometheus/api/v1/query_range"),
    }];
    if let Some(vm) = &args.vm_url {
        if !args.vm_loaded {
            let written = load_victoria_metrics(&client, vm, &args, start).await?;
            println!("loaded {written} samples into VictoriaMetrics at {vm}; flushed");
        }
        targets.push(Target {
            name: "victoriametrics",
            query_range: format!("{vm}/api/v1/query_range"),
        });
    }
    let mut queries: Vec<String> = match args.queries.is_empty() {
        true => QUERIES.iter().map(|q| q.to_string()).collect(),
        false => args.queries.clone(),
    };
    if args.own_api {
        queries.insert(0, OWN_API.to_string());
    }
    for query in &queries {
        // The own API is tickertape's alone.
        let asked = match query == OWN_API {
            true => &targets[..1],
            false => &targets[..],
        };
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(args.runs); asked.len()];
        // One untimed warm-up each, then the stores in turn, so that the machine's load
        // falls on both alike.
        for run in 0..=args.runs {
            for (target, times) in asked.iter().zip(&mut times) {
                let took = match query == OWN_API {
                    true => time_own_api(&client, &url, start, &args).await?,
                    false => time_query(&client, target, query, start, &args).await?,
                };
                if run > 0 {
                    times.push(took);
                }
            }
        }
        for (target, times) in asked.iter().zip(&times) {
            report(target.name, query, times);
        }
    }
    Ok(())
}

/// The own API's hourly means of every series over the range, checked; the time until
/// the whole body has arrived.
async fn time_own_api(
    client: &reqwest::Client,
    url: &str,
    start: i64,
    args: &Args,
) -> Result<Duration> {
    let began = Instant::now();
    let response = client
        .get(format!("{url}/api/v1/query"))
        .query(&[
            ("measurement", "bench_requests_total".to_string()),
            ("field", "value".to_string()),
            ("start", (start * 1_000_000_000).to_string()),
            ("end", (args.end * 1_000_000_000).to_string()),
            ("step", "1h".to_string()),
            ("agg", "avg".to_string()),
        ])
        .send()
        .await?;
    let status = response.status();
    let bytes = response.bytes().await?;
    let took = began.elapsed();
    let body: serde_json::Value = serde_json::from_slice(&bytes)?;
    ensure!(status.is_success(), "the own API answered {status}: {body}");
    let series = body["series"].as_array().context("no series")?;
    ensure!(
        series.len() == args.series,
        "the own API: {} series, expected {}",
        series.len(),
        args.series
    );
    let points = series[0]["points"].as_array().map_or(0, Vec::len);
    ensure!(
        points as i64 + 1 >= args.hours,
        "the own API: {points} points of {}",
        args.hours
    );
    Ok(took)
}

/// The counters of [`load`] into VictoriaMetrics as Prometheus text with timestamps
/// (`/api/v1/import/prometheus`), then flushed so that queries see them; returns the
/// samples.
async fn load_victoria_metrics(
    client: &reqwest::Client,
    vm: &str,
    args: &Args,
    start: i64,
) -> Result<usize> {
    let mut body = String::new();
    let mut samples = 0;
    let mut t = start;
    while t <= args.end {
        for s in 0..args.series {
            let value = counter_value(t, start, args.interval, s);
            body.push_str(&format!(
                "bench_requests_total{{instance=\"i{s:03}\",job=\"bench\"}} {value} {}\n",
                t * 1000
            ));
            samples += 1;
        }
        if body.len() > 2_000_000 || t + args.interval > args.end {
            let r = client
                .post(format!("{vm}/api/v1/import/prometheus"))
                .body(std::mem::take(&mut body))
                .send()
                .await?;
            ensure!(
                r.status().is_success(),
                "VictoriaMetrics' import answered {}: {}",
                r.status(),
                r.text().await?
            );
        }
        t += args.interval;
    }
    let r = client
        .get(format!("{vm}/internal/force_flush"))
        .send()
        .await?;
    ensure!(
        r.status().is_success(),
        "force_flush answered {}",
        r.status()
    );
    Ok(samples)
}

/// Series `s`'s counter at `t`: it rises `s + 1` every interval.
fn counter_value(t: i64, start: i64, interval: i64, s: usize) -> i64 {
    (t - start) / interval * (s as i64 + 1)
}

/// Writes every series' counter in bodies of at most 50,000 lines; returns the points.
async fn load(client: &reqwest::Client, url: &str, args: &Args, start: i64) -> Result<usize> {
    let mut body = String::new();
    let mut points = 0;
    let mut t = start;
    while t <= args.end {
        for s in 0..args.series {
            let value = counter_value(t, start, args.interval, s);
            body.push_str(&format!(
                "bench_requests_total,instance=i{s:03},job=bench value={value} {t}\n"
            ));
            points += 1;
        }
        if body.len() > 2_000_000 || t + args.interval > args.end {
            let r = client
                .post(format!("{url}/write?precision=s"))
                .body(std::mem::take(&mut body))
                .send()
                .await?;
            ensure!(
                r.status().as_u16() == 204,
                "write answered {}: {}",
                r.status(),
                r.text().await?
            );
        }
        t += args.interval;
    }
    Ok(points)
}

/// One `query_range` of `query` over the data, checked; the time until its whole body
/// has arrived (parsing it is the client's time, not the server's).
async fn time_query(
    client: &reqwest::Client,
    target: &Target,
    query: &str,
    start: i64,
    args: &Args,
) -> Result<Duration> {
    let steps = ((args.end - start) / args.step + 1) as usize;
    let expected_series = if query.starts_with("sum(") {
        1
    } else {
        args.series
    };
    let began = Instant::now();
    let response = client
        .get(&target.query_range)
        .query(&[
            ("query", query.to_string()),
            ("start", start.to_string()),
            ("end", args.end.to_string()),
            ("step", args.step.to_string()),
        ])
        .send()
        .await?;
    let status = response.status();
    let bytes = response.bytes().await?;
    let took = began.elapsed();
    let name = target.name;
    let body: serde_json::Value = serde_json::from_slice(&bytes)?;
    if !status.is_success() {
        bail!("{name}: {query} answered {status}: {body}");
    }
    let result = body["data"]["result"].as_array().context("no result")?;
    ensure!(
        result.len() == expected_series,
        "{name}: {query}: {} series, expected {expected_series}",
        result.len()
    );
    // The first 5 minutes have no two points in a window only at the very start.
    let values = result[0]["values"].as_array().map_or(0, Vec::len);
    ensure!(
        values + 1 >= steps,
        "{name}: {query}: {values} steps of {steps}"
    );
    Ok(took)
}

fn report(store: &str, query: &str, times: &[Duration]) {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "{store:<16} {query}: median {:.1} ms, p90 {:.1} ms, min {:.1} ms over {} runs",
        at(0.5),
        at(0.9),
        ms[0],
        ms.len()
    );
}
