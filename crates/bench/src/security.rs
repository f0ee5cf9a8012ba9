//! `tickertape-bench security`: what `--auth` and `--tls-cert` cost on ingest, modes
//! alternated.
//!
//! The same bodies go to an in-process server four ways — plain HTTP, HTTP with a token
//! (`Authorization: Bearer`, checked against the store's tokens on every request), HTTPS,
//! and HTTPS with a token — each on a fresh store, the four modes alternated round after
//! round (the order rotates, so none always runs first on a cold machine). Reported: each
//! mode's median points/s and its ratio to plain HTTP's median.
//!
//! The certificates are made with the `openssl` CLI (a CA and a leaf for 127.0.0.1, as the
//! server's TLS tests make them) in a temporary directory, unless `--tls-dir` holds
//! `ca.pem`, `cert.pem` and `key.pem`.

use crate::dataset::{Dataset, Shape, MAX_HOSTS, MAX_HOURS};
use crate::ingest::group;
use crate::send::{send_streams, BodyKind, Connect};
use crate::store;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use tickertape_backend::TokenStore;
use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};
use tickertape_reference::MemoryTokens;
use tickertape_server::auth::Authenticator;
use tickertape_server::listen::Tls;
use tickertape_server::ServerConfig;

const MAX_ROUNDS: usize = 20;
const TOKEN: &str = "tt_bench_0123456789abcdef0123456789abcdef01234567";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hosts in the generated dataset (10 fields each, one row every 10 s).
    #[arg(long, default_value_t = 100)]
    pub hosts: usize,
    /// Hours of data to generate.
    #[arg(long, default_value_t = 24)]
    pub hours: u64,
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// Concurrent HTTP clients, one keep-alive connection each.
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Lines per request body.
    #[arg(long, default_value_t = 5_000)]
    pub batch_lines: usize,
    /// Rounds; each runs every mode once.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// A directory with ca.pem, cert.pem and key.pem to use instead of making them.
    #[arg(long)]
    pub tls_dir: Option<PathBuf>,
    /// Also print the results as one JSON object on standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Plain,
    Token,
    Tls,
    TlsToken,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Plain, Mode::Token, Mode::Tls, Mode::TlsToken];

    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "http",
            Mode::Token => "http + token",
            Mode::Tls => "https",
            Mode::TlsToken => "https + token",
        }
    }

    fn tls(self) -> bool {
        matches!(self, Mode::Tls | Mode::TlsToken)
    }

    fn token(self) -> bool {
        matches!(self, Mode::Token | Mode::TlsToken)
    }
}

pub async fn run(args: Args) -> Result<()> {
    if !(1..=MAX_ROUNDS).contains(&args.rounds) {
        bail!("--rounds must be 1 to {MAX_ROUNDS}");
    }
    if !(1..=MAX_HOSTS).contains(&args.hosts) || !(1..=MAX_HOURS).contains(&args.hours) {
        bail!("--hosts must be 1 to {MAX_HOSTS} and --hours 1 to {MAX_HOURS}");
    }
    if !(1..=256).contains(&args.clients) || args.batch_lines == 0 {
        bail!("--clients must be 1 to 256 and --batch-lines at least 1");
    }
    let made = match &args.tls_dir {
        Some(_) => None,
        None => Some(make_certificates()?),
    };
    let tls_dir = args
        .tls_dir
        .clone()
        .or_else(|| made.as_ref().map(|d| d.path().to_path_buf()))
        .context("no certificate directory")?;
    let ca = std::fs::read(tls_dir.join("ca.pem")).context("reading ca.pem")?;
    let ca = reqwest::Certificate::from_pem(&ca).context("ca.pem is not a PEM certificate")?;
    let shape = Shape {
        hosts: args.hosts,
        hours: args.hours,
        seed: args.seed,
        round: None,
    };
    let (batch_lines, clients) = (args.batch_lines, args.clients);
    let dataset =
        tokio::task::spawn_blocking(move || Dataset::generate(shape, batch_lines, clients))
            .await
            .context("preparing the dataset")??;
    let dataset = Arc::new(dataset);
    eprintln!(
        "dataset: {} points in {} bodies, {} clients, {} rounds of {} modes",
        group(dataset.points),
        dataset.bodies(),
        args.clients,
        args.rounds,
        Mode::ALL.len()
    );
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); Mode::ALL.len()];
    for round in 0..args.rounds {
        for k in 0..Mode::ALL.len() {
            let index = (round + k) % Mode::ALL.len();
            let mode = Mode::ALL[index];
            let rate = ingest_once(mode, &dataset, &tls_dir, &ca).await?;
            eprintln!(
                "round {} {:<14} {} points/s",
                round + 1,
                mode.name(),
                group(rate as u64)
            );
            rates[index].push(rate);
        }
    }
    let medians: Vec<f64> = rates.iter().map(|r| median(r)).collect();
    let mut summary = Vec::new();
    for (mode, median) in Mode::ALL.iter().zip(&medians) {
        let ratio = median / medians[0];
        eprintln!(
            "{:<14} median {:>12} points/s = {:.3} × plain http",
            mode.name(),
            group(*median as u64),
            ratio
        );
        summary.push(serde_json::json!({
            "mode": mode.name(), "median_points_per_second": median, "ratio_to_plain": ratio,
            "runs": rates[Mode::ALL.iter().position(|m| m == mode).unwrap_or(0)],
        }));
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "points": dataset.points, "rounds": args.rounds, "modes": summary })
        );
    }
    Ok(())
}

/// One ingest of the whole dataset in `mode` into a fresh store: points/s.
async fn ingest_once(
    mode: Mode,
    dataset: &Arc<Dataset>,
    tls_dir: &Path,
    ca: &reqwest::Certificate,
) -> Result<f64> {
    let dir = tempfile::Builder::new()
        .prefix("tickertape-bench-security-")
        .tempdir()?;
    let engine = store::open_engine(dir.path(), None).await?;
    let mut config = ServerConfig::default();
    let mut connect = Connect::default();
    if mode.token() {
        let tokens = Arc::new(MemoryTokens::default());
        tokens
            .add_token(TokenRecord {
                name: "bench".into(),
                scopes: Scopes::new([Scope::Write])?,
                hash: TokenHash::of(TOKEN),
                created: 0,
            })
            .await?;
        config.auth = Some(Arc::new(Authenticator::load(tokens).await?));
        connect.token = Some(TOKEN.to_string());
    }
    if mode.tls() {
        config.tls = Some(Tls::from_pem_files(
            &tls_dir.join("cert.pem"),
            &tls_dir.join("key.pem"),
        )?);
        connect.ca = Some(ca.clone());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let scheme = if mode.tls() { "https" } else { "http" };
    let url = format!("{scheme}://{}/write?precision=ns", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(tickertape_server::serve(listener, engine, config, async {
        let _ = stopped.await;
    }));
    let streams = Arc::new(dataset.streams.clone());
    let outcome = send_streams(
        &url,
        streams,
        dataset.points,
        BodyKind::LineProtocol,
        &connect,
    )
    .await?;
    let _ = stop.send(());
    server.await.context("server task")?.context("server")?;
    if outcome.failed > 0 {
        bail!(
            "{}: {} of {} bodies were not answered 204: {:?}",
            mode.name(),
            outcome.failed,
            outcome.bodies,
            outcome.failures
        );
    }
    dir.close().context("removing the store")?;
    Ok(outcome.points_per_second)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A CA and a leaf certificate for 127.0.0.1 it signed, in a temporary directory.
fn make_certificates() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )?;
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    let steps = [
        format!("req -x509 -new {ec} -keyout ca.key -out ca.pem -days 2 -subj /CN=tt-bench-CA"),
        format!("req -new {ec} -keyout key.pem -out server.csr -subj /CN=127.0.0.1"),
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 2 \
         -extfile ext.cnf -out cert.pem"
            .to_string(),
    ];
    for step in steps {
        let args: Vec<&str> = step.split_whitespace().collect();
        let output = Command::new("openssl")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .context("the security benchmark makes its certificates with the openssl CLI (or give --tls-dir)")?;
        if !output.status.success() {
            bail!(
                "openssl {step}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
