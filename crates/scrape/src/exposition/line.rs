//! One sample line: `name{label="value",…} value [timestamp] [# exemplar]`.

use super::{Format, Sample};
use std::borrow::Cow;

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

pub(super) fn check_metric_name(name: &str) -> Result<(), String> {
    match is_metric_name(name) {
        true => Ok(()),
        false => Err(format!("invalid metric name {name:?}")),
    }
}

/// A cursor over one line, on byte offsets that are always at char boundaries: it only
/// stops after ASCII bytes it matched.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_blanks(&mut self) -> bool {
        let start = self.at;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        self.at > start
    }

    /// The longest run of bytes matching `accept`, all ASCII.
    fn take_while(&mut self, accept: impl Fn(u8) -> bool) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii() && accept(b)) {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        match self.peek() {
            Some(b) if b == byte => {
                self.at += 1;
                Ok(())
            }
            Some(other) => Err(format!(
                "expected {:?}, found {:?}",
                char::from(byte),
                char::from(other)
            )),
            None => Err(format!(
                "expected {:?} at the end of the line",
                char::from(byte)
            )),
        }
    }

    /// A quoted label value after its opening `"`, up to the closing one; escapes
    /// `\\`, `\"` and `\n` unescaped, any other escape kept as written.
    fn quoted(&mut self) -> Result<Cow<'a, str>, String> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        let mut i = start;
        loop {
            match bytes.get(i) {
                None => return Err("label value not closed by '\"'".into()),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    if bytes.get(i + 1).is_none() {
                        return Err("label value not closed by '\"'".into());
                    }
                    // The escaped byte may start a multi-byte char: step over the whole
                    // char so that `i` stays on a boundary.
                    let width = self.text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    i += 1 + width;
                }
                Some(_) => i += 1,
            }
        }
        let raw = &self.text[start..i];
        self.at = i + 1;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        let mut value = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                value.push(c);
                continue;
            }
            match chars.next() {
                Some('\\') => value.push('\\'),
                Some('"') => value.push('"'),
                Some('n') => value.push('\n'),
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                }
                None => value.push('\\'),
            }
        }
        Ok(Cow::Owned(value))
    }
}

/// Parses one sample line (not blank, not a comment).
pub(super) fn sample(text: &str, format: Format) -> Result<Sample<'_>, String> {
    let mut cursor = Cursor { text, at: 0 };
    let name = cursor.take_while(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
    check_metric_name(name)?;
    let mut labels = Vec::new();
    if cursor.peek() == Some(b'{') {
        cursor.at += 1;
        labels = label_set(&mut cursor)?;
    }
    let series = &text[..cursor.at];
    if !cursor.skip_blanks() {
        return Err(match cursor.peek() {
            None => format!("no value for {name:?}"),
            Some(b) => format!("unexpected {:?} after the metric name", char::from(b)),
        });
    }
    let value_text = cursor.take_while(|b| !matches!(b, b' ' | b'\t'));
    if cursor.peek().is_some_and(|b| !b.is_ascii()) {
        return Err("a value must be ASCII".into());
    }
    let value = parse_value(value_text)?;
    cursor.skip_blanks();
    let mut timestamp_ms = None;
    if cursor.peek().is_some_and(|b| b != b'#') {
        let stamp = cursor.take_while(|b| !matches!(b, b' ' | b'\t'));
        if stamp.is_empty() {
            return Err("a timestamp must be ASCII".into());
        }
        timestamp_ms = Some(parse_timestamp(stamp, format)?);
        cursor.skip_blanks();
    }
    match (cursor.peek(), format) {
        (None, _) => {}
        (Some(b'#'), Format::OpenMetrics) => {
            // Only counters' and histogram buckets' samples carry exemplars.
            if !name.ends_with("_total") && !name.ends_with("_bucket") {
                return Err(format!("metric name {name} does not support exemplars"));
            }
            exemplar(&mut cursor)?
        }
        (Some(_), _) => {
            return Err(format!(
                "unexpected text after the sample: {:?}",
                truncate(cursor.rest())
            ))
        }
    }
    Ok(Sample {
        series,
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// `name="value", …}` after the opening brace; a trailing comma is allowed.
fn label_set<'a>(cursor: &mut Cursor<'a>) -> Result<Vec<(&'a str, Cow<'a, str>)>, String> {
    let mut labels: Vec<(&'a str, Cow<'a, str>)> = Vec::new();
    loop {
        cursor.skip_blanks();
        if cursor.peek() == Some(b'}') {
            cursor.at += 1;
            return Ok(labels);
        }
        let name = cursor.take_while(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !crate::labels::is_valid_name(name) {
            return Err(match cursor.peek() {
                None => "label set not closed by '}'".into(),
                Some(b) if name.is_empty() => format!("invalid label name at {:?}", char::from(b)),
                Some(_) => format!("invalid label name {name:?}"),
            });
        }
        cursor.skip_blanks();
        cursor.expect(b'=')?;
        cursor.skip_blanks();
        cursor.expect(b'"')?;
        let value = cursor.quoted()?;
        if labels.iter().any(|(n, _)| *n == name) || name == crate::labels::METRIC_NAME {
            return Err(format!("label {name:?} given twice"));
        }
        labels.push((name, value));
        cursor.skip_blanks();
        match cursor.peek() {
            Some(b',') => cursor.at += 1,
            Some(b'}') => {}
            Some(b) => {
                return Err(format!(
                    "expected ',' or '}}' after a label, found {:?}",
                    char::from(b)
                ))
            }
            None => return Err("label set not closed by '}'".into()),
        }
    }
}

/// A sample value as Go's `ParseFloat` reads it: decimals, exponents, `NaN`, `±Inf`.
fn parse_value(text: &str) -> Result<f64, String> {
    let bad = || format!("invalid value {:?}", truncate(text));
    // Rust's parser also takes "infinity" and "inf" in any case, as Go's does; it does
    // not take Go's hex floats or `_` digit separators, which no client library writes.
    if text.is_empty() || text.contains('_') {
        return Err(bad());
    }
    text.parse::<f64>().map_err(|_| bad())
}

/// The text format's milliseconds; OpenMetrics' seconds, possibly fractional.
fn parse_timestamp(text: &str, format: Format) -> Result<i64, String> {
    let bad = || format!("invalid timestamp {:?}", truncate(text));
    match format {
        Format::Text => text.parse::<i64>().map_err(|_| bad()),
        Format::OpenMetrics => {
            let seconds: f64 = parse_value(text).map_err(|_| bad())?;
            let ms = (seconds * 1000.0).trunc();
            // Saturating `as` would turn a huge or NaN time into a wrong one silently.
            if !ms.is_finite() || ms.abs() >= 9.2e18 {
                return Err(bad());
            }
            Ok(ms as i64)
        }
    }
}

/// An OpenMetrics exemplar after the sample: `# {labels} value [timestamp]`, checked and
/// skipped (exemplars are not stored).
fn exemplar(cursor: &mut Cursor<'_>) -> Result<(), String> {
    cursor.expect(b'#')?;
    cursor.skip_blanks();
    cursor.expect(b'{')?;
    label_set(cursor)?;
    cursor.skip_blanks();
    let value = cursor.take_while(|b| !matches!(b, b' ' | b'\t'));
    parse_value(value).map_err(|e| format!("exemplar: {e}"))?;
    cursor.skip_blanks();
    if cursor.peek().is_some() {
        let stamp = cursor.take_while(|b| !matches!(b, b' ' | b'\t'));
        parse_timestamp(stamp, Format::OpenMetrics).map_err(|e| format!("exemplar: {e}"))?;
        cursor.skip_blanks();
    }
    match cursor.peek() {
        None => Ok(()),
        Some(_) => Err(format!(
            "unexpected text after the exemplar: {:?}",
            truncate(cursor.rest())
        )),
    }
}

/// At most 40 chars of `text`, for messages.
fn truncate(text: &str) -> &str {
    match text.char_indices().nth(40) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
