//! What InfluxDB 1.x clients ask before they write, answered so that they write: `/ping`
//! (the `influx` CLI checks it before anything else, as do load balancers), and `/query`
//! for the few statements writers send, `CREATE DATABASE` (Telegraf's `influxdb` output,
//! on start) and `SHOW DATABASES` (the CLI's `USE`). tickertape has one namespace, so the
//! first is accepted and changes nothing, and the second lists the one name `tickertape`
//! and any name the request itself creates.
//!
//! Every other statement, `SELECT` included, gets InfluxDB's per-statement error shape
//! naming the APIs that do answer queries; tickertape does not run InfluxQL.

use axum::body::Bytes;
use axum::extract::RawQuery;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::AppState;

/// The database `SHOW DATABASES` always lists.
const DATABASE: &str = "tickertape";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ping", get(ping).head(ping))
        .route("/query", get(query).post(query))
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

/// `q` from the query string or a form body; 400 in InfluxDB's shape without one.
async fn query(RawQuery(raw): RawQuery, body: Bytes) -> Response {
    let from_url = form_urlencoded::parse(raw.as_deref().unwrap_or("").as_bytes());
    let q = from_url
        .chain(form_urlencoded::parse(&body))
        .find(|(name, _)| name == "q")
        .map(|(_, value)| value.into_owned());
    let Some(q) = q else {
        let error = json!({ "error": "missing required parameter \"q\"" });
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    };
    let mut created = Vec::new();
    let results: Vec<Value> = statements(&q)
        .enumerate()
        .map(|(id, statement)| answer(id, statement, &mut created))
        .collect();
    let mut response = Json(json!({ "results": results })).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The statements of `q`: split at `;`, blank ones left out. (A `;` inside a quoted name
/// would split it too; the statements answered here hold none that matter.)
fn statements(q: &str) -> impl Iterator<Item = &str> {
    q.split(';').map(str::trim).filter(|s| !s.is_empty())
}

/// One statement's result object, InfluxDB's `{"statement_id": n, …}`.
fn answer(id: usize, statement: &str, created: &mut Vec<String>) -> Value {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let upper: Vec<String> = words
        .iter()
        .take(2)
        .map(|w| w.to_ascii_uppercase())
        .collect();
    match upper
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["CREATE", "DATABASE"] => {
            if let Some(name) = words.get(2) {
                created.push(unquote(name));
            }
            json!({ "statement_id": id })
        }
        ["SHOW", "DATABASES"] => {
            let mut names = vec![DATABASE.to_string()];
            names.extend(created.iter().cloned());
            names.sort();
            names.dedup();
            let values: Vec<Value> = names.into_iter().map(|n| json!([n])).collect();
            json!({ "statement_id": id, "series": [
                { "name": "databases", "columns": ["name"], "values": values }
            ] })
        }
        _ => json!({ "statement_id": id, "error": format!(
            "tickertape does not run InfluxQL ({statement:?}): it accepts CREATE DATABASE \
             and SHOW DATABASES only. Query with GET /api/v1/query, or with PromQL under \
             /prometheus/api/v1/ (Grafana's Prometheus data source)"
        ) }),
    }
}

/// `"telegraf"` or `telegraf` → `telegraf`.
fn unquote(name: &str) -> String {
    name.trim_matches('"').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_statements_are_answered_and_others_refused_by_name() {
        let mut created = Vec::new();
        assert_eq!(
            answer(0, "CREATE DATABASE \"telegraf\"", &mut created),
            json!({ "statement_id": 0 })
        );
        assert_eq!(created, ["telegraf"]);
        let shown = answer(1, "show databases", &mut created);
        assert_eq!(
            shown["series"][0]["values"],
            json!([["telegraf"], ["tickertape"]])
        );
        let refused = answer(2, "SELECT * FROM cpu", &mut created);
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("SELECT * FROM cpu") && error.contains("/api/v1/query"),
            "{error}"
        );
        let parts: Vec<&str> = statements(" CREATE DATABASE x; ;SHOW DATABASES ").collect();
        assert_eq!(parts, ["CREATE DATABASE x", "SHOW DATABASES"]);
    }
}
