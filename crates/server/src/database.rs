//! Which database a request is about, resolved once at the edge: [`InDatabase`] hands a
//! handler the engine of that database (`tickertape_engine`'s databases), so no handler
//! names databases itself.
//!
//! Where the name comes from, first found wins: the path `/prometheus/db/<name>/…` (a
//! Grafana Prometheus data source's URL can name it), the query string's `db` (InfluxDB
//! 1.x, the own API, Prometheus' API) or `bucket` (InfluxDB 2's write; `db/rp` is read as
//! `db`, as InfluxDB's 1.x compatibility reads it). None: the default database. A name
//! that cannot be a database answers 400; one that does not exist 404, InfluxDB's
//! `database not found`. Parameters in a form body are not looked at: a handler that
//! takes a form body with `db` in it (`/query`, `/api/v1/admin/delete`) resolves it itself.

use crate::error::ApiError;
use crate::prometheus::error::PromError;
use crate::AppState;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use tickertape_engine::{Engine, EngineError};

/// The query parameter naming the database.
pub const DB_PARAM: &str = "db";

/// The engine of the request's database; refusals in the own API's error shape.
pub struct InDatabase(pub Engine);

/// [`InDatabase`] for Prometheus' routes: refusals in Prometheus' error shape.
pub(crate) struct PromDatabase(pub Engine);

impl FromRequestParts<AppState> for InDatabase {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(Self(resolve(parts, state).await?))
    }
}

impl FromRequestParts<AppState> for PromDatabase {
    type Rejection = PromError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PromError> {
        Ok(Self(resolve(parts, state).await?))
    }
}

async fn resolve(parts: &mut Parts, state: &AppState) -> Result<Engine, EngineError> {
    let name = match RawPathParams::from_request_parts(parts, state).await {
        Ok(params) => params
            .iter()
            .find(|(key, _)| *key == DB_PARAM)
            .map(|(_, value)| value.to_string()),
        Err(_) => None,
    };
    let name = name.or_else(|| named_in_query(parts.uri.query().unwrap_or("")));
    state.engine.database(name.as_deref()).await
}

/// `db`, else `bucket` up to its `/`.
fn named_in_query(query: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let find = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if let Some(db) = find(DB_PARAM) {
        return Some(db.clone());
    }
    let bucket = find("bucket")?;
    Some(bucket.split('/').next().unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_then_bucket_without_its_retention_policy() {
        assert_eq!(named_in_query("db=app&u=x"), Some("app".into()));
        assert_eq!(
            named_in_query("bucket=app%2Fautogen&org=o"),
            Some("app".into())
        );
        assert_eq!(named_in_query("bucket=app"), Some("app".into()));
        assert_eq!(named_in_query("db=a&bucket=b"), Some("a".into()));
        assert_eq!(named_in_query("precision=s"), None);
        assert_eq!(named_in_query("db="), Some(String::new()));
    }
}
