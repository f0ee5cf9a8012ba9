//! `tickertape-bench`: benchmarks as programs, never timed tests, with their results and
//! commands recorded in `docs/BENCHMARKS.md`. A binary of its own, so that the shipped
//! `tickertape` carries none of it (nor rand, nor direct use of the MongoDB driver).
//!
//! # Layout
//! - `ingest.rs`: the command, the concurrent write clients and the report.
//! - `store.rs`: the in-process embedded store `ingest` writes to.
//! - `dataset.rs`: the devops cpu dataset, TSBS-like (generated, or read from a file).
//! - `queries.rs`: the four reference queries and the bit-for-bit read-back.
//! - `remote_write.rs`: the dataset as Prometheus remote-write bodies, ingested
//!   alternately with line protocol.
//! - `send.rs`: the concurrent write clients (HTTP or HTTPS, a token or none).
//! - `security.rs`: ingest over plain HTTP, with a token, over HTTPS, alternated.
//! - `disk.rs`: allocated bytes of a directory.
//! - `shards.rs`: a simulated sharded MongoDB cluster under an MMS-sized load.
//! - `year.rs`: a year of a MongoDB store as collections, indexes and chunks, from the
//!   product's naming code, for a Telegraf-shaped and a Prometheus-shaped load.
//! - `layouts/`: the schema simulator (`tickertape-bench layouts`), one file per
//!   family of layouts.
//! - `candidates/`: storage designs for the embedded engine's part files: own
//!   part files, pco, fjall, on the same per-series columns.

mod candidates;
mod cardinality;
mod dataset;
mod disk;
mod influxql;
mod ingest;
mod layouts;
mod promql;
mod queries;
mod remote_write;
mod security;
mod send;
mod shards;
mod store;
mod year;

use clap::Parser;

/// The allocator the shipped `tickertape` uses, so that the in-process server of a bench
/// allocates as the product does (glibc's malloc maps and faults in every large vector
/// of a long read afresh).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tickertape-bench",
    version,
    about = "tickertape's benchmarks: ingest speed and bytes on disk, storage layouts."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Ingest the devops cpu dataset over HTTP, then report points/s, bytes on disk per
    /// point, the median latency of the four reference queries and a bit-for-bit read-back.
    ///
    /// The dataset is either generated here, with the shape of the TSBS-like gen.py (same
    /// tags, fields and vocabulary, time-major rows, random walks from U[0,100] with steps
    /// U[-1,1] clamped to [0,100]) but NOT the same bytes, or read from a gen.py file with
    /// --file: the way to give every store compared identical data. The whole dataset is cut
    /// into bodies in memory before the clock starts.
    ///
    /// By default the tickertape server runs in this process on 127.0.0.1 over a fresh
    /// temporary store. With --target-url the same clients write to another server
    /// (VictoriaMetrics, InfluxDB 1.x) and only the ingest and its bytes are measured.
    /// Every body must be answered 204; anything else fails the run.
    #[command(verbatim_doc_comment)]
    Ingest(ingest::Args),
    /// What `serve --auth` and `--tls-cert` cost on ingest: the devops dataset sent to an
    /// in-process server as plain HTTP, HTTP with a token, HTTPS and HTTPS with a token,
    /// each on a fresh store, alternated over --rounds; each mode's median points/s and its
    /// ratio to plain HTTP. Makes its certificates with the openssl CLI (or --tls-dir).
    Security(security::Args),
    /// A schema simulator: the same small dataset written in several layouts,
    /// each into a fresh store, with points/s, request latencies, what the store takes,
    /// round trips and the four reference queries per layout.
    ///
    /// On a MongoDB server (--store mongodb://HOST:PORT/): one document per point (a),
    /// value segments with both protocols (b, c), a native time-series collection (d), one
    /// point per request (e), per-minute buckets v.S written with the driver without and
    /// with pre-allocated shells (f, g), and the product's per-hour buckets v.M.S without
    /// and with Backend::preallocate (h, i). With an embedded store directory
    /// (--store PATH): value segments (s) and per-hour buckets without and with
    /// pre-allocation (h, i). Pre-allocation is timed apart from the writes.
    #[command(verbatim_doc_comment)]
    Layouts(layouts::Args),
    /// Storage candidates for the embedded engine's part files, measured on the
    /// same data: the devops dataset generated as one column per series (host × field),
    /// at full precision and rounded to --round decimals.
    ///
    /// Own part files (one sequential file, blocks of a day, 1024 or 160 points, a small
    /// index with crc32) with the own codec, pco, and own times + pco values; and the
    /// own-codec blocks as values of fjall (lz4 on), day blocks and 160-point blocks,
    /// plus 160-point plain arrays to show what lz4 alone does. Prints bytes per point and
    /// single-thread encode and decode speed; every candidate must read back every point
    /// bit for bit.
    #[command(verbatim_doc_comment)]
    Candidates(candidates::Args),
    /// Many new series: --series new series of one point each (1,000,000 by default),
    /// written by one client in 10,000-line bodies to the release `tickertape` server in
    /// its own process. Prints new series registered per second, the server's resident
    /// memory per series, the median latency of a one-series-by-tag query and of agg=sum
    /// over a tenth of the series, and the time from a restart to /health answering.
    /// The store is a fresh directory, or with --mongodb an empty MongoDB database.
    #[command(verbatim_doc_comment)]
    Cardinality(cardinality::Args),
    /// PromQL's query targets: Prometheus' query_range of rate(x[5m]) over 24 hours at a
    /// 60 s step for 100 counters (their sum, and the hourly peak of the rate as a subquery,
    /// max_over_time(rate(x[5m])[1h:1m])), on the in-process server over a fresh embedded
    /// store, compacted; with --vm-url the same of a VictoriaMetrics loaded with the same
    /// samples, alternately. Prints the median, p90 and fastest of --runs queries.
    #[command(verbatim_doc_comment)]
    Promql(promql::Args),
    /// InfluxQL's speed target: Grafana's SELECT mean(...) GROUP BY time(1m) over 24
    /// hours of one host against the own API's same windows (and, with --influx-url, an
    /// InfluxDB 1.x loaded with the same points), alternated; medians and ratios.
    #[command(verbatim_doc_comment)]
    Influxql(influxql::Args),
    /// Remote write's ingest target: the devops dataset as line protocol and as Prometheus
    /// remote-write bodies (each line-protocol body converted into one WriteRequest with
    /// the same points: one TimeSeries per series, metric <measurement>_<field>, the tags
    /// as labels), ingested alternately (LP, RW, LP, RW …) into fresh embedded stores
    /// behind the in-process server, with the same clients. Prints points/s per round and
    /// the ratio; every point is counted back after each ingest.
    #[command(verbatim_doc_comment)]
    RemoteWrite(remote_write::Args),
    /// The scale-out check: a simulated sharded MongoDB cluster (--shards) under an
    /// MMS-sized load (25,000 hosts × 100 metrics every 10 s for two days, 5% of the hosts
    /// replaced every 6 hours), fed with the store's own partition names, shard keys
    /// (`shard_key_of`: {s: "hashed"}) and MongoDB's md5-based hash of each series id.
    /// Pre-split chunks, splits at the chunk size, a data-size balancer. Prints per hour
    /// each shard's share of the writes and of the chunks (max/mean), and the shards a
    /// one-series query touches. Simulated: no server is involved.
    #[command(verbatim_doc_comment)]
    Shards(shards::Args),
    /// A year of a MongoDB store, day by day, from the product's own naming code: the
    /// collections, indexes and (on --shards shards) chunks a Telegraf-shaped load (60
    /// measurements) and a Prometheus-shaped one (1,000 metric names) leave, with 1h and
    /// 1d rollups; layout 2's count by its rule beside them. Simulated: no server.
    #[command(verbatim_doc_comment)]
    Year(year::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    tickertape_server::binary::run_main(async move {
        match cli.command {
            Command::Ingest(args) => ingest::run(args).await,
            Command::Security(args) => security::run(args).await,
            Command::Layouts(args) => layouts::run(args).await,
            Command::Candidates(args) => candidates::run(args).await,
            Command::Cardinality(args) => cardinality::run(args).await,
            Command::Promql(args) => promql::run(args).await,
            Command::Influxql(args) => influxql::run(args).await,
            Command::RemoteWrite(args) => remote_write::run(args).await,
            Command::Shards(args) => shards::run(args).await,
            Command::Year(args) => year::run(args).await,
        }
    })
}
