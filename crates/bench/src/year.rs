//! `tickertape-bench year`: a year of a MongoDB store, day by day, as collections, indexes
//! and (sharded) chunks — computed from the product's own naming code
//! (`tickertape_mongodb::naming`: which collection a day's points and rollups go to, the
//! indexes each kind of collection gets, the fixed collections; `shard_key_of`: which are
//! sharded and on what). No server is involved.
//!
//! Two loads: Telegraf-shaped (60 measurements, `--telegraf-hosts` hosts, 5 fields each,
//! a point every 10 s) and Prometheus-shaped (`--metric-names` metric names, each a
//! measurement, `--series-per-name` series, a point every 15 s), both with the default
//! 1h and 1d rollups. Layout 3 names collections by time alone, so both give the same
//! catalog; what the load changes is the bytes, hence the chunks. For comparison, layout
//! 2's count is given by its rule (a value collection per measurement and day, a rollup
//! collection per measurement, resolution and day, two secondary indexes on values),
//! which is no longer in the product.
//!
//! Chunks, for a cluster of `--shards` shards: every partition collection is sharded on
//! a hashed key before its period starts (`admin shard`), so MongoDB pre-splits it into
//! `--initial-chunks-per-shard` × shards chunks; a collection whose data passes that many
//! chunk sizes (128 MiB) has `data / chunk size` chunks instead. Data is points ×
//! `--bytes-per-point` (an assumption: a folded document's codec block and fields; fresh
//! documents cost more until folded), and rollup documents × `--rollup-doc-bytes`.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde_json::json;
use tickertape_core::rollup::Resolution;
use tickertape_mongodb::naming::{
    rollup_collection, rollup_indexes, value_collection, value_indexes, Periods,
    DEFAULT_ROLLUP_SLICES, DEFAULT_VALUE_SLICES, FIXED_COLLECTIONS,
};
use tickertape_mongodb::shard_key_of;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Days simulated.
    #[arg(long, default_value_t = 365)]
    days: i64,
    /// Shards of the cluster the chunks are counted for.
    #[arg(long, default_value_t = 16)]
    shards: u64,
    /// Hosts of the Telegraf-shaped load (60 measurements × 5 fields each).
    #[arg(long, default_value_t = 100)]
    telegraf_hosts: u64,
    /// Metric names of the Prometheus-shaped load (each a measurement).
    #[arg(long, default_value_t = 1_000)]
    metric_names: u64,
    /// Series of each metric name.
    #[arg(long, default_value_t = 50)]
    series_per_name: u64,
    /// Slices (days) per value collection.
    #[arg(long, default_value_t = DEFAULT_VALUE_SLICES)]
    value_slices: u32,
    /// Slices (days) per rollup collection.
    #[arg(long, default_value_t = DEFAULT_ROLLUP_SLICES)]
    rollup_slices: u32,
    /// Bytes a stored point costs (folded).
    #[arg(long, default_value_t = 3)]
    bytes_per_point: u64,
    /// Bytes of one rollup document (one series, one day, its slots).
    #[arg(long, default_value_t = 400)]
    rollup_doc_bytes: u64,
    /// Chunks per shard of a hashed collection sharded empty.
    #[arg(long, default_value_t = 2)]
    initial_chunks_per_shard: u64,
    /// Chunk size in MiB (MongoDB 6.0+: 128).
    #[arg(long, default_value_t = 128)]
    chunk_mib: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

const DAY_NS: i64 = 86_400 * 1_000_000_000;
/// The first day: 2026-01-01T00:00:00Z.
const FIRST_DAY_NS: i64 = 20_454 * DAY_NS;

struct Load {
    name: &'static str,
    measurements: u64,
    series: u64,
    interval_s: u64,
}

/// A partition collection and what a year put in it.
#[derive(Default)]
struct Held {
    bytes: u64,
}

pub async fn run(args: Args) -> Result<()> {
    let Some(periods) = Periods::new(DAY_NS, args.value_slices, args.rollup_slices) else {
        bail!("--value-slices and --rollup-slices must be at least 1");
    };
    if args.shards == 0 || args.days <= 0 {
        bail!("--shards and --days must be at least 1");
    }
    let loads = [
        Load {
            name: "telegraf",
            measurements: 60,
            series: args.telegraf_hosts * 60 * 5,
            interval_s: 10,
        },
        Load {
            name: "prometheus",
            measurements: args.metric_names,
            series: args.metric_names * args.series_per_name,
            interval_s: 15,
        },
    ];
    let rollups = [Resolution::HOUR, Resolution::DAY];
    let chunk_bytes = args.chunk_mib << 20;
    let mut rows = Vec::new();
    for load in &loads {
        // The collections a year of days creates, named by the product, with their data.
        let mut held: BTreeMap<String, Held> = BTreeMap::new();
        let points_per_day = load.series * 86_400 / load.interval_s;
        for day in 0..args.days {
            let t = FIRST_DAY_NS + day * DAY_NS;
            let values = value_collection(periods.values().start_of(t));
            held.entry(values).or_default().bytes += points_per_day * args.bytes_per_point;
            for r in rollups {
                let name = rollup_collection(r.nanos(), periods.rollups().start_of(t));
                held.entry(name).or_default().bytes += load.series * args.rollup_doc_bytes;
            }
        }
        let mut collections = FIXED_COLLECTIONS.len() as u64;
        let mut indexes: u64 = FIXED_COLLECTIONS.iter().map(|(_, i)| 1 + *i as u64).sum();
        let (mut sharded_indexes, mut chunks) = (0u64, 0u64);
        for (name, h) in &held {
            collections += 1;
            let secondary = match name.starts_with("sv.") {
                true => value_indexes().len(),
                false => rollup_indexes().len(),
            };
            indexes += 1 + secondary as u64;
            match shard_key_of(name).0 {
                Some(key) if key.values().any(|v| v.as_str() == Some("hashed")) => {
                    sharded_indexes += 1; // the hashed key's own index
                    let presplit = args.initial_chunks_per_shard * args.shards;
                    chunks += presplit.max(h.bytes.div_ceil(chunk_bytes));
                }
                _ => bail!("{name}: the plan gives no hashed shard key; this count assumes one"),
            }
        }
        // Layout 2's rule, for comparison.
        let days = args.days as u64;
        let v2_collections = load.measurements * days * (1 + rollups.len() as u64);
        let v2_indexes = load.measurements * days * 3 + load.measurements * days * 2;
        rows.push(json!({
            "load": load.name,
            "measurements": load.measurements,
            "series": load.series,
            "days": args.days,
            "collections": collections,
            "indexes": indexes,
            "collections_and_indexes": collections + indexes,
            "sharded": {
                "shards": args.shards,
                "indexes": indexes + sharded_indexes,
                "collections_and_indexes": collections + indexes + sharded_indexes,
                "chunks": chunks,
            },
            "layout2_by_rule": {
                "collections": v2_collections,
                "indexes": v2_indexes,
            },
        }));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{} days, value collections of {} days, rollup collections of {} days (1h, 1d kept)",
        args.days, args.value_slices, args.rollup_slices
    );
    println!(
        "| load | measurements | series | collections | indexes | collections + indexes | \
         sharded on {}: + hashed indexes | chunks | layout 2 by its rule |",
        args.shards
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} + {} |",
            r["load"].as_str().unwrap_or_default(),
            r["measurements"],
            r["series"],
            r["collections"],
            r["indexes"],
            r["collections_and_indexes"],
            r["sharded"]["collections_and_indexes"],
            r["sharded"]["chunks"],
            r["layout2_by_rule"]["collections"],
            r["layout2_by_rule"]["indexes"],
        );
    }
    Ok(())
}
