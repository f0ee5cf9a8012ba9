//! `POST /write` and `POST /api/v2/write`: InfluxDB line protocol, plain or gzipped
//! (`crate::body`; another `Content-Encoding` is 415).
//!
//! 204 when every line was stored; 400 with the refused lines when some were not (the
//! others are stored); 413 past the body limit; 503 when the store is unreachable; 500
//! `retention policy not found: x` for a policy the database does not have, as InfluxDB. String
//! field values skipped (the engine's `StringFields`) do not make a line refused: they are
//! counted in `/metrics`.

use crate::body::Body;
use crate::database::InDatabase;
use crate::error::ApiError;
use crate::params::RequestParams;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
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
    params: RequestParams,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let (precision, mode) = write_params(&params)?;
    engine
        .check_retention_policy(retention_policy(&params))
        .await?;
    let (text, mut utf8_errors) = decode_utf8_lines(body.into());
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

/// The retention policy a write names: `rp`, or InfluxDB 2's `bucket=db/rp`; `None`,
/// the database's default one. It must exist (InfluxDB's words `retention policy not
/// found: x` otherwise, with 404); the points go to the database's one store whichever
/// it is.
fn retention_policy(params: &RequestParams) -> Option<&str> {
    let from_bucket = || {
        params
            .get(crate::params::BUCKET_PARAM)
            .and_then(|bucket| bucket.split_once('/'))
            .map(|(_, rp)| rp)
    };
    params
        .get("rp")
        .filter(|rp| !rp.is_empty())
        .or_else(from_bucket)
        .filter(|rp| !rp.is_empty())
}

/// `precision=ns|us|ms|s` and `mode=set|inc` (`inc`: add to counters). `db` and `bucket`
/// name the database (`crate::params`), `rp` a retention policy of it
/// ([`retention_policy`]); others (InfluxDB's `org`, `u` …) are ignored, so its clients
/// work as they are.
fn write_params(params: &RequestParams) -> Result<(Precision, WriteMode), ApiError> {
    let precision = match params.get("precision") {
        None => Precision::Nanoseconds,
        Some(text) => Precision::parse(text)
            .map_err(|e| ApiError::BadRequest(format!("parameter precision: {e}")))?,
    };
    let mode = match params.get("mode") {
        None | Some("set") => WriteMode::Set,
        Some("inc") => WriteMode::Increment,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "parameter mode: {other:?} is not set or inc"
            )))
        }
    };
    Ok((precision, mode))
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
