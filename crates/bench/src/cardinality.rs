//! `tickertape-bench cardinality`: the many-series load — many new series of one point each —
//! against the release server in its own process, so that its resident memory is the
//! server's alone.
//!
//! Lines are `card,host=h0000000,dc=d0 v=0.5 T`, host `i` in data centre `i % 10`, one
//! point each at `T0 + i` ns, sent in bodies of `--batch-lines` by one keep-alive client.
//! Measured: new series registered per second (every body must be answered 204), the
//! server's resident memory after the load (`VmRSS`) per series, the median latency of a
//! query selecting one series by tag and of `agg=sum` over the series of one data centre,
//! the dashboard pickers' listings (`LISTINGS`), and the time from a restart to `/health`
//! answering.
//!
//! The server's store is a fresh directory, or with `--mongodb URI` an empty MongoDB
//! database (`serve --store URI`), dropped after the run unless `--keep`.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Upper bounds, so a typo cannot start a runaway run.
const MAX_SERIES: usize = 10_000_000;
const MAX_QUERY_RUNS: usize = 1_000;
/// First point's time: 2016-01-01T00:00:00Z.
const T0: i64 = 1_451_606_400_000_000_000;
/// How long the server may take to answer `/health` after a start.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one request may take (a body of the load, one query).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// New series to write, one point each.
    #[arg(long, default_value_t = 1_000_000)]
    pub series: usize,
    /// Lines per request body.
    #[arg(long, default_value_t = 10_000)]
    pub batch_lines: usize,
    /// The `tickertape` binary to run. Default: the one beside this executable
    /// (`cargo build --release` builds both into target/release).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Store directory (must not exist or be empty); default a fresh temporary one.
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Run the server on MongoDB instead of a directory: `mongodb://HOST:PORT/DB`. The
    /// database must be empty (or absent); it is dropped after the run unless `--keep`.
    #[arg(long, conflicts_with = "store")]
    pub mongodb: Option<String>,
    /// Keep the store (temporary directory or MongoDB database) after the run.
    #[arg(long)]
    pub keep: bool,
    /// Runs of the one-series query; the `agg=sum` query runs a fifth as often (at least 3).
    #[arg(long, default_value_t = 20)]
    pub query_runs: usize,
    /// Loopback port for the server.
    #[arg(long, default_value_t = 18_190)]
    pub port: u16,
    /// Seconds the load may take before the run stops (a slow store, e.g. a test server).
    #[arg(long, default_value_t = 3_600)]
    pub time_limit: u64,
}

pub async fn run(args: Args) -> Result<()> {
    if args.series == 0 || args.series > MAX_SERIES {
        bail!("--series must be 1..={MAX_SERIES}");
    }
    if args.batch_lines == 0 || args.query_runs == 0 || args.query_runs > MAX_QUERY_RUNS {
        bail!("--batch-lines must be positive and --query-runs 1..={MAX_QUERY_RUNS}");
    }
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?.with_file_name("tickertape"),
    };
    let temp = tempfile::tempdir()?;
    if let Some(uri) = &args.mongodb {
        refuse_unless_empty(uri).await?;
    }
    let store: OsString = match &args.mongodb {
        Some(uri) => uri.into(),
        None => {
            let dir = args
                .store
                .clone()
                .unwrap_or_else(|| temp.path().join("store"));
            if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
                bail!("{} is not empty", dir.display());
            }
            dir.into()
        }
    };
    let base = format!("http://127.0.0.1:{}", args.port);
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .build()?;
    let mut server = Server::start(&binary, store, args.port, &client, &base).await?;
    let outcome = measure(&args, &client, &base, &mut server).await;
    server.stop();
    match &args.mongodb {
        Some(uri) if args.keep => {
            println!(
                "store kept in MongoDB database {}",
                connect(uri).await?.name()
            )
        }
        // A client of its own: the server may have closed an earlier one's idle connections
        // during a long load.
        Some(uri) => connect(uri)
            .await?
            .drop()
            .await
            .context("drop the MongoDB database")?,
        // A --store directory is never removed; the temporary one only without --keep.
        None if args.keep && args.store.is_none() => {
            println!("store kept in {}", temp.keep().display())
        }
        None => {}
    }
    outcome
}

/// Refuses a MongoDB database that holds any collection: the run must start from an empty
/// store, and drops it afterwards.
async fn refuse_unless_empty(uri: &str) -> Result<()> {
    let db = connect(uri).await?;
    let collections = db
        .list_collection_names()
        .await
        .with_context(|| format!("list the collections of {}", db.name()))?;
    if !collections.is_empty() {
        bail!("MongoDB database {} is not empty", db.name());
    }
    Ok(())
}

/// The database `uri` names (tickertape's default when it names none), on a new client.
async fn connect(uri: &str) -> Result<mongodb::Database> {
    let client = mongodb::Client::with_uri_str(uri)
        .await
        .with_context(|| format!("MongoDB URI {uri}"))?;
    Ok(client
        .default_database()
        .unwrap_or_else(|| client.database(tickertape_mongodb::DEFAULT_DATABASE)))
}

async fn measure(
    args: &Args,
    client: &reqwest::Client,
    base: &str,
    server: &mut Server,
) -> Result<()> {
    let bodies = bodies(args.series, args.batch_lines);
    let bar = ProgressBar::new(args.series as u64).with_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} series ({per_sec}, eta {eta})",
    )?);
    let started = Instant::now();
    let limit = Duration::from_secs(args.time_limit);
    for (lines, body) in bodies {
        if started.elapsed() > limit {
            bail!(
                "the load took more than --time-limit {}s ({} of {} series written)",
                args.time_limit,
                bar.position(),
                args.series
            );
        }
        let response = client
            .post(format!("{base}/write?precision=ns"))
            .body(body)
            .send()
            .await?;
        let status = response.status();
        if status != reqwest::StatusCode::NO_CONTENT {
            bail!("a body was answered {status}: {}", response.text().await?);
        }
        bar.inc(lines as u64);
    }
    let load = started.elapsed();
    bar.finish_and_clear();
    let rss = server.resident_bytes()?;
    let host = format!("tag=host:h{:07}", args.series * 476_190 / 1_000_000);
    let one = median_ms(args.query_runs, || query(client, base, &host)).await?;
    let dc_runs = (args.query_runs / 5).max(3);
    let sum = median_ms(dc_runs, || query(client, base, "tag=dc:d3&agg=sum")).await?;
    let mut listings = Vec::new();
    for path in LISTINGS {
        let ms = median_ms(dc_runs, || listing(client, base, path)).await?;
        listings.push((path, ms));
    }
    server.stop();
    let restart = server.restart(client, base).await?;
    println!(
        "series {}  bodies of {} lines, 1 client",
        args.series, args.batch_lines
    );
    let store = if args.mongodb.is_some() {
        "MongoDB (memory: the tickertape server's alone)"
    } else {
        "a directory"
    };
    println!("store        {store}");
    println!(
        "registered   {:.0} new series/s ({:.2} s)",
        args.series as f64 / load.as_secs_f64(),
        load.as_secs_f64()
    );
    println!(
        "memory       {} MB resident, {:.0} bytes per series",
        rss / 1_000_000,
        rss as f64 / args.series as f64
    );
    println!(
        "query        one series by tag: {one:.1} ms median of {}",
        args.query_runs
    );
    println!(
        "             agg=sum over dc=d3 (a tenth of the series): {sum:.1} ms median of {dc_runs}"
    );
    for (path, ms) in listings {
        println!("listing      {path}: {ms:.1} ms median of {dc_runs}");
    }
    println!(
        "restart      {:.2} s until /health answers",
        restart.as_secs_f64()
    );
    Ok(())
}

/// The load cut into bodies: `(lines, body)`.
fn bodies(series: usize, batch: usize) -> Vec<(usize, String)> {
    (0..series)
        .step_by(batch)
        .map(|first| {
            let last = (first + batch).min(series);
            let mut body = String::with_capacity((last - first) * 48);
            for i in first..last {
                let time = T0 + i as i64;
                body.push_str(&format!(
                    "card,host=h{i:07},dc=d{} v={i}.5 {time}\n",
                    i % 10
                ));
            }
            (last - first, body)
        })
        .collect()
}

/// The dashboard pickers' requests at this many series: a key with one value per series
/// (with and without a typed prefix), the keys, the measurements.
const LISTINGS: [&str; 4] = [
    "/api/v1/tag_values?measurement=card&key=host&prefix=h0476&limit=20",
    "/api/v1/tag_values?measurement=card&key=host&limit=100",
    "/api/v1/tag_keys?measurement=card",
    "/api/v1/measurements?prefix=ca",
];

async fn listing(client: &reqwest::Client, base: &str, path: &str) -> Result<()> {
    let response = client.get(format!("{base}{path}")).send().await?;
    let status = response.status();
    let text = response.text().await?;
    if !status.is_success() || !text.contains("\"truncated\"") {
        bail!(
            "{path} answered {status}: {}",
            text.chars().take(300).collect::<String>()
        );
    }
    Ok(())
}

async fn query(client: &reqwest::Client, base: &str, selector: &str) -> Result<()> {
    let url = format!(
        "{base}/api/v1/query?measurement=card&{selector}&start={T0}&end={}",
        T0 + MAX_SERIES as i64
    );
    let response = client.get(url).send().await?;
    let status = response.status();
    let text = response.text().await?;
    if !status.is_success() || !text.contains("\"series\"") {
        bail!(
            "query {selector} answered {status}: {}",
            text.chars().take(300).collect::<String>()
        );
    }
    Ok(())
}

async fn median_ms<F, Fut>(runs: usize, mut run: F) -> Result<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        run().await?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The server process this run started; stopped only by its own PID.
struct Server {
    child: Option<Child>,
    binary: PathBuf,
    /// `--store`: a directory or a MongoDB URI.
    store: OsString,
    port: u16,
}

impl Server {
    async fn start(
        binary: &Path,
        store: OsString,
        port: u16,
        client: &reqwest::Client,
        base: &str,
    ) -> Result<Self> {
        let mut server = Self {
            child: None,
            binary: binary.to_path_buf(),
            store,
            port,
        };
        server.spawn()?;
        server.wait_healthy(client, base).await?;
        Ok(server)
    }

    fn spawn(&mut self) -> Result<()> {
        // A server already on the port would answer `/health` for ours, which then exits
        // unseen, and the load would go to the other one.
        std::net::TcpListener::bind(("127.0.0.1", self.port))
            .with_context(|| format!("port {} is in use; choose another with --port", self.port))?;
        let child = Command::new(&self.binary)
            .arg("serve")
            .arg("--store")
            .arg(&self.store)
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", self.binary.display()))?;
        self.child = Some(child);
        Ok(())
    }

    async fn wait_healthy(&mut self, client: &reqwest::Client, base: &str) -> Result<Duration> {
        let started = Instant::now();
        while started.elapsed() < HEALTH_TIMEOUT {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    bail!("the server exited ({status}) before answering /health");
                }
            }
            if let Ok(r) = client.get(format!("{base}/health")).send().await {
                if r.status().is_success() {
                    return Ok(started.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        bail!("the server did not answer /health within {HEALTH_TIMEOUT:?}")
    }

    /// Starts the stopped server again; the time until `/health` answers.
    async fn restart(&mut self, client: &reqwest::Client, base: &str) -> Result<Duration> {
        self.spawn()?;
        self.wait_healthy(client, base).await
    }

    /// `VmRSS` of the server process, from /proc.
    fn resident_bytes(&self) -> Result<u64> {
        let pid = self.child.as_ref().context("server not running")?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .context("no VmRSS in /proc status")?;
        Ok(kb * 1024)
    }

    /// Stops the server gracefully (SIGTERM to its PID), then waits for it.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_cover_every_series_once() {
        let bodies = bodies(25, 10);
        assert_eq!(
            bodies.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            vec![&10, &10, &5]
        );
        let text: String = bodies.into_iter().map(|(_, b)| b).collect();
        assert_eq!(text.lines().count(), 25);
        assert!(text.starts_with("card,host=h0000000,dc=d0 v=0.5 1451606400000000000\n"));
        assert!(text.contains("card,host=h0000024,dc=d4 v=24.5 1451606400000000024\n"));
    }
}
