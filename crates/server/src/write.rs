//! `POST /write` and `POST /api/v2/write`: InfluxDB line protocol, optionally gzipped.
//!
//! 204 when every line was stored; 400 with the refused lines when some were not (the
//! others are stored); 413 past the body limit; 503 when the store is unreachable. String
//! field values skipped (the engine's `StringFields`) do not make a line refused: they are
//! counted in `/metrics`.

use crate::database::InDatabase;
use crate::error::ApiError;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use std::io::Read;
use std::sync::atomic::Ordering;
use tickertape_core::time::Precision;
use tickertape_engine::{WriteMode, WriteReport};

/// At most this many line errors are listed in a 400 body; the counts stay exact.
const MAX_LISTED_ERRORS: usize = 1_000;

#[derive(Serialize)]
struct LineErrorBody {
    line: usize,
    message: String,
}

#[derive(Serialize)]
struct PartialWriteBody {
    error: String,
    accepted: usize,
    rejected: usize,
    errors: Vec<LineErrorBody>,
}

pub async fn write(
    State(state): State<AppState>,
    InDatabase(engine): InDatabase,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (precision, mode) = write_params(query.as_deref())?;
    let limit = state.config.max_body_bytes;
    if body.len() > limit {
        return Err(too_large(limit));
    }
    let raw = if is_gzip(&headers) {
        gunzip(&body, limit)?
    } else {
        body.to_vec()
    };
    let (text, mut utf8_errors) = decode_utf8_lines(raw);
    let mut report = engine.write_lines_as(&text, precision, mode).await?;
    if !utf8_errors.is_empty() {
        merge_utf8_errors(&mut report, &mut utf8_errors);
    }
    let m = &state.metrics;
    m.points_written
        .fetch_add(report.points_written, Ordering::Relaxed);
    m.points_rejected
        .fetch_add(report.points_rejected, Ordering::Relaxed);
    m.lines_rejected
        .fetch_add(report.rejected as u64, Ordering::Relaxed);
    m.string_fields_skipped
        .fetch_add(report.string_fields_skipped, Ordering::Relaxed);
    if report.rejected == 0 {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let body = PartialWriteBody {
        error: match report.accepted {
            0 => format!("all {} lines rejected; nothing was stored", report.rejected),
            _ => format!(
                "{} of {} lines rejected; the other lines were stored",
                report.rejected,
                report.rejected + report.accepted
            ),
        },
        accepted: report.accepted,
        rejected: report.rejected,
        errors: report
            .errors
            .into_iter()
            .take(MAX_LISTED_ERRORS)
            .map(|e| LineErrorBody {
                line: e.line,
                message: e.message,
            })
            .collect(),
    };
    Ok((StatusCode::BAD_REQUEST, Json(body)).into_response())
}

/// `precision=ns|us|ms|s` and `mode=set|inc` (`inc`: add to counters, seed 003). Other
/// parameters (InfluxDB's `db`, `org`, `bucket` …) are ignored, so its clients work as is.
fn write_params(query: Option<&str>) -> Result<(Precision, WriteMode), ApiError> {
    let mut precision = Precision::Nanoseconds;
    let mut mode = WriteMode::Set;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "precision" => {
                precision = Precision::parse(&value)
                    .map_err(|e| ApiError::BadRequest(format!("parameter precision: {e}")))?
            }
            "mode" => {
                mode = match value.as_ref() {
                    "set" => WriteMode::Set,
                    "inc" => WriteMode::Increment,
                    other => {
                        return Err(ApiError::BadRequest(format!(
                            "parameter mode: {other:?} is not set or inc"
                        )))
                    }
                }
            }
            _ => {}
        }
    }
    Ok((precision, mode))
}

fn is_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"))
}

pub(crate) fn too_large(limit: usize) -> ApiError {
    ApiError::TooLarge(format!(
        "request body exceeds the limit of {limit} bytes (--max-body-bytes)"
    ))
}

/// Decompresses, refusing output beyond `limit` (a small gzip can expand enormously).
pub(crate) fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    let mut decoder = flate2::read::GzDecoder::new(body).take(limit as u64 + 1);
    decoder
        .read_to_end(&mut out)
        .map_err(|e| ApiError::BadRequest(format!("body is not valid gzip: {e}")))?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

/// The body as text. Lines that are not valid UTF-8 are blanked (keeping line numbers)
/// and returned as errors, so one bad line costs only itself.
fn decode_utf8_lines(raw: Vec<u8>) -> (String, Vec<usize>) {
    match String::from_utf8(raw) {
        Ok(text) => (text, Vec::new()),
        Err(e) => {
            let raw = e.into_bytes();
            let mut text = String::with_capacity(raw.len());
            let mut bad = Vec::new();
            for (i, line) in raw.split(|&b| b == b'\n').enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                match std::str::from_utf8(line) {
                    Ok(s) => text.push_str(s),
                    Err(_) => bad.push(i + 1),
                }
            }
            (text, bad)
        }
    }
}

fn merge_utf8_errors(report: &mut WriteReport, lines: &mut Vec<usize>) {
    for line in lines.drain(..) {
        report.errors.push(tickertape_engine::LineError {
            line,
            message: "line is not valid UTF-8".into(),
        });
        report.rejected += 1;
    }
    report.errors.sort_by_key(|e| e.line);
}
