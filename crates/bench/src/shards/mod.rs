//! `tickertape-bench shards`: a simulated sharded MongoDB cluster under an MMS-sized load,
//! fed with the collection names and shard-key values the store writes.
//!
//! What is simulated, and what is not:
//! - **Names and keys from the product.** Value documents of every measurement on day `d`
//!   go to the value collection of its period (`tickertape_mongodb::naming`: `sv.<period
//!   start ns>`, two weeks by default); the key of each such name is asked of
//!   `tickertape_mongodb::shard_key_of`, and the run stops if it is not `{s: "hashed"}`,
//!   the only key this model routes. Series ids are issued 1, 2, 3 … as series register, as
//!   the `counters` document issues them.
//! - **MongoDB's hash.** A hashed key's value is `BSONElementHasher::hash64` with seed 0:
//!   md5 over the seed (int32, little-endian), the element's canonical type (int32: 10 for
//!   every number) and the number as int64 (little-endian); the first 8 bytes of the digest,
//!   little-endian, as an int64. The tests pin it to MongoDB's own `_hashBSONElement`
//!   figures (its jstests, seed 1).
//! - **Load in aggregate.** Every series sends one body of `points_per_body` points per
//!   `interval × points_per_body` (one value document per series and body); a step of the
//!   simulation is one body interval, and each chunk counts the documents and bytes of its
//!   live series per step instead of simulating them one by one. Sizes are of inserted
//!   documents, before any fold (a fold shrinks every chunk of a partition alike).
//! - **Cluster.** Each partition is sharded before its day starts (`admin shard` creates it
//!   with `shardCollection`): on an empty collection with a hashed key MongoDB pre-splits
//!   the hash range into `initial_chunks_per_shard` (default 2, MongoDB's default for an
//!   empty hashed collection) × shards equal chunks, dealt round-robin over the shards. A
//!   chunk above the chunk size (128 MiB, MongoDB 6.0's default) splits at the key that
//!   halves its bytes (the autosplitter of MongoDB ≤ 6.0.2). The balancer is MongoDB 6.0's
//!   (data size, per collection): a collection is balanced while the data of its fullest
//!   and emptiest shard differ by less than 3 × the chunk size; otherwise a chunk (the
//!   donor's lowest) moves from the fullest to the emptiest. One migration per shard per
//!   round, a round every `balancer_round_minutes`; a move is instantaneous here.
//! - **Not simulated**: the `sr.…` rollups and `bk.…` buckets, the fixed collections, the
//!   time a migration takes and its cost, jumbo chunks other than a one-series chunk.

use std::collections::BTreeSet;

use anyhow::{bail, Result};
use mongodb::bson::doc;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

mod md5;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Shards of the cluster.
    #[arg(long, default_value_t = 16)]
    shards: usize,
    /// Hosts at any time (MMS: 25,000).
    #[arg(long, default_value_t = 25_000)]
    hosts: u32,
    /// Metrics per host (series per host); spread over --measurements measurements.
    #[arg(long, default_value_t = 100)]
    metrics: u32,
    /// Measurements (they share each period's `sv.<start>` collection).
    #[arg(long, default_value_t = 10)]
    measurements: u32,
    /// Seconds between points.
    #[arg(long, default_value_t = 10)]
    interval_s: u64,
    /// Points of one series per body: one value document each.
    #[arg(long, default_value_t = 6)]
    points_per_body: u64,
    /// Days simulated.
    #[arg(long, default_value_t = 2)]
    days: u64,
    /// Percent of the hosts replaced by new ones (with new series ids) at each replacement.
    #[arg(long, default_value_t = 5.0)]
    replace_percent: f64,
    /// Hours between replacements.
    #[arg(long, default_value_t = 6)]
    replace_every_hours: u64,
    /// Bytes of one value document of `points_per_body` points (BSON: _id {s, w}, s, u,
    /// lo/lv/lw, hi/hv/hw, n, z of ~30 bytes, d, a ≈ 200).
    #[arg(long, default_value_t = 200)]
    doc_bytes: u64,
    /// Chunk size in MiB (MongoDB 6.0+: 128).
    #[arg(long, default_value_t = 128)]
    chunk_mib: u64,
    /// Chunks per shard on shardCollection of an empty collection with a hashed key.
    #[arg(long, default_value_t = 2)]
    initial_chunks_per_shard: usize,
    /// Simulated minutes between balancer rounds.
    #[arg(long, default_value_t = 1)]
    balancer_round_minutes: u64,
    /// Series sampled for the one-series queries each hour.
    #[arg(long, default_value_t = 500)]
    query_sample: usize,
    #[arg(long, default_value_t = 23)]
    seed: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// The first day's start, in ns: 2026-11-02T00:00:00Z.
const EPOCH_NS: i64 = 1_793_577_600 * 1_000_000_000;
const DAY_NS: i64 = 86_400 * 1_000_000_000;
/// The balancer's threshold, in chunk sizes (MongoDB 6.0+: 3 × the range size).
const THRESHOLD_CHUNKS: u64 = 3;

/// MongoDB's hashed-index value of an int64 (or any number that is an integer), seed 0.
pub fn mongo_hash_i64(value: i64) -> i64 {
    mongo_hash_i64_seeded(value, 0)
}

fn mongo_hash_i64_seeded(value: i64, seed: i32) -> i64 {
    /// `canonicalizeBSONType` of every numeric type.
    const NUMBER_CANONICAL_TYPE: i32 = 10;
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&seed.to_le_bytes());
    bytes[4..8].copy_from_slice(&NUMBER_CANONICAL_TYPE.to_le_bytes());
    bytes[8..].copy_from_slice(&value.to_le_bytes());
    let digest = md5::digest(&bytes);
    i64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// A series: its id, hashed key and the minutes it writes, `[from, until)`.
#[derive(Clone, Debug)]
struct Series {
    hash: i64,
    from: u64,
    until: u64,
}

impl Series {
    /// Bodies (documents) it wrote in `[start, now)`, in steps.
    fn docs_between(&self, start: u64, now: u64) -> u64 {
        let a = self.from.max(start);
        let b = self.until.min(now);
        b.saturating_sub(a)
    }
}

/// A chunk: the hashed-key range `[lo, hi)` (as i128, so that `hi` can be past i64::MAX).
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub lo: i128,
    pub hi: i128,
    pub shard: usize,
    pub bytes: u64,
    /// Series of the chunk writing now.
    alive: u64,
    /// One series: cannot split.
    jumbo: bool,
}

/// One partition collection: its members (series that write into it, by hash) and chunks.
pub struct Collection {
    pub name: String,
    start: u64,
    end: u64,
    /// (hash, index into the series list), sorted.
    members: Vec<(i64, usize)>,
    pub chunks: Vec<Chunk>,
}

impl Collection {
    /// `shardCollection` of an empty collection with a hashed key: `n` equal chunks of the
    /// hash range, dealt round-robin over `shards` shards.
    pub fn presplit(name: String, start: u64, end: u64, n: usize, shards: usize) -> Self {
        let span: i128 = 1i128 << 64;
        let chunks = (0..n)
            .map(|k| Chunk {
                lo: i64::MIN as i128 + span * k as i128 / n as i128,
                hi: i64::MIN as i128 + span * (k as i128 + 1) / n as i128,
                shard: k % shards,
                bytes: 0,
                alive: 0,
                jumbo: false,
            })
            .collect();
        Self {
            name,
            start,
            end,
            members: Vec::new(),
            chunks,
        }
    }

    fn member_range(&self, c: &Chunk) -> std::ops::Range<usize> {
        let a = self.members.partition_point(|m| (m.0 as i128) < c.lo);
        let b = self.members.partition_point(|m| (m.0 as i128) < c.hi);
        a..b
    }

    /// The chunk holding a hashed key.
    pub fn chunk_of(&self, hash: i64) -> &Chunk {
        let i = self.chunks.partition_point(|c| c.hi <= hash as i128);
        &self.chunks[i]
    }

    /// Recount each chunk's live series at step `now`.
    fn recount(&mut self, series: &[Series], now: u64) {
        for i in 0..self.chunks.len() {
            let r = self.member_range(&self.chunks[i]);
            self.chunks[i].alive = self.members[r]
                .iter()
                .filter(|m| series[m.1].from <= now && now < series[m.1].until)
                .count() as u64;
        }
    }

    /// Split every chunk above `limit` bytes at the key that halves its bytes, until none
    /// is (or it holds one series). Returns the splits made.
    fn split_oversized(&mut self, series: &[Series], now: u64, doc_bytes: u64, limit: u64) -> u64 {
        let mut splits = 0;
        let mut i = 0;
        while i < self.chunks.len() {
            if self.chunks[i].bytes <= limit || self.chunks[i].jumbo {
                i += 1;
                continue;
            }
            let r = self.member_range(&self.chunks[i]);
            let sizes: Vec<u64> = self.members[r.clone()]
                .iter()
                .map(|m| series[m.1].docs_between(self.start, now + 1) * doc_bytes)
                .collect();
            let total: u64 = sizes.iter().sum();
            let mut acc = 0;
            let mut cut = 0;
            for (k, s) in sizes.iter().enumerate() {
                if acc >= total / 2 {
                    break;
                }
                acc += s;
                cut = k + 1;
            }
            // The split key must lie strictly inside the chunk: a distinct hash after `lo`.
            let cut = cut.min(sizes.len() - 1).max(1);
            let key = self.members.get(r.start + cut).map(|m| m.0 as i128);
            let Some(key) = key.filter(|k| *k > self.chunks[i].lo && sizes.len() > 1) else {
                self.chunks[i].jumbo = true;
                i += 1;
                continue;
            };
            let lower_bytes: u64 = sizes[..cut].iter().sum();
            let old = self.chunks[i].clone();
            let alive_of = |range: std::ops::Range<usize>| {
                self.members[range]
                    .iter()
                    .filter(|m| series[m.1].from <= now && now < series[m.1].until)
                    .count() as u64
            };
            let lower = Chunk {
                hi: key,
                bytes: lower_bytes,
                alive: alive_of(r.start..r.start + cut),
                ..old.clone()
            };
            let upper = Chunk {
                lo: key,
                bytes: total - lower_bytes,
                alive: alive_of(r.start + cut..r.end),
                ..old
            };
            self.chunks[i] = lower;
            self.chunks.insert(i + 1, upper);
            splits += 1;
        }
        splits
    }

    /// Bytes per shard.
    pub fn bytes_by_shard(&self, shards: usize) -> Vec<u64> {
        let mut out = vec![0; shards];
        for c in &self.chunks {
            out[c.shard] += c.bytes;
        }
        out
    }
}

/// One balancer round over `collections`: for each, in order, if the data of its fullest and
/// emptiest shard not yet in a migration this round differ by more than `threshold` bytes,
/// move the fullest shard's lowest chunk to the emptiest. Returns the moves made.
pub fn balancer_round(collections: &mut [Collection], shards: usize, threshold: u64) -> u64 {
    let mut busy = vec![false; shards];
    let mut moves = 0;
    for coll in collections.iter_mut() {
        let bytes = coll.bytes_by_shard(shards);
        let free = || (0..shards).filter(|s| !busy[*s]);
        let (Some(donor), Some(recipient)) = (
            free().max_by_key(|s| (bytes[*s], std::cmp::Reverse(*s))),
            free().min_by_key(|s| (bytes[*s], *s)),
        ) else {
            break;
        };
        if donor == recipient || bytes[donor] - bytes[recipient] <= threshold {
            continue;
        }
        if let Some(c) = coll
            .chunks
            .iter_mut()
            .find(|c| c.shard == donor && !c.jumbo)
        {
            c.shard = recipient;
            busy[donor] = true;
            busy[recipient] = true;
            moves += 1;
        }
    }
    moves
}

/// `max / mean` of some counts (1 when all are 0).
fn max_over_mean(xs: &[u64]) -> f64 {
    let sum: u64 = xs.iter().sum();
    if sum == 0 {
        return 1.0;
    }
    let max = *xs.iter().max().expect("non-empty") as f64;
    max / (sum as f64 / xs.len() as f64)
}

/// One hour's figures.
struct Hour {
    write_share: f64,
    chunks: f64,
    chunks_total: usize,
    data_share: f64,
}

pub async fn run(args: Args) -> Result<()> {
    let started = std::time::Instant::now();
    let step_s = args.interval_s * args.points_per_body;
    if args.shards == 0
        || args.measurements == 0
        || !args.metrics.is_multiple_of(args.measurements)
        || step_s == 0
        || !3600u64.is_multiple_of(step_s)
        || args.replace_every_hours == 0
        || args.initial_chunks_per_shard == 0
    {
        bail!(
            "--shards, --measurements, --replace-every-hours and --initial-chunks-per-shard \
             must be ≥ 1, --metrics a multiple of --measurements, and --interval-s × \
             --points-per-body (one body) a divisor of an hour"
        );
    }
    let steps_per_hour = 3600 / step_s;
    let steps_per_day = 86_400 / step_s;
    let total_steps = steps_per_day * args.days;
    let fields = args.metrics / args.measurements;
    let limit = args.chunk_mib << 20;
    let threshold = THRESHOLD_CHUNKS * limit;
    let round_steps = (args.balancer_round_minutes * 60 / step_s).max(1);
    let mut rng = StdRng::seed_from_u64(args.seed);

    // Series register host by host, measurement by measurement, field by field.
    let mut series: Vec<Series> = Vec::new();
    let mut hosts: Vec<Vec<usize>> = Vec::new();
    let register_host = |series: &mut Vec<Series>, from: u64| -> Vec<usize> {
        let mut own = Vec::with_capacity(args.metrics as usize);
        for _ in 1..=args.measurements {
            for _ in 0..fields {
                let id = series.len() as i64 + 1;
                own.push(series.len());
                series.push(Series {
                    hash: mongo_hash_i64(id),
                    from,
                    until: u64::MAX,
                });
            }
        }
        own
    };
    for _ in 0..args.hosts {
        hosts.push(register_host(&mut series, 0));
    }

    let mut collections: Vec<Collection> = Vec::new();
    let (mut splits, mut moves) = (0u64, 0u64);
    let mut hours: Vec<Hour> = Vec::new();
    let mut docs_by_shard = vec![0u64; args.shards];
    let (mut query_max, mut query_24h_max) = (0usize, 0usize);
    // The largest gap between a collection's fullest and emptiest shard seen at an hour's
    // end: how far the balancer's threshold was.
    let mut spread_max = 0u64;
    let replace_steps = args.replace_every_hours * steps_per_hour;

    for step in 0..total_steps {
        // A period's collection, sharded by `admin shard` before its first write.
        if step % steps_per_day == 0 {
            let day_start = EPOCH_NS + (step / steps_per_day) as i64 * DAY_NS;
            let periods = tickertape_mongodb::naming::Periods::new(
                DAY_NS,
                tickertape_mongodb::naming::DEFAULT_VALUE_SLICES,
                tickertape_mongodb::naming::DEFAULT_ROLLUP_SLICES,
            )
            .expect("day slices");
            let period = periods.values().start_of(day_start);
            let name = tickertape_mongodb::naming::value_collection(period);
            if collections.iter().all(|c| c.name != name) {
                let (key, _) = tickertape_mongodb::shard_key_of(&name);
                if key != Some(doc! { "s": "hashed" }) {
                    bail!(
                        "{name}: the plan's key is {key:?}; this model routes {{s: hashed}} only"
                    );
                }
                let days_left = (periods.values().clamped_end_of(period) - day_start) / DAY_NS;
                let end = step + days_left as u64 * steps_per_day;
                let n = args.initial_chunks_per_shard * args.shards;
                let mut c = Collection::presplit(name, step, end, n, args.shards);
                c.members = series
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.until > step)
                    .map(|(i, s)| (s.hash, i))
                    .collect();
                c.members.sort_unstable();
                c.recount(&series, step);
                collections.push(c);
            }
        }
        // Hosts replaced: the old ones stop, new ones register new, higher ids.
        if step > 0 && step % replace_steps == 0 {
            let n = (args.hosts as f64 * args.replace_percent / 100.0).round() as usize;
            let gone: Vec<usize> = (0..hosts.len())
                .collect::<Vec<_>>()
                .choose_multiple(&mut rng, n)
                .copied()
                .collect();
            for h in gone {
                for &s in &hosts[h] {
                    series[s].until = step;
                }
                hosts[h] = register_host(&mut series, step);
            }
            for c in collections
                .iter_mut()
                .filter(|c| c.start <= step && step < c.end)
            {
                let known: BTreeSet<usize> = c.members.iter().map(|x| x.1).collect();
                let new = series
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| s.from == step && !known.contains(i));
                let new: Vec<(i64, usize)> = new.map(|(i, s)| (s.hash, i)).collect();
                c.members.extend(new);
                c.members.sort_unstable();
                c.recount(&series, step);
            }
        }
        // One body per live series: its document lands in its chunk's shard.
        for c in collections
            .iter_mut()
            .filter(|c| c.start <= step && step < c.end)
        {
            for chunk in &mut c.chunks {
                chunk.bytes += chunk.alive * args.doc_bytes;
                docs_by_shard[chunk.shard] += chunk.alive;
            }
            splits += c.split_oversized(&series, step, args.doc_bytes, limit);
        }
        if step % round_steps == round_steps - 1 {
            moves += balancer_round(&mut collections, args.shards, threshold);
        }
        if step % steps_per_hour == steps_per_hour - 1 {
            let now = step + 1;
            let mut chunks = vec![0u64; args.shards];
            let mut data = vec![0u64; args.shards];
            for c in &collections {
                let b = c.bytes_by_shard(args.shards);
                let gap = b.iter().max().expect("shards") - b.iter().min().expect("shards");
                spread_max = spread_max.max(gap);
                for k in &c.chunks {
                    chunks[k.shard] += 1;
                    data[k.shard] += k.bytes;
                }
            }
            // One-series queries: the last hour, the day so far, the last 24 hours.
            let live: Vec<&Series> = (0..args.query_sample)
                .map(|_| &series[rng.gen_range(0..series.len())])
                .filter(|s| s.from < now && s.until >= now)
                .collect();
            for s in live {
                let touched = |from: u64| -> usize {
                    let shards: BTreeSet<usize> = collections
                        .iter()
                        .filter(|c| c.start < now && c.end > from)
                        .map(|c| c.chunk_of(s.hash).shard)
                        .collect();
                    shards.len()
                };
                let day_start = now - 1 - (now - 1) % steps_per_day;
                let hour = now.saturating_sub(steps_per_hour);
                query_max = query_max
                    .max(touched(hour.max(day_start)))
                    .max(touched(day_start));
                query_24h_max = query_24h_max.max(touched(now.saturating_sub(steps_per_day)));
            }
            hours.push(Hour {
                write_share: max_over_mean(&docs_by_shard),
                chunks: max_over_mean(&chunks),
                chunks_total: chunks.iter().sum::<u64>() as usize,
                data_share: max_over_mean(&data),
            });
            docs_by_shard.iter_mut().for_each(|d| *d = 0);
        }
    }

    let after_first = &hours[1.min(hours.len() - 1)..];
    let worst = |f: fn(&Hour) -> f64| after_first.iter().map(f).fold(0.0, f64::max);
    let write_share = worst(|h| h.write_share);
    let chunks_ratio = worst(|h| h.chunks);
    let jumbo = collections
        .iter()
        .flat_map(|c| &c.chunks)
        .filter(|c| c.jumbo)
        .count();
    let report = json!({
        "shards": args.shards,
        "hosts": args.hosts,
        "series_registered": series.len(),
        "hours": hours.len(),
        "partitions": collections.len(),
        "partition_names": [
            collections.first().map(|c| c.name.clone()),
            collections.last().map(|c| c.name.clone()),
        ],
        "write_share_max_over_mean": write_share,
        "write_share_by_hour": hours.iter().map(|h| h.write_share).collect::<Vec<_>>(),
        "data_max_over_mean": worst(|h| h.data_share),
        "shards_per_series_query_max": query_max,
        "shards_per_series_query_24h_max": query_24h_max,
        "chunks_max_over_mean": chunks_ratio,
        "chunks_by_hour": hours.iter().map(|h| h.chunks_total).collect::<Vec<_>>(),
        "chunks_max_over_mean_by_hour": hours.iter().map(|h| h.chunks).collect::<Vec<_>>(),
        "collection_data_gap_max_mib": spread_max as f64 / (1 << 20) as f64,
        "balancer_threshold_mib": threshold >> 20,
        "splits": splits,
        "migrations": moves,
        "jumbo_chunks": jumbo,
        "model": {
            "shard_key": "{s: \"hashed\"} (tickertape_mongodb::shard_key_of)",
            "hash": "BSONElementHasher::hash64, seed 0 (md5)",
            "chunk_mib": args.chunk_mib,
            "initial_chunks_per_shard": args.initial_chunks_per_shard,
            "balancer": "MongoDB 6.0+: data size per collection, threshold 3 × chunk size",
            "balancer_round_minutes": args.balancer_round_minutes,
            "doc_bytes": args.doc_bytes,
            "body_seconds": step_s,
        },
        "targets_met": {
            "write_share": write_share <= 1.2,
            "query": query_max <= 1,
            "chunks": chunks_ratio <= 1.2,
        },
        "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} shards, {} hosts × {} metrics, {} series registered, {} partitions",
        args.shards,
        args.hosts,
        args.metrics,
        series.len(),
        collections.len()
    );
    println!(
        "{:>5} {:>22} {:>20} {:>8} {:>18}",
        "hour", "writes max/mean", "chunks max/mean", "chunks", "data max/mean"
    );
    for (i, h) in hours.iter().enumerate() {
        println!(
            "{:>5} {:>22.3} {:>20.3} {:>8} {:>18.3}",
            i + 1,
            h.write_share,
            h.chunks,
            h.chunks_total,
            h.data_share
        );
    }
    println!("worst after the first hour: writes {write_share:.3} (target ≤ 1.2), chunks {chunks_ratio:.3} (≤ 1.2)");
    println!("shards per one-series query: {query_max} within a partition (target 1), {query_24h_max} over the last 24 h");
    println!(
        "largest gap between a partition's fullest and emptiest shard: {:.0} MiB (the \
         balancer moves past {} MiB)",
        spread_max as f64 / (1 << 20) as f64,
        threshold >> 20
    );
    println!(
        "{splits} splits, {moves} migrations, {jumbo} jumbo chunks, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
