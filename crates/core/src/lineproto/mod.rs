//! The InfluxDB line protocol, as InfluxDB 1.x and 2.x document it:
//!
//! ```text
//! measurement[,tag=value...] field=value[,field=value...] [timestamp]
//! cpu,host=a,region=eu usage_user=12.5,usage_idle=80 1451606400000000000
//! ```
//!
//! This is the ingest hot path, so the parser makes one pass over the bytes of a line and
//! borrows from it: a name or string with no escape in it is a [`Cow::Borrowed`] slice of
//! the input, and only escaped ones are copied.
//!
//! # Rules
//! - **Lines.** A body is split on `\n`; a `\r` before it is dropped. Lines that are empty,
//!   blank (spaces and tabs) or whose first non-blank character is `#` are skipped. A newline
//!   always ends a line, even inside a quoted string (InfluxDB documents newlines in values
//!   as unsupported): so one stray quote spoils one line, never the rest of the body.
//! - **Sections** are separated by an unescaped space. Tolerated as InfluxDB 1.x does:
//!   leading spaces and tabs, more spaces before the field set, more spaces and tabs before
//!   and after the timestamp. (Not tabs before the field set: a field key may start with one.)
//! - **Escapes.** In a measurement, `\,` and `\ `; in tag keys, tag values and field keys,
//!   `\,`, `\=` and `\ `; in string field values, `\"` and `\\`. A backslash before any
//!   other character is a literal backslash. So no name can end with a backslash (it
//!   would escape the delimiter after it) — a limitation InfluxDB has too.
//! - **Field values**: float (`1`, `-1.5`, `1.5E+10`), integer `12i`, unsigned `12u`,
//!   boolean (`t T true True TRUE f F false False FALSE`), string `"…"`. NaN, infinity and
//!   floats that overflow are refused. See [`value`] for the exact grammar.
//! - **Timestamp**: optional integer in the caller's [`Precision`], converted to
//!   nanoseconds, and within [`MIN_TIMESTAMP`]`..=`[`MAX_TIMESTAMP`] (InfluxDB's range);
//!   when it is missing the line gets the caller's `default_time`.
//! - **A field key given twice** keeps its last value, at the place of its last occurrence
//!   (`m a=1,b=2,a=3` is `b=2,a=3`), as InfluxDB 1.x keeps the last.
//! - **Refused**: empty measurement, tag key, tag value or field key; a tag key given twice
//!   in one line (InfluxDB 1.x refuses it too); an unescaped `=` in a tag value; text after
//!   the timestamp. Each refusal is a [`LineError`] whose message names the problem.
//!
//! # Layout
//! - this file: the types and the two entry points;
//! - `parse`: the line scanner; `scan`: name scanning and unescaping;
//! - [`value`]: field values and timestamps; `write`: escaping, to produce line protocol;
//! - `error`: [`LineError`] and [`EscapeError`].

mod error;
mod parse;
mod scan;
pub mod value;
mod write;

#[cfg(test)]
mod duplicate_tests;
#[cfg(test)]
mod tests;

use crate::time::Precision;
use std::borrow::Cow;

pub use error::{EscapeError, LineError, EXCERPT_CHARS};
pub use value::{MAX_TIMESTAMP, MIN_TIMESTAMP};
pub use write::{
    escape_field_key, escape_measurement, escape_string_value, escape_tag_key, escape_tag_value,
    format_field_value,
};

/// A field value, typed as its line-protocol spelling says.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue<'a> {
    /// `1`, `1.5`, `-1e3`: always finite.
    Float(f64),
    /// `12i`.
    Integer(i64),
    /// `12u`.
    Unsigned(u64),
    /// `true`, `f`, …
    Boolean(bool),
    /// `"…"`, unescaped; borrowed from the input when it held no escape.
    String(Cow<'a, str>),
}

/// One parsed line. Names and string values are unescaped.
///
/// Invariants: `measurement` is non-empty; every tag key, tag value and field key is
/// non-empty; tag keys are unique and field keys are unique (both in arrival order; a
/// field key given twice in the line is here once, with its last value);
/// `fields` is non-empty; floats are finite.
#[derive(Clone, Debug, PartialEq)]
pub struct Line<'a> {
    pub measurement: Cow<'a, str>,
    /// Unescaped, in arrival order (not sorted: [`crate::SeriesKey::new`] sorts).
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// Nanoseconds since the Unix epoch, already converted from the body's precision.
    pub timestamp: i64,
    /// The raw text of measurement + tag set exactly as it appeared (escapes kept). The engine
    /// caches series ids by this text, so two lines with byte-identical prefixes name the same series.
    ///
    /// The converse does not hold: `cpu,a=1,b=2` and `cpu,b=2,a=1` are the same series
    /// with different texts, so a cache miss must still resolve through the series key.
    pub series_text: &'a str,
}

/// Parses one line (without its newline; a trailing `\r` is dropped). `Ok(None)` for
/// blank and comment lines. A `\n` inside `line` would be taken as an ordinary character:
/// split bodies with [`parse_body`].
///
/// `precision` is the unit of the line's timestamp. `default_time`, in nanoseconds since
/// the epoch, is the timestamp of a line that has none; it is used as given (the caller
/// vouches for it; it is not range-checked).
pub fn parse_line(
    line: &str,
    precision: Precision,
    default_time: i64,
) -> Result<Option<Line<'_>>, LineError> {
    parse::parse_line(line, precision, default_time)
}

/// Iterates a whole body: yields (1-based line number, result) for every non-blank,
/// non-comment line, in order. Line numbers count every `\n`-separated line, skipped ones
/// included, so they match what an editor shows. A refused line does not stop the
/// iteration: the caller decides whether to keep the others (`/write` does).
pub fn parse_body<'a>(
    body: &'a str,
    precision: Precision,
    default_time: i64,
) -> impl Iterator<Item = (usize, Result<Line<'a>, LineError>)> + 'a {
    parse_body_within(body, precision, default_time, usize::MAX)
}

/// [`parse_body`], refusing every line longer than `max_line_bytes` (without its `\n`)
/// with [`LineError::TooLong`] before scanning it: a server's bound on what one line may
/// cost, whatever it holds.
pub fn parse_body_within<'a>(
    body: &'a str,
    precision: Precision,
    default_time: i64,
    max_line_bytes: usize,
) -> impl Iterator<Item = (usize, Result<Line<'a>, LineError>)> + 'a {
    body.split('\n')
        .enumerate()
        .filter_map(move |(index, line)| {
            let result = if line.len() > max_line_bytes {
                Err(LineError::TooLong {
                    bytes: line.len(),
                    max: max_line_bytes,
                })
            } else {
                parse_line(line, precision, default_time).transpose()?
            };
            Some((index + 1, result))
        })
}
