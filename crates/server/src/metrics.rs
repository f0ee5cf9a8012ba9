//! `GET /health` and `GET /metrics` (Prometheus text format), and the middleware that
//! times every request.

use crate::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use tickertape_backend::StorageStats;

/// Upper bounds (seconds) of the request-latency histogram buckets.
const LATENCY_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

#[derive(Default)]
pub struct Metrics {
    pub points_written: AtomicU64,
    pub points_rejected: AtomicU64,
    pub lines_rejected: AtomicU64,
    /// String field values not stored (`serve --string-fields=skip`, the default).
    pub string_fields_skipped: AtomicU64,
    /// Samples in Prometheus remote-write requests that decoded.
    pub prometheus_samples_received: AtomicU64,
    /// Of those, samples refused (series limits, no metric name, late samples).
    pub prometheus_samples_refused: AtomicU64,
    /// Data points in OTLP metrics requests that decoded.
    pub otlp_data_points_received: AtomicU64,
    /// Of those, data points refused (`partial_success.rejected_data_points`).
    pub otlp_data_points_rejected: AtomicU64,
    requests: Mutex<BTreeMap<(String, u16), Latency>>,
}

#[derive(Default)]
struct Latency {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Metrics {
    fn observe(&self, route: &str, status: u16, seconds: f64) {
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let entry = requests.entry((route.to_string(), status)).or_default();
        for (bucket, bound) in entry.buckets.iter_mut().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        entry.count += 1;
        entry.sum += seconds;
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, value) in [
            (
                "tickertape_points_written_total",
                "Points stored.",
                &self.points_written,
            ),
            (
                "tickertape_points_rejected_total",
                "Points refused (bad or out-of-order lines).",
                &self.points_rejected,
            ),
            (
                "tickertape_lines_rejected_total",
                "Lines refused.",
                &self.lines_rejected,
            ),
            (
                "tickertape_string_fields_skipped_total",
                "String field values not stored (tickertape stores numbers; the lines' other \
                 fields were stored; serve --string-fields).",
                &self.string_fields_skipped,
            ),
            (
                "tickertape_prometheus_samples_received_total",
                "Samples received by Prometheus remote write.",
                &self.prometheus_samples_received,
            ),
            (
                "tickertape_prometheus_samples_refused_total",
                "Remote-write samples refused (the request was answered 204 all the same).",
                &self.prometheus_samples_refused,
            ),
            (
                "tickertape_otlp_data_points_received_total",
                "Data points received by OTLP metrics (/opentelemetry/v1/metrics).",
                &self.otlp_data_points_received,
            ),
            (
                "tickertape_otlp_data_points_rejected_total",
                "OTLP data points rejected (answered in partial_success; the rest stored).",
                &self.otlp_data_points_rejected,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let name = "tickertape_http_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} HTTP request latency by route and status.\n# TYPE {name} histogram"
        );
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        for ((route, status), l) in requests.iter() {
            let labels = format!("route=\"{route}\",status=\"{status}\"");
            for (count, bound) in l.buckets.iter().zip(LATENCY_BUCKETS) {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", l.count);
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", l.sum);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", l.count);
        }
        out
    }
}

/// Times a request and records it under its route pattern (never the raw path, so
/// label cardinality stays bounded).
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched".to_string(), |p| p.as_str().to_string());
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.observe(
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

pub async fn render(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = state.metrics.render();
    text.push_str(&state.config.connection_stats.render());
    match state.engine.store_stats().await {
        Ok(stats) => text.push_str(&store_gauges(&stats)),
        // The counters above still answer; the store's figures are left out this time.
        Err(e) => tracing::warn!(error = %e, "/metrics: cannot read the store's figures"),
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        text,
    )
}

/// The store's own figures, as gauges.
fn store_gauges(stats: &StorageStats) -> String {
    let mut out = String::new();
    for (name, help, value) in [
        ("tickertape_series", "Series registered.", stats.series),
        (
            "tickertape_memory_points",
            "Points held in memory, not yet in the store's files.",
            stats.memory_points,
        ),
        (
            "tickertape_series_index_bytes",
            "Bytes of memory the series index holds (0 where it lives in the database).",
            stats.index_memory_bytes,
        ),
        (
            "tickertape_store_bytes",
            "Bytes the store occupies.",
            stats.bytes,
        ),
        (
            "tickertape_rollup_lag_points",
            "Points stored but not yet covered by the store's derived rollups; 0 once rollups \
             have caught up.",
            stats.rollup_lag_points,
        ),
    ] {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    }
    out
}

pub async fn health(State(state): State<AppState>) -> impl IntoResponse {
    Json(serde_json::json!({ "status": "ok", "backend": state.engine.store_kind() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_gauges_carry_every_figure() {
        let stats = StorageStats {
            bytes: 4096,
            series: 3,
            memory_points: 7,
            index_memory_bytes: 512,
            rollup_lag_points: 42,
            ..StorageStats::default()
        };
        let text = store_gauges(&stats);
        for line in [
            "tickertape_series 3",
            "tickertape_memory_points 7",
            "tickertape_series_index_bytes 512",
            "tickertape_store_bytes 4096",
            "# TYPE tickertape_rollup_lag_points gauge",
            "tickertape_rollup_lag_points 42",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in\n{text}");
        }
        let help = "# HELP tickertape_rollup_lag_points Points stored but not yet covered by \
                    the store's derived rollups; 0 once rollups have caught up.";
        assert!(text.lines().any(|l| l == help), "{text}");
    }
}
