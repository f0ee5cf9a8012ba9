//! Why a line was refused, and why a value cannot be written as line protocol.
//!
//! Messages go back to users verbatim (the `errors[].message` of a 400 from `/write`),
//! so each one names the element at fault and, where it helps, the fix. Names and values
//! quoted in a message are cut to [`EXCERPT_CHARS`] characters so that one bad megabyte
//! line cannot produce a megabyte error.

use thiserror::Error;

/// The longest excerpt of user text, in characters, quoted in an error message.
pub const EXCERPT_CHARS: usize = 64;

/// Why one line of line protocol was refused. The other lines of a body are unaffected.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineError {
    #[error("missing measurement: a line must start with a measurement name")]
    MissingMeasurement,
    #[error("missing field set: expected a space and field=value after the measurement and tags")]
    MissingFieldSet,
    #[error("missing tag key: a comma in the tag set must be followed by key=value")]
    MissingTagKey,
    #[error("tag key {key:?} without value: expected {key}=value")]
    TagKeyWithoutValue { key: String },
    #[error("tag {key:?} has an empty value")]
    EmptyTagValue { key: String },
    #[error("unescaped '=' in the value of tag {key:?}: write it as \\=")]
    EqualsInTagValue { key: String },
    #[error("duplicate tag key {key:?}")]
    DuplicateTag { key: String },
    #[error("missing field key: expected key=value in the field set")]
    MissingFieldKey,
    #[error("field key {key:?} without value: expected {key}=value")]
    FieldKeyWithoutValue { key: String },
    #[error("missing value for field {key:?}")]
    MissingFieldValue { key: String },
    #[error("invalid field value {value:?} for field {key:?}: {reason}")]
    InvalidFieldValue {
        key: String,
        value: String,
        reason: &'static str,
    },
    #[error("unterminated string value for field {key:?}: missing closing double quote")]
    UnterminatedString { key: String },
    #[error(
        "unexpected {after:?} after the closing quote of field {key:?}: expected ',' or a space"
    )]
    TextAfterString { key: String, after: String },
    #[error("invalid timestamp {text:?}: expected an integer")]
    InvalidTimestamp { text: String },
    #[error(
        "timestamp {text} out of range: in nanoseconds it must lie between \
         -9223372036854775806 and 9223372036854775806 (years 1677 to 2262)"
    )]
    TimestampOutOfRange { text: String },
    #[error("unexpected text {text:?} after the timestamp")]
    TrailingText { text: String },
    /// Longer than the caller's limit ([`super::parse_body_within`]); not parsed.
    #[error("line is {bytes} bytes long, over the limit of {max} bytes (--max-line-bytes)")]
    TooLong { bytes: usize, max: usize },
}

/// Why a name or value cannot be written as line protocol: the protocol has no way to
/// express it, so any text we produced would parse back as something else.
#[derive(Clone, Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum EscapeError {
    #[error("empty {what}: line protocol needs at least one character")]
    Empty { what: &'static str },
    #[error("{what} {text:?} ends with a backslash, which line protocol cannot express")]
    TrailingBackslash { what: &'static str, text: String },
    #[error("{what} {text:?} contains a newline, which line protocol cannot express")]
    Newline { what: &'static str, text: String },
    #[error("measurement {text:?} starts with '#' or a tab, which would make the line a comment or be skipped")]
    BadMeasurementStart { text: String },
    #[error(
        "float value {value} of field {key:?} is not finite; line protocol only has finite floats"
    )]
    NonFinite { key: String, value: f64 },
    #[error("timestamp {0} is outside the range line protocol accepts")]
    TimestampOutOfRange(i64),
}

/// `text` cut to [`EXCERPT_CHARS`] characters (on a char boundary), with `…` when cut.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
