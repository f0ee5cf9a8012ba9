//! The `tickertape` binary: thin commands over the engine, the server and the backends.
//!
//! # Layout
//! - `store.rs`: `--store PATH | mongodb://…` → a backend.
//! - `answer.rs`: a query's answer from a store or a server (`query` and `plot` share it).
//! - `remote.rs`: `--url`, `--ca-cert`, `--token` → the HTTP client of a running server.
//! - `chart/`: line charts drawn into PNG or SVG files (`plot`).
//! - `cmd/`: one file per subcommand.

mod answer;
mod chart;
mod cmd;
mod descriptors;
mod remote;
mod store;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tickertape",
    version,
    about = "A time-series store: embedded by default, on MongoDB when you outgrow one machine."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the HTTP server (line-protocol writes, queries, metrics).
    Serve(cmd::serve::Args),
    /// Load line-protocol files into a store or a running server.
    Import(cmd::import::Args),
    /// Query a store or a running server; prints a table, CSV or JSON.
    Query(cmd::query::Args),
    /// Draw a query's answer as a line chart into a PNG or SVG file.
    Plot(cmd::plot::Args),
    /// Operations on a store's deployment (MongoDB sharding).
    #[command(subcommand)]
    Admin(cmd::admin::Command),
}

fn main() -> std::process::ExitCode {
    // mimalloc asks the kernel for transparent huge pages on its regions; each time it
    // reused a region's memory the kernel faulted in and zeroed a whole 2 MiB page, ~10%
    // of the server's CPU while ingesting (perf, docs/BENCHMARKS.md). 4 KiB pages only.
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("note: could not turn transparent huge pages off: {e}");
    }
    let cli = Cli::parse();
    tickertape_server::binary::run_main(async move {
        match cli.command {
            Command::Serve(args) => cmd::serve::run(args).await,
            Command::Import(args) => cmd::import::run(args).await,
            Command::Query(args) => cmd::query::run(args).await,
            Command::Plot(args) => cmd::plot::run(args).await,
            Command::Admin(command) => cmd::admin::run(command).await,
        }
    })
}
