//! Prometheus' HTTP API under `/prometheus`: remote write and read, and the query API
//! (so a Grafana data source URL is `http://HOST:8086/prometheus`).

use crate::AppState;
use axum::Router;

/// The routes, relative to `/prometheus`.
pub fn routes() -> Router<AppState> {
    Router::new()
}
