//! Operations on the store rather than its data.

use crate::database::InDatabase;
use crate::error::ApiError;
use crate::params::RequestParams;
use crate::query::Params;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use tickertape_backend::{DeleteRange, SnapshotTarget};
use tickertape_core::time::parse_time;

/// `POST /api/v1/admin/compact`: flushes what the store holds in memory and merges its
/// files, answering 204 when everything mergeable is merged (as VictoriaMetrics'
/// `force_merge`). A store with nothing to merge answers at once.
pub async fn compact(State(state): State<AppState>) -> Result<StatusCode, ApiError> {
    let started = std::time::Instant::now();
    state.engine.compact().await?;
    tracing::info!(ms = started.elapsed().as_millis() as u64, "compaction done");
    Ok(StatusCode::NO_CONTENT)
}

/// Every parameter `/api/v1/admin/delete` takes: the query API's selection and range.
const DELETE_PARAMS: &[&str] = &["measurement", "field", "tag", "start", "end"];

/// The answer of `/api/v1/admin/delete`.
#[derive(Serialize)]
pub struct DeleteAnswer {
    pub series_matched: u64,
    pub series_removed: u64,
}

/// `POST /api/v1/admin/delete?measurement=M[&tag=K:V…][&field=F][&start=S][&end=E][&db=D]` (or
/// the same as a form body): deletes the points in `[start, end)` (RFC 3339, integer ns or
/// relative to now, as the query API) of the series the selection matches; without
/// `start` and `end`, the series whole, which leave the catalog. Answers how many series
/// were matched and removed, once the delete is durable. A request without a measurement
/// selects nothing and is refused, so no delete removes everything by omission.
pub async fn delete(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Json<DeleteAnswer>, ApiError> {
    let params = Params::new(&request, DELETE_PARAMS)?;
    if params.one("measurement").is_none_or(str::is_empty) {
        return Err(ApiError::BadRequest(
            "a delete needs a selection: parameter measurement is required (with optional \
             tag and field conditions)"
                .into(),
        ));
    }
    let selector = params.selector()?;
    let now = engine.now_nanos();
    let time = |name: &str| {
        params
            .one(name)
            .map(|v| {
                parse_time(v, now)
                    .map_err(|e| ApiError::BadRequest(format!("parameter {name}: {e}")))
            })
            .transpose()
    };
    let range = DeleteRange::new(time("start")?, time("end")?)
        .map_err(|e| ApiError::BadRequest(format!("parameters start and end: {e}")))?;
    let report = engine.delete(&selector, range).await?;
    Ok(Json(DeleteAnswer {
        series_matched: report.series_matched,
        series_removed: report.series_removed,
    }))
}

/// `POST /api/v1/admin/snapshot`: copies the store, while it keeps serving, into a new
/// directory named by the UTC time (`snapshots/20261126T130102Z` in the store, or under
/// `serve --snapshot-dir`) and answers `{"path": DIR, ...}` once the copy is durable. The
/// copy holds every write answered before the request; `serve --store DIR` opens it.
/// A backend that cannot (MongoDB) answers 501 saying what to use instead.
pub async fn snapshot(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let started = std::time::Instant::now();
    let target = match &state.config.snapshot_dir {
        Some(dir) => SnapshotTarget::Under(dir.clone()),
        None => SnapshotTarget::InStore,
    };
    let report = state.engine.snapshot(target).await?;
    let ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        path = %report.path.display(),
        files_linked = report.files_linked,
        files_copied = report.files_copied,
        bytes_copied = report.bytes_copied,
        writes_paused_ms = report.writes_paused.as_millis() as u64,
        ms,
        "snapshot taken"
    );
    Ok(Json(serde_json::json!({
        "path": report.path,
        "files_linked": report.files_linked,
        "files_copied": report.files_copied,
        "bytes_copied": report.bytes_copied,
        "writes_paused_ms": report.writes_paused.as_millis() as u64,
        "ms": ms,
    })))
}
