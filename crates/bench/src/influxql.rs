//! InfluxQL's speed target: Grafana's `SELECT mean("usage_user") FROM "cpu" WHERE
//! ("host" = 'h1') AND time >= …ms and time <= …ms GROUP BY time(1m) fill(null)` over 24 hours
//! of one host, against the own API's same windows (`/api/v1/query?…&step=1m&agg=avg`), on
//! the in-process server over a fresh embedded store, compacted; with `--influx-url` also
//! against an InfluxDB 1.x loaded with the same points. The queries alternate, each round
//! starting with the next kind, so every kind sees the same machine; every answer is
//! checked (1,441 windows).

use crate::store::serve_new_store;
use anyhow::{bail, ensure, Context, Result};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hours of data, ending at --end.
    #[arg(long, default_value_t = 24)]
    hours: i64,
    /// Seconds between two points.
    #[arg(long, default_value_t = 10)]
    interval: i64,
    /// Timed rounds (after one untimed warm-up); each round runs every kind once.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// The end of the data and of the queried range, Unix seconds.
    #[arg(long, default_value_t = 1_700_086_400)]
    end: i64,
    /// An InfluxDB 1.x (`http://127.0.0.1:PORT`) to load and query too (database `bench`).
    #[arg(long)]
    influx_url: Option<String>,
}

pub async fn run(args: Args) -> Result<()> {
    let dir = tempfile::tempdir().context("a temporary store directory")?;
    let url = serve_new_store(dir.path()).await?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let start = args.end - args.hours * 3600;
    let body = line_protocol(&args, start);
    write(&client, &format!("{url}/write?precision=s"), &body).await?;
    let r = client
        .post(format!("{url}/api/v1/admin/compact"))
        .send()
        .await?;
    ensure!(r.status().is_success(), "compact answered {}", r.status());
    if let Some(influx) = &args.influx_url {
        let r = client
            .post(format!("{influx}/query"))
            .form(&[("q", "CREATE DATABASE bench")])
            .send()
            .await?;
        ensure!(
            r.status().is_success(),
            "CREATE DATABASE answered {}",
            r.status()
        );
        write(
            &client,
            &format!("{influx}/write?db=bench&precision=s"),
            &body,
        )
        .await?;
    }
    let windows = (args.hours * 60 + 1) as usize;
    let influxql = format!(
        "SELECT mean(\"usage_user\") FROM \"cpu\" WHERE (\"host\" = 'h1') AND time >= {}ms and time <= {}ms GROUP BY time(1m) fill(null)",
        start * 1000,
        args.end * 1000
    );
    let own = client.get(format!("{url}/api/v1/query")).query(&[
        ("measurement", "cpu".to_string()),
        ("field", "usage_user".to_string()),
        ("tag", "host:h1".to_string()),
        ("start", (start * 1_000_000_000).to_string()),
        ("end", ((args.end + 1) * 1_000_000_000).to_string()),
        ("step", "1m".to_string()),
        ("agg", "avg".to_string()),
    ]);
    // tickertape's data is in its default database (named, as Grafana names one).
    let ours = client.get(format!("{url}/query")).query(&[
        ("db", tickertape_engine::DEFAULT_DATABASE),
        ("epoch", "ms"),
        ("q", influxql.as_str()),
    ]);
    let theirs = args.influx_url.as_ref().map(|influx| {
        client.get(format!("{influx}/query")).query(&[
            ("db", "bench"),
            ("epoch", "ms"),
            ("q", influxql.as_str()),
        ])
    });
    let mut kinds: Vec<(&str, reqwest::RequestBuilder, Vec<Duration>)> = vec![
        ("own API (step=1m agg=avg)", own, Vec::new()),
        ("InfluxQL on tickertape", ours, Vec::new()),
    ];
    if let Some(theirs) = theirs {
        kinds.push(("InfluxQL on InfluxDB 1.x", theirs, Vec::new()));
    }
    for run in 0..=args.runs {
        // Each round starts with the next kind, so that none always follows the same one
        // (a request right after another finds that one's memory and caches about).
        let count = kinds.len();
        for k in (0..count).map(|k| (k + run) % count) {
            let (name, request, times) = &mut kinds[k];
            let request = request.try_clone().context("a request to repeat")?;
            let began = Instant::now();
            let response = request.send().await?;
            let status = response.status();
            let bytes = response.bytes().await?;
            let took = began.elapsed();
            let body: serde_json::Value = serde_json::from_slice(&bytes)?;
            if !status.is_success() {
                bail!("{name} answered {status}: {body}");
            }
            let points = body["series"][0]["points"]
                .as_array()
                .or_else(|| body["results"][0]["series"][0]["values"].as_array())
                .map_or(0, Vec::len);
            ensure!(
                points == windows,
                "{name}: {points} windows, expected {windows}"
            );
            if run > 0 {
                times.push(took);
            }
        }
    }
    let median = |times: &[Duration]| {
        let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let own_ms = median(&kinds[0].2);
    for (name, _, times) in &kinds {
        let ms = median(times);
        println!(
            "{name}: median {ms:.2} ms over {} runs ({:.2}× the own API)",
            times.len(),
            ms / own_ms
        );
    }
    if kinds.len() == 3 {
        println!(
            "InfluxQL on tickertape / on InfluxDB 1.x: {:.2}×",
            median(&kinds[1].2) / median(&kinds[2].2)
        );
    }
    Ok(())
}

/// One host's `cpu` with ten `usage_*` fields, a point every --interval seconds.
fn line_protocol(args: &Args, start: i64) -> String {
    let mut body = String::new();
    let mut t = start;
    let mut i = 0i64;
    while t <= args.end {
        let fields: Vec<String> = [
            "user",
            "system",
            "idle",
            "nice",
            "iowait",
            "irq",
            "softirq",
            "steal",
            "guest",
            "guest_nice",
        ]
        .iter()
        .enumerate()
        .map(|(k, f)| {
            format!(
                "usage_{f}={}",
                ((i * 31 + k as i64 * 17) % 1000) as f64 / 10.0
            )
        })
        .collect();
        body.push_str(&format!("cpu,host=h1,region=eu {} {t}\n", fields.join(",")));
        t += args.interval;
        i += 1;
    }
    body
}

async fn write(client: &reqwest::Client, url: &str, body: &str) -> Result<()> {
    for chunk in body.split_inclusive('\n').collect::<Vec<_>>().chunks(5_000) {
        let r = client.post(url).body(chunk.concat()).send().await?;
        ensure!(
            r.status().as_u16() == 204,
            "write to {url} answered {}: {}",
            r.status(),
            r.text().await?
        );
    }
    Ok(())
}
