//! Operations on the store rather than its data.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
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
