//! Prometheus' side of tickertape, with no I/O (the server wires it to the engine):
//!
//! - [`mapping`]: Prometheus series ↔ stored series (measurement, field, tags).
//! - [`remote`]: remote write and read messages (protobuf, snappy block format).
//! - [`promql`]: a PromQL evaluator with Prometheus 2.x semantics over series it is handed.

pub mod mapping;
pub mod promql;
pub mod remote;

/// The bit pattern of Prometheus' stale marker: a NaN that ends a series for lookback.
pub use tickertape_core::model::STALE_NAN_BITS;
