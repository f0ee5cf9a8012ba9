//! tickertape's HTTP API, on axum.
//!
//! - `POST /write`, `POST /api/v2/write`: line protocol ([`write`]).
//! - `GET /api/v1/query`, `GET /api/v1/series`, `GET /api/v1/schema` ([`query`]).
//! - `GET /api/v1/measurements`, `fields`, `tag_keys`, `tag_values`: the pickers' names
//!   ([`listing`]).
//! - `GET /api/v1/status/cardinality`: what makes the series count ([`cardinality`]).
//! - `GET /api/v1/databases`, `POST`/`DELETE /api/v1/admin/databases` ([`databases`]);
//!   every route of the data works in the database the request names ([`database`]).
//! - `GET /`: the dashboard, its assets under `/assets/` ([`dashboard`]).
//! - `GET /health`, `GET /metrics` ([`metrics`]).
//! - `POST /api/v1/admin/compact`, `POST /api/v1/admin/snapshot` ([`admin`]).
//! - `/ping` ([`influx`]), and InfluxQL on `/query` for Grafana's InfluxDB data source and
//!   the `influx` shell ([`influxql`]).
//! - Prometheus' remote write/read and query API under `/prometheus`, and under
//!   `/prometheus/db/<name>` for a database ([`prometheus`]).
//!
//! - `POST /-/reload` and `/prometheus/api/v1/targets`: the scrape configuration
//!   (`serve --scrape-config`, [`scrape`]).
//!
//! With `--auth`, every route but `/health` and `/ping` needs an API token ([`auth`]).
//!
//! The request's edge is read in one place each: its parameters and database by
//! [`params::RequestParams`] (the query string, a form body, the path), its body by
//! [`body`] (the body limit, `Content-Encoding`).
//!
//! Every error leaves through [`error::ApiError`], the one place that maps errors to
//! status codes. [`serve`] accepts the connections ([`listen`]: TLS, timeouts, the
//! connection limit).

pub mod admin;
pub mod auth;
pub mod binary;
pub mod body;
mod budget;
pub mod cardinality;
pub mod dashboard;
pub mod database;
pub mod databases;
pub mod error;
pub mod influx;
pub mod influxql;
pub mod listen;
pub mod listing;
pub mod metrics;
pub mod otlp;
pub mod params;
pub mod prometheus;
pub mod query;
pub mod scrape;
pub mod write;

use axum::routing::{get, post};
use axum::Router;
use metrics::Metrics;
use params::form;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tickertape_engine::Engine;
use tokio::net::TcpListener;

/// Bodies above this are refused with 413 (before and after gzip decoding).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// A connection that has not sent a complete request head this long after it opened, or
/// after its previous answer (an idle keep-alive connection), is closed.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A request whose body sends no bytes for this long is answered 408 and its connection
/// closed.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes per second a request body must average once `--body-read-timeout` has
/// passed: a body's deadline is that timeout plus its length at this rate. 4 KiB/s is
/// far below any real client's link (a 1 MB body may take over four minutes), while a
/// client trickling bytes to hold a connection is cut within the timeout.
pub const DEFAULT_MIN_BODY_RATE: u64 = 4096;
/// Connections served at once when nothing says otherwise (the CLI derives its default
/// from the descriptor limit); more are closed as they are accepted.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub max_body_bytes: usize,
    /// `--auth`: the store's tokens; `None` lets every request through.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// See [`DEFAULT_HEADER_READ_TIMEOUT`]; `None`: no bound (and no idle bound).
    pub header_read_timeout: Option<Duration>,
    /// See [`DEFAULT_BODY_READ_TIMEOUT`]; `None`: no bound.
    pub body_read_timeout: Option<Duration>,
    /// See [`DEFAULT_MIN_BODY_RATE`]; `None`: no rate (the gap alone bounds a body).
    pub min_body_rate: Option<u64>,
    /// Connections served at once, at least 1.
    pub max_connections: usize,
    /// Serve HTTPS only, with this certificate; `None`: plain HTTP.
    pub tls: Option<listen::Tls>,
    /// Where the listener counts connections, for `/metrics` (a clone shares them).
    pub connection_stats: Arc<listen::ConnectionStats>,
    /// Where `POST /api/v1/admin/snapshot` makes its snapshots (`serve --snapshot-dir`);
    /// `None`: in the store's own `snapshots/` folder.
    pub snapshot_dir: Option<std::path::PathBuf>,
    /// `--scrape-config`: what the server scrapes, for `/-/reload` and `/targets`.
    pub scrape: Option<scrape::Scraping>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            auth: None,
            header_read_timeout: Some(DEFAULT_HEADER_READ_TIMEOUT),
            body_read_timeout: Some(DEFAULT_BODY_READ_TIMEOUT),
            min_body_rate: Some(DEFAULT_MIN_BODY_RATE),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            tls: None,
            connection_stats: Arc::default(),
            snapshot_dir: None,
            scrape: None,
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub metrics: Arc<Metrics>,
    pub config: ServerConfig,
}

pub fn router(engine: Engine, config: ServerConfig) -> Router {
    let max_body = config.max_body_bytes;
    let state = AppState {
        engine,
        metrics: Arc::new(Metrics::default()),
        config,
    };
    Router::new()
        .route("/write", post(write::write))
        .route("/api/v2/write", post(write::write))
        .route("/api/v1/query", get(query::query))
        .route("/api/v1/series", get(query::series))
        .route("/api/v1/schema", get(query::schema))
        .route("/api/v1/measurements", get(listing::measurements))
        .route("/api/v1/fields", get(listing::fields))
        .route("/api/v1/tag_keys", get(listing::tag_keys))
        .route("/api/v1/tag_values", get(listing::tag_values))
        .route("/api/v1/status/cardinality", get(cardinality::cardinality))
        .route("/api/v1/databases", get(databases::list))
        .route(
            "/api/v1/admin/databases",
            form(post(databases::create).delete(databases::drop), &state),
        )
        .route("/api/v1/admin/compact", post(admin::compact))
        .route("/api/v1/admin/delete", form(post(admin::delete), &state))
        .route("/api/v1/admin/snapshot", post(admin::snapshot))
        .route("/-/reload", post(scrape::api::reload))
        .route("/opentelemetry/v1/metrics", post(otlp::export))
        .route("/health", get(metrics::health))
        .route("/metrics", get(metrics::render))
        .nest("/prometheus", prometheus::routes(&state))
        // A Grafana data source's URL can name the database (`crate::params`).
        .nest("/prometheus/db/{db}", prometheus::routes(&state))
        .merge(dashboard::routes())
        .merge(influx::routes(&state))
        // Inside `track`, so refused requests are counted under their route and status.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        // Bodies are buffered in memory, so the limit must hold while reading, not after:
        // a larger body is cut off with 413 before it is held in full (`crate::body` reads
        // every body and answers it in the route's error shape).
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// Serves until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: TcpListener,
    engine: Engine,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let settings = listen::Settings {
        limits: listen::Limits {
            header_read_timeout: config.header_read_timeout,
            body_read_timeout: config.body_read_timeout,
            min_body_rate: config.min_body_rate,
            idle_timeout: config.header_read_timeout,
        },
        max_connections: config.max_connections.max(1),
        tls: config.tls.clone(),
        stats: Arc::clone(&config.connection_stats),
    };
    listen::serve(listener, router(engine, config), settings, shutdown).await
}
