//! Prometheus' HTTP API under `/prometheus`: remote write and read, and the query API
//! (so a Grafana data source URL is `http://HOST:8086/prometheus`).
//!
//! - `api`: the query API; `params`: its parameters; `json`: its answers; `error`: its
//!   error shape; `select`: label matchers → stored series and their samples; `read`:
//!   remote read; `status`: `/status/tsdb`, the cardinality counts; `delete`:
//!   `admin/tsdb/delete_series`.

mod api;
mod delete;
pub(crate) mod error;
mod json;
mod params;
mod read;
mod select;
mod status;
mod write;

use crate::params::form;
use crate::AppState;
use axum::routing::{get, post};
use axum::Router;

/// The routes, relative to `/prometheus`. The query API takes its parameters from the
/// query string or, for POST, a form body (`crate::params::form`).
pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/read", post(read::read))
        .route(
            "/api/v1/query",
            form(get(api::query).post(api::query), state),
        )
        .route(
            "/api/v1/query_range",
            form(get(api::query_range).post(api::query_range), state),
        )
        .route(
            "/api/v1/series",
            form(get(api::series).post(api::series), state),
        )
        .route(
            "/api/v1/labels",
            form(get(api::labels).post(api::labels), state),
        )
        .route("/api/v1/label/{name}/values", get(api::label_values))
        .route("/api/v1/status/buildinfo", get(api::buildinfo))
        .route("/api/v1/status/tsdb", get(status::tsdb))
        .route("/api/v1/metadata", get(api::metadata))
        .route(
            "/api/v1/query_exemplars",
            get(api::query_exemplars).post(api::query_exemplars),
        )
        .route("/api/v1/rules", get(api::rules))
        .route("/api/v1/alerts", get(api::alerts))
        .route("/api/v1/targets", get(crate::scrape::api::targets))
        .route("/api/v1/write", post(write::write))
        .route("/api/v1/admin/tsdb/delete_series", delete::handler(state))
}
