//! `tickertape import FILE…`: line-protocol files into a store, or to a server's `/write`,
//! in batches, with a progress bar and a summary. Refused lines are reported as FILE:LINE.

use crate::remote::RemoteArgs;
use crate::store::{DatabaseArg, StoreArgs};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use tickertape_core::time::Precision;
use tickertape_engine::{Engine, LineError, WriteMode};

/// Refused lines printed in full; the rest are only counted.
const MAX_PRINTED_ERRORS: usize = 20;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Line-protocol files (`-` for standard input).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub database: DatabaseArg,
    /// Unit of the timestamps in the files: ns, us, ms or s.
    #[arg(long, default_value = "ns")]
    pub precision: String,
    /// Lines per batch (one write per batch).
    #[arg(long, default_value_t = 5_000)]
    pub batch_lines: usize,
    /// `set` stores the values; `inc` adds each to the slot of its time in a counter
    /// measurement (as `POST /write?mode=inc`).
    #[arg(long, value_enum, default_value_t = Mode::Set)]
    pub mode: Mode,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Set,
    Inc,
}

impl Mode {
    fn write_mode(self) -> WriteMode {
        match self {
            Mode::Set => WriteMode::Set,
            Mode::Inc => WriteMode::Increment,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Set => "set",
            Mode::Inc => "inc",
        }
    }
}

enum Sink {
    Store(Engine, WriteMode),
    Server {
        client: reqwest::Client,
        url: String,
    },
}

#[derive(Default)]
struct Totals {
    accepted: usize,
    rejected: usize,
    printed: usize,
}

pub async fn run(args: Args) -> Result<()> {
    let precision = Precision::parse(&args.precision)?;
    if args.batch_lines == 0 {
        bail!("--batch-lines must be at least 1");
    }
    let sink = match args.remote.remote()? {
        Some(remote) => Sink::Server {
            url: remote.endpoint(&format!(
                "/write?precision={}&mode={}{}",
                args.precision,
                args.mode.name(),
                args.database.url_suffix()
            )),
            client: remote.client,
        },
        None => Sink::Store(
            args.database.engine(&args.store).await?,
            args.mode.write_mode(),
        ),
    };
    let mut totals = Totals::default();
    for file in &args.files {
        import_file(&sink, file, precision, args.batch_lines, &mut totals).await?;
    }
    eprintln!(
        "imported {} lines, rejected {} lines{}",
        totals.accepted,
        totals.rejected,
        if totals.rejected > totals.printed {
            format!(" ({} not shown)", totals.rejected - totals.printed)
        } else {
            String::new()
        }
    );
    if totals.rejected > 0 {
        bail!("{} lines were rejected", totals.rejected);
    }
    Ok(())
}

async fn import_file(
    sink: &Sink,
    file: &PathBuf,
    precision: Precision,
    batch_lines: usize,
    totals: &mut Totals,
) -> Result<()> {
    let name = file.display().to_string();
    let (reader, size): (Box<dyn BufRead>, u64) = if name == "-" {
        (Box::new(BufReader::new(std::io::stdin())), 0)
    } else {
        let f = std::fs::File::open(file).with_context(|| format!("cannot open {name}"))?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(BufReader::with_capacity(1 << 20, f)), size)
    };
    let bar = ProgressBar::new(size);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(name.clone());
    let mut batch = String::new();
    let mut first_line = 1usize;
    let mut lines_in_batch = 0usize;
    for line in reader.lines() {
        let line = line.with_context(|| {
            format!(
                "{name}: read failed near line {}",
                first_line + lines_in_batch
            )
        })?;
        batch.push_str(&line);
        batch.push('\n');
        lines_in_batch += 1;
        if lines_in_batch == batch_lines {
            bar.inc(batch.len() as u64);
            send(sink, &batch, precision, first_line, &name, totals, &bar).await?;
            first_line += lines_in_batch;
            lines_in_batch = 0;
            batch.clear();
        }
    }
    if lines_in_batch > 0 {
        bar.inc(batch.len() as u64);
        send(sink, &batch, precision, first_line, &name, totals, &bar).await?;
    }
    bar.finish_and_clear();
    Ok(())
}

async fn send(
    sink: &Sink,
    batch: &str,
    precision: Precision,
    first_line: usize,
    name: &str,
    totals: &mut Totals,
    bar: &ProgressBar,
) -> Result<()> {
    let (accepted, rejected, errors) = match sink {
        Sink::Store(engine, mode) => {
            let report = engine.write_lines_as(batch, precision, *mode).await?;
            (report.accepted, report.rejected, report.errors)
        }
        Sink::Server { client, url } => post(client, url, batch).await?,
    };
    totals.accepted += accepted;
    totals.rejected += rejected;
    for e in errors {
        if totals.printed < MAX_PRINTED_ERRORS {
            bar.suspend(|| eprintln!("{name}:{}: {}", first_line + e.line - 1, e.message));
            totals.printed += 1;
        }
    }
    Ok(())
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    batch: &str,
) -> Result<(usize, usize, Vec<LineError>)> {
    let lines = batch
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    let response = client
        .post(url)
        .body(batch.to_string())
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    if status == reqwest::StatusCode::NO_CONTENT {
        return Ok((lines, 0, Vec::new()));
    }
    let text = response.text().await.unwrap_or_default();
    if status != reqwest::StatusCode::BAD_REQUEST {
        bail!("server answered {status}: {text}");
    }
    #[derive(serde::Deserialize)]
    struct Partial {
        accepted: usize,
        rejected: usize,
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        line: usize,
        message: String,
    }
    let p: Partial =
        serde_json::from_str(&text).with_context(|| format!("server answered 400: {text}"))?;
    Ok((
        p.accepted,
        p.rejected,
        p.errors
            .into_iter()
            .map(|e| LineError {
                line: e.line,
                message: e.message,
            })
            .collect(),
    ))
}
