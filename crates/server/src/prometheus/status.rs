//! `GET /prometheus/api/v1/status/tsdb?limit=N`: the cardinality counts in Prometheus'
//! shape (what its UI's "TSDB Status" page and tools read): `headStats` with the series
//! and label pair counts, and the `limit` largest of `seriesCountByMetricName`,
//! `labelValueCountByLabelName` and `seriesCountByLabelValuePair`, `__name__` counted as a
//! label as Prometheus does. Left out, as tickertape has no head block to describe:
//! `headStats`' chunk count and time range, and `memoryInBytesByLabelName`.

use super::error::PromError;
use super::params::Params;
use crate::cardinality::parse_limit;
use crate::database::PromDatabase;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tickertape_prometheus::mapping::{metric_name, sanitize_label_name};

pub(crate) async fn tsdb(
    PromDatabase(engine): PromDatabase,
    params: Params,
) -> Result<Response, PromError> {
    let limit = parse_limit(params.get("limit")).map_err(PromError::bad_data)?;
    let c = engine.cardinality(limit).await?;
    let by_metric: Vec<(String, u64)> = c
        .series_by_field
        .iter()
        .map(|((m, f), n)| (metric_name(m, f), *n))
        .collect();
    let mut value_counts: Vec<(String, u64)> = c
        .values_by_tag_key
        .iter()
        .map(|(k, n)| (sanitize_label_name(k), *n))
        .chain(std::iter::once(("__name__".to_string(), c.fields)))
        .collect();
    let mut pairs: Vec<(String, u64)> = c
        .series_by_tag_pair
        .iter()
        .map(|((k, v), n)| (format!("{}={v}", sanitize_label_name(k)), *n))
        .chain(
            by_metric
                .iter()
                .map(|(name, n)| (format!("__name__={name}"), *n)),
        )
        .collect();
    for list in [&mut value_counts, &mut pairs] {
        list.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        list.truncate(limit);
    }
    let entries = |items: &[(String, u64)]| -> Vec<serde_json::Value> {
        items
            .iter()
            .map(|(name, n)| json!({ "name": name, "value": n }))
            .collect()
    };
    let data = json!({
        "headStats": {
            "numSeries": c.series,
            "numLabelPairs": c.tag_pairs + c.fields,
        },
        "seriesCountByMetricName": entries(&by_metric),
        "labelValueCountByLabelName": entries(&value_counts),
        "seriesCountByLabelValuePair": entries(&pairs),
    });
    let body = super::json::success(&data.to_string(), &[]);
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
