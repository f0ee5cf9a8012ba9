//! `tickertape serve`: the HTTP server on a store.

use crate::store::StoreArgs;
use anyhow::{Context, Result};
use tickertape_server::{ServerConfig, DEFAULT_MAX_BODY_BYTES};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8086")]
    pub listen: String,
    /// Largest accepted request body, in bytes (also after gzip decoding); larger get 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
}

pub async fn run(args: Args) -> Result<()> {
    let engine = args.store.engine().await?;
    let backend = engine.backend().clone();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(store = %args.store.store, backend = backend.kind(), "listening on http://{address}");
    let config = ServerConfig {
        max_body_bytes: args.max_body_bytes,
    };
    tickertape_server::serve(listener, engine, config, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Ctrl-C or SIGTERM: stop accepting, finish the requests in flight, then exit.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
