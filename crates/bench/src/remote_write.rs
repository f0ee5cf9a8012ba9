//! `tickertape-bench remote-write`: the ingest target of the Prometheus path — Prometheus
//! remote write at least as fast as line protocol — measured on the same data in one run.
//!
//! The devops dataset is built as for `ingest` (the same streams of line-protocol bodies,
//! hosts dealt to the clients), then every body is converted into one remote-write body
//! holding exactly its points: one `TimeSeries` per series in the body (metric
//! `<measurement>_<field>`, the line's tags as labels, sorted), its samples in time order,
//! milliseconds. Rounds alternate line protocol and remote write, each into a fresh
//! embedded store behind an in-process server, with the same clients and bounds; only
//! sending the bodies and the answers are timed. After each ingest every stored point is
//! counted back (`agg=count`), so a fast run that lost points cannot pass.

use crate::dataset::{Dataset, Shape, Stream, MAX_HOSTS, MAX_HOURS};
use crate::ingest::{group, IngestOutcome};
use crate::send::{send_streams, BodyKind, Connect};
use crate::store::open_engine;
use anyhow::{bail, ensure, Context, Result};
use bytes::Bytes;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tickertape_prometheus::remote::{encode_request, Label, Sample, TimeSeries, WriteRequest};
use tickertape_server::ServerConfig;

const MAX_CLIENTS: usize = 256;
const MAX_ROUNDS: usize = 20;
const NANOS_PER_MILLI: i64 = 1_000_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hosts in the generated dataset (10 fields each, one row every 10 s).
    #[arg(long, default_value_t = 100)]
    hosts: usize,
    /// Hours of data to generate, from 2016-01-01T00:00:00Z.
    #[arg(long, default_value_t = 24)]
    hours: u64,
    /// Round generated values to N decimals.
    #[arg(long, value_name = "N")]
    round: Option<u32>,
    /// Seed of the generated dataset.
    #[arg(long, default_value_t = 123)]
    seed: u64,
    /// Convert this gen.py file instead of generating (timestamps must be whole
    /// milliseconds: remote write carries milliseconds).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Concurrent HTTP clients, one keep-alive connection and one stream of hosts each,
    /// for both protocols.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    /// Lines per line-protocol body; each remote-write body holds the same points.
    #[arg(long, default_value_t = 5_000)]
    batch_lines: usize,
    /// Samples per TimeSeries at most: a series with more samples in a body is sent as
    /// several TimeSeries. 1 is what Prometheus itself sends (a scrape's sample per
    /// series, batches of series); the default holds each series' samples of a body in
    /// one TimeSeries.
    #[arg(long, value_name = "N")]
    samples_per_series: Option<usize>,
    /// Rounds, each one line-protocol ingest then one remote-write ingest.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Per-measurement schema of the stores (TOML, as `serve --config`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Abort the whole run after this many seconds.
    #[arg(long, default_value_t = 1_800)]
    timeout_secs: u64,
    /// Also print the results as one JSON object on standard output.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> Result<()> {
    validate(&args)?;
    crate::ingest::time_bounded(args.timeout_secs, run_bounded(args)).await
}

fn validate(args: &Args) -> Result<()> {
    ensure!(
        (1..=MAX_CLIENTS).contains(&args.clients),
        "--clients must be 1 to {MAX_CLIENTS}"
    );
    ensure!(args.batch_lines > 0, "--batch-lines must be at least 1");
    ensure!(
        (1..=MAX_HOSTS).contains(&args.hosts) && (1..=MAX_HOURS).contains(&args.hours),
        "--hosts must be 1 to {MAX_HOSTS} and --hours 1 to {MAX_HOURS}"
    );
    ensure!(
        args.samples_per_series != Some(0),
        "--samples-per-series must be at least 1"
    );
    ensure!(
        (1..=MAX_ROUNDS).contains(&args.rounds),
        "--rounds must be 1 to {MAX_ROUNDS}"
    );
    ensure!(
        args.round.is_none_or(|n| n <= 17),
        "--round takes 0 to 17 decimals"
    );
    Ok(())
}

/// The dataset's bodies as remote-write bodies, stream for stream and body for body.
struct RemoteBodies {
    streams: Vec<Stream>,
    /// Bytes sent (snappy) and their protobuf size.
    bytes: u64,
    protobuf_bytes: u64,
    /// TimeSeries over all bodies.
    series: u64,
}

async fn run_bounded(args: Args) -> Result<()> {
    let started = Instant::now();
    let (dataset, remote) = prepare(&args).await?;
    eprintln!(
        "dataset: {} ({} points, {} hosts × {} fields); {} line-protocol bodies of ≤{} lines ({} MB) = {} remote-write bodies ({} MB snappy, {} MB protobuf, {:.0} samples per TimeSeries); {} clients; prepared in {:.1} s, not timed",
        dataset.source,
        group(dataset.points),
        dataset.hosts.len(),
        dataset.fields.len(),
        dataset.bodies(),
        args.batch_lines,
        dataset.bytes / 1_000_000,
        remote.streams.iter().map(|s| s.bodies.len()).sum::<usize>(),
        remote.bytes / 1_000_000,
        remote.protobuf_bytes / 1_000_000,
        dataset.points as f64 / remote.series.max(1) as f64,
        args.clients,
        started.elapsed().as_secs_f64()
    );
    let lp = Arc::new(dataset.streams.clone());
    let rw = Arc::new(remote.streams);
    let mut rounds = Vec::with_capacity(args.rounds);
    for round in 1..=args.rounds {
        let line = one_ingest(&args, &dataset, lp.clone(), BodyKind::LineProtocol).await?;
        report(round, "line protocol", &line);
        let remote = one_ingest(&args, &dataset, rw.clone(), BodyKind::RemoteWrite).await?;
        report(round, "remote write ", &remote);
        eprintln!(
            "round {round}: remote write / line protocol = {:.2}×",
            remote.points_per_second / line.points_per_second
        );
        rounds.push((line, remote));
    }
    summarize(&args, &dataset, &rounds)
}

/// The dataset and its remote-write bodies, built before any clock starts.
async fn prepare(args: &Args) -> Result<(Arc<Dataset>, RemoteBodies)> {
    let shape = Shape {
        hosts: args.hosts,
        hours: args.hours,
        seed: args.seed,
        round: args.round,
    };
    let (file, batch_lines, clients) = (args.file.clone(), args.batch_lines, args.clients);
    let cap = args.samples_per_series.unwrap_or(usize::MAX);
    tokio::task::spawn_blocking(move || {
        let dataset = match file {
            Some(path) => Dataset::load(&path, batch_lines, clients),
            None => Dataset::generate(shape, batch_lines, clients),
        }?;
        let remote = remote_bodies(&dataset, cap)?;
        Ok((Arc::new(dataset), remote))
    })
    .await
    .context("preparing the dataset")?
}

/// One ingest of `streams` into a fresh embedded store behind an in-process server; every
/// body must be answered 204 and every point counted back.
async fn one_ingest(
    args: &Args,
    dataset: &Dataset,
    streams: Arc<Vec<Stream>>,
    kind: BodyKind,
) -> Result<IngestOutcome> {
    let dir = tempfile::Builder::new()
        .prefix("tickertape-bench-rw-")
        .tempdir()?;
    let engine = open_engine(dir.path(), args.config.as_deref()).await?;
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
    let url = match kind {
        BodyKind::LineProtocol => format!("{base}/write?precision=ns"),
        BodyKind::RemoteWrite => format!("{base}/prometheus/api/v1/write"),
    };
    let outcome = send_streams(&url, streams, dataset.points, kind, &Connect::default()).await?;
    if outcome.failed > 0 {
        bail!(
            "{kind:?}: {} of {} bodies not answered 204: {}",
            outcome.failed,
            outcome.bodies,
            outcome.failures.join("; ")
        );
    }
    let counted = count_points(&base, dataset, kind).await?;
    ensure!(
        counted == dataset.points,
        "{kind:?}: {counted} points stored, {} sent",
        dataset.points
    );
    let _ = stop.send(());
    server.await.context("server task")?.context("server")?;
    close(engine).await?;
    dir.close().context("removing the store")?;
    Ok(outcome)
}

/// Closes the store before its directory is removed: waits (bounded) for the server's
/// last connection tasks to let go of the engine, then drops it, which joins the store's
/// threads once they flushed.
async fn close(engine: tickertape_engine::Engine) -> Result<()> {
    for _ in 0..1_000 {
        if engine.holds_the_store_alone() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ensure!(
        engine.holds_the_store_alone(),
        "the store was still in use 10 s after its server stopped"
    );
    tokio::task::spawn_blocking(move || drop(engine))
        .await
        .context("closing the store")
}

/// Every stored point of the dataset's series, counted with `agg=count` per measurement.
async fn count_points(base: &str, dataset: &Dataset, kind: BodyKind) -> Result<u64> {
    let measurements: Vec<String> = match kind {
        BodyKind::LineProtocol => vec![dataset.measurement.clone()],
        BodyKind::RemoteWrite => dataset
            .fields
            .iter()
            .map(|f| format!("{}_{f}", dataset.measurement))
            .collect(),
    };
    let client = reqwest::Client::new();
    let mut total = 0u64;
    for m in measurements {
        let url = format!(
            "{base}/api/v1/query?measurement={m}&agg=count&start={}&end={}",
            dataset.first_time,
            dataset.last_time.saturating_add(1)
        );
        let answer: serde_json::Value = client.get(&url).send().await?.json().await?;
        let series = answer["series"]
            .as_array()
            .with_context(|| format!("{url}: no series in {answer:.300}"))?;
        for s in series {
            total += s["points"][0][1].as_f64().unwrap_or(0.0) as u64;
        }
    }
    Ok(total)
}

fn report(round: usize, what: &str, outcome: &IngestOutcome) {
    eprintln!(
        "round {round}: {what}: {:.2} s = {} points/s ({} bodies, all answered 204, every point counted back)",
        outcome.seconds,
        group(outcome.points_per_second.round() as u64),
        outcome.bodies
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn summarize(
    args: &Args,
    dataset: &Dataset,
    rounds: &[(IngestOutcome, IngestOutcome)],
) -> Result<()> {
    let lp = median(rounds.iter().map(|r| r.0.points_per_second).collect());
    let rw = median(rounds.iter().map(|r| r.1.points_per_second).collect());
    let ratios: Vec<f64> = rounds
        .iter()
        .map(|(l, r)| r.points_per_second / l.points_per_second)
        .collect();
    let (low, high) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    eprintln!(
        "median over {} rounds: line protocol {} points/s, remote write {} points/s = {:.2}× (per round {:.2}–{:.2}×)",
        rounds.len(),
        group(lp.round() as u64),
        group(rw.round() as u64),
        rw / lp,
        low,
        high
    );
    if args.json {
        let summary = serde_json::json!({
            "source": dataset.source,
            "points": dataset.points,
            "clients": args.clients,
            "batch_lines": args.batch_lines,
            "line_protocol": rounds.iter().map(|r| &r.0).collect::<Vec<_>>(),
            "remote_write": rounds.iter().map(|r| &r.1).collect::<Vec<_>>(),
            "median_points_per_second": { "line_protocol": lp, "remote_write": rw },
            "ratio_of_medians": rw / lp,
            "ratios": ratios,
        });
        println!("{summary}");
    }
    Ok(())
}

/// Converts every line-protocol body of the dataset into a remote-write body, with at
/// most `cap` samples per TimeSeries.
fn remote_bodies(dataset: &Dataset, cap: usize) -> Result<RemoteBodies> {
    let mut out = RemoteBodies {
        streams: Vec::with_capacity(dataset.streams.len()),
        bytes: 0,
        protobuf_bytes: 0,
        series: 0,
    };
    for stream in &dataset.streams {
        let mut bodies = Vec::with_capacity(stream.bodies.len());
        for body in &stream.bodies {
            let text = std::str::from_utf8(body).context("dataset is not UTF-8")?;
            let request = write_request(text, cap)?;
            let snappy = encode_request(&request).context("encoding a remote-write body")?;
            out.protobuf_bytes += prost_len(&request);
            out.bytes += snappy.len() as u64;
            out.series += request.timeseries.len() as u64;
            bodies.push(Bytes::from(snappy));
        }
        out.streams.push(Stream {
            bodies,
            points: stream.points.clone(),
        });
    }
    Ok(out)
}

fn prost_len(request: &WriteRequest) -> u64 {
    prost::Message::encoded_len(request) as u64
}

/// One body's lines as a `WriteRequest`: one `TimeSeries` per (series, field) and `cap`
/// samples, in order of first appearance, each with its samples in line order.
fn write_request(text: &str, cap: usize) -> Result<WriteRequest> {
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut timeseries: Vec<TimeSeries> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, rest) = line.split_once(' ').context("a line without fields")?;
        let (fields, time) = rest.rsplit_once(' ').context("a line without a time")?;
        let time: i64 = time.parse().context("a bad timestamp")?;
        ensure!(
            time % NANOS_PER_MILLI == 0,
            "timestamp {time} is not a whole millisecond: remote write carries milliseconds"
        );
        for pair in fields.split(',') {
            let (field, value) = pair.split_once('=').context("a field without '='")?;
            let value: f64 = value.parse().with_context(|| format!("field {pair:?}"))?;
            let i = match index.get(&(series, field)) {
                Some(&i) if timeseries[i].samples.len() < cap => i,
                _ => {
                    timeseries.push(TimeSeries {
                        labels: labels(series, field)?,
                        ..TimeSeries::default()
                    });
                    index.insert((series, field), timeseries.len() - 1);
                    timeseries.len() - 1
                }
            };
            timeseries[i].samples.push(Sample {
                value,
                timestamp: time / NANOS_PER_MILLI,
            });
        }
    }
    Ok(WriteRequest {
        timeseries,
        metadata: Vec::new(),
    })
}

/// `__name__` = `<measurement>_<field>` and the tags, sorted by name as Prometheus sends
/// them.
fn labels(series: &str, field: &str) -> Result<Vec<Label>> {
    let mut parts = series.split(',');
    let measurement = parts.next().unwrap_or_default();
    let mut labels = vec![Label {
        name: "__name__".into(),
        value: format!("{measurement}_{field}"),
    }];
    for tag in parts {
        let (name, value) = tag
            .split_once('=')
            .with_context(|| format!("tag {tag:?} without '='"))?;
        labels.push(Label {
            name: name.into(),
            value: value.into(),
        });
    }
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_prometheus::remote::{decode_write_request, MAX_DECODED_BYTES};

    #[test]
    fn every_point_of_a_body_is_in_its_remote_write_body_once() {
        let shape = Shape {
            hosts: 3,
            hours: 1,
            seed: 5,
            round: None,
        };
        let dataset = Dataset::generate(shape, 50, 2).unwrap();
        let remote = remote_bodies(&dataset, usize::MAX).unwrap();
        for (lp, rw) in dataset.streams.iter().zip(&remote.streams) {
            assert_eq!(lp.bodies.len(), rw.bodies.len());
            for (text, body) in lp.bodies.iter().zip(&rw.bodies) {
                let request = decode_write_request(body, MAX_DECODED_BYTES).unwrap();
                let mut want: Vec<(String, String, i64, u64)> = Vec::new();
                for line in std::str::from_utf8(text).unwrap().lines() {
                    let (series, rest) = line.split_once(' ').unwrap();
                    let (fields, time) = rest.rsplit_once(' ').unwrap();
                    let host = series
                        .split(',')
                        .nth(1)
                        .unwrap()
                        .trim_start_matches("hostname=");
                    for pair in fields.split(',') {
                        let (f, v) = pair.split_once('=').unwrap();
                        let t = time.parse::<i64>().unwrap() / NANOS_PER_MILLI;
                        want.push((
                            format!("cpu_{f}"),
                            host.into(),
                            t,
                            v.parse::<f64>().unwrap().to_bits(),
                        ));
                    }
                }
                let mut got = Vec::new();
                for s in &request.timeseries {
                    let label =
                        |n: &str| s.labels.iter().find(|l| l.name == n).unwrap().value.clone();
                    assert_eq!(s.labels.len(), 11, "__name__ and 10 tags");
                    assert!(s.labels.windows(2).all(|w| w[0].name < w[1].name));
                    for p in &s.samples {
                        got.push((
                            label("__name__"),
                            label("hostname"),
                            p.timestamp,
                            p.value.to_bits(),
                        ));
                    }
                }
                want.sort();
                got.sort();
                assert_eq!(got, want);
            }
        }
        let samples: usize = remote
            .streams
            .iter()
            .flat_map(|s| &s.bodies)
            .map(|b| {
                let r = decode_write_request(b, MAX_DECODED_BYTES).unwrap();
                r.timeseries.iter().map(|s| s.samples.len()).sum::<usize>()
            })
            .sum();
        assert_eq!(samples as u64, dataset.points);
    }

    #[test]
    fn sub_millisecond_times_are_refused() {
        let e = write_request("cpu,hostname=a v=1 1500000\n", 1).unwrap_err();
        assert!(e.to_string().contains("whole millisecond"), "{e}");
        let ok = write_request("cpu,hostname=a v=1 2000000\n", 1).unwrap();
        assert_eq!(ok.timeseries[0].samples[0].timestamp, 2);
    }

    #[test]
    fn a_cap_splits_a_series_into_several_timeseries() {
        let text =
            "cpu,hostname=a v=1 1000000\ncpu,hostname=a v=2 2000000\ncpu,hostname=a v=3 3000000\n";
        let sizes = |cap| -> Vec<usize> {
            let r = write_request(text, cap).unwrap();
            r.timeseries.iter().map(|s| s.samples.len()).collect()
        };
        assert_eq!(sizes(usize::MAX), vec![3]);
        assert_eq!(sizes(2), vec![2, 1]);
        assert_eq!(sizes(1), vec![1, 1, 1]);
    }
}
