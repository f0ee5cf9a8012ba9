//! `tickertape query`: the selectors of `GET /api/v1/query`, against a store directly or a
//! running server (`--url`), printed as an aligned table, CSV or JSON.

use crate::answer::{Answer, QueryArgs};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use tickertape_core::query::merge_on_time_axis;
use tickertape_core::time::{format_rfc3339, Clock, SystemClock};
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
    pub query: QueryArgs,
    /// Put every series on one time axis: one row per time, one column per series (empty
    /// where a series has no point at that time); JSON as `merge=true` answers.
    #[arg(long)]
    pub merge: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
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

pub async fn run(mut args: Args) -> Result<()> {
    args.query.resolve_relative_times(SystemClock.now_nanos())?;
    let answer = args.query.fetch().await?;
    let text = match args.merge {
        true => render_merged(&answer, args.format)?,
        false => render(&answer, args.format)?,
    };
    print!("{text}");
    Ok(())
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
                let label = csv_field(&s.label());
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
                    let label = s.label();
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
    let labels: Vec<String> = answer.series.iter().map(|s| s.label()).collect();
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
