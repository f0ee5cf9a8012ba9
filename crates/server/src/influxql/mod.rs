//! InfluxQL on `/query` (InfluxDB 1.x's query endpoint), for Grafana's InfluxDB data
//! source and the `influx` shell: GET or POST form, `q` (`;`-separated statements answered
//! in order), `epoch=`, `pretty=true`, `Accept: application/csv`. The statements are parsed
//! and evaluated by the `tickertape-influxql` crate (`SELECT` and `SHOW` in its `eval`,
//! reading through [`store::EngineStore`], the engine of the statement's database); this
//! module reads the request, resolves each statement's database, runs the statements that
//! manage databases and ([`policies`]) retention policies, and writes the answer.
//!
//! A statement runs in the database it names (`ON db`, `FROM "db"."rp"."m"`), else in the
//! request's `db`, else in the default database; one that does not exist answers
//! InfluxDB's `database not found: db` for that statement. `CREATE DATABASE`,
//! `DROP DATABASE` and `SHOW DATABASES` manage the engine's databases; [`policies`] their
//! retention policies, and refuses a statement naming one its database does not have
//! (`rp=`, `"rp"."m"`); every policy of a database names the same points.

mod policies;
pub mod store;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;
use tickertape_engine::{Engine, EngineError, Exhausted, QueryBudget};
use tickertape_influxql::eval::{self, Cell, Epoch, Format, Series, StatementResult};
use tickertape_influxql::Statement;

use crate::auth::Granted;
use crate::budget::on_blocking_thread;
use crate::error::ApiError;
use crate::params::RequestParams;
use crate::AppState;
use axum::Extension;
use store::{read_error, EngineStore};
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
    if let Err(e) = eval::check(&parsed) {
        return bad_request(&format!("error parsing query: {e}"));
    }
    let budget = Arc::new(state.engine.budget());
    let _cancel = budget.cancel_on_drop();
    let mut results: Vec<StatementResult> = Vec::new();
    for statement in &parsed.statements {
        let granted = granted.as_ref().map(|Extension(g)| g);
        let context = StatementContext {
            db,
            rp: param("rp"),
        };
        results.push(run(&state.engine, context, granted, statement, &budget).await);
    }
    let csv = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/csv") || a.contains("text/csv"));
    let format = match (csv, param("pretty")) {
        (true, _) => Format::Csv,
        (false, Some("true")) => Format::PrettyJson,
        _ => Format::Json,
    };
    answer(results, epoch, format, &budget).await
}

/// The statements' answer in `format`, written on a blocking thread under the request's
/// budget. A statement stopped by the budget fails the whole request (422, naming the
/// limit): what the others hold counted towards it, and would be cut short anyway.
async fn answer(
    results: Vec<StatementResult>,
    epoch: Epoch,
    format: Format,
    budget: &Arc<QueryBudget>,
) -> Response {
    if let Some(e) = budget.exhausted() {
        return over_budget(e);
    }
    let text = on_blocking_thread(budget, move |budget| {
        eval::output::write(&results, epoch, format, budget)
    })
    .await;
    match text.and_then(|text| text) {
        Ok(text) => ([(header::CONTENT_TYPE, format.content_type())], text).into_response(),
        Err(e) => over_budget(e),
    }
}

/// A request stopped by its budget: 422 and InfluxDB's top-level `{"error"}`, naming
/// the limit (499 to a client that has gone: nobody reads it).
fn over_budget(e: Exhausted) -> Response {
    let error = ApiError::from(e);
    let message = read_error(EngineError::from(e)).in_select();
    let body = json!({ "error": message }).to_string();
    (
        error.status(),
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
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

/// What a statement takes from its request: the `db` and `rp` parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatementContext<'a> {
    pub db: Option<&'a str>,
    pub rp: Option<&'a str>,
}

/// One statement's answer, in the database it names, else `db` (see the module's doc);
/// the statements that create or drop databases and policies need the admin scope where
/// `--auth` is on.
pub async fn run(
    root: &Engine,
    context: StatementContext<'_>,
    granted: Option<&Granted>,
    statement: &Statement,
    budget: &QueryBudget,
) -> StatementResult {
    if matches!(
        statement,
        Statement::CreateDatabase { .. }
            | Statement::DropDatabase(_)
            | Statement::CreateRetentionPolicy { .. }
            | Statement::AlterRetentionPolicy { .. }
            | Statement::DropRetentionPolicy { .. }
    ) {
        Granted::allows(granted, Scope::Admin)?;
    }
    match statement {
        Statement::CreateDatabase { name, with: None } => {
            root.create_database(name)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Vec::new())
        }
        Statement::CreateDatabase {
            name,
            with: Some(with),
        } => policies::create_database_with(root, name, with).await,
        Statement::CreateRetentionPolicy { .. }
        | Statement::AlterRetentionPolicy { .. }
        | Statement::DropRetentionPolicy { .. } => policies::change(root, statement).await,
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
            let engine = match root.database(statement.database().or(context.db)).await {
                Ok(engine) => engine,
                Err(EngineError::UnknownDatabase(name)) => {
                    return Err(format!("database not found: {name}"))
                }
                Err(e) => return Err(e.to_string()),
            };
            policies::check_sources(&engine, statement, context.rp).await?;
            let store = EngineStore(&engine);
            match statement {
                Statement::Select(select) => eval::run_select(&store, select, budget).await,
                Statement::ShowRetentionPolicies { .. } => policies::show(&engine).await,
                other => eval::run_show(&store, other).await,
            }
        }
    }
}
