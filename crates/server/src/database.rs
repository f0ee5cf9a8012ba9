//! Which database a request is about, resolved once at the edge: [`InDatabase`] hands a
//! handler the engine of that database (`tickertape_engine`'s databases), so no handler
//! names databases itself.
//!
//! The name comes from the request's parameters as [`RequestParams`] reads them — the
//! path `/prometheus/db/<name>/…`, `db` or `bucket` in the query string or a form body —
//! where naming it in two places differently, an empty name or one that cannot be a
//! database answers 400. None: the default database. One that does not exist answers
//! 404, InfluxDB's `database not found`.

use crate::error::{ApiError, RequestError};
use crate::params::RequestParams;
use crate::prometheus::error::PromError;
use crate::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use tickertape_core::database::DatabaseName;
use tickertape_engine::{Engine, EngineError};

/// The engine of the request's database; refusals in the own API's error shape.
pub struct InDatabase(pub Engine);

/// [`InDatabase`] for Prometheus' routes: refusals in Prometheus' error shape.
pub(crate) struct PromDatabase(pub Engine);

impl FromRequestParts<AppState> for InDatabase {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let params = RequestParams::of(parts).await?;
        Ok(Self(resolve(&params, state).await??))
    }
}

impl FromRequestParts<AppState> for PromDatabase {
    type Rejection = PromError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PromError> {
        let params = RequestParams::of(parts).await?;
        Ok(Self(resolve(&params, state).await??))
    }
}

/// The engine of the database `params` name: the outer error is the request's, the inner
/// the engine's (no such database).
async fn resolve(
    params: &RequestParams,
    state: &AppState,
) -> Result<Result<Engine, EngineError>, RequestError> {
    let name = params.database()?.map(DatabaseName::as_str);
    Ok(state.engine.database(name).await)
}
