//! Remote write: `POST /prometheus/api/v1/write`, a snappy-compressed protobuf
//! `WriteRequest` as Prometheus 2.x sends it (protocol 0.1.0).
//!
//! Statuses follow what Prometheus does with them: it drops a batch for good on a 4xx and
//! retries it on a 5xx. So 400 for a body that cannot be decoded (nothing of it is
//! stored); 5xx when the store fails (retrying may succeed); 204 once every series that
//! could be stored is, even when some were refused (a series limit, no metric name):
//! refusing the whole batch would lose the good series too and a retry would be refused
//! the same way. Refusals are logged and counted in `/metrics` instead.
//!
//! A series whose labels break the specification's rules (a label name empty, outside
//! `[a-zA-Z_][a-zA-Z0-9_]*` or given twice) is an invalid sample in its words: the other
//! series are stored, and the answer is 400 naming the refused ones, as the specification
//! asks ("MUST return a HTTP 400 … for write requests that contain any invalid samples").

use crate::body::SnappyBody;
use crate::database::PromDatabase;
use crate::error::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::atomic::Ordering;
use tickertape_core::time::Precision;
use tickertape_core::Point;
use tickertape_engine::{LineError, SeriesRef, SeriesSamples, WriteReport};
use tickertape_prometheus::mapping::{series_of, VALUE_FIELD};
use tickertape_prometheus::remote::{
    decompress_write_request, BorrowedWriteRequest, MAX_DECODED_BYTES,
};

/// Refusals quoted in the warning logged for one request; the count is always exact.
const LOGGED_REFUSALS: usize = 3;

pub(crate) async fn write(
    State(state): State<AppState>,
    PromDatabase(engine): PromDatabase,
    headers: HeaderMap,
    SnappyBody(body): SnappyBody,
) -> Result<Response, ApiError> {
    check_message(&headers)?;
    let protobuf = decompress_write_request(&body, MAX_DECODED_BYTES).map_err(bad_request)?;
    let request = BorrowedWriteRequest::parse(&protobuf).map_err(bad_request)?;
    let points: Vec<Point> = request
        .all_samples()
        .iter()
        .map(|s| Point::new(s.timestamp, s.value))
        .collect();
    let received = points.len() as u64;
    let (series, refused) = to_series(&request, &points)?;
    let mut report = engine
        .write_samples(&series.samples, Precision::Milliseconds)
        .await?;
    series.renumber(&mut report);
    let invalid = invalid_labels(&refused);
    merge_refused(&mut report, refused);
    let m = &state.metrics;
    m.prometheus_samples_received
        .fetch_add(received, Ordering::Relaxed);
    m.points_written
        .fetch_add(report.points_written, Ordering::Relaxed);
    m.prometheus_samples_refused
        .fetch_add(report.points_rejected, Ordering::Relaxed);
    if !report.errors.is_empty() {
        log_refusals(&report, request.len());
    }
    match invalid {
        Some(message) => Err(ApiError::BadRequest(message)),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

/// The 400 message when some series have labels the specification forbids: how many, and
/// the first few by index.
fn invalid_labels(refused: &[Refused]) -> Option<String> {
    let invalid: Vec<&Refused> = refused.iter().filter(|r| r.invalid_labels).collect();
    let first = invalid.first()?;
    let mut message = format!(
        "{} series refused for invalid labels, the others were stored: timeseries[{}]: {}",
        invalid.len(),
        first.index,
        first.message
    );
    for more in invalid.iter().skip(1).take(LOGGED_REFUSALS - 1) {
        message.push_str(&format!("; timeseries[{}]: {}", more.index, more.message));
    }
    if invalid.len() > LOGGED_REFUSALS {
        message.push_str(&format!("; and {} more", invalid.len() - LOGGED_REFUSALS));
    }
    Some(message)
}

/// The message a body holds, from its `Content-Type`'s `proto` parameter (remote write
/// 2.0): version 1's `prometheus.WriteRequest` when it names none (Prometheus 2.x sends
/// plain `application/x-protobuf`). Version 2's `io.prometheus.write.v2.Request`, or any
/// other, is refused with 415, as the 2.0 specification asks of a receiver that does not
/// take it, so the sender falls back to 1.0 instead of getting 204 for nothing stored.
fn check_message(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let proto = text.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("proto")
            .then(|| value.trim().trim_matches('"').to_owned())
    });
    match proto.as_deref() {
        None | Some("prometheus.WriteRequest") => Ok(()),
        Some(other) => Err(ApiError::UnsupportedMediaType(format!(
            "Content-Type proto={other} is not supported: this endpoint takes remote write 1.0 \
             (proto=prometheus.WriteRequest, or application/x-protobuf without proto)"
        ))),
    }
}

fn bad_request(e: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(e.to_string())
}

/// The request's series as the engine takes them, with each one's index in the request.
struct Converted<'a> {
    samples: Vec<SeriesSamples<'a>>,
    /// For each entry of `samples`, the index of its series in the request.
    index: Vec<usize>,
}

impl Converted<'_> {
    /// Renumbers the engine's refusals (1-based positions in `samples`) as 0-based
    /// indexes of the request's `timeseries`, which is what a sender can look up.
    fn renumber(&self, report: &mut WriteReport) {
        for e in &mut report.errors {
            e.line = e
                .line
                .checked_sub(1)
                .and_then(|i| self.index.get(i))
                .copied()
                .unwrap_or(e.line);
        }
    }
}

/// A series refused before the engine saw it.
struct Refused {
    /// Its index in the request.
    index: usize,
    samples: usize,
    message: String,
    /// Refused for labels the specification forbids (400), not for want of a name.
    invalid_labels: bool,
}

/// The series of a request the store can take, borrowed from it, each with its slice
/// of `points` (the request's samples in order); the others refused (no metric name,
/// labels the specification forbids). A label that cannot be read (not UTF-8, cut short)
/// makes the whole body invalid: 400, nothing stored.
fn to_series<'a>(
    request: &BorrowedWriteRequest<'a>,
    points: &'a [Point],
) -> Result<(Converted<'a>, Vec<Refused>), ApiError> {
    let mut converted = Converted {
        samples: Vec::with_capacity(request.len()),
        index: Vec::with_capacity(request.len()),
    };
    let mut refused = Vec::new();
    for i in 0..request.len() {
        let mut unreadable = None;
        let labels = request.labels(i).map_while(|label| match label {
            Ok(label) => Some(label),
            Err(e) => {
                unreadable = Some(e);
                None
            }
        });
        let series = series_of(labels);
        if series.is_err() && unreadable.is_none() {
            // `series_of` stops at the first bad name: a later label may be unreadable.
            unreadable = request.labels(i).find_map(Result::err);
        }
        if let Some(e) = unreadable {
            return Err(bad_request(e));
        }
        let range = request.sample_range(i);
        match series {
            Ok((measurement, tags)) => {
                converted.samples.push(SeriesSamples {
                    series: SeriesRef {
                        measurement,
                        tags,
                        field: VALUE_FIELD,
                    },
                    points: &points[range],
                });
                converted.index.push(i);
            }
            Err(e) => refused.push(Refused {
                index: i,
                samples: range.len(),
                message: e.to_string(),
                invalid_labels: e.is_invalid_labels(),
            }),
        }
    }
    Ok((converted, refused))
}

/// Adds the series refused before the engine to the report, in index order.
fn merge_refused(report: &mut WriteReport, refused: Vec<Refused>) {
    if refused.is_empty() {
        return;
    }
    for r in refused {
        report.rejected += 1;
        report.points_rejected += r.samples as u64;
        report.errors.push(LineError {
            line: r.index,
            message: r.message,
        });
    }
    report.errors.sort_by_key(|e| e.line);
}

/// One warning per request with refusals: how many, and the first few.
fn log_refusals(report: &WriteReport, series: usize) {
    let first: Vec<String> = report
        .errors
        .iter()
        .take(LOGGED_REFUSALS)
        .map(|e| format!("timeseries[{}]: {}", e.line, e.message))
        .collect();
    tracing::warn!(
        refused_series = report.rejected,
        series,
        refused_samples = report.points_rejected,
        first = %first.join(" | "),
        "remote write: some series were refused; the others were stored"
    );
}
