//! `tickertape serve`: the HTTP server on a store.

use crate::store::StoreArgs;
use anyhow::{Context, Result};
use std::time::Duration;
use tickertape_core::time::parse_duration;
use tickertape_engine::{Engine, QueryLimits, SeriesLimits};
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
    /// Most series one query may select; a wider query is refused with 422 and a message
    /// that says how to narrow it.
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_SERIES)]
    pub max_query_series: usize,
    /// Most points one query's answer may hold, over all its series; a larger answer is
    /// refused with 422 (aggregate with step= and agg=, or shorten the range).
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_POINTS)]
    pub max_query_points: usize,
    /// Most series the store may hold; a line that would add one more is refused (400,
    /// naming the limit) while the rest of its body is stored. 0: no limit.
    #[arg(long, default_value_t = SeriesLimits::DEFAULT_MAX_SERIES)]
    pub max_series: u64,
    /// Most series one measurement may hold, as --max-series. 0: no limit.
    #[arg(long, default_value_t = SeriesLimits::DEFAULT_MAX_SERIES_PER_MEASUREMENT)]
    pub max_series_per_measurement: u64,
    /// How often to drop the partitions past their retention (`retention` in --config);
    /// `0s` turns the schedule off (`tickertape admin retention` still works).
    #[arg(long, default_value = "1h", value_parser = duration)]
    pub retention_every: Duration,
    /// How often to pre-allocate the next period's bucket documents for the measurements
    /// with `preallocate = true`; `0s` turns it off.
    #[arg(long, default_value = "1m", value_parser = duration)]
    pub preallocate_every: Duration,
    /// MongoDB through a mongos (a sharded cluster): how often to apply the sharding plan
    /// (`tickertape admin shard`), which shards the partitions that appeared and creates
    /// the next period's already sharded; `0s` turns it off. Nothing happens on any other
    /// store.
    #[arg(long, default_value = "1h", value_parser = duration)]
    pub shard_every: Duration,
    /// Where `POST /api/v1/admin/snapshot` makes its snapshots of an embedded store, each
    /// in a new directory named by the UTC time; by default the store's own `snapshots/`
    /// folder (which the store itself ignores).
    #[arg(long, value_name = "DIR")]
    pub snapshot_dir: Option<std::path::PathBuf>,
}

fn duration(text: &str) -> Result<Duration, String> {
    if text
        .trim_start_matches('0')
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .is_empty()
    {
        return Ok(Duration::ZERO);
    }
    let ns = parse_duration(text).map_err(|e| e.to_string())?;
    Ok(Duration::from_nanos(ns.unsigned_abs()))
}

pub async fn run(args: Args) -> Result<()> {
    let engine = args
        .store
        .engine()
        .await?
        .with_query_limits(QueryLimits {
            max_series: args.max_query_series,
            max_points: args.max_query_points,
        })
        .with_series_limits(SeriesLimits {
            max_series: args.max_series,
            max_series_per_measurement: args.max_series_per_measurement,
        });
    let backend = engine.backend().clone();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(store = %args.store.store, backend = backend.kind(), "listening on http://{address}");
    let retention = schedule(engine.clone(), args.retention_every, Task::Retention);
    let preallocation = schedule(engine.clone(), args.preallocate_every, Task::Preallocation);
    let sharding = shard_schedule(&args.store, args.shard_every).await;
    let config = ServerConfig {
        max_body_bytes: args.max_body_bytes,
        snapshot_dir: args.snapshot_dir,
    };
    let served = tickertape_server::serve(listener, engine, config, shutdown_signal()).await;
    for task in [retention, preallocation, sharding].into_iter().flatten() {
        task.abort();
    }
    served?;
    tracing::info!("stopped");
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Task {
    Retention,
    Preallocation,
}

/// Runs `task` now and then every `every` until aborted; a failed run is logged and
/// retried at the next tick, since a store that is down now may be back then.
fn schedule(engine: Engine, every: Duration, task: Task) -> Option<tokio::task::JoinHandle<()>> {
    if every.is_zero() {
        return None;
    }
    let needed = match task {
        Task::Retention => engine
            .schema()
            .measurements
            .values()
            .any(|m| !m.retention.is_empty()),
        Task::Preallocation => engine.schema().measurements.values().any(|m| m.preallocate),
    };
    if !needed {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match task {
                Task::Retention => match engine.apply_retention(false).await {
                    Ok(report) if !report.dropped.is_empty() => tracing::info!(
                        dropped = report.dropped.len(),
                        kept = report.kept,
                        "retention pass"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("retention pass failed: {e}"),
                },
                Task::Preallocation => match engine.preallocate_next_period().await {
                    Ok(created) if created > 0 => {
                        tracing::debug!(created, "pre-allocated bucket documents")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!("pre-allocation failed: {e}"),
                },
            }
        }
    }))
}

/// On a store reached through a `mongos`: applies the sharding plan now and then every
/// `every`, on a handle of its own that does not fold (the engine's handle does). `None`
/// elsewhere: a store that is not a sharded cluster has nothing to shard.
async fn shard_schedule(store: &StoreArgs, every: Duration) -> Option<tokio::task::JoinHandle<()>> {
    if every.is_zero() || !store.is_mongodb() {
        return None;
    }
    tickertape_mongodb::ensure_mongos(&store.store).await.ok()?;
    let mut options = store.mongo_options();
    options.fold_every = Duration::from_secs(365 * 86_400);
    let backend = match tickertape_mongodb::MongoBackend::connect(options).await {
        Ok(backend) => backend,
        Err(e) => {
            tracing::warn!("sharding schedule off: cannot open a second handle: {e}");
            return None;
        }
    };
    tracing::info!(every = ?every, "sharding the store's partitions on a schedule");
    Some(tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match backend.shard().await {
                Ok(report) => tracing::info!(actions = report.actions.len(), "sharding pass"),
                Err(e) => tracing::warn!("sharding pass failed: {e}"),
            }
        }
    }))
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
