//! `POST /opentelemetry/v1/metrics`: OTLP/HTTP metrics export, as OpenTelemetry SDKs and
//! the collector's `otlphttp` exporter send it.
//!
//! - Body: an `ExportMetricsServiceRequest` (the official `opentelemetry-proto`
//!   definitions), protobuf (`Content-Type: application/x-protobuf`) or OTLP/JSON
//!   (`application/json`), plain or gzipped (`crate::body`). Another content type or
//!   encoding: 415.
//! - Mapping: the series Prometheus' OTLP receiver makes ([`translate`], [`names`]),
//!   stored through the engine's path for decoded series (`Engine::write_samples`, as
//!   remote write): the same series limits, stale markers and durability; the answer comes
//!   once the points are durable.
//! - Answers (OTLP/HTTP specification), in the request's format: 200 with an
//!   `ExportMetricsServiceResponse`; when some data points were refused (delta
//!   temporality, exponential histograms, a series limit, …) its `partial_success` holds
//!   how many and why, and the others are stored — a refused point would be refused again,
//!   so it is not an error the sender should retry. 400 for a body that cannot be decoded
//!   (nothing stored), 413 for one too large, 5xx when the store fails (retryable); their
//!   body is a `google.rpc.Status`.

mod names;
mod translate;
#[cfg(test)]
mod translate_tests;

use crate::body::Body;
use crate::database::InDatabase;
use crate::error::{ApiError, RequestError};
use crate::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use prost::Message;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use tickertape_core::time::Precision;
use tickertape_engine::{Engine, SeriesRef, SeriesSamples, WriteReport};
use tickertape_prometheus::mapping::VALUE_FIELD;
use translate::{Refusal, Translation};

/// Reasons quoted in `partial_success.error_message` and the log; the count is exact.
const QUOTED_REFUSALS: usize = 5;

/// The two encodings of OTLP/HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Protobuf,
    Json,
}

impl Format {
    const PROTOBUF: &'static str = "application/x-protobuf";
    const JSON: &'static str = "application/json";

    /// The format of the body from its `Content-Type` (parameters such as `charset` are
    /// ignored).
    fn of(headers: &HeaderMap) -> Result<Self, ApiError> {
        let value = headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let media = value.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case(Self::PROTOBUF) {
            Ok(Self::Protobuf)
        } else if media.eq_ignore_ascii_case(Self::JSON) {
            Ok(Self::Json)
        } else {
            Err(ApiError::UnsupportedMediaType(format!(
                "Content-Type {value:?} is not supported: OTLP/HTTP bodies are {} or {}",
                Self::PROTOBUF,
                Self::JSON
            )))
        }
    }

    fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Self::Protobuf => Self::PROTOBUF,
            Self::Json => Self::JSON,
        })
    }
}

pub(crate) async fn export(
    State(state): State<AppState>,
    database: Result<InDatabase, ApiError>,
    headers: HeaderMap,
    body: Result<Body, RequestError>,
) -> Response {
    let format = match Format::of(&headers) {
        Ok(format) => format,
        // Which format the sender reads is unknown: JSON is the one a person can read.
        Err(e) => return failure(Format::Json, e),
    };
    let engine = match database {
        Ok(InDatabase(engine)) => engine,
        Err(e) => return failure(format, e),
    };
    let body = match body {
        Ok(Body(body)) => body,
        Err(e) => return failure(format, e.into()),
    };
    match store(&state, &engine, format, &body).await {
        Ok(response) => answer(format, StatusCode::OK, response_bytes(format, &response)),
        Err(e) => failure(format, e),
    }
}

/// Decodes, translates and stores the request; the response to send.
async fn store(
    state: &AppState,
    engine: &Engine,
    format: Format,
    body: &[u8],
) -> Result<ExportMetricsServiceResponse, ApiError> {
    let request = decode_request(format, body)?;
    let translation = translate::translate(&request);
    let series: Vec<SeriesSamples> = translation
        .samples
        .iter()
        .map(|s| SeriesSamples {
            series: SeriesRef {
                measurement: &s.name,
                tags: s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                field: VALUE_FIELD,
            },
            points: std::slice::from_ref(&s.point),
        })
        .collect();
    let report = engine
        .write_samples(&series, Precision::Milliseconds)
        .await?;
    let response = response_of(&translation, &report);
    let metrics = &state.metrics;
    metrics
        .points_written
        .fetch_add(report.points_written, Ordering::Relaxed);
    metrics
        .otlp_data_points_received
        .fetch_add(translation.data_points as u64, Ordering::Relaxed);
    let rejected = response
        .partial_success
        .as_ref()
        .map_or(0, |p| p.rejected_data_points.max(0) as u64);
    metrics
        .otlp_data_points_rejected
        .fetch_add(rejected, Ordering::Relaxed);
    Ok(response)
}

fn decode_request(format: Format, raw: &[u8]) -> Result<ExportMetricsServiceRequest, ApiError> {
    match format {
        Format::Protobuf => ExportMetricsServiceRequest::decode(raw).map_err(|e| {
            ApiError::BadRequest(format!(
                "body is not a protobuf ExportMetricsServiceRequest: {e}"
            ))
        }),
        Format::Json => serde_json::from_slice(raw).map_err(|e| {
            ApiError::BadRequest(format!(
                "body is not an OTLP/JSON ExportMetricsServiceRequest: {e}"
            ))
        }),
    }
}

/// The response: `partial_success` when a data point was refused, by the translation or
/// by the engine (a sample refused refuses the data point it comes from).
fn response_of(translation: &Translation, report: &WriteReport) -> ExportMetricsServiceResponse {
    let mut refused_points = BTreeSet::new();
    let mut reasons: Vec<&str> = translation
        .refused
        .iter()
        .map(|r| r.message.as_str())
        .collect();
    let mut target_info_refused = 0usize;
    for error in &report.errors {
        // Engine refusals are numbered from 1 in the order of the samples.
        let sample = error
            .line
            .checked_sub(1)
            .and_then(|i| translation.samples.get(i));
        match sample.and_then(|s| s.data_point) {
            Some(point) => {
                refused_points.insert(point);
            }
            None => target_info_refused += 1,
        }
        reasons.push(&error.message);
    }
    let rejected = translation
        .refused
        .iter()
        .map(|r: &Refusal| r.data_points)
        .sum::<usize>()
        + refused_points.len();
    if reasons.is_empty() {
        return ExportMetricsServiceResponse::default();
    }
    let mut message = format!(
        "{rejected} of {} data points rejected",
        translation.data_points
    );
    if target_info_refused > 0 {
        message.push_str(&format!(
            " ({target_info_refused} target_info samples also refused)"
        ));
    }
    message.push_str(": ");
    message.push_str(&reasons[..reasons.len().min(QUOTED_REFUSALS)].join("; "));
    if reasons.len() > QUOTED_REFUSALS {
        message.push_str(&format!("; and {} more", reasons.len() - QUOTED_REFUSALS));
    }
    tracing::warn!(
        rejected_data_points = rejected,
        data_points = translation.data_points,
        "OTLP metrics: {message}"
    );
    ExportMetricsServiceResponse {
        partial_success: Some(ExportMetricsPartialSuccess {
            rejected_data_points: rejected as i64,
            error_message: message,
        }),
    }
}

/// The response in the request's format. OTLP/JSON writes 64-bit integers as strings and
/// leaves out what is unset, so the JSON is written here rather than by the crate's serde
/// derives (which would write `"partialSuccess": null`).
fn response_bytes(format: Format, response: &ExportMetricsServiceResponse) -> Vec<u8> {
    match format {
        Format::Protobuf => response.encode_to_vec(),
        Format::Json => {
            let json = match &response.partial_success {
                None => serde_json::json!({}),
                Some(p) => serde_json::json!({ "partialSuccess": {
                    "rejectedDataPoints": p.rejected_data_points.to_string(),
                    "errorMessage": p.error_message,
                }}),
            };
            json.to_string().into_bytes()
        }
    }
}

fn answer(format: Format, status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, format.content_type());
    response
}

/// `google.rpc.Status`, the body of OTLP/HTTP's failures (not in `opentelemetry-proto`).
#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// A failure: the status [`ApiError`] maps it to, and a `google.rpc.Status` body.
fn failure(format: Format, error: ApiError) -> Response {
    let status = error.status();
    if status.is_server_error() {
        tracing::error!(error = %error, "OTLP metrics export failed");
    }
    let rpc = RpcStatus {
        code: grpc_code(status),
        message: error.to_string(),
    };
    let body = match format {
        Format::Protobuf => rpc.encode_to_vec(),
        Format::Json => serde_json::json!({ "code": rpc.code, "message": rpc.message })
            .to_string()
            .into_bytes(),
    };
    answer(format, status, body)
}

/// The gRPC code of an HTTP status, as gRPC's own HTTP mapping pairs them.
fn grpc_code(status: StatusCode) -> i32 {
    const INVALID_ARGUMENT: i32 = 3;
    const RESOURCE_EXHAUSTED: i32 = 8;
    const UNIMPLEMENTED: i32 = 12;
    const INTERNAL: i32 = 13;
    const UNAVAILABLE: i32 = 14;
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => RESOURCE_EXHAUSTED,
        StatusCode::NOT_IMPLEMENTED => UNIMPLEMENTED,
        StatusCode::SERVICE_UNAVAILABLE => UNAVAILABLE,
        s if s.is_client_error() => INVALID_ARGUMENT,
        _ => INTERNAL,
    }
}
