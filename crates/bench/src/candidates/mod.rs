//! `tickertape-bench candidates`: storage designs for the embedded engine's
//! immutable part files, measured on the same data before one is committed to.
//!
//! The devops dataset is generated straight into one column per series (host × field),
//! once at full precision and once rounded to `--round` decimals. For each, every
//! candidate stores all columns and reads them back; a candidate that does not give back
//! every point bit for bit fails the run.
//!
//! - `codecs.rs`: the block codecs (own, pco, own times + pco values).
//! - `partfile.rs`: own part files, one sequential file with a small index.
//! - `lsm.rs`: the blocks as values of fjall, lz4 on.
//!
//! Encoding and decoding run on this one thread; fjall flushes and compacts on its own
//! background threads while the inserts run.

mod codecs;
mod lsm;
mod partfile;

use crate::dataset::{self, Shape, MAX_HOSTS, MAX_HOURS};
use anyhow::{bail, Result};
use codecs::Codec;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tickertape_core::Point;

/// Points of one series in one day: one row every 10 s.
const DAY_POINTS: usize = 24 * 360;
/// Block sizes of the own codec: a day, a middle size, and a 160-point value segment.
const OWN_BLOCK_SIZES: [usize; 3] = [DAY_POINTS, 1024, 160];
/// pco encodes at a few Mpts/s and needs long blocks to pay for its headers; 160-point
/// blocks would take most of the run's minute and are not a part-file design anyway.
const PCO_BLOCK_SIZES: [usize; 2] = [DAY_POINTS, 1024];

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hosts in the generated dataset (10 fields each, one row every 10 s).
    #[arg(long, default_value_t = 100)]
    pub hosts: usize,
    /// Hours of data to generate, from 2016-01-01T00:00:00Z.
    #[arg(long, default_value_t = 24)]
    pub hours: u64,
    /// The second dataset: values rounded to N decimals (the first is full precision).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub round: u32,
    /// Seed of the generated dataset.
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// Directory for the part files and LSM databases (a temporary directory is made in
    /// it and removed at the end). Default: the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One measured candidate on one dataset.
struct Row {
    candidate: String,
    dataset: String,
    block_points: usize,
    blocks: usize,
    bytes: u64,
    points: u64,
    encode: Duration,
    decode: Duration,
    /// LSM only: the directory after close, as `du` counts it (tables and journal).
    du: Option<u64>,
    /// LSM only: flush, major compaction and journal sync after the write.
    settle: Option<Duration>,
}

/// The day blocks' bytes per column, for one dataset.
struct Breakdown {
    dataset: String,
    points: u64,
    bytes: codecs::ColumnBytes,
}

pub async fn run(args: Args) -> Result<()> {
    tokio::task::spawn_blocking(move || measure_all(&args)).await?
}

fn measure_all(args: &Args) -> Result<()> {
    if !(1..=MAX_HOSTS).contains(&args.hosts) || !(1..=MAX_HOURS).contains(&args.hours) {
        bail!("--hosts must be 1 to {MAX_HOSTS} and --hours 1 to {MAX_HOURS}");
    }
    if args.round > 17 {
        bail!("--round takes 0 to 17 decimals");
    }
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("tickertape-candidates")
        .tempdir_in(&parent)?;
    let mut rows = Vec::new();
    let mut breakdowns = Vec::new();
    for round in [None, Some(args.round)] {
        let label = round.map_or("full precision".to_string(), |n| format!("{n} dp"));
        let started = Instant::now();
        let columns = dataset::generate_columns(Shape {
            hosts: args.hosts,
            hours: args.hours,
            seed: args.seed,
            round,
        });
        let points: u64 = columns.iter().map(|c| c.len() as u64).sum();
        eprintln!(
            "{label}: {} series, {points} points, generated in {:.1} s (not timed)",
            columns.len(),
            started.elapsed().as_secs_f64()
        );
        // Untimed warm-up: the first file written in a process ran at half speed (fresh
        // page-cache pages, a cold allocator).
        let path = work.path().join("part");
        part_file(&path, &columns, DAY_POINTS, Codec::Own, &label)?;
        for codec in Codec::ALL {
            let sizes: &[usize] = match codec {
                Codec::Own => &OWN_BLOCK_SIZES,
                Codec::Pco | Codec::OwnTimesPcoValues => &PCO_BLOCK_SIZES,
            };
            for &block_points in sizes {
                rows.push(part_file(&path, &columns, block_points, codec, &label)?);
            }
        }
        std::fs::remove_file(&path)?;
        breakdowns.push(breakdown(&columns, &label)?);
        for (block_points, value) in [
            (DAY_POINTS, lsm::Value::Encoded(Codec::Own)),
            (160, lsm::Value::Encoded(Codec::Own)),
            (160, lsm::Value::Plain),
        ] {
            let dir = work.path().join("lsm");
            rows.push(lsm_row(&dir, &columns, block_points, value, &label)?);
            std::fs::remove_dir_all(&dir)?;
        }
    }
    print_table(&rows);
    println!();
    print_breakdown(&breakdowns);
    Ok(())
}

fn part_file(
    path: &std::path::Path,
    columns: &[Vec<Point>],
    block_points: usize,
    codec: Codec,
    dataset: &str,
) -> Result<Row> {
    let started = Instant::now();
    let written = partfile::write(path, columns, block_points, codec)?;
    let encode = started.elapsed();
    let started = Instant::now();
    let back = partfile::read(path, codec)?;
    let decode = started.elapsed();
    let candidate = format!("part file, {}", codec.name());
    check_same(&candidate, columns, &back)?;
    Ok(Row {
        candidate,
        dataset: dataset.to_string(),
        block_points,
        blocks: written.blocks,
        bytes: written.bytes,
        points: count(columns),
        encode,
        decode,
        du: None,
        settle: None,
    })
}

fn lsm_row(
    dir: &std::path::Path,
    columns: &[Vec<Point>],
    block_points: usize,
    value: lsm::Value,
    dataset: &str,
) -> Result<Row> {
    let m = lsm::measure(dir, columns, block_points, value)?;
    let candidate = match value {
        lsm::Value::Encoded(codec) => format!("fjall (lz4), {} values", codec.name()),
        lsm::Value::Plain => "fjall (lz4), plain t/v arrays".to_string(),
    };
    check_same(&candidate, columns, &m.columns)?;
    Ok(Row {
        candidate,
        dataset: dataset.to_string(),
        block_points,
        blocks: m.blocks,
        bytes: m.tables_bytes,
        points: count(columns),
        encode: m.write,
        decode: m.read,
        du: Some(m.disk_bytes),
        settle: Some(m.settle),
    })
}

fn count(columns: &[Vec<Point>]) -> u64 {
    columns.iter().map(|c| c.len() as u64).sum()
}

/// Every point back, same time and same value bits, in the same order.
fn check_same(candidate: &str, expected: &[Vec<Point>], got: &[Vec<Point>]) -> Result<()> {
    let bits = |c: &[Vec<Point>]| -> Vec<(i64, u64)> {
        c.iter()
            .flatten()
            .map(|p| (p.time, p.value.to_bits()))
            .collect()
    };
    let lens = |c: &[Vec<Point>]| c.iter().map(Vec::len).collect::<Vec<_>>();
    if lens(expected) != lens(got) || bits(expected) != bits(got) {
        bail!("{candidate}: the points read back differ from the points written");
    }
    Ok(())
}

fn breakdown(columns: &[Vec<Point>], dataset: &str) -> Result<Breakdown> {
    let mut bytes = codecs::ColumnBytes::default();
    for day in columns.iter().flat_map(|c| c.chunks(DAY_POINTS)) {
        bytes.add(codecs::ColumnBytes::of(day)?);
    }
    Ok(Breakdown {
        dataset: dataset.to_string(),
        points: count(columns),
        bytes,
    })
}

fn print_table(rows: &[Row]) {
    println!("| candidate | dataset | points/block | blocks | bytes | bytes/point | encode Mpts/s | decode Mpts/s | du after close, B/point | flush+compact s |");
    println!("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    let mpts = |points: u64, d: Duration| points as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    for r in rows {
        let per_point = |b: u64| b as f64 / r.points as f64;
        println!(
            "| {} | {} | {} | {} | {} | {:.3} | {:.1} | {:.1} | {} | {} |",
            r.candidate,
            r.dataset,
            r.block_points,
            r.blocks,
            r.bytes,
            per_point(r.bytes),
            mpts(r.points, r.encode),
            mpts(r.points, r.decode),
            r.du.map_or("-".to_string(), |d| format!("{:.3}", per_point(d))),
            r.settle
                .map_or("-".to_string(), |s| format!("{:.2}", s.as_secs_f64())),
        );
    }
}

/// Bytes per point of each column in day blocks, index and headers of the part file aside.
fn print_breakdown(breakdowns: &[Breakdown]) {
    println!("| day blocks, B/point | own block (times + values) | own block of the times, values 0.0 | pco times | pco values | pco times + values |");
    println!("|---|--:|--:|--:|--:|--:|");
    for b in breakdowns {
        let per_point = |v: u64| format!("{:.3}", v as f64 / b.points as f64);
        let c = b.bytes;
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            b.dataset,
            per_point(c.own_block),
            per_point(c.own_times_and_zeros),
            per_point(c.pco_times),
            per_point(c.pco_values),
            per_point(c.pco_times + c.pco_values),
        );
    }
}
