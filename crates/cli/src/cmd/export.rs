//! `tickertape admin export`: every stored raw point of a store as InfluxDB line protocol
//! (nanosecond timestamps), one line per point — the way from one store to another
//! (`tickertape import` reads it back; docs/scale-out.md).
//!
//! It reads through the engine, as a query does, so both layouts (value segments and
//! buckets) and both backends export alike: the (measurement, field) pairs, each
//! measurement's series, and each series' raw points over all time. Rollups are not
//! exported: the store that imports the points derives its own.

use crate::store::{DatabaseArg, StoreArgs};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeSet;
use std::io::Write;
use tickertape_backend::SeriesInfo;
use tickertape_core::lineproto::{
    escape_field_key, escape_measurement, escape_tag_key, escape_tag_value, format_field_value,
    FieldValue, MAX_TIMESTAMP, MIN_TIMESTAMP,
};
use tickertape_core::model::is_stale_marker;
use tickertape_core::schema::Layout;
use tickertape_core::time::format_duration;
use tickertape_core::SeriesSelector;
use tickertape_engine::{Engine, QueryLimits};

/// Series whose points are read (and held) at once: the engine reads them concurrently,
/// and a batch is written out before the next is read, so memory is bounded by the points
/// of this many series rather than by the store.
const SERIES_PER_READ: usize = 16;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub database: DatabaseArg,
    /// Where to write the line protocol: a file (created or truncated), or `-` for
    /// standard output.
    #[arg(long, default_value = "-")]
    pub out: String,
    /// Only this measurement; repeat for several. Default: every measurement.
    #[arg(long, short)]
    pub measurement: Vec<String>,
}

#[derive(Debug, Default)]
struct Totals {
    series: usize,
    points: usize,
    stale_markers: usize,
}

pub async fn run(args: Args) -> Result<()> {
    // An export reads everything by design: the per-query limits of `serve` do not apply.
    let engine = args
        .database
        .engine(&args.store)
        .await?
        .with_query_limits(QueryLimits::UNLIMITED);
    let measurements = measurements(&engine, &args.measurement).await?;
    check_layouts(&engine, &measurements).await?;
    let mut series = Vec::new();
    for m in &measurements {
        let selector = SeriesSelector {
            measurement: m.clone(),
            ..SeriesSelector::default()
        };
        series.extend(engine.list_series(&selector).await?);
    }

    let mut out: Box<dyn Write> = match args.out.as_str() {
        "-" => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        path => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(path).with_context(|| format!("cannot create {path}"))?,
        )),
    };
    let bar = ProgressBar::new(series.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} series, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message("export");
    let mut totals = Totals::default();
    for batch in series.chunks(SERIES_PER_READ) {
        let points = engine
            .read_raw(batch, MIN_TIMESTAMP, MAX_TIMESTAMP)
            .await
            .context("reading raw points")?;
        for (info, points) in batch.iter().zip(points) {
            write_series(&mut out, info, &points, &mut totals)?;
        }
        bar.inc(batch.len() as u64);
    }
    out.flush()
        .with_context(|| format!("cannot write {}", args.out))?;
    bar.finish_and_clear();
    let stale = match totals.stale_markers {
        0 => String::new(),
        n => format!("; {n} stale markers left out (line protocol cannot express NaN)"),
    };
    eprintln!(
        "exported {} points of {} series in {} measurements to {}{stale}",
        totals.points,
        totals.series,
        measurements.len(),
        match args.out.as_str() {
            "-" => "standard output",
            path => path,
        }
    );
    Ok(())
}

/// The measurements to export: those asked for (each must have a series), or all.
async fn measurements(engine: &Engine, asked: &[String]) -> Result<Vec<String>> {
    let stored: BTreeSet<String> = engine
        .list_fields()
        .await?
        .into_iter()
        .map(|(measurement, _field)| measurement)
        .collect();
    if asked.is_empty() {
        return Ok(stored.into_iter().collect());
    }
    let asked: BTreeSet<String> = asked.iter().cloned().collect();
    if let Some(missing) = asked.iter().find(|m| !stored.contains(*m)) {
        bail!("--measurement {missing:?}: the store has no series of this measurement");
    }
    Ok(asked.into_iter().collect())
}

/// Refuses a measurement whose raw points lie in bucket documents that the schema does
/// not read as such (no `layout = "buckets"`, or another interval): the store does not
/// record a measurement's layout, `--config` says it, and without it those points would be
/// missing from the export without a word.
async fn check_layouts(engine: &Engine, measurements: &[String]) -> Result<()> {
    for (name, interval_ns) in engine.stored_bucket_intervals().await? {
        if !measurements.contains(&name) {
            continue;
        }
        let name = name.as_str();
        match engine.schema().for_measurement(name).layout {
            Layout::Buckets { interval_ns: i } if i == interval_ns => {}
            _ => bail!(
                "measurement {name:?} is stored in buckets of {} slots, which the schema does \
                 not say (layout = \"buckets\", interval = \"{0}\"): give the --config the store \
                 is written with; nothing was exported",
                format_duration(interval_ns)
            ),
        }
    }
    Ok(())
}

/// One line per point: `measurement,tag=v,… field=value time`. Stale markers (Prometheus'
/// NaN) are left out and counted; any other value the protocol cannot carry is refused.
fn write_series(
    out: &mut dyn Write,
    info: &SeriesInfo,
    points: &[tickertape_core::Point],
    totals: &mut Totals,
) -> Result<()> {
    let key = &info.key;
    let unexpressible = |e| anyhow::anyhow!("series {key}: {e}: it cannot be exported");
    let mut prefix = escape_measurement(&key.measurement)
        .map_err(unexpressible)?
        .into_owned();
    for (k, v) in &key.tags {
        prefix.push(',');
        prefix.push_str(&escape_tag_key(k).map_err(unexpressible)?);
        prefix.push('=');
        prefix.push_str(&escape_tag_value(v).map_err(unexpressible)?);
    }
    prefix.push(' ');
    prefix.push_str(&escape_field_key(&key.field).map_err(unexpressible)?);
    prefix.push('=');
    totals.series += 1;
    for p in points {
        if is_stale_marker(p.value) {
            totals.stale_markers += 1;
            continue;
        }
        if !(MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&p.time) {
            bail!(
                "series {key}: time {} is outside line protocol's range; nothing after it \
                 was exported",
                p.time
            );
        }
        // `format_field_value` writes the shortest text that parses back bit for bit, and
        // refuses NaN and infinity (which `import` would refuse too).
        let value = format_field_value(&key.field, &FieldValue::Float(p.value)).map_err(|e| {
            anyhow::anyhow!(
                "series {key} at time {}: {e}; nothing after it was exported",
                p.time
            )
        })?;
        writeln!(out, "{prefix}{value} {}", p.time).context("cannot write the export")?;
        totals.points += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::model::STALE_NAN_BITS;
    use tickertape_core::{Point, SeriesId, SeriesKey};

    fn info(measurement: &str, tags: &[(&str, &str)], field: &str) -> SeriesInfo {
        let tags = tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SeriesInfo {
            id: SeriesId(1),
            key: SeriesKey::new(measurement, tags, field),
        }
    }

    fn export(info: &SeriesInfo, points: &[Point]) -> Result<(String, Totals)> {
        let (mut out, mut totals) = (Vec::new(), Totals::default());
        write_series(&mut out, info, points, &mut totals)?;
        Ok((String::from_utf8(out).unwrap(), totals))
    }

    #[test]
    fn lines_escape_names_and_leave_stale_markers_out() {
        let s = info("cpu load", &[("host", "a b"), ("dc", "x,y=z")], "us er");
        let points = [
            Point::new(1, 0.1 + 0.2),
            Point::new(2, f64::from_bits(STALE_NAN_BITS)),
            Point::new(3, -2.0),
        ];
        let (text, totals) = export(&s, &points).unwrap();
        assert_eq!(
            text,
            "cpu\\ load,dc=x\\,y\\=z,host=a\\ b us\\ er=0.30000000000000004 1\n\
             cpu\\ load,dc=x\\,y\\=z,host=a\\ b us\\ er=-2.0 3\n"
        );
        assert_eq!(
            (totals.series, totals.points, totals.stale_markers),
            (1, 2, 1)
        );
    }

    #[test]
    fn values_and_names_line_protocol_cannot_carry_are_refused() {
        let s = info("m", &[], "f");
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = export(&s, &[Point::new(7, v)]).unwrap_err().to_string();
            assert!(e.contains("m{}#f") && e.contains("time 7"), "{e}");
        }
        let e = export(&info("m", &[("k", r"C:\")], "f"), &[Point::new(1, 1.0)]);
        assert!(e.unwrap_err().to_string().contains("cannot be exported"));
    }
}
