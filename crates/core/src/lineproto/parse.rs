//! The line parser: one left-to-right pass over the bytes of a line, sections in order —
//! measurement, tag set, field set, timestamp. Each section's function leaves `pos` on the
//! delimiter that ended it, so the next one knows what came before it.

use super::error::{excerpt, LineError};
use super::scan::{self, KEY, MEASUREMENT};
use super::value::{parse_string, parse_timestamp, parse_unquoted};
use super::{FieldValue, Line};
use crate::time::Precision;
use std::borrow::Cow;

/// Up to this many names, duplicates are found (and, among fields, removed) by comparing
/// every pair (no allocation, and faster than sorting for the ~10 tags and fields of a
/// typical line). Above it, by sorting, so a hostile line with thousands of tags or fields
/// costs n log n, not n².
const PAIRWISE_DUPLICATE_LIMIT: usize = 16;

/// The most tags, and separately fields, a line's vectors are sized for in advance; a line
/// with more grows them as it goes.
const MAX_PREALLOCATED: usize = 64;

/// One `(key, value)` of [`Line::tags`].
type Tag<'a> = (Cow<'a, str>, Cow<'a, str>);
/// One `(key, value)` of [`Line::fields`].
type Field<'a> = (Cow<'a, str>, FieldValue<'a>);

/// See [`super::parse_line`].
pub(super) fn parse_line(
    line: &str,
    precision: Precision,
    default_time: i64,
) -> Result<Option<Line<'_>>, LineError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let bytes = line.as_bytes();
    let start = scan::skip_blanks(bytes, 0);
    if start == bytes.len() || bytes[start] == b'#' {
        return Ok(None);
    }
    let mut cursor = Cursor {
        line,
        bytes,
        pos: start,
    };
    // Every tag and every field has an `=`, so this bounds how many there are. Sizing the
    // vectors from it avoids both regrowing them (a fifth of the parse time on the sample
    // line) and a fixed large capacity, which would cost a 30-byte line a kilobyte. Capped,
    // so that a string value full of `=` cannot make us reserve 56 bytes per `=`.
    let mut pairs = scan::count_equals(&bytes[start..]).min(MAX_PREALLOCATED);
    let measurement = cursor.measurement()?;
    let tags = if cursor.at(b',') {
        cursor.tags(pairs)?
    } else {
        Vec::new()
    };
    pairs = pairs.saturating_sub(tags.len());
    // Invariant here: `pos` is on the unescaped space that ends the series text.
    let series_text = &line[start..cursor.pos];
    let fields = cursor.fields(pairs)?;
    let timestamp = cursor.timestamp(precision, default_time)?;
    Ok(Some(Line {
        measurement,
        tags,
        fields,
        timestamp,
        series_text,
    }))
}

/// A position in one line. `line` and `bytes` are the same text; `pos` only ever moves
/// forward and, between sections, rests on an ASCII delimiter (or the end).
struct Cursor<'a> {
    line: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn at(&self, byte: u8) -> bool {
        self.bytes.get(self.pos) == Some(&byte)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Scans a name of `class` from `pos`; leaves `pos` on its delimiter and returns the raw
    /// (still escaped) text and whether it holds a backslash. Always inlined, so `class`
    /// stays a constant down into [`scan::find`].
    #[inline(always)]
    fn name(&mut self, class: u8) -> (&'a str, bool) {
        let start = self.pos;
        let (end, backslash) = scan::scan_name(self.bytes, start, class);
        self.pos = end;
        (&self.line[start..end], backslash)
    }

    /// The measurement; leaves `pos` on the `,` before the tags or the space before the fields.
    fn measurement(&mut self) -> Result<Cow<'a, str>, LineError> {
        let (raw, backslash) = self.name(MEASUREMENT);
        if raw.is_empty() {
            return Err(LineError::MissingMeasurement);
        }
        if self.at_end() {
            return Err(LineError::MissingFieldSet);
        }
        Ok(scan::name(raw, backslash, MEASUREMENT))
    }

    /// The tag set; `pos` starts on the `,` after the measurement and ends on the space
    /// before the fields.
    fn tags(&mut self, capacity: usize) -> Result<Vec<Tag<'a>>, LineError> {
        let mut tags = Vec::with_capacity(capacity);
        while self.at(b',') {
            self.pos += 1;
            tags.push(self.tag()?);
        }
        if let Some(key) = first_duplicate(&tags) {
            return Err(LineError::DuplicateTag { key: excerpt(key) });
        }
        Ok(tags)
    }

    /// One `key=value`; leaves `pos` on the `,` or space after it.
    fn tag(&mut self) -> Result<Tag<'a>, LineError> {
        let (key, key_backslash) = self.name(KEY);
        if key.is_empty() {
            return Err(LineError::MissingTagKey);
        }
        if !self.at(b'=') {
            return Err(LineError::TagKeyWithoutValue { key: excerpt(key) });
        }
        self.pos += 1;
        let (value, value_backslash) = self.name(KEY);
        if self.at(b'=') {
            return Err(LineError::EqualsInTagValue { key: excerpt(key) });
        }
        if value.is_empty() {
            return Err(LineError::EmptyTagValue { key: excerpt(key) });
        }
        if self.at_end() {
            return Err(LineError::MissingFieldSet);
        }
        Ok((
            scan::name(key, key_backslash, KEY),
            scan::name(value, value_backslash, KEY),
        ))
    }

    /// The field set; `pos` starts on the space after the series text and ends on the
    /// space after the last field, or at the end of the line.
    ///
    /// Only spaces are skipped before the first field, not tabs: a field key may start
    /// with a tab, and tabs have no escape.
    fn fields(&mut self, capacity: usize) -> Result<Vec<Field<'a>>, LineError> {
        while self.at(b' ') {
            self.pos += 1;
        }
        if self.at_end() {
            return Err(LineError::MissingFieldSet);
        }
        let mut fields = Vec::with_capacity(capacity);
        loop {
            fields.push(self.field()?);
            if !self.at(b',') {
                break;
            }
            self.pos += 1;
        }
        // A key given twice keeps its last value, as InfluxDB 1.x does (its fields are a
        // map filled in line order). Found by the same check as duplicate tags, so a line
        // without duplicates (all but a few) pays nothing more.
        if first_duplicate(&fields).is_some() {
            keep_last_of_each(&mut fields);
        }
        Ok(fields)
    }

    /// One `key=value`; leaves `pos` on the `,` or space after it, or at the end.
    fn field(&mut self) -> Result<Field<'a>, LineError> {
        let (key, backslash) = self.name(KEY);
        if key.is_empty() {
            return Err(LineError::MissingFieldKey);
        }
        if !self.at(b'=') {
            return Err(LineError::FieldKeyWithoutValue { key: excerpt(key) });
        }
        self.pos += 1;
        let value = match self.bytes.get(self.pos) {
            None | Some(b',' | b' ') => {
                return Err(LineError::MissingFieldValue { key: excerpt(key) })
            }
            Some(b'"') => self.string_value(key)?,
            Some(_) => self.unquoted_value(key)?,
        };
        Ok((scan::name(key, backslash, KEY), value))
    }

    /// A quoted string; `pos` starts on the opening quote.
    fn string_value(&mut self, key: &str) -> Result<FieldValue<'a>, LineError> {
        let rest = &self.line[self.pos + 1..];
        let Some((value, used)) = parse_string(rest) else {
            return Err(LineError::UnterminatedString { key: excerpt(key) });
        };
        self.pos += 1 + used;
        if !(self.at_end() || self.at(b',') || self.at(b' ')) {
            let end = self.value_end();
            let after = &self.line[self.pos..end];
            return Err(LineError::TextAfterString {
                key: excerpt(key),
                after: excerpt(after),
            });
        }
        Ok(FieldValue::String(value))
    }

    /// A number or boolean; it runs to the next `,` or space (it has no escapes).
    fn unquoted_value(&mut self, key: &str) -> Result<FieldValue<'a>, LineError> {
        let start = self.pos;
        self.pos = self.value_end();
        parse_unquoted(key, &self.line[start..self.pos])
    }

    /// The index of the first `,` or space at or after `pos`, or the end of the line.
    fn value_end(&self) -> usize {
        scan::find(self.bytes, self.pos, scan::COMMA_SPACE)
    }

    /// The optional timestamp, then nothing but blanks.
    fn timestamp(&mut self, precision: Precision, default_time: i64) -> Result<i64, LineError> {
        self.pos = scan::skip_blanks(self.bytes, self.pos);
        if self.at_end() {
            return Ok(default_time);
        }
        let start = self.pos;
        while !self.at_end() && !matches!(self.bytes[self.pos], b' ' | b'\t') {
            self.pos += 1;
        }
        let time = parse_timestamp(&self.line[start..self.pos], precision)?;
        let rest = scan::skip_blanks(self.bytes, self.pos);
        if rest < self.bytes.len() {
            return Err(LineError::TrailingText {
                text: excerpt(&self.line[rest..]),
            });
        }
        Ok(time)
    }
}

/// The first name (unescaped) that appears twice among the first elements of `items`.
fn first_duplicate<'n, T>(items: &'n [(Cow<'_, str>, T)]) -> Option<&'n str> {
    if items.len() <= PAIRWISE_DUPLICATE_LIMIT {
        for (i, (a, _)) in items.iter().enumerate() {
            if items[..i].iter().any(|(b, _)| a == b) {
                return Some(a);
            }
        }
        return None;
    }
    let mut names: Vec<&str> = items.iter().map(|(name, _)| name.as_ref()).collect();
    names.sort_unstable();
    names.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// Removes every field whose key appears again later in `fields`, so each key keeps its
/// last value, at the place of its last occurrence; the others keep their order.
///
/// Cold and never inlined: lines rarely repeat a key, and the hot path's code stays as it
/// was without it.
#[cold]
#[inline(never)]
fn keep_last_of_each(fields: &mut Vec<Field<'_>>) {
    if fields.len() <= PAIRWISE_DUPLICATE_LIMIT {
        let mut i = 0;
        while i < fields.len() {
            let later = fields[i + 1..].iter().any(|(k, _)| *k == fields[i].0);
            match later {
                true => drop(fields.remove(i)),
                false => i += 1,
            }
        }
        return;
    }
    // Indices sorted by (key, index): in each run of one key, all but the last are dropped.
    let mut order: Vec<usize> = (0..fields.len()).collect();
    order.sort_unstable_by(|&a, &b| fields[a].0.cmp(&fields[b].0).then(a.cmp(&b)));
    let mut superseded = vec![false; fields.len()];
    for pair in order.windows(2) {
        if fields[pair[0]].0 == fields[pair[1]].0 {
            superseded[pair[0]] = true;
        }
    }
    let mut index = 0;
    fields.retain(|_| {
        index += 1;
        !superseded[index - 1]
    });
}
