//! `tickertape plot`: the selectors of `tickertape query`, drawn as a line chart into a PNG
//! or an SVG file (`chart/` draws it).

use crate::answer::{Answer, QueryArgs, SeriesAnswer};
use crate::chart::{self, Chart, ImageFormat, ImageSize, Line};
use anyhow::{bail, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tickertape_core::time::{parse_timestamp, Clock, SystemClock};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Points per series: with --start and neither --step nor --max-points, plot asks for at most \
--width points per series (as --max-points WIDTH would): about one per pixel, each the \
average (or --agg) of its window, read from the rollups that fit, so a chart of a month \
reads rollups rather than every raw point. Without --start it draws the points as stored.

A line is not drawn across a gap: an interval longer than 1.5 times the series' usual \
interval (or a missing value) ends it; a lone point is drawn as a dot.

Examples:
  tickertape plot -m cpu -f usage --tag region:eu --start 2023-11-14T00:00:00Z \\
      --end 2023-11-15T00:00:00Z -o cpu.png
  tickertape plot --url http://127.0.0.1:8086 -m cpu -f usage --start -6h -o last-6h.png")]
pub struct Args {
    #[command(flatten)]
    pub query: QueryArgs,
    /// The image to write: FILE.png or FILE.svg (the extension chooses the format).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Image width in pixels (320 to 8000).
    #[arg(long, default_value_t = 1000)]
    pub width: u32,
    /// Image height in pixels (200 to 8000).
    #[arg(long, default_value_t = 500)]
    pub height: u32,
    /// Chart title. Default: the measurement, field, tag filters and aggregate.
    #[arg(long)]
    pub title: Option<String>,
}

pub async fn run(mut args: Args) -> Result<()> {
    // Bad flags are refused before the store is opened or the server asked.
    let size = ImageSize::new(args.width, args.height)?;
    ImageFormat::of_path(&args.output)?;
    check_output_directory(&args.output)?;
    args.query.resolve_relative_times(SystemClock.now_nanos())?;
    apply_point_budget(&mut args.query, args.width);
    let answer = args.query.fetch().await?;
    if !has_points(&answer) {
        bail!(
            "no points in {}: nothing to plot",
            selection_text(&args.query)
        );
    }
    let chart = chart_of(&args, answer)?;
    chart::draw(&chart, size, &args.output)?;
    eprintln!(
        "wrote {} ({} series)",
        args.output.display(),
        chart.lines.len()
    );
    Ok(())
}

fn check_output_directory(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => bail!(
            "cannot write {}: {} is not a directory",
            path.display(),
            dir.display()
        ),
        _ => Ok(()),
    }
}

/// With a start and no step or budget of its own, a chart asks for about a point per
/// pixel of width (see the command's help).
fn apply_point_budget(query: &mut QueryArgs, width: u32) {
    let chooses_own = query.step.is_some() || query.max_points.is_some();
    // `neighbors` applies to raw points only: the engine refuses it with max_points.
    if query.start.is_some() && !chooses_own && !query.neighbors {
        query.max_points = Some(width.to_string());
    }
}

fn has_points(answer: &Answer) -> bool {
    answer
        .series
        .iter()
        .flat_map(|s| &s.points)
        .any(|(_, v)| v.is_some_and(f64::is_finite))
}

fn chart_of(args: &Args, answer: Answer) -> Result<Chart> {
    let query = &args.query;
    let time = |text: &Option<String>| text.as_deref().map(parse_timestamp).transpose();
    let labels = legend_labels(&answer.series);
    let value_caption = value_caption(&answer.series);
    let mut lines: Vec<Line> = answer
        .series
        .into_iter()
        .zip(labels)
        .map(|(series, label)| Line {
            label,
            points: series.points,
        })
        .collect();
    // In the legend's reading order; colours follow it (host_0 first, in the first colour).
    lines.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(Chart {
        title: args.title.clone().unwrap_or_else(|| default_title(query)),
        value_caption,
        start: time(&query.start)?,
        end: time(&query.end)?,
        lines,
    })
}

/// "cpu usage · region:eu · avg per 1m": what was asked, in the order of the flags.
fn default_title(query: &QueryArgs) -> String {
    let mut parts = vec![match &query.field {
        Some(field) => format!("{} {field}", query.measurement),
        None => query.measurement.clone(),
    }];
    if !query.tags.is_empty() {
        parts.push(query.tags.join(", "));
    }
    let agg = query.agg.as_deref();
    let reduction = match (&query.display, &query.step, &query.max_points) {
        (Some(display), Some(step), _) => Some(format!("{display} per {step}")),
        (Some(display), None, _) => Some(display.clone()),
        // The engine refuses a step without agg before anything is drawn.
        (None, Some(step), _) => agg.map(|a| format!("{a} per {step}")),
        (None, None, Some(n)) => Some(format!("{}, ≤{n} points per series", agg.unwrap_or("avg"))),
        (None, None, None) => agg.map(|a| format!("{a} over the range")),
    };
    parts.extend(reduction);
    parts.join(" · ")
}

/// What `--measurement`, `--field`, `--tag`, `--start` and `--end` select, for messages.
fn selection_text(query: &QueryArgs) -> String {
    let mut text = query.measurement.clone();
    if let Some(field) = &query.field {
        text.push_str(&format!(" field {field}"));
    }
    if !query.tags.is_empty() {
        text.push_str(&format!(" with tags {}", query.tags.join(", ")));
    }
    match (&query.start, &query.end) {
        (Some(start), Some(end)) => text.push_str(&format!(" from {start} to {end}")),
        (Some(start), None) => text.push_str(&format!(" from {start} on")),
        (None, Some(end)) => text.push_str(&format!(" before {end}")),
        (None, None) => text.push_str(" in the whole store"),
    }
    text
}

/// Each series' name in the legend: the field and the tags that tell the series apart
/// (`usage{host=a}`); every tag for a lone series. The measurement is in the title.
fn legend_labels(series: &[SeriesAnswer]) -> Vec<String> {
    let keys: BTreeSet<&String> = series.iter().flat_map(|s| s.tags.keys()).collect();
    let distinct = |key: &String| {
        let values: BTreeSet<Option<&String>> = series.iter().map(|s| s.tags.get(key)).collect();
        values.len()
    };
    let mut varying: Vec<&String> = keys
        .into_iter()
        .filter(|key| series.len() == 1 || distinct(key) > 1)
        .collect();
    // One tag that alone tells every series apart is label enough (hostname, where region,
    // rack and datacenter vary along with it), as the dashboard's legend does.
    let fields: BTreeSet<&str> = series.iter().map(|s| s.field.as_str()).collect();
    if series.len() > 1 && fields.len() == 1 {
        if let Some(key) = telling_key(&varying, |key| distinct(key) == series.len()) {
            varying = vec![key];
        }
    }
    series
        .iter()
        .map(|s| {
            let tags: Vec<String> = varying
                .iter()
                .filter_map(|k| s.tags.get(*k).map(|v| format!("{k}={v}")))
                .collect();
            match tags.is_empty() {
                true => s.field.clone(),
                false => format!("{}{{{}}}", s.field, tags.join(",")),
            }
        })
        .collect()
}

/// Names a reader recognises a series by, preferred when several tags tell the series
/// apart. The dashboard's `crates/server/assets/dashboard/series-names.js` keeps the same
/// list.
const NAMING_KEYS: [&str; 6] = ["host", "hostname", "instance", "name", "id", "device"];

/// Of the keys that tell every series apart (`tells`), a naming one, else the first.
fn telling_key<'a>(keys: &[&'a String], tells: impl Fn(&String) -> bool) -> Option<&'a String> {
    let telling: Vec<&String> = keys.iter().copied().filter(|k| tells(k)).collect();
    NAMING_KEYS
        .iter()
        .find_map(|name| telling.iter().find(|k| k.as_str() == *name).copied())
        .or(telling.first().copied())
}

/// The value axis' caption: the field, or the fields when a few are drawn.
fn value_caption(series: &[SeriesAnswer]) -> String {
    let fields: BTreeSet<&str> = series.iter().map(|s| s.field.as_str()).collect();
    match fields.len() {
        1..=3 => fields.into_iter().collect::<Vec<_>>().join(", "),
        _ => "value".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn series(field: &str, tags: &[(&str, &str)]) -> SeriesAnswer {
        SeriesAnswer {
            measurement: "cpu".into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            field: field.into(),
            points: vec![],
        }
    }

    #[test]
    fn legend_names_what_tells_series_apart() {
        let two = [
            series("usage", &[("host", "a"), ("region", "eu")]),
            series("usage", &[("host", "b"), ("region", "eu")]),
        ];
        assert_eq!(legend_labels(&two), ["usage{host=a}", "usage{host=b}"]);
        let one = [series("usage", &[("host", "a"), ("region", "eu")])];
        assert_eq!(legend_labels(&one), ["usage{host=a,region=eu}"]);
        let devops = [
            series(
                "usage",
                &[("dc", "eu-1a"), ("hostname", "h0"), ("rack", "1")],
            ),
            series(
                "usage",
                &[("dc", "us-2b"), ("hostname", "h1"), ("rack", "1")],
            ),
        ];
        assert_eq!(
            legend_labels(&devops),
            ["usage{hostname=h0}", "usage{hostname=h1}"],
            "the host-like tag among those that tell the series apart"
        );
        let no_single = [
            series("usage", &[("dc", "x"), ("rack", "1")]),
            series("usage", &[("dc", "x"), ("rack", "2")]),
            series("usage", &[("dc", "y"), ("rack", "1")]),
        ];
        assert_eq!(
            legend_labels(&no_single),
            [
                "usage{dc=x,rack=1}",
                "usage{dc=x,rack=2}",
                "usage{dc=y,rack=1}"
            ]
        );
        let fields = [
            series("user", &[("host", "a")]),
            series("system", &[("host", "a")]),
        ];
        assert_eq!(legend_labels(&fields), ["user", "system"]);
    }
}
