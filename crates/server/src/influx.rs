//! `/ping`, which InfluxDB 1.x clients ask before anything else (the `influx` CLI, load
//! balancers), and the `/query` route, answered by [`crate::influxql`].

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::params::form;
use crate::AppState;

pub fn routes(state: &AppState) -> Router<AppState> {
    let query = get(crate::influxql::query).post(crate::influxql::query);
    Router::new()
        .route("/ping", get(ping).head(ping))
        .route("/query", form(query, state))
}

/// 204, with the version header InfluxDB sends (clients print it on connecting).
async fn ping() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let version = concat!("tickertape-", env!("CARGO_PKG_VERSION"));
    response
        .headers_mut()
        .insert("X-Influxdb-Version", HeaderValue::from_static(version));
    response
}
