//! `GET /api/v1/measurements`, `/api/v1/fields`, `/api/v1/tag_keys`, `/api/v1/tag_values`:
//! the names a search box offers as one types (`prefix`), the first `limit`, cheap at a
//! million series because they come from the index, never from the series.

use crate::database::InDatabase;
use crate::error::ApiError;
use crate::params::RequestParams;
use crate::query::Params;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tickertape_backend::NameQuery;
use tickertape_engine::Listing;

/// Names returned when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest `limit` accepted: a picker never shows more, and a listing must stay cheap.
pub const MAX_LIMIT: usize = 10_000;

pub async fn measurements(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Response, ApiError> {
    let params = Params::new(&request, &["prefix", "limit"])?;
    let listing = engine.list_measurements(&name_query(&params)?).await?;
    Ok(answer("measurements", listing))
}

pub async fn fields(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Response, ApiError> {
    let (params, names) = of_measurement(&request, &[])?;
    let measurement = params.required("measurement")?;
    let listing = engine.list_fields_of(measurement, &names).await?;
    Ok(answer("fields", listing))
}

pub async fn tag_keys(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Response, ApiError> {
    let (params, names) = of_measurement(&request, &[])?;
    let measurement = params.required("measurement")?;
    let listing = engine.list_tag_keys(measurement, &names).await?;
    Ok(answer("tag_keys", listing))
}

pub async fn tag_values(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Response, ApiError> {
    let (params, names) = of_measurement(&request, &["key"])?;
    let (measurement, key) = (params.required("measurement")?, params.required("key")?);
    let listing = engine.list_tag_values(measurement, key, &names).await?;
    Ok(answer("tag_values", listing))
}

/// The parameters of a listing of one measurement's names: `measurement`, `prefix`,
/// `limit` and `extra`.
fn of_measurement(
    request: &RequestParams,
    extra: &[&str],
) -> Result<(Params, NameQuery), ApiError> {
    let mut known = vec!["measurement", "prefix", "limit"];
    known.extend_from_slice(extra);
    let params = Params::new(request, &known)?;
    let names = name_query(&params)?;
    Ok((params, names))
}

/// `prefix` (default empty) and `limit` (default [`DEFAULT_LIMIT`], 1 to [`MAX_LIMIT`]).
fn name_query(params: &Params) -> Result<NameQuery, ApiError> {
    let limit = match params.one("limit") {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "parameter limit: {text:?} is not an integer from 1 to {MAX_LIMIT}"
                ))
            })?,
    };
    Ok(NameQuery::new(params.one("prefix").unwrap_or(""), limit))
}

/// `{"<what>": [names…], "truncated": bool}`.
fn answer(what: &str, listing: Listing) -> Response {
    let mut body = serde_json::Map::new();
    body.insert(what.to_owned(), listing.names.into());
    body.insert("truncated".to_owned(), listing.truncated.into());
    Json(serde_json::Value::Object(body)).into_response()
}
