//! Issue 11's query target: `rate(x[5m])` over 24 hours at a 60 s step for 100 series,
//! through Prometheus' `query_range` on the in-process server over a fresh embedded store.
//!
//! The series are counters written as line protocol (measurement `bench_requests_total`,
//! field `value`, one point per `--interval`), compacted into part files as a day of data
//! would be, then queried `--runs` times; every answer is checked (series and steps).

use crate::store::serve_new_store;
use anyhow::{bail, ensure, Context, Result};
use std::time::{Duration, Instant};

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
}

pub async fn run(args: Args) -> Result<()> {
    let dir = tempfile::tempdir().context("a temporary store directory")?;
    let url = serve_new_store(dir.path()).await?;
    let client = reqwest::Client::new();
    let start = args.end - args.hours * 3600;
    let written = load(&client, &url, &args, start).await?;
    let r = client
        .post(format!("{url}/api/v1/admin/compact"))
        .send()
        .await?;
    ensure!(r.status().is_success(), "compact answered {}", r.status());
    println!(
        "loaded {written} points in {} series; compacted",
        args.series
    );
    for query in [
        "rate(bench_requests_total[5m])",
        "sum(rate(bench_requests_total[5m]))",
    ] {
        let times = time_query(&client, &url, query, start, &args).await?;
        report(query, &times);
    }
    Ok(())
}

/// Writes every series' counter in bodies of at most 50,000 lines; returns the points.
async fn load(client: &reqwest::Client, url: &str, args: &Args, start: i64) -> Result<usize> {
    let mut body = String::new();
    let mut points = 0;
    let mut t = start;
    while t <= args.end {
        for s in 0..args.series {
            let value = (t - start) / args.interval * (s as i64 + 1);
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

async fn time_query(
    client: &reqwest::Client,
    url: &str,
    query: &str,
    start: i64,
    args: &Args,
) -> Result<Vec<Duration>> {
    let request = || {
        client
            .get(format!("{url}/prometheus/api/v1/query_range"))
            .query(&[
                ("query", query.to_string()),
                ("start", start.to_string()),
                ("end", args.end.to_string()),
                ("step", args.step.to_string()),
            ])
    };
    let steps = ((args.end - start) / args.step + 1) as usize;
    let expected_series = if query.starts_with("sum") {
        1
    } else {
        args.series
    };
    let mut times = Vec::with_capacity(args.runs);
    for run in 0..=args.runs {
        let began = Instant::now();
        let response = request().send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        // The answer is in: parsing it is the client's time, not the server's.
        let took = began.elapsed();
        let body: serde_json::Value = serde_json::from_slice(&bytes)?;
        if !status.is_success() {
            bail!("{query} answered {status}: {body}");
        }
        let result = body["data"]["result"].as_array().context("no result")?;
        ensure!(
            result.len() == expected_series,
            "{query}: {} series, expected {expected_series}",
            result.len()
        );
        // The first 5 minutes have no two points in a window only at the very start.
        let values = result[0]["values"].as_array().map_or(0, Vec::len);
        ensure!(values + 1 >= steps, "{query}: {values} steps of {steps}");
        if run > 0 {
            times.push(took);
        }
    }
    Ok(times)
}

fn report(query: &str, times: &[Duration]) {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "{query}: median {:.1} ms, p90 {:.1} ms, min {:.1} ms over {} runs",
        at(0.5),
        at(0.9),
        ms[0],
        ms.len()
    );
}
