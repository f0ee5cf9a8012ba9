//! `tickertape-bench ingest`: the devops cpu dataset through `POST /write` with concurrent
//! keep-alive clients; points/s, bytes on disk, the four reference queries, and a
//! bit-for-bit read-back.
//!
//! The whole dataset is in memory, cut into bodies, before the clock starts; only sending
//! the bodies and the server's answers are timed. With `--target-url` the same client
//! measures another store (VictoriaMetrics, InfluxDB 1.x) on the same data.

use crate::dataset::{Dataset, Shape, MAX_HOSTS, MAX_HOURS};
use crate::disk::{self, DiskUsage};
use crate::queries::{self, Lossless, QueryOutcome};
use crate::send::{send_streams, BodyKind, Connect};
use crate::store;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tickertape_core::time::format_rfc3339;
use tickertape_server::ServerConfig;

/// Upper bounds on the knobs, so a typo cannot start a runaway run.
const MAX_CLIENTS: usize = 256;
const MAX_QUERY_RUNS: usize = 1_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hosts in the generated dataset (10 fields each, one row every 10 s).
    #[arg(long, default_value_t = 100)]
    pub hosts: usize,
    /// Hours of data to generate, from 2016-01-01T00:00:00Z.
    #[arg(long, default_value_t = 24)]
    pub hours: u64,
    /// Round generated values to N decimals (the `--round 2` variant of docs/benchmarks-history.md).
    #[arg(long, value_name = "N")]
    pub round: Option<u32>,
    /// Seed of the generated dataset.
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// Send this file instead of generating (line protocol of the same shape, e.g. from the
    /// TSBS-like gen.py); the way to give every store compared the very same bytes.
    /// --hosts/--hours/--round/--seed are then ignored.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Concurrent HTTP clients, one keep-alive connection each. Hosts are dealt round-robin
    /// to the clients and each client sends its hosts' lines in file order (TSBS's
    /// --hash-workers), so no series' points overtake each other: tickertape refuses
    /// out-of-order points, and a shared queue of time-major bodies would race.
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Lines per request body.
    #[arg(long, default_value_t = 5_000)]
    pub batch_lines: usize,
    /// Store directory for the in-process server; must not exist or be empty.
    /// Default: a fresh temporary directory, removed at the end unless --keep.
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Per-measurement schema of the in-process store (TOML, as `serve --config`); the
    /// default keeps the 1h and 1d rollups of a value-segment measurement at write time.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Keep the temporary store (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Send to another server's write URL instead of an in-process tickertape, e.g.
    /// http://127.0.0.1:8428/write (VictoriaMetrics) or http://127.0.0.1:8086/write?db=bench
    /// (InfluxDB 1.x). A URL without a path gets `/write`. Loopback addresses only. Only
    /// the ingest (and, with --target-data-dir, its bytes on disk) is measured.
    #[arg(long, value_name = "URL")]
    pub target_url: Option<String>,
    /// The target's data directory, measured before and after the ingest.
    #[arg(long, requires = "target_url", value_name = "DIR")]
    pub target_data_dir: Option<PathBuf>,
    /// Requested (GET) after the ingest so the target writes its buffers out, e.g.
    /// http://127.0.0.1:8428/internal/force_flush for VictoriaMetrics.
    #[arg(long, requires = "target_url", value_name = "URL")]
    pub target_flush_url: Option<String>,
    /// Seconds to wait after the flush before measuring the target's data directory;
    /// the directory is also measured every 5 s meanwhile and each size printed.
    #[arg(long, requires = "target_data_dir", default_value_t = 0)]
    pub settle_secs: u64,
    /// Measured runs of each reference query (the median is reported).
    #[arg(long, default_value_t = 21)]
    pub query_runs: usize,
    /// Abort the whole run after this many seconds.
    #[arg(long, default_value_t = 1_800)]
    pub timeout_secs: u64,
    /// Also print the results as one JSON object on standard output.
    #[arg(long)]
    pub json: bool,
}

/// What one ingest measured.
#[derive(Debug, serde::Serialize)]
pub(crate) struct IngestOutcome {
    pub(crate) seconds: f64,
    pub(crate) points_per_second: f64,
    pub(crate) bodies: usize,
    /// Bodies not answered 204 (or not answered at all).
    pub(crate) failed: usize,
    pub(crate) failures: Vec<String>,
}

pub async fn run(args: Args) -> Result<()> {
    validate(&args)?;
    time_bounded(args.timeout_secs, run_bounded(args)).await
}

/// Runs `work`, aborting the whole benchmark after `--timeout-secs`.
pub(crate) async fn time_bounded(
    timeout_secs: u64,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let limit = Duration::from_secs(timeout_secs);
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result,
        Err(_) => bail!("benchmark aborted after --timeout-secs {}", limit.as_secs()),
    }
}

fn validate(args: &Args) -> Result<()> {
    if !(1..=MAX_CLIENTS).contains(&args.clients) {
        bail!("--clients must be 1 to {MAX_CLIENTS}");
    }
    if args.batch_lines == 0 {
        bail!("--batch-lines must be at least 1");
    }
    if !(1..=MAX_HOSTS).contains(&args.hosts) || !(1..=MAX_HOURS).contains(&args.hours) {
        bail!("--hosts must be 1 to {MAX_HOSTS} and --hours 1 to {MAX_HOURS}");
    }
    if args.round.is_some_and(|n| n > 17) {
        bail!("--round takes 0 to 17 decimals");
    }
    if !(1..=MAX_QUERY_RUNS).contains(&args.query_runs) {
        bail!("--query-runs must be 1 to {MAX_QUERY_RUNS}");
    }
    for url in [&args.target_url, &args.target_flush_url]
        .into_iter()
        .flatten()
    {
        require_loopback(url)?;
    }
    Ok(())
}

/// The benchmark talks to this machine only.
fn require_loopback(url: &str) -> Result<()> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("invalid URL {url:?}"))?;
    let host = parsed
        .host_str()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback || parsed.scheme() != "http" {
        bail!("{url}: the benchmark only talks to http:// on a loopback address (127.0.0.1, ::1, localhost)");
    }
    Ok(())
}

async fn run_bounded(args: Args) -> Result<()> {
    let started = Instant::now();
    let dataset = prepare(&args).await?;
    eprintln!(
        "dataset: {} ({} lines, {} points, {} hosts × {} fields, {} .. {}, {} MB in {} bodies of ≤{} lines, hosts dealt to {} clients; prepared in {:.1} s, not timed)",
        dataset.source,
        group(dataset.lines),
        group(dataset.points),
        dataset.hosts.len(),
        dataset.fields.len(),
        format_rfc3339(dataset.first_time),
        format_rfc3339(dataset.last_time),
        dataset.bytes / 1_000_000,
        dataset.bodies(),
        args.batch_lines,
        args.clients,
        started.elapsed().as_secs_f64()
    );
    match args.target_url.clone() {
        Some(url) => bench_target(&args, &dataset, &url).await,
        None => bench_tickertape(&args, &dataset).await,
    }
}

pub(crate) async fn prepare(args: &Args) -> Result<Arc<Dataset>> {
    let (file, batch_lines, clients) = (args.file.clone(), args.batch_lines, args.clients);
    let shape = Shape {
        hosts: args.hosts,
        hours: args.hours,
        seed: args.seed,
        round: args.round,
    };
    let dataset = tokio::task::spawn_blocking(move || match file {
        Some(path) => Dataset::load(&path, batch_lines, clients),
        None => Dataset::generate(shape, batch_lines, clients),
    })
    .await
    .context("preparing the dataset")??;
    Ok(Arc::new(dataset))
}

/// Another store at `--target-url`: ingest and bytes on disk.
async fn bench_target(args: &Args, dataset: &Arc<Dataset>, url: &str) -> Result<()> {
    let url = match reqwest::Url::parse(url)?.path() {
        "" | "/" => format!("{}/write", url.trim_end_matches('/')),
        _ => url.to_string(),
    };
    let before = match &args.target_data_dir {
        Some(dir) => Some(disk::usage(dir)?),
        None => None,
    };
    let ingest = ingest(&url, dataset).await?;
    print_ingest(&url, dataset, &ingest, args.clients);
    let mut after = None;
    if let Some(flush) = &args.target_flush_url {
        let response = reqwest::get(flush)
            .await
            .with_context(|| format!("GET {flush}"))?;
        eprintln!("flush: GET {flush} → {}", response.status());
    }
    if let Some(dir) = &args.target_data_dir {
        after = Some(settle(dir, args.settle_secs, dataset.points).await?);
    }
    let bytes = match (before, after) {
        (Some(b), Some(a)) => {
            let grown = a.allocated.saturating_sub(b.allocated);
            eprintln!(
                "disk: {} bytes allocated in {} after, {} before: {} bytes for the dataset = {:.2} bytes/point",
                group(a.allocated),
                args.target_data_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default(),
                group(b.allocated),
                group(grown),
                grown as f64 / dataset.points as f64
            );
            Some(grown)
        }
        _ => None,
    };
    if args.json {
        let summary = serde_json::json!({
            "target": url,
            "source": dataset.source,
            "points": dataset.points,
            "clients": args.clients,
            "batch_lines": args.batch_lines,
            "ingest": ingest,
            "bytes_on_disk": bytes,
            "bytes_per_point": bytes.map(|b| b as f64 / dataset.points as f64),
        });
        println!("{summary}");
    }
    if ingest.failed > 0 {
        bail!(
            "{} of {} bodies were not answered 204",
            ingest.failed,
            ingest.bodies
        );
    }
    Ok(())
}

/// Waits `secs` (sampling the size every 5 s), then measures once more.
async fn settle(dir: &std::path::Path, secs: u64, points: u64) -> Result<DiskUsage> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    for _ in 0..secs.div_ceil(5) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(left.min(Duration::from_secs(5))).await;
        let u = disk::usage(dir)?;
        eprintln!(
            "  settling: {} bytes allocated ({:.2} bytes/point)",
            group(u.allocated),
            u.allocated as f64 / points as f64
        );
    }
    disk::usage(dir)
}

/// tickertape in this process, on a fresh store.
async fn bench_tickertape(args: &Args, dataset: &Arc<Dataset>) -> Result<()> {
    let (dir, temp) = match &args.store {
        Some(dir) => {
            if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
                bail!(
                    "--store {} is not empty; the benchmark needs a fresh store",
                    dir.display()
                );
            }
            (dir.clone(), None)
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("tickertape-bench-")
                .tempdir()?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    let engine = store::open_engine(&dir, args.config.as_deref()).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(tickertape_server::serve(
        listener,
        engine.clone(),
        ServerConfig::default(),
        async {
            let _ = stopped.await;
        },
    ));

    let url = format!("{base}/write?precision=ns");
    let ingest = ingest(&url, dataset).await?;
    print_ingest(&url, dataset, &ingest, args.clients);

    let usage = disk::usage(&dir)?;
    let stats = engine.store_stats().await?;
    eprintln!(
        "disk: {} bytes allocated in {} ({:.2} bytes/point; {} bytes apparent); stats(): {} bytes ({:.2} bytes/point), {} segments, {} series",
        group(usage.allocated),
        dir.display(),
        usage.allocated as f64 / dataset.points as f64,
        group(usage.apparent),
        group(stats.bytes),
        stats.bytes as f64 / dataset.points as f64,
        group(stats.segments),
        group(stats.series)
    );

    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let check_hosts = queries::reference_hosts(dataset);
    let reference = {
        let (d, hosts) = (dataset.clone(), check_hosts.clone());
        tokio::task::spawn_blocking(move || d.reference(&hosts)).await??
    };
    let outcomes =
        queries::run_reference_queries(&client, &base, dataset, &reference, args.query_runs)
            .await?;
    for q in &outcomes {
        print_query(q);
    }
    let lossless = queries::check_lossless(&client, &base, dataset, &reference).await?;
    print_lossless(&lossless, &check_hosts);

    let _ = stop.send(());
    server.await.context("server task")?.context("server")?;
    drop(engine);
    match temp {
        Some(temp) if args.keep => eprintln!("store kept at {}", temp.keep().display()),
        Some(temp) => temp.close().context("removing the temporary store")?,
        None => eprintln!("store at {}", dir.display()),
    }

    if args.json {
        let summary = serde_json::json!({
            "target": "tickertape (in-process)",
            "source": dataset.source,
            "points": dataset.points,
            "clients": args.clients,
            "batch_lines": args.batch_lines,
            "ingest": ingest,
            "bytes_allocated": usage.allocated,
            "bytes_per_point": usage.allocated as f64 / dataset.points as f64,
            "stats_bytes": stats.bytes,
            "segments": stats.segments,
            "series": stats.series,
            "queries": outcomes,
            "lossless": lossless,
        });
        println!("{summary}");
    }
    let mut problems = Vec::new();
    if ingest.failed > 0 {
        problems.push(format!(
            "{} of {} bodies were not answered 204",
            ingest.failed, ingest.bodies
        ));
    }
    for q in outcomes.iter().filter(|q| !q.problems.is_empty()) {
        problems.push(format!(
            "{} answered wrongly: {}",
            q.name,
            q.problems.join("; ")
        ));
    }
    if !lossless.ok() {
        problems.push(format!(
            "{} values did not come back bit for bit",
            lossless.mismatches
        ));
    }
    if !problems.is_empty() {
        bail!("benchmark found problems:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

/// Sends every stream of bodies to `url`, one client per stream, concurrently.
async fn ingest(url: &str, dataset: &Dataset) -> Result<IngestOutcome> {
    let streams = Arc::new(dataset.streams.clone());
    send_streams(
        url,
        streams,
        dataset.points,
        BodyKind::LineProtocol,
        &Connect::default(),
    )
    .await
}

fn print_ingest(url: &str, dataset: &Dataset, ingest: &IngestOutcome, clients: usize) {
    eprintln!(
        "ingest: {} points in {:.2} s = {} points/s ({} clients, {} bodies to {url}; {})",
        group(dataset.points),
        ingest.seconds,
        group(ingest.points_per_second.round() as u64),
        clients,
        ingest.bodies,
        if ingest.failed == 0 {
            "all answered 204".to_string()
        } else {
            format!("{} NOT answered 204", ingest.failed)
        }
    );
    for f in &ingest.failures {
        eprintln!("  failed {f}");
    }
}

fn print_query(q: &QueryOutcome) {
    eprintln!(
        "{} {:<55} median {:>8.2} ms (min {:.2}, max {:.2}, {} runs)  {} series, {} points{}",
        q.name,
        q.what,
        q.median_ms,
        q.min_ms,
        q.max_ms,
        q.runs,
        q.series,
        q.points,
        if q.problems.is_empty() {
            format!(", as expected; {} values checked exactly", q.values_checked)
        } else {
            format!(", WRONG: {}", q.problems.join("; "))
        }
    );
}

fn print_lossless(l: &Lossless, hosts: &[String]) {
    if l.ok() {
        eprintln!(
            "lossless: yes ({} points of {} series of {} read back bit for bit)",
            group(l.points as u64),
            l.series,
            hosts.join(", ")
        );
    } else {
        eprintln!(
            "lossless: NO ({} mismatches among {} points)",
            l.mismatches, l.points
        );
        for m in &l.first_mismatches {
            eprintln!("  {m}");
        }
    }
}

/// 8640000 → "8,640,000".
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(8_640_000), "8,640,000");
    }

    #[test]
    fn only_loopback_targets() {
        assert!(require_loopback("http://127.0.0.1:8428/write").is_ok());
        assert!(require_loopback("http://localhost:8086/write?db=bench").is_ok());
        assert!(require_loopback("http://[::1]:8086/write").is_ok());
        assert!(require_loopback("http://10.0.0.1:8428/write").is_err());
        assert!(require_loopback("http://example.com/write").is_err());
    }
}
