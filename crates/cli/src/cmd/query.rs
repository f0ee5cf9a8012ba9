//! `tickertape query`: the selectors of `GET /api/v1/query`, against a store directly or a
//! running server (`--url`), printed as an aligned table, CSV or JSON.

use crate::store::StoreArgs;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use tickertape_core::query::merge_on_time_axis;
use tickertape_core::time::format_rfc3339;
use tickertape_core::Point;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Ask a running server instead of opening the store (e.g. http://127.0.0.1:8086).
    #[arg(long)]
    pub url: Option<String>,
    /// Measurement to read.
    #[arg(long, short)]
    pub measurement: String,
    /// Only this field.
    #[arg(long, short)]
    pub field: Option<String>,
    /// Only series with this tag: KEY:VALUE, or KEY!=VALUE, KEY=~REGEX, KEY!~REGEX (anchored;
    /// a missing tag counts as empty); repeat for several (all must match).
    #[arg(long = "tag", short)]
    pub tags: Vec<String>,
    /// Range start, inclusive: RFC 3339 or integer nanoseconds. Default: the beginning.
    #[arg(long)]
    pub start: Option<String>,
    /// Range end, exclusive: RFC 3339 or integer nanoseconds. Default: the end.
    #[arg(long)]
    pub end: Option<String>,
    /// Window width for agg (10s, 1m, 1h …).
    #[arg(long)]
    pub step: Option<String>,
    /// Aggregate: avg, min, max, sum, count, first, last.
    #[arg(long)]
    pub agg: Option<String>,
    /// Also return the last point before start and the first at or after end.
    #[arg(long)]
    pub neighbors: bool,
    /// Read windows from this resolution: raw, or a rollup that divides the step (1m …).
    #[arg(long)]
    pub resolution: Option<String>,
    /// Let the engine pick the step so each series gets at most this many points (needs
    /// --start; without --end the range ends now).
    #[arg(long)]
    pub max_points: Option<String>,
    /// Counters: total or avg_per_sec per window (implies sums).
    #[arg(long)]
    pub display: Option<String>,
    /// Put every series on one time axis: one row per time, one column per series (empty
    /// where a series has no point at that time); JSON as `merge=true` answers.
    #[arg(long)]
    pub merge: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The answer in the shape of the HTTP API, whichever way it was obtained.
#[derive(serde::Deserialize, serde::Serialize)]
struct Answer {
    series: Vec<SeriesAnswer>,
}

/// `--merge`: the shape of `merge=true`.
#[derive(serde::Serialize)]
struct MergedAnswer<'a> {
    times: Vec<i64>,
    series: Vec<MergedSeries<'a>>,
}

#[derive(serde::Serialize)]
struct MergedSeries<'a> {
    measurement: &'a str,
    tags: &'a BTreeMap<String, String>,
    field: &'a str,
    values: Vec<Option<f64>>,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct SeriesAnswer {
    measurement: String,
    tags: BTreeMap<String, String>,
    field: String,
    points: Vec<(i64, Option<f64>)>,
}

impl Args {
    fn query_string(&self) -> String {
        let mut s = form_pairs();
        s.append_pair("measurement", &self.measurement);
        if let Some(f) = &self.field {
            s.append_pair("field", f);
        }
        for t in &self.tags {
            s.append_pair("tag", t);
        }
        for (name, value) in [
            ("start", &self.start),
            ("end", &self.end),
            ("step", &self.step),
            ("agg", &self.agg),
            ("resolution", &self.resolution),
            ("max_points", &self.max_points),
            ("display", &self.display),
        ] {
            if let Some(v) = value {
                s.append_pair(name, v);
            }
        }
        if self.neighbors {
            s.append_pair("neighbors", "true");
        }
        s.finish()
    }
}

fn form_pairs() -> form_urlencoded::Serializer<'static, String> {
    form_urlencoded::Serializer::new(String::new())
}

pub async fn run(args: Args) -> Result<()> {
    let answer = match &args.url {
        Some(url) => ask_server(url, &args.query_string()).await?,
        None => ask_store(&args).await?,
    };
    let text = match args.merge {
        true => render_merged(&answer, args.format)?,
        false => render(&answer, args.format)?,
    };
    print!("{text}");
    Ok(())
}

async fn ask_server(url: &str, query: &str) -> Result<Answer> {
    let url = format!("{}/api/v1/query?{query}", url.trim_end_matches('/'));
    let response = reqwest::get(&url)
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let text = response.text().await?;
    if !status.is_success() {
        bail!("server answered {status}: {text}");
    }
    serde_json::from_str(&text).context("unexpected answer from the server")
}

async fn ask_store(args: &Args) -> Result<Answer> {
    let query = tickertape_server::query::parse_query(&args.query_string())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let engine = args.store.engine().await?;
    let result = engine.query(&query).await?;
    Ok(Answer {
        series: result
            .into_iter()
            .map(|s| SeriesAnswer {
                measurement: s.key.measurement,
                tags: s.key.tags.into_iter().collect(),
                field: s.key.field,
                points: s.points.iter().map(|p| (p.time, Some(p.value))).collect(),
            })
            .collect(),
    })
}

fn series_label(s: &SeriesAnswer) -> String {
    let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}{{{}}}#{}", s.measurement, tags.join(","), s.field)
}

fn value_text(v: Option<f64>) -> String {
    // `{}` prints the shortest text that parses back to the same f64.
    v.map_or("null".into(), |v| format!("{v}"))
}

fn render(answer: &Answer, format: Format) -> Result<String> {
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(answer)?;
            out.push('\n');
        }
        Format::Csv => {
            out.push_str("series,time,value\n");
            for s in &answer.series {
                let label = csv_field(&series_label(s));
                for (t, v) in &s.points {
                    writeln!(out, "{label},{},{}", format_rfc3339(*t), value_text(*v))?;
                }
            }
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = answer
                .series
                .iter()
                .flat_map(|s| {
                    let label = series_label(s);
                    s.points
                        .iter()
                        .map(move |(t, v)| vec![label.clone(), format_rfc3339(*t), value_text(*v)])
                })
                .collect();
            let header = ["SERIES", "TIME", "VALUE"].map(String::from).to_vec();
            out = aligned_table(header, &rows, 2)?;
        }
    }
    Ok(out)
}

/// `--merge`: one row per time, one column per series.
fn render_merged(answer: &Answer, format: Format) -> Result<String> {
    let points: Vec<Vec<Point>> = answer
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(t, v)| v.map(|v| Point::new(t, v)))
                .collect()
        })
        .collect();
    let (times, columns) = merge_on_time_axis(&points);
    let labels: Vec<String> = answer.series.iter().map(series_label).collect();
    let cell = |v: &Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    let mut out = String::new();
    match format {
        Format::Json => {
            let merged = MergedAnswer {
                times,
                series: answer
                    .series
                    .iter()
                    .zip(columns)
                    .map(|(s, values)| MergedSeries {
                        measurement: &s.measurement,
                        tags: &s.tags,
                        field: &s.field,
                        values,
                    })
                    .collect(),
            };
            out = serde_json::to_string_pretty(&merged)?;
            out.push('\n');
        }
        Format::Csv => {
            let header: Vec<String> = labels.iter().map(|l| csv_field(l)).collect();
            writeln!(out, "time,{}", header.join(","))?;
            for (i, t) in times.iter().enumerate() {
                let row: Vec<String> = columns.iter().map(|c| cell(&c[i])).collect();
                writeln!(out, "{},{}", format_rfc3339(*t), row.join(","))?;
            }
        }
        Format::Table => {
            let header = std::iter::once("TIME".to_string()).chain(labels).collect();
            let rows: Vec<Vec<String>> = times
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    std::iter::once(format_rfc3339(*t))
                        .chain(columns.iter().map(|c| cell(&c[i])))
                        .collect()
                })
                .collect();
            out = aligned_table(header, &rows, 1)?;
        }
    }
    Ok(out)
}

/// A plain-text table: columns padded to their widest cell, the columns from
/// `first_number` on aligned right.
fn aligned_table(header: Vec<String>, rows: &[Vec<String>], first_number: usize) -> Result<String> {
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| match i >= first_number {
                true => format!("{cell:>w$}"),
                false => format!("{cell:<w$}"),
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    if rows.is_empty() {
        out.push_str("(no points)\n");
    }
    Ok(out)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
