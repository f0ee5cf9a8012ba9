//! `tickertape serve`: the HTTP server on a store.

use crate::descriptors::Budget;
use crate::store::StoreArgs;
use anyhow::{Context, Result};
use clap::builder::TypedValueParser;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tickertape_core::time::parse_duration;
use tickertape_engine::{Engine, KeyLimits, QueryLimits, SeriesLimits, StringFields};
use tickertape_server::auth::Authenticator;
use tickertape_server::listen::Tls;
use tickertape_server::scrape::{ScrapeOptions, Scraping};
use tickertape_server::{ServerConfig, DEFAULT_MAX_BODY_BYTES};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8086")]
    pub listen: String,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first);
    /// needs --tls-key. Plain-HTTP requests to the port are answered 400 with a body
    /// saying to use https://.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A connection that has not sent a complete request head this long after it opened
    /// or after its previous answer (an idle keep-alive connection) is closed without an
    /// answer; also bounds the TLS handshake and an idle HTTP/2 connection. `0s`: no bound.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub header_read_timeout: Duration,
    /// A request whose body sends no bytes for this long is answered 408 (Request
    /// Timeout) and its connection closed; the log names the client. `0s`: no bound.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub body_read_timeout: Duration,
    /// Bytes per second a request body must average once --body-read-timeout has
    /// passed (its deadline: that timeout plus its length at this rate); a slower one is
    /// answered 408 and its connection closed, so a client trickling bytes cannot hold a
    /// connection for long. `0`: no rate.
    #[arg(long, default_value_t = tickertape_server::DEFAULT_MIN_BODY_RATE)]
    pub min_body_rate: u64,
    /// Connections served at once. When all are taken, the one that has waited on its
    /// client longest (idle, or a body under --min-body-rate, for 2 s or more) is closed
    /// for a new one; with none such, the new one is closed as soon as it is accepted
    /// (the client sees its connection closed, not a wait) and a warning is logged. Default:
    /// the descriptor limit (RLIMIT_NOFILE) less the store's open part files (--open-parts)
    /// and 64 for the rest, at most 10000 (the shares are logged at start).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Largest accepted request body, in bytes (also after gzip decoding); larger get 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Most series one query may select; a wider query is refused with 422 and a message
    /// that says how to narrow it.
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_SERIES)]
    pub max_query_series: usize,
    /// Most points one query may produce, over all its series and statements, in every
    /// query language: points read, windows computed (filled ones too), PromQL's values
    /// per step. Counted as they are produced; past it the query stops and is refused
    /// with 422 (aggregate with step= and agg=, or shorten the range).
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_POINTS)]
    pub max_query_points: usize,
    /// Largest answer of one query, in bytes (JSON, CSV or protobuf, before compression),
    /// counted as it is written; past it the query is refused with 422.
    #[arg(long, default_value_t = QueryLimits::DEFAULT_MAX_RESPONSE_BYTES)]
    pub max_response_bytes: usize,
    /// Most series the store may hold; a line that would add one more is refused (400,
    /// naming the limit) while the rest of its body is stored. 0: no limit.
    #[arg(long, default_value_t = SeriesLimits::DEFAULT_MAX_SERIES)]
    pub max_series: u64,
    /// Most series one database may hold, as --max-series. 0: no limit.
    #[arg(long, default_value_t = 0)]
    pub max_series_per_database: u64,
    /// Most series one measurement may hold, as --max-series. 0: no limit.
    #[arg(long, default_value_t = SeriesLimits::DEFAULT_MAX_SERIES_PER_MEASUREMENT)]
    pub max_series_per_measurement: u64,
    /// Longest line of line protocol, in bytes; a longer line is refused (400, naming this
    /// flag, its line number given) while the rest of its body is stored. 0: no limit.
    #[arg(long, default_value_t = KeyLimits::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// Most tags (Prometheus: labels besides the name) a new series may have; a line or
    /// remote-write series with more is refused, naming this flag. Series already stored
    /// are never refused. 0: no limit.
    #[arg(long, default_value_t = KeyLimits::DEFAULT_MAX_TAGS)]
    pub max_tags: usize,
    /// Longest measurement, tag key or field key of a new series, in bytes, as --max-tags.
    #[arg(long, default_value_t = KeyLimits::DEFAULT_MAX_NAME_BYTES)]
    pub max_name_bytes: usize,
    /// Longest tag value of a new series, in bytes, as --max-tags.
    #[arg(long, default_value_t = KeyLimits::DEFAULT_MAX_TAG_VALUE_BYTES)]
    pub max_tag_value_bytes: usize,
    /// What a write does with a string field value (`uptime_format="1 day"`): `skip`
    /// stores the line's numeric and boolean fields and not the string (counted in
    /// /metrics as tickertape_string_fields_skipped_total, logged once per series);
    /// `refuse` refuses the whole line (400, its number given; the rest of the body is
    /// stored). tickertape stores numbers only.
    #[arg(long, default_value_t = StringFields::Skip, value_name = "skip|refuse",
          value_parser = clap::builder::PossibleValuesParser::new(StringFields::NAMES)
              .try_map(|name| name.parse::<StringFields>()))]
    pub string_fields: StringFields,
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
    /// Require an API token on every request but /health and /ping (401 without one, 403
    /// when its scope is short). Make tokens with `tickertape admin token create`; the
    /// server refuses to start with --auth while the store has none.
    #[arg(long)]
    pub auth: bool,
    /// Where `POST /api/v1/admin/snapshot` makes its snapshots of an embedded store, each
    /// in a new directory named by the UTC time; by default the store's own `snapshots/`
    /// folder (which the store itself ignores).
    #[arg(long, value_name = "DIR")]
    pub snapshot_dir: Option<std::path::PathBuf>,
    /// Scrape the targets of this Prometheus 2.x configuration file (its `global` and
    /// `scrape_configs` sections; any key not taken is refused, named), storing what they
    /// expose as remote write would. Read again on SIGHUP and `POST /-/reload`.
    #[arg(long, value_name = "FILE")]
    pub scrape_config: Option<PathBuf>,
    /// The database scraped samples go to when their job has no `database` key; by
    /// default the default database. It must exist.
    #[arg(long, value_name = "NAME", requires = "scrape_config")]
    pub scrape_database: Option<String>,
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

/// Works out and logs how the descriptor limit is shared (`descriptors.rs`); warns when
/// the flags ask for more than it holds (allowed: the limit may be raised later for the
/// process' children, or the store may need fewer descriptors).
fn descriptor_budget(args: &Args) -> Budget {
    let budget = crate::descriptors::budget(args.store.open_parts, args.max_connections);
    tracing::info!(
        descriptor_limit = budget.limit,
        open_parts = budget.open_parts,
        reserved = crate::descriptors::RESERVED,
        max_connections = budget.max_connections,
        "descriptors: part files kept open, the reserve and connections share the limit"
    );
    if budget.beyond_limit() {
        tracing::warn!(
            "--max-connections {} and --open-parts {} with a descriptor limit (ulimit -n) of \
             {}: connections or reads may fail with \"too many open files\" before these limits",
            budget.max_connections,
            budget.open_parts,
            budget.limit.unwrap_or(0),
        );
    }
    budget
}

fn optional(timeout: Duration) -> Option<Duration> {
    (!timeout.is_zero()).then_some(timeout)
}

pub async fn run(mut args: Args) -> Result<()> {
    let budget = descriptor_budget(&args);
    args.store.open_parts = Some(budget.open_parts);
    // Before the store opens: a bad certificate is the first thing to hear about.
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(Tls::from_pem_files(cert, key)?),
        _ => None,
    };
    // Before the store opens: a refusal should not wait for MongoDB's background start.
    let auth = match args.auth {
        true => Some(Arc::new(
            Authenticator::load(args.store.token_store().await?).await?,
        )),
        false => None,
    };
    let engine = args
        .store
        .engine()
        .await?
        .with_query_limits(QueryLimits {
            max_series: args.max_query_series,
            max_points: args.max_query_points,
            max_response_bytes: args.max_response_bytes,
        })
        .with_series_limits(SeriesLimits {
            max_series: args.max_series,
            max_series_per_database: args.max_series_per_database,
            max_series_per_measurement: args.max_series_per_measurement,
        })
        .with_key_limits(KeyLimits {
            max_line_bytes: args.max_line_bytes,
            max_tags: args.max_tags,
            max_name_bytes: args.max_name_bytes,
            max_tag_value_bytes: args.max_tag_value_bytes,
        })
        .with_string_fields(args.string_fields);
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(
        store = %args.store.store,
        backend = engine.store_kind(),
        max_connections = budget.max_connections,
        auth = args.auth,
        "listening on {scheme}://{address}"
    );
    let scraping = match &args.scrape_config {
        Some(path) => Some(
            Scraping::start(
                engine.clone(),
                ScrapeOptions {
                    config_path: path.clone(),
                    database: args.scrape_database.clone(),
                },
            )
            .await?,
        ),
        None => None,
    };
    let hangup = scraping.clone().map(|s| tokio::spawn(reload_on_hangup(s)));
    let retention = schedule(engine.clone(), args.retention_every, Task::Retention);
    let preallocation = schedule(engine.clone(), args.preallocate_every, Task::Preallocation);
    let sharding = shard_schedule(&args.store, args.shard_every).await;
    let config = ServerConfig {
        max_body_bytes: args.max_body_bytes,
        auth,
        header_read_timeout: optional(args.header_read_timeout),
        body_read_timeout: optional(args.body_read_timeout),
        min_body_rate: (args.min_body_rate > 0).then_some(args.min_body_rate),
        max_connections: usize::try_from(budget.max_connections).unwrap_or(usize::MAX),
        tls,
        snapshot_dir: args.snapshot_dir,
        scrape: scraping.clone(),
        ..ServerConfig::default()
    };
    let served = tickertape_server::serve(listener, engine, config, shutdown_signal()).await;
    for task in [retention, preallocation, sharding, hangup]
        .into_iter()
        .flatten()
    {
        task.abort();
    }
    if let Some(scraping) = scraping {
        scraping.stop().await;
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
        Task::Retention => {
            let schema = engine.schema();
            let listed = schema.measurements.values();
            std::iter::once(&schema.defaults)
                .chain(listed)
                .any(|m| !m.retention.is_empty())
        }
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

/// Reads the scrape configuration again on each SIGHUP, as Prometheus does; a file that
/// cannot be taken is logged and the running configuration kept.
async fn reload_on_hangup(scraping: Scraping) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("no reload on SIGHUP: {e}");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            if let Err(e) = scraping.reload().await {
                tracing::error!("reload refused, the running configuration is kept: {e}");
            }
        }
    }
    #[cfg(not(unix))]
    let _ = scraping;
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
