//! The one mapping from errors to HTTP answers. Bodies are JSON: `{"error": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tickertape_backend::BackendError;
use tickertape_engine::EngineError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A bad request parameter or body; the message names it.
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    TooLarge(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Engine(EngineError::BadQuery(_)) => StatusCode::BAD_REQUEST,
            Self::Engine(EngineError::Backend(e)) => match e {
                BackendError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                BackendError::Invalid(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response()
    }
}
