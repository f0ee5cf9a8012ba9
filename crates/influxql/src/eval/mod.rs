//! InfluxQL's evaluation, I/O-free: a parsed statement and a [`Store`] to read from, an
//! answer in InfluxDB 1.x's shapes. The server implements [`Store`] over its engine and
//! handles HTTP; everything between the statement and the answer's bytes is here.
//!
//! - [`check`]: what InfluxDB refuses while parsing — an unknown `tz()`, a regex that does
//!   not compile — before any statement runs.
//! - [`run_select`]: `SELECT`: which series (`condition`: time range, tag and field
//!   conditions), read through the store (`select`; `raw` without aggregates,
//!   `selector_rows` where one selector picks a row, `field_rows` for field conditions,
//!   `bounds` for `GROUP BY time()`'s open bounds), then computed (`nodes` the
//!   expressions, `columns` and `compute`: windows, aggregates, fill, transformations,
//!   arithmetic) into rows (`table`), named as InfluxDB names them (`naming`), in a zone
//!   (`zone`).
//! - [`run_show`]: the `SHOW` statements, from the store's listings and series index.
//! - [`output`]: the answer's JSON or CSV, charged to the request's budget as written.

mod bounds;
mod columns;
mod compute;
mod condition;
mod field_rows;
mod naming;
mod nodes;
pub mod output;
mod raw;
mod regexes;
mod select;
mod selector_rows;
mod show;
pub mod store;
mod table;
mod zone;

pub use output::{Epoch, Format, Series, StatementResult};
pub use select::run as run_select;
pub use show::run as run_show;
pub use store::{Names, Read, ReadError, SeriesPoints, Store};
pub use table::{Cell, Rows};

/// Every `tz()` of `query` names a zone and every regex compiles: what InfluxDB refuses
/// while parsing, so the whole query is refused before any statement runs.
pub fn check(query: &crate::Query) -> Result<(), String> {
    select::check_zones(query).and_then(|()| regexes::check(query))
}
#[cfg(test)]
mod tests;
