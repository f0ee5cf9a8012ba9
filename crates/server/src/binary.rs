//! What every tickertape binary (`tickertape`, `tickertape-bench`) does around its
//! command: logs to stderr, filtered by `TICKERTAPE_LOG` (default `info`), runs the
//! command on a tokio runtime, and turns its result into the exit code, printing the
//! error with its causes.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

/// Runs `command` as a binary's `main` does; call it with the parsed arguments moved in.
pub fn run_main<E: Display>(command: impl Future<Output = Result<(), E>>) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TICKERTAPE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `:#` shows an anyhow error's chain of causes on one line.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
