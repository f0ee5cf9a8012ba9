//! InfluxQL on `/query` (InfluxDB 1.x's query endpoint), for Grafana's InfluxDB data
//! source and the `influx` shell: GET or POST form, `q` (`;`-separated statements answered
//! in order), `epoch=`, `pretty=true`, `Accept: application/csv`. The statements are parsed
//! by the `tickertape-influxql` crate and run on the engine:
//!
//! - [`show`]: the `SHOW` statements, from the engine's listings and series index;
//! - [`regexes`]: every `/…/` compiled, and checked before any statement runs;
//! - [`select`]: `SELECT`: which series ([`condition`]: time range, tag conditions), read
//!   through the engine's read plan, then [`compute`]: windows, fill, transformations;
//! - [`output`]: the answer's JSON or CSV.
//!
//! A statement runs in the database it names (`ON db`, `FROM "db"."rp"."m"`), else in the
//! request's `db`, else in the default database; one that does not exist answers
//! InfluxDB's `database not found: db` for that statement. `CREATE DATABASE`,
//! `DROP DATABASE` and `SHOW DATABASES` manage the engine's databases; `rp` names nothing
//! (one retention policy, `autogen`).

pub mod compute;
pub mod condition;
mod eval;
pub mod output;
mod raw;
pub mod regexes;
pub mod select;
pub mod show;
pub mod zone;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tickertape_engine::{Engine, EngineError};
use tickertape_influxql::Statement;

use crate::auth::Granted;
use crate::params::RequestParams;
use crate::AppState;
use axum::Extension;
use output::{Cell, Epoch, Series, StatementResult};
use tickertape_core::auth::Scope;
use tickertape_core::database::DatabaseName;

/// `/query`: parameters from the URL and, for POST, a form body (`crate::params`); an
/// empty `db` is none, as InfluxDB reads the `influx` shell's `db=` before `USE`.
pub async fn query(
    State(state): State<AppState>,
    granted: Option<Extension<Granted>>,
    headers: HeaderMap,
    params: RequestParams,
) -> Response {
    let param = |name: &str| params.get(name);
    let db = params.database_or_none_if_empty().map(DatabaseName::as_str);
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
    if let Err(e) = select::check_zones(&parsed).and_then(|()| regexes::check(&parsed)) {
        return bad_request(&format!("error parsing query: {e}"));
    }
    let mut results: Vec<StatementResult> = Vec::new();
    for statement in &parsed.statements {
        let granted = granted.as_ref().map(|Extension(g)| g);
        results.push(run(&state.engine, db, granted, statement).await);
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

/// One statement's answer, in the database it names, else `db` (see the module's doc);
/// `CREATE` and `DROP DATABASE` need the admin scope where `--auth` is on.
pub async fn run(
    root: &Engine,
    db: Option<&str>,
    granted: Option<&Granted>,
    statement: &Statement,
) -> StatementResult {
    if matches!(
        statement,
        Statement::CreateDatabase(_) | Statement::DropDatabase(_)
    ) {
        Granted::allows(granted, Scope::Admin)?;
    }
    match statement {
        Statement::CreateDatabase(name) => {
            root.create_database(name)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Vec::new())
        }
        // As in InfluxDB 1.x, dropping a database that does not exist is no error.
        Statement::DropDatabase(name) => match root.drop_database(name).await {
            Ok(_) | Err(EngineError::UnknownDatabase(_)) => Ok(Vec::new()),
            Err(e) => Err(e.to_string()),
        },
        Statement::ShowDatabases => {
            let names = root.list_databases().await.map_err(|e| e.to_string())?;
            Ok(vec![Series {
                name: "databases".into(),
                tags: Vec::new(),
                columns: vec!["name".into()],
                values: names
                    .into_iter()
                    .map(|n| vec![Cell::Text(n.to_string())])
                    .collect(),
            }])
        }
        statement => {
            let engine = match root.database(statement.database().or(db)).await {
                Ok(engine) => engine,
                Err(EngineError::UnknownDatabase(name)) => {
                    return Err(format!("database not found: {name}"))
                }
                Err(e) => return Err(e.to_string()),
            };
            match statement {
                Statement::Select(select) => select::run(&engine, select).await,
                other => show::run(&engine, other).await,
            }
        }
    }
}
