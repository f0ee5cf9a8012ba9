//! The one mapping from errors to HTTP answers. Bodies are JSON: `{"error": "..."}`.
//!
//! [`RequestError`] is what the request's edge refuses before any handler runs (its
//! parameters, database name, body size and encoding); each API answers it in its own
//! shape: [`ApiError`] here (the own API, InfluxDB's routes), Prometheus' in
//! `prometheus::error`, OTLP's `google.rpc.Status`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tickertape_backend::BackendError;
use tickertape_engine::{EngineError, Exhausted};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A bad request parameter or body; the message names it.
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    TooLarge(String),
    /// A body in a format this endpoint does not take (HTTP 415); the message names it.
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What the request's edge refuses (`crate::params`, `crate::body`); the message names
/// the parameter, header or limit.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    /// The database named in two places, differently: each mention as `"name" (where)`.
    #[error("the database is named twice, differently: {first} and {second}")]
    DatabaseConflict { first: String, second: String },
    /// A name that cannot be a database, with where it was given.
    #[error("{mention}: {error}")]
    BadDatabase {
        mention: String,
        error: tickertape_core::database::DatabaseNameError,
    },
    /// An empty database name (InfluxDB 1.x's words).
    #[error("database name required: {0} is empty")]
    EmptyDatabase(String),
    /// A body over `--max-body-bytes`, as sent or once decoded.
    #[error("request body exceeds the limit of {0} bytes (--max-body-bytes)")]
    TooLarge(usize),
    /// A `Content-Encoding` the route does not take.
    #[error("Content-Encoding {given:?} is not supported: this endpoint takes {taken}")]
    Encoding { given: String, taken: &'static str },
    /// A body on a route whose body is a form of parameters, in another format.
    #[error(
        "Content-Type {0:?} is not supported: a body here holds parameters, as \
         application/x-www-form-urlencoded"
    )]
    NotAForm(String),
    /// A body that could not be read or decoded (a broken gzip stream).
    #[error("{0}")]
    BadBody(String),
}

impl RequestError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Encoding { .. } | Self::NotAForm(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::DatabaseConflict { .. }
            | Self::BadDatabase { .. }
            | Self::EmptyDatabase(_)
            | Self::BadBody(_) => StatusCode::BAD_REQUEST,
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> Self {
        let message = e.to_string();
        match e.status() {
            StatusCode::PAYLOAD_TOO_LARGE => Self::TooLarge(message),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType(message),
            _ => Self::BadRequest(message),
        }
    }
}

/// In the own API's shape, for extractors whose refusal is answered as it is.
impl IntoResponse for RequestError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

impl ApiError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Engine(EngineError::BadQuery(_)) => StatusCode::BAD_REQUEST,
            Self::Engine(EngineError::OverLimit(_)) => StatusCode::UNPROCESSABLE_ENTITY,
            // InfluxDB 1.x answers a write to a database that does not exist with 404.
            Self::Engine(EngineError::UnknownDatabase(_)) => StatusCode::NOT_FOUND,
            // A write naming a retention policy its database does not have: InfluxDB 1.x's
            // words (`retention policy not found: x`), but 404 as for a database that does
            // not exist, where InfluxDB answers 500: the client's mistake, not the
            // server's, so no 5xx tells a sender to retry it forever.
            Self::Engine(EngineError::RetentionPolicy(_)) => StatusCode::NOT_FOUND,
            // Nobody reads it: the client went away (nginx's "client closed request").
            Self::Engine(EngineError::Cancelled) => {
                StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST)
            }
            Self::Engine(EngineError::Backend(e)) => match e {
                BackendError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                BackendError::Invalid(_) => StatusCode::BAD_REQUEST,
                // The message says what to use instead.
                BackendError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
                // The engine registers every series it appends to: an unknown one means
                // the store lost what the engine cached (a dropped database), not a bad
                // request.
                BackendError::UnknownSeries(_) | BackendError::Storage(_) => {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }
}

impl From<Exhausted> for ApiError {
    fn from(e: Exhausted) -> Self {
        Self::Engine(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // A missing retention policy is the client's mistake, answered 500 as InfluxDB does.
        let clients = matches!(self, Self::Engine(EngineError::RetentionPolicy(_)));
        if status.is_server_error() && !clients {
            tracing::error!(error = %self, "request failed");
        }
        (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_engine::OverLimit;

    /// A store that cannot be reached answers 503, so clients retry; a storage fault 500;
    /// a bad request 400. Nothing the backend reports as unavailable becomes a 2xx.
    #[test]
    fn backend_errors_map_to_status_codes() {
        let status = |e: BackendError| {
            ApiError::Engine(EngineError::Backend(e))
                .into_response()
                .status()
        };
        assert_eq!(
            status(BackendError::Unavailable("cannot reach MongoDB".into())),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            status(BackendError::Storage("disk".into())),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            status(BackendError::Invalid("x".into())),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(BackendError::UnknownSeries(tickertape_core::SeriesId(7))),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            status(BackendError::Unsupported("use mongodump".into())),
            StatusCode::NOT_IMPLEMENTED
        );
    }

    /// A query over a limit is understood but refused: 422, not 400 (nothing in it is
    /// malformed) nor 500.
    #[test]
    fn a_query_over_a_limit_is_422() {
        let over = ApiError::Engine(EngineError::OverLimit(OverLimit::Points { limit: 3 }));
        assert_eq!(
            over.into_response().status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
