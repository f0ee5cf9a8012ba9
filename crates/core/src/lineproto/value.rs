//! Field values and timestamps: the parts of a line whose text is a number, a boolean or a
//! quoted string rather than a name.
//!
//! Grammar accepted (InfluxDB's, as its `scanNumber`/`scanBoolean` and docs define it):
//! - float: `-?` mantissa with at least one digit and at most one `.`, optional
//!   exponent `[eE][+-]?digits` (`1`, `-1.5`, `.5`, `1.`, `-1e3`, `1.5E+10`). No leading `+`,
//!   no `inf`/`nan`, and a value that rounds to infinity (`1e400`) is refused, as InfluxDB does.
//! - integer: `-?digits` then `i`, within i64. unsigned: `digits` then `u`, within u64.
//! - boolean: `t T true True TRUE f F false False FALSE`, nothing else.
//! - string: `"…"` with `\"` and `\\` escapes; a backslash before anything else is literal.
//! - timestamp: `-?digits`, converted with the caller's precision and kept within
//!   [`MIN_TIMESTAMP`, `MAX_TIMESTAMP`].

use super::error::{excerpt, LineError};
use super::FieldValue;
use crate::time::Precision;
use std::borrow::Cow;
use std::num::{IntErrorKind, ParseIntError};

/// The earliest timestamp accepted, in nanoseconds: InfluxDB's documented minimum.
/// It keeps `i64::MIN` and `i64::MIN + 1` free, so the store may use them as sentinels.
pub const MIN_TIMESTAMP: i64 = i64::MIN + 2;
/// The latest timestamp accepted, in nanoseconds: InfluxDB's documented maximum.
/// It keeps `i64::MAX` free for the store to use as a sentinel.
pub const MAX_TIMESTAMP: i64 = i64::MAX - 1;

const NOT_A_VALUE: &str =
    "expected a float (1.5), integer (1i), unsigned (1u), boolean (true) or double-quoted string";
const NOT_FINITE: &str = "NaN and infinity are not accepted";
const FLOAT_RANGE: &str = "float out of range";
const INT_RANGE: &str = "integer out of range (-9223372036854775808i to 9223372036854775807i)";
const UINT_RANGE: &str = "unsigned integer out of range (0u to 18446744073709551615u)";
const BAD_INT: &str = "an integer is an optional '-' then digits then 'i', such as -12i";
const BAD_UINT: &str = "an unsigned integer is digits then 'u', such as 12u";

/// Parses an unquoted field value (number or boolean). `text` is non-empty and holds no
/// unescaped `,` or space; `key` is the raw field key, for the error message.
pub(super) fn parse_unquoted<'a>(key: &str, text: &str) -> Result<FieldValue<'a>, LineError> {
    let bytes = text.as_bytes();
    let invalid = |reason| LineError::InvalidFieldValue {
        key: excerpt(key),
        value: excerpt(text),
        reason,
    };
    if let Some(b) = parse_bool(bytes) {
        return Ok(FieldValue::Boolean(b));
    }
    match bytes[bytes.len() - 1] {
        b'i' => parse_integer(&text[..text.len() - 1])
            .map(FieldValue::Integer)
            .map_err(invalid),
        b'u' => parse_unsigned(&text[..text.len() - 1])
            .map(FieldValue::Unsigned)
            .map_err(invalid),
        _ => parse_float(text).map(FieldValue::Float).map_err(invalid),
    }
}

/// The spellings InfluxDB documents, and no others (`yes`, `tRUE` are refused).
fn parse_bool(bytes: &[u8]) -> Option<bool> {
    match bytes {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => Some(true),
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => Some(false),
        _ => None,
    }
}

/// `-?digits` as i64. `str::parse` is the whole check, except that it would also take a
/// leading `+`, which InfluxDB refuses.
fn parse_integer(digits: &str) -> Result<i64, &'static str> {
    if digits.starts_with('+') {
        return Err(BAD_INT);
    }
    digits.parse().map_err(|e| int_error(e, BAD_INT, INT_RANGE))
}

/// `digits` as u64; as [`parse_integer`], and `str::parse` refuses a `-` itself.
fn parse_unsigned(digits: &str) -> Result<u64, &'static str> {
    if digits.starts_with('+') {
        return Err(BAD_UINT);
    }
    digits
        .parse()
        .map_err(|e| int_error(e, BAD_UINT, UINT_RANGE))
}

/// Tells "not an integer" from "an integer too large for the type".
fn int_error(error: ParseIntError, malformed: &'static str, range: &'static str) -> &'static str {
    match error.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => range,
        _ => malformed,
    }
}

/// A float in InfluxDB's grammar, in one pass. `str::parse::<f64>` is exact (correctly
/// rounded) and its grammar is InfluxDB's plus exactly three things InfluxDB refuses: a
/// leading `+`, and the words `inf`, `infinity` and `nan` (any case, optionally signed),
/// which it returns as non-finite values. So a finite result from text that does not start
/// with `+` is a valid float, and an infinite result from digits is an overflow (`1e400`).
fn parse_float(text: &str) -> Result<f64, &'static str> {
    let plus = text.starts_with('+');
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && !plus => Ok(v),
        Ok(_) if is_non_finite_word(text) => Err(NOT_FINITE),
        Ok(_) if !plus => Err(FLOAT_RANGE),
        _ => Err(NOT_A_VALUE),
    }
}

/// Whether `text` is a spelling of NaN or infinity that `f64::from_str` would take; only
/// used to pick the clearer message.
fn is_non_finite_word(text: &str) -> bool {
    let word = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
    matches!(word.as_str(), "inf" | "infinity" | "nan")
}

/// Parses a quoted string value. `rest` starts just after the opening quote; returns the
/// unescaped value and the number of bytes of `rest` consumed, closing quote included.
/// Returns `None` when there is no closing quote.
pub(super) fn parse_string(rest: &str) -> Option<(Cow<'_, str>, usize)> {
    let bytes = rest.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let raw = &rest[..i];
                let value = if escaped {
                    unescape_string(raw)
                } else {
                    Cow::Borrowed(raw)
                };
                return Some((value, i + 1));
            }
            // The byte after a backslash never closes the string: if it is `"` it is
            // escaped, and if it is anything else it is not a quote. Skipping it is safe
            // for UTF-8 too: only ASCII bytes are ever compared or sliced at.
            b'\\' => {
                escaped = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
    None
}

/// `\"` → `"` and `\\` → `\`; any other backslash is kept as it is.
fn unescape_string(raw: &str) -> Cow<'_, str> {
    super::scan::unescape(raw, |b| b == b'"' || b == b'\\')
}

/// Parses the timestamp text (`-?digits`, non-empty) in `precision` to nanoseconds.
pub(super) fn parse_timestamp(text: &str, precision: Precision) -> Result<i64, LineError> {
    let value = match text.parse::<i64>() {
        Ok(value) if !text.starts_with('+') => value,
        Err(e)
            if matches!(
                e.kind(),
                IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
            ) =>
        {
            return Err(LineError::TimestampOutOfRange {
                text: excerpt(text),
            })
        }
        _ => {
            return Err(LineError::InvalidTimestamp {
                text: excerpt(text),
            })
        }
    };
    match precision.to_nanos(value) {
        Some(nanos) if (MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&nanos) => Ok(nanos),
        _ => Err(LineError::TimestampOutOfRange {
            text: excerpt(text),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Result<FieldValue<'static>, LineError> {
        parse_unquoted("f", text)
    }

    fn reason(text: &str) -> &'static str {
        match value(text) {
            Err(LineError::InvalidFieldValue { reason, .. }) => reason,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn floats_in_every_documented_spelling() {
        let cases = [
            ("1", 1.0),
            ("1.5", 1.5),
            ("-1e3", -1000.0),
            ("1.5E+10", 1.5e10),
            ("1e-3", 1e-3),
            (".5", 0.5),
            ("-.5", -0.5),
            ("1.", 1.0),
            ("0", 0.0),
            ("-1.234456e+78", -1.234456e78),
            ("23.930060193093336", 23.930060193093336),
        ];
        for (text, want) in cases {
            assert_eq!(value(text), Ok(FieldValue::Float(want)), "{text}");
        }
        match value("-0") {
            Ok(FieldValue::Float(v)) => assert_eq!(v.to_bits(), (-0.0f64).to_bits()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn floats_are_refused_where_influxdb_refuses_them() {
        for text in ["inf", "-inf", "+inf", "Infinity", "NaN", "nan", "-NaN"] {
            assert_eq!(reason(text), NOT_FINITE, "{text}");
        }
        assert_eq!(reason("1e400"), FLOAT_RANGE);
        assert_eq!(reason("-1e400"), FLOAT_RANGE);
        for text in [
            "+1", "1.2.3", "1e", "e5", "-", ".", "--1", "1-2", "0x10", "1_000", "abc", "1,5",
        ] {
            assert_eq!(reason(text), NOT_A_VALUE, "{text}");
        }
    }

    #[test]
    fn integers_and_unsigned() {
        assert_eq!(value("12i"), Ok(FieldValue::Integer(12)));
        assert_eq!(value("-12i"), Ok(FieldValue::Integer(-12)));
        assert_eq!(
            value("9223372036854775807i"),
            Ok(FieldValue::Integer(i64::MAX))
        );
        assert_eq!(
            value("-9223372036854775808i"),
            Ok(FieldValue::Integer(i64::MIN))
        );
        assert_eq!(reason("9223372036854775808i"), INT_RANGE);
        assert_eq!(value("12u"), Ok(FieldValue::Unsigned(12)));
        assert_eq!(
            value("18446744073709551615u"),
            Ok(FieldValue::Unsigned(u64::MAX))
        );
        assert_eq!(reason("18446744073709551616u"), UINT_RANGE);
        for text in ["i", "-i", "+1i", "1.5i", "1e3i", "1ii", "0x1i"] {
            assert_eq!(reason(text), BAD_INT, "{text}");
        }
        for text in ["u", "-1u", "+1u", "1.5u"] {
            assert_eq!(reason(text), BAD_UINT, "{text}");
        }
    }

    #[test]
    fn booleans_exactly_as_documented() {
        for text in ["t", "T", "true", "True", "TRUE"] {
            assert_eq!(value(text), Ok(FieldValue::Boolean(true)), "{text}");
        }
        for text in ["f", "F", "false", "False", "FALSE"] {
            assert_eq!(value(text), Ok(FieldValue::Boolean(false)), "{text}");
        }
        for text in ["tRUE", "yes", "1b", "truee", "fals"] {
            assert!(value(text).is_err(), "{text}");
        }
    }

    #[test]
    fn strings_unescape_only_quote_and_backslash() {
        let s = |rest: &'static str| parse_string(rest).map(|(v, n)| (v.into_owned(), n));
        assert_eq!(s(r#"abc" x"#), Some(("abc".into(), 4)));
        assert_eq!(s(r#"" x"#), Some(("".into(), 1)));
        assert_eq!(s(r#"a\"b""#), Some(("a\"b".into(), 5)));
        assert_eq!(s(r#"a\\b""#), Some(("a\\b".into(), 5)));
        assert_eq!(s(r#"a\nb""#), Some(("a\\nb".into(), 5)));
        assert_eq!(s(r#"a\\""#), Some(("a\\".into(), 4)));
        assert_eq!(s(r#"🚀 é""#), Some(("🚀 é".into(), 8)));
        assert_eq!(s(r#"abc\""#), None);
        assert_eq!(s("abc"), None);
        assert_eq!(s("abc\\"), None);
        assert!(matches!(
            parse_string("plain\""),
            Some((Cow::Borrowed("plain"), 6))
        ));
    }

    #[test]
    fn timestamps_scale_and_stay_in_range() {
        use Precision::*;
        assert_eq!(
            parse_timestamp("1451606400", Seconds),
            Ok(1_451_606_400_000_000_000)
        );
        assert_eq!(parse_timestamp("-5", Milliseconds), Ok(-5_000_000));
        assert_eq!(parse_timestamp("7", Microseconds), Ok(7_000));
        assert_eq!(
            parse_timestamp("9223372036854775806", Nanoseconds),
            Ok(MAX_TIMESTAMP)
        );
        assert_eq!(
            parse_timestamp("-9223372036854775806", Nanoseconds),
            Ok(MIN_TIMESTAMP)
        );
        for (text, precision) in [
            ("9223372036854775807", Nanoseconds),
            ("-9223372036854775808", Nanoseconds),
            ("99999999999999999999", Nanoseconds),
            ("9223372037", Seconds),
        ] {
            assert!(
                matches!(
                    parse_timestamp(text, precision),
                    Err(LineError::TimestampOutOfRange { .. })
                ),
                "{text}"
            );
        }
        for text in ["+5", "1.5", "1e9", "-", "abc", "12i"] {
            assert!(
                matches!(
                    parse_timestamp(text, Nanoseconds),
                    Err(LineError::InvalidTimestamp { .. })
                ),
                "{text}"
            );
        }
    }
}
