//! `POST|PUT /prometheus/api/v1/admin/tsdb/delete_series`: Prometheus' TSDB admin delete.
//! Every `match[]` selector (at least one) selects series as the query API's do; `start`
//! and `end` (Unix seconds or RFC 3339, both optional) bound the samples deleted, both
//! included as in Prometheus: `[start, end]` in milliseconds, so every stored time within
//! the millisecond `end` goes too. Without either, the series are deleted whole and leave
//! the catalog (Prometheus removes a series whose samples are all deleted). Answers 204
//! once the delete is durable, as Prometheus does.

use super::api::match_params;
use super::error::PromError;
use super::params::Params;
use super::select::select_series_to_delete;
use crate::database::PromDatabase;
use crate::params::form;
use crate::AppState;
use axum::http::StatusCode;
use axum::routing::{post, MethodRouter};
use tickertape_backend::{DeleteRange, SeriesInfo};

const NS_PER_MS: i64 = 1_000_000;

/// The route's handler for both methods Prometheus accepts, POST and PUT, each taking
/// its parameters in the query string or a form body.
pub(crate) fn handler(state: &AppState) -> MethodRouter<AppState> {
    form(post(delete_series).put(delete_series), state)
}

async fn delete_series(
    PromDatabase(engine): PromDatabase,
    p: Params,
) -> Result<StatusCode, PromError> {
    let selectors = match_params(&p)?;
    if selectors.is_empty() {
        return Err(PromError::bad_data("no match[] parameter provided"));
    }
    let range = delete_range(&p)?;
    let mut series: Vec<SeriesInfo> = Vec::new();
    for matchers in &selectors {
        let selected = select_series_to_delete(&engine, matchers).await?;
        series.extend(selected.into_iter().map(|(_, info)| info));
    }
    engine.delete_series(series, range).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `[start, end]` in ms as the half-open range of nanoseconds it covers.
fn delete_range(p: &Params) -> Result<DeleteRange, PromError> {
    let bound = |name: &str| {
        p.get(name)
            .filter(|v| !v.is_empty())
            .map(|_| p.time_or(name, 0))
            .transpose()
    };
    let start = bound("start")?.map(|ms| ms.saturating_mul(NS_PER_MS));
    let end = match bound("end")? {
        // The last millisecond included: its every nanosecond.
        Some(ms) => ms
            .checked_add(1)
            .and_then(|next| next.checked_mul(NS_PER_MS)),
        None => None,
    };
    DeleteRange::new(start, end).map_err(|_| {
        PromError::bad_data(
            "invalid parameter \"end\": end timestamp must not be before start time",
        )
    })
}
