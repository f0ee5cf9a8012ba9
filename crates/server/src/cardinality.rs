//! `GET /api/v1/status/cardinality?limit=N[&db=D]`: the database's series (and every
//! database's count), which measurements, fields, tag keys and tag
//! pairs make the series count (the engine's [`tickertape_engine::Cardinality`]), the
//! `limit` largest of each (default 10). Prometheus' view of the same counts is
//! `/prometheus/api/v1/status/tsdb` (`prometheus/status.rs`).

use crate::database::InDatabase;
use crate::error::ApiError;
use crate::params::RequestParams;
use crate::query::Params;
use axum::Json;
use serde_json::{json, Value};

/// Entries per list when `limit` is not given (Prometheus' default too).
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 10_000;

/// `limit`: 1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]; shared with the Prometheus view.
pub fn parse_limit(text: Option<&str>) -> Result<usize, String> {
    let Some(text) = text else {
        return Ok(DEFAULT_LIMIT);
    };
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| format!("parameter limit: {text:?} is not an integer from 1 to {MAX_LIMIT}"))
}

pub async fn cardinality(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Json<Value>, ApiError> {
    let params = Params::new(&request, &["limit"])?;
    let limit = parse_limit(params.one("limit")).map_err(ApiError::BadRequest)?;
    let c = engine.cardinality(limit).await?;
    let named = |items: Vec<(String, u64)>, what: &str| -> Vec<Value> {
        items
            .into_iter()
            .map(|(name, n)| json!({ "name": name, what: n }))
            .collect()
    };
    Ok(Json(json!({
        "database": c.database,
        "series": c.series,
        "series_in_all_databases": c.series_in_all_databases,
        "series_by_database": named(c.series_by_database, "series"),
        "measurements": c.measurements,
        "fields": c.fields,
        "tag_pairs": c.tag_pairs,
        "series_by_measurement": named(c.series_by_measurement, "series"),
        "series_by_field": c.series_by_field.into_iter()
            .map(|((m, f), n)| json!({ "measurement": m, "field": f, "series": n }))
            .collect::<Vec<_>>(),
        "values_by_tag_key": named(c.values_by_tag_key, "values"),
        "series_by_tag": c.series_by_tag_pair.into_iter()
            .map(|((k, v), n)| json!({ "key": k, "value": v, "series": n }))
            .collect::<Vec<_>>(),
    })))
}
