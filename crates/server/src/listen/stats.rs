//! What the listener counts, shown by `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the connections; one per server, shared by the listener and `/metrics`
/// through [`crate::ServerConfig::connection_stats`].
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Connections accepted and not yet closed.
    pub(crate) open: AtomicU64,
    /// Connections closed at accept: `--max-connections` were open.
    pub(crate) refused: AtomicU64,
    /// Connections closed to free a slot for a new one: every slot was taken and they
    /// waited on their clients.
    pub(crate) shed: AtomicU64,
    /// Requests answered 408: their body stalled past `--body-read-timeout` or came
    /// slower than `--min-body-rate`.
    pub(crate) stalled_bodies: AtomicU64,
    /// Plain-HTTP requests to the TLS port, answered 400.
    pub(crate) plaintext_on_tls: AtomicU64,
}

impl ConnectionStats {
    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of the counters.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, kind, help, value) in [
            (
                "tickertape_connections_open",
                "gauge",
                "Connections accepted and not yet closed.",
                &self.open,
            ),
            (
                "tickertape_connections_refused_total",
                "counter",
                "Connections closed as they were accepted: --max-connections were open.",
                &self.refused,
            ),
            (
                "tickertape_connections_shed_total",
                "counter",
                "Connections closed to free a slot for a new one: every slot was taken and they waited on their clients (idle, or a body under --min-body-rate).",
                &self.shed,
            ),
            (
                "tickertape_request_bodies_stalled_total",
                "counter",
                "Requests answered 408: no body bytes for --body-read-timeout, or a body slower than --min-body-rate.",
                &self.stalled_bodies,
            ),
            (
                "tickertape_plaintext_on_tls_total",
                "counter",
                "Plain-HTTP requests to the TLS port, answered 400.",
                &self.plaintext_on_tls,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        out
    }
}
