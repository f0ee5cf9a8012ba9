//! Prometheus' error shape: `{"status":"error","errorType":"bad_data","error":"…"}`, 400
//! for bad input, 422 for execution errors, the store's failures as tickertape's own.

use crate::error::{ApiError, RequestError};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tickertape_engine::{EngineError, OverLimit};
use tickertape_prometheus::promql::PromqlError;

#[derive(Debug)]
pub(crate) struct PromError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl PromError {
    pub(crate) fn bad_data(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_data",
            message: message.into(),
        }
    }

    pub(crate) fn execution(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            kind: "execution",
            message: message.into(),
        }
    }
}

impl PromError {
    /// A query wider than `--max-query-series`/`--max-query-points` (the only 422 the
    /// engine gives).
    pub(crate) fn is_over_limit(&self) -> bool {
        self.status == StatusCode::UNPROCESSABLE_ENTITY && self.kind == "execution"
    }
}

impl std::fmt::Display for PromError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<PromqlError> for PromError {
    fn from(e: PromqlError) -> Self {
        match e {
            PromqlError::BadData(_) | PromqlError::Unsupported(_) => Self::bad_data(e.to_string()),
            PromqlError::Execution(_) => Self::execution(e.to_string()),
            PromqlError::Budget(e) => EngineError::from(e).into(),
        }
    }
}

/// The request's edge (parameters, database name, body): its status, as `bad_data`.
impl From<RequestError> for PromError {
    fn from(e: RequestError) -> Self {
        Self {
            status: e.status(),
            kind: "bad_data",
            message: e.to_string(),
        }
    }
}

impl From<EngineError> for PromError {
    fn from(e: EngineError) -> Self {
        if let EngineError::OverLimit(over) = &e {
            return Self::execution(over_limit_message(over));
        }
        let message = e.to_string();
        let status = ApiError::Engine(e).status();
        let kind = match status {
            StatusCode::BAD_REQUEST => "bad_data",
            StatusCode::UNPROCESSABLE_ENTITY => "execution",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            StatusCode::NOT_FOUND => "not_found",
            _ => "internal",
        };
        Self {
            status,
            kind,
            message,
        }
    }
}

/// A limit's message in PromQL's words: selectors and steps, not the own API's parameters.
fn over_limit_message(over: &OverLimit) -> String {
    let advice = match over {
        OverLimit::Series { .. } => "narrow the selector with more label matchers",
        OverLimit::Points { .. } | OverLimit::Bytes { .. } => {
            "use a larger step, a shorter range or fewer series"
        }
    };
    format!("{}: {advice}", over.what())
}

impl From<tickertape_engine::Exhausted> for PromError {
    fn from(e: tickertape_engine::Exhausted) -> Self {
        EngineError::from(e).into()
    }
}

impl IntoResponse for PromError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(error = %self.message, "Prometheus API request failed");
        }
        let body = serde_json::json!({
            "status": "error",
            "errorType": self.kind,
            "error": self.message,
        });
        (self.status, axum::Json(body)).into_response()
    }
}
