//! The databases themselves (the engine's `databases`): `GET /api/v1/databases` lists
//! them (read scope: the dashboard's picker), `POST` and `DELETE
//! /api/v1/admin/databases?name=N` create and drop one (admin scope). InfluxQL's `CREATE
//! DATABASE`, `DROP DATABASE` and `SHOW DATABASES` on `/query` do the same.

use crate::error::ApiError;
use crate::params::RequestParams;
use crate::query::Params;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

/// `{"databases": [...], "default": name}`: every database, sorted, the default included.
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let names: Vec<String> = state
        .engine
        .list_databases()
        .await?
        .iter()
        .map(|n| n.to_string())
        .collect();
    let default = state.engine.default_database().to_string();
    Ok(Json(json!({ "databases": names, "default": default })))
}

/// `POST /api/v1/admin/databases?name=N`: 201 when it is new, 200 when it existed.
pub async fn create(
    State(state): State<AppState>,
    request: RequestParams,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let params = Params::new(&request, &["name"])?;
    let name = params.required("name")?;
    let created = state.engine.create_database(name).await?;
    let status = match created {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    Ok((status, Json(json!({ "name": name, "created": created }))))
}

/// `DELETE /api/v1/admin/databases?name=N`: deletes every series of the database, then
/// the database (the default one is emptied and stays); 404 if it does not exist.
pub async fn drop(
    State(state): State<AppState>,
    request: RequestParams,
) -> Result<Json<Value>, ApiError> {
    let params = Params::new(&request, &["name"])?;
    let name = params.required("name")?;
    let report = state.engine.drop_database(name).await?;
    Ok(Json(json!({
        "name": name,
        "series_matched": report.series_matched,
        "series_removed": report.series_removed,
    })))
}
