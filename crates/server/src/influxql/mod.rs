//! InfluxQL on `/query` (InfluxDB 1.x's query endpoint), for Grafana's InfluxDB data
//! source and the `influx` shell: GET or POST form, `q` (`;`-separated statements answered
//! in order), `epoch=`, `pretty=true`, `Accept: application/csv`. The statements are parsed
//! by the `tickertape-influxql` crate and run on the engine:
//!
//! - [`show`]: the `SHOW` statements, from the engine's listings and series index;
//! - [`select`]: `SELECT`: which series ([`condition`]: time range, tag conditions), read
//!   through the engine's read plan, then [`compute`]: windows, fill, transformations;
//! - [`output`]: the answer's JSON or CSV.
//!
//! `db` and `rp` are accepted and name nothing: tickertape has one namespace, so every
//! database is the same one. `CREATE DATABASE` changes nothing; `SHOW DATABASES` lists
//! `tickertape` and the names the same request created.

pub mod compute;
pub mod condition;
mod eval;
pub mod output;
mod raw;
pub mod select;
pub mod show;
pub mod zone;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tickertape_engine::Engine;
use tickertape_influxql::Statement;

use crate::AppState;
use output::{Cell, Epoch, Series, StatementResult};

/// The database `SHOW DATABASES` always lists.
pub const DATABASE: &str = "tickertape";

/// `/query`: parameters from the URL and, for POST, a form body.
pub async fn query(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Response {
    let from_url = form_urlencoded::parse(raw.as_deref().unwrap_or("").as_bytes());
    let params: Vec<(String, String)> = from_url
        .chain(form_urlencoded::parse(&body))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let Some(q) = param("q") else {
        return bad_request("missing required parameter \"q\"");
    };
    let epoch = match param("epoch") {
        None | Some("") => Epoch::RFC3339,
        Some(text) => match Epoch::parse(text) {
            Some(epoch) => epoch,
            None => return bad_request(&format!("invalid epoch \"{text}\"")),
        },
    };
    let parsed = match tickertape_influxql::parse(q) {
        Ok(parsed) => parsed,
        Err(e) => return bad_request(&format!("error parsing query: {e}")),
    };
    if let Err(e) = select::check_zones(&parsed) {
        return bad_request(&format!("error parsing query: {e}"));
    }
    let mut created = Vec::new();
    let mut results: Vec<StatementResult> = Vec::new();
    for statement in &parsed.statements {
        results.push(run(&state.engine, statement, &mut created).await);
    }
    let csv = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/csv") || a.contains("text/csv"));
    if csv {
        let body = output::csv_results(&results, epoch);
        return ([(header::CONTENT_TYPE, "application/csv")], body).into_response();
    }
    let text = match param("pretty") {
        Some("true") => {
            serde_json::to_vec_pretty(&output::json_results(&results, epoch)).unwrap_or_default()
        }
        _ => output::json_text(&results, epoch),
    };
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn bad_request(error: &str) -> Response {
    let body = json!({ "error": error }).to_string();
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// One statement's answer; `created` collects `CREATE DATABASE` names for a later `SHOW
/// DATABASES` of the same request.
pub async fn run(
    engine: &Engine,
    statement: &Statement,
    created: &mut Vec<String>,
) -> StatementResult {
    match statement {
        Statement::CreateDatabase(name) => {
            created.push(name.clone());
            Ok(Vec::new())
        }
        Statement::ShowDatabases => {
            let mut names = vec![DATABASE.to_string()];
            names.extend(created.iter().cloned());
            names.sort();
            names.dedup();
            Ok(vec![Series {
                name: "databases".into(),
                tags: Vec::new(),
                columns: vec!["name".into()],
                values: names.into_iter().map(|n| vec![Cell::Text(n)]).collect(),
            }])
        }
        Statement::Select(select) => select::run(engine, select).await,
        other => show::run(engine, other).await,
    }
}
