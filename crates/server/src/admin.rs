//! Operations on the store rather than its data.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use tickertape_backend::SnapshotTarget;
use tickertape_engine::EngineError;

/// `POST /api/v1/admin/compact`: flushes what the store holds in memory and merges its
/// files, answering 204 when everything mergeable is merged (as VictoriaMetrics'
/// `force_merge`). A store with nothing to merge answers at once.
pub async fn compact(State(state): State<AppState>) -> Result<StatusCode, ApiError> {
    let started = std::time::Instant::now();
    state
        .engine
        .backend()
        .compact()
        .await
        .map_err(EngineError::from)?;
    tracing::info!(ms = started.elapsed().as_millis() as u64, "compaction done");
    Ok(StatusCode::NO_CONTENT)
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
    let report = state
        .engine
        .backend()
        .snapshot(target)
        .await
        .map_err(EngineError::from)?;
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
