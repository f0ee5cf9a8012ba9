//! tickertape's core: everything that can be decided without touching a disk or a network.
//!
//! # Layout
//! - [`model`]: series keys, ids, points, and the selectors queries use.
//! - [`time`]: timestamps, precisions, durations and window alignment.
//! - [`lineproto`]: the InfluxDB line-protocol parser.
//! - [`codec`]: the compressed block a full value segment is sealed into.
//! - [`segment`]: value segments (`docs/design.md#value-segments`) and the pure rules for
//!   appending to them.
//! - [`partition`]: time partitions, the unit of retention.
//! - [`query`]: neighbor selection and windowed aggregation over sorted points.
//! - [`hold`]: how a change-only series answers (the value holds until the next change).
//! - [`rollup`], [`schema`]: rollup arithmetic; the per-measurement config.
//! - [`budget`]: one query's budget of points and answer bytes, and its cancellation.
//! - [`auth`]: API tokens' scopes and how a store keeps them (hashed).
//! - [`database`]: databases as namespaces of stored measurement names.
//!
//! Every function here is deterministic and free of I/O, so it is tested by itself,
//! including property tests.

pub mod auth;
pub mod budget;
pub mod codec;
pub mod database;
pub mod hold;
pub mod lineproto;
pub mod matcher;
pub mod model;
pub mod partition;
pub mod query;
pub mod retention_policy;
pub mod rollup;
pub mod schema;
pub mod segment;
pub mod time;

pub use budget::{Exhausted, QueryBudget};
pub use matcher::{MatchOp, TagCondition, TagMatcher};
pub use model::{Point, SeriesId, SeriesKey, SeriesSelector};
