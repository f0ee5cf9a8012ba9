//! The `tickertape` binary: thin commands over the engine, the server and the backends.
//!
//! # Layout
//! - `store.rs`: `--store PATH | mongodb://…` → a backend.
//! - `cmd/`: one file per subcommand.

mod cmd;
mod store;

use clap::{Parser, Subcommand};

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
    /// Operations on a store's deployment (MongoDB sharding).
    #[command(subcommand)]
    Admin(cmd::admin::Command),
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TICKERTAPE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => cmd::serve::run(args).await,
            Command::Import(args) => cmd::import::run(args).await,
            Command::Query(args) => cmd::query::run(args).await,
            Command::Admin(command) => cmd::admin::run(command).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
