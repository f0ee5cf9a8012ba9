//! Writing line protocol: the escaping helpers (used by the CLI and by the tests) and
//! [`Line::to_line_protocol`].
//!
//! Invariant: whatever these functions return parses back, through [`super::parse_body`],
//! to exactly the input — floats bit for bit. Input the protocol cannot express is refused
//! with an [`EscapeError`] instead of being written as something that reads back different:
//! a name that is empty, ends with a backslash or holds a newline; a measurement starting
//! with `#` or a tab; a string holding a newline; a non-finite float.

use super::error::{excerpt, EscapeError};
use super::scan::{self, KEY, MEASUREMENT};
use super::value::{MAX_TIMESTAMP, MIN_TIMESTAMP};
use super::{FieldValue, Line};
use std::borrow::Cow;

/// Escapes a measurement name: `,` and space get a backslash.
pub fn escape_measurement(name: &str) -> Result<Cow<'_, str>, EscapeError> {
    if name.starts_with(['#', '\t']) {
        return Err(EscapeError::BadMeasurementStart {
            text: excerpt(name),
        });
    }
    escape_name(name, MEASUREMENT, "measurement")
}

/// Escapes a tag key: `,`, `=` and space get a backslash.
pub fn escape_tag_key(name: &str) -> Result<Cow<'_, str>, EscapeError> {
    escape_name(name, KEY, "tag key")
}

/// Escapes a tag value: `,`, `=` and space get a backslash.
pub fn escape_tag_value(value: &str) -> Result<Cow<'_, str>, EscapeError> {
    escape_name(value, KEY, "tag value")
}

/// Escapes a field key: `,`, `=` and space get a backslash.
pub fn escape_field_key(name: &str) -> Result<Cow<'_, str>, EscapeError> {
    escape_name(name, KEY, "field key")
}

/// Writes a string field value, quotes included: `"` and `\` get a backslash.
pub fn escape_string_value(value: &str) -> Result<String, EscapeError> {
    if value.contains('\n') {
        return Err(EscapeError::Newline {
            what: "string value",
            text: excerpt(value),
        });
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// Writes a field value as line protocol: floats in Rust's shortest round-trip form
/// (`{:?}`, which the parser reads back bit for bit), `12i`, `12u`, `true`/`false`, or a
/// quoted string. `key` only names the field in an error.
pub fn format_field_value(key: &str, value: &FieldValue<'_>) -> Result<String, EscapeError> {
    Ok(match value {
        FieldValue::Float(v) if !v.is_finite() => {
            return Err(EscapeError::NonFinite {
                key: excerpt(key),
                value: *v,
            })
        }
        FieldValue::Float(v) => format!("{v:?}"),
        FieldValue::Integer(v) => format!("{v}i"),
        FieldValue::Unsigned(v) => format!("{v}u"),
        FieldValue::Boolean(v) => v.to_string(),
        FieldValue::String(s) => escape_string_value(s)?,
    })
}

fn escape_name<'n>(
    name: &'n str,
    class: u8,
    what: &'static str,
) -> Result<Cow<'n, str>, EscapeError> {
    if name.is_empty() {
        return Err(EscapeError::Empty { what });
    }
    if name.ends_with('\\') {
        return Err(EscapeError::TrailingBackslash {
            what,
            text: excerpt(name),
        });
    }
    if name.contains('\n') {
        return Err(EscapeError::Newline {
            what,
            text: excerpt(name),
        });
    }
    if !name.bytes().any(|b| scan::is_special(b, class)) {
        return Ok(Cow::Borrowed(name));
    }
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii() && scan::is_special(c as u8, class) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(Cow::Owned(out))
}

impl Line<'_> {
    /// This line as one line of line protocol (no newline), timestamp in nanoseconds.
    /// Tags and fields keep their order. Parsing the result with `Precision::Nanoseconds`
    /// gives back an equal `Line` (its `series_text` is the canonical escaping, which may
    /// differ from the text this line was parsed from).
    pub fn to_line_protocol(&self) -> Result<String, EscapeError> {
        if !(MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&self.timestamp) {
            return Err(EscapeError::TimestampOutOfRange(self.timestamp));
        }
        if self.fields.is_empty() {
            return Err(EscapeError::Empty { what: "field set" });
        }
        let mut out = String::with_capacity(self.series_text.len() + 64);
        out.push_str(&escape_measurement(&self.measurement)?);
        for (key, value) in &self.tags {
            out.push(',');
            out.push_str(&escape_tag_key(key)?);
            out.push('=');
            out.push_str(&escape_tag_value(value)?);
        }
        for (i, (key, value)) in self.fields.iter().enumerate() {
            out.push(if i == 0 { ' ' } else { ',' });
            out.push_str(&escape_field_key(key)?);
            out.push('=');
            out.push_str(&format_field_value(key, value)?);
        }
        out.push(' ');
        out.push_str(&self.timestamp.to_string());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_get_backslashes_only_before_their_special_characters() {
        assert_eq!(escape_measurement("cpu").unwrap(), "cpu");
        assert!(matches!(
            escape_measurement("cpu").unwrap(),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape_measurement("a b,c=d").unwrap(), r"a\ b\,c=d");
        assert_eq!(escape_tag_key("a b,c=d").unwrap(), r"a\ b\,c\=d");
        assert_eq!(escape_field_key(r"a\b").unwrap(), r"a\b");
        assert_eq!(escape_field_key(r"a\,b").unwrap(), r"a\\,b");
        assert_eq!(escape_field_key("é 🚀").unwrap(), r"é\ 🚀");
        assert_eq!(escape_field_key("#x").unwrap(), "#x");
    }

    #[test]
    fn names_the_protocol_cannot_express_are_refused() {
        assert!(matches!(
            escape_field_key(""),
            Err(EscapeError::Empty { .. })
        ));
        assert!(matches!(
            escape_field_key(r"C:\"),
            Err(EscapeError::TrailingBackslash { .. })
        ));
        assert!(matches!(
            escape_field_key("a\nb"),
            Err(EscapeError::Newline { .. })
        ));
        assert!(matches!(
            escape_measurement("#cpu"),
            Err(EscapeError::BadMeasurementStart { .. })
        ));
        assert!(matches!(
            escape_measurement("\tcpu"),
            Err(EscapeError::BadMeasurementStart { .. })
        ));
        assert!(matches!(
            escape_string_value("a\nb"),
            Err(EscapeError::Newline { .. })
        ));
    }

    #[test]
    fn strings_are_quoted_with_quote_and_backslash_escaped() {
        assert_eq!(escape_string_value("").unwrap(), r#""""#);
        assert_eq!(
            escape_string_value(r#"say "hi" \o/"#).unwrap(),
            r#""say \"hi\" \\o/""#
        );
    }

    #[test]
    fn field_values_format_as_line_protocol() {
        let f = |v: FieldValue<'_>| format_field_value("k", &v);
        assert_eq!(f(FieldValue::Float(1.0)).unwrap(), "1.0");
        assert_eq!(f(FieldValue::Float(1e300)).unwrap(), "1e300");
        assert_eq!(f(FieldValue::Float(-0.0)).unwrap(), "-0.0");
        assert_eq!(f(FieldValue::Integer(-3)).unwrap(), "-3i");
        assert_eq!(f(FieldValue::Unsigned(3)).unwrap(), "3u");
        assert_eq!(f(FieldValue::Boolean(false)).unwrap(), "false");
        assert_eq!(f(FieldValue::String("a\"b".into())).unwrap(), r#""a\"b""#);
        assert!(matches!(
            f(FieldValue::Float(f64::NAN)),
            Err(EscapeError::NonFinite { .. })
        ));
        assert!(matches!(
            f(FieldValue::Float(f64::INFINITY)),
            Err(EscapeError::NonFinite { .. })
        ));
    }
}
