//! `tickertape query`: the selectors of `GET /api/v1/query`, against a store directly or a
//! running server (`--url`), printed as an aligned table, CSV or JSON.

use crate::store::StoreArgs;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use tickertape_core::time::format_rfc3339;

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
    /// Only series with this tag (KEY:VALUE); repeat for several (all must match).
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
    /// Let the engine pick the step so each series gets at most this many points.
    #[arg(long)]
    pub max_points: Option<String>,
    /// Counters: total or avg_per_sec per window (implies sums).
    #[arg(long)]
    pub display: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The answer in the shape of the HTTP API, whichever way it was obtained.
#[derive(serde::Deserialize, serde::Serialize)]
struct Answer {
    series: Vec<SeriesAnswer>,
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
    print!("{}", render(&answer, args.format)?);
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
            let rows: Vec<[String; 3]> = answer
                .series
                .iter()
                .flat_map(|s| {
                    let label = series_label(s);
                    s.points
                        .iter()
                        .map(move |(t, v)| [label.clone(), format_rfc3339(*t), value_text(*v)])
                })
                .collect();
            let header = [
                "SERIES".to_string(),
                "TIME".to_string(),
                "VALUE".to_string(),
            ];
            let mut widths = [0usize; 3];
            for row in std::iter::once(&header).chain(&rows) {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            for row in std::iter::once(&header).chain(&rows) {
                writeln!(
                    out,
                    "{:<w0$}  {:<w1$}  {:>w2$}",
                    row[0],
                    row[1],
                    row[2],
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2]
                )?;
            }
            if rows.is_empty() {
                out.push_str("(no points)\n");
            }
        }
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
