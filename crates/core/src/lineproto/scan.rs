//! Byte scanning of names (measurement, tag keys and values, field keys) and the one
//! unescaping rule they share.
//!
//! **The escaping rule.** In a name, a backslash escapes the next byte when that byte is one
//! of the name's special characters (comma and space in a measurement; comma, `=` and space
//! in tag keys, tag values and field keys) — equivalently, a special character is literal
//! exactly when the byte before it is a backslash. A backslash before anything else,
//! another backslash included, is a literal backslash. This is InfluxDB 1.x's rule
//! (`buf[i-1] == '\\'` in its scanner). Its consequence, also InfluxDB's: a name cannot end
//! with a backslash, because the backslash would escape the delimiter after it.
//!
//! **Why bytes are safe.** Every delimiter is ASCII, and in UTF-8 an ASCII byte is always a
//! whole character, never part of a longer one. So scanning bytes finds the same delimiters
//! a char scan would, and slicing a `&str` at a delimiter (or at a backslash) is always on a
//! char boundary.

use std::borrow::Cow;

/// [`CLASS`] bit of `,` and space: what ends a measurement and any unquoted value.
pub(super) const COMMA_SPACE: u8 = 1;
/// [`CLASS`] bit of `=`.
pub(super) const EQUALS: u8 = 2;
/// [`CLASS`] bit of the backslash; added to a class, it makes [`find`] stop at escapes too.
pub(super) const BACKSLASH: u8 = 4;
/// The class of measurement names: `,` and space are special.
pub(super) const MEASUREMENT: u8 = COMMA_SPACE;
/// The class of tag keys, tag values and field keys: `,`, `=` and space are special.
pub(super) const KEY: u8 = COMMA_SPACE | EQUALS;

/// Byte classes, for the byte-at-a-time tail of [`find`] and for [`is_special`].
static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b',' as usize] = COMMA_SPACE;
    table[b' ' as usize] = COMMA_SPACE;
    table[b'=' as usize] = EQUALS;
    table[b'\\' as usize] = BACKSLASH;
    table
};

/// Whether `byte` is special for names of class `class` ([`MEASUREMENT`] or [`KEY`]).
#[inline]
pub(super) fn is_special(byte: u8, class: u8) -> bool {
    CLASS[byte as usize] & class != 0
}

/// Where a name that starts at `start` ends, and whether it holds a backslash.
///
/// Returns the index of the first unescaped byte special for `class`, or `bytes.len()` if
/// there is none. The name is `bytes[start..end]`; `bytes[end]`, when it exists, is the
/// delimiter, which the caller inspects.
#[inline(always)]
pub(super) fn scan_name(bytes: &[u8], start: usize, class: u8) -> (usize, bool) {
    let mut i = start;
    let mut backslash = false;
    loop {
        i = find(bytes, i, class | BACKSLASH);
        if bytes.get(i) != Some(&b'\\') {
            return (i, backslash);
        }
        backslash = true;
        // Skip the next byte only if this backslash escapes it; otherwise (`\\,`) the
        // next byte is itself a backslash that may escape the byte after it.
        let escapes_next = bytes.get(i + 1).is_some_and(|&b| is_special(b, class));
        i += if escapes_next { 2 } else { 1 };
    }
}

/// The index of the first byte at or after `i` whose [`CLASS`] shares a bit with `set`, or
/// `bytes.len()` if there is none.
///
/// This is the parser's inner loop, so it looks at eight bytes per step (SWAR: one u64,
/// a few ALU operations per delimiter) and only the last few bytes one by one. Always
/// inlined so that `set`, a constant at every call site, folds away.
#[inline(always)]
pub(super) fn find(bytes: &[u8], mut i: usize, set: u8) -> usize {
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let hits = word_matches(u64::from_le_bytes(*chunk), set);
        if hits != 0 {
            // Little-endian: the lowest set bit is in the first matching byte.
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && CLASS[bytes[i] as usize] & set == 0 {
        i += 1;
    }
    i
}

/// How many `=` bytes `bytes` holds: an upper bound on the tags plus fields of a line.
pub(super) fn count_equals(bytes: &[u8]) -> usize {
    let chunks = bytes.chunks_exact(8);
    let tail = chunks.remainder();
    let whole: u32 = chunks
        .map(|chunk| {
            let word = u64::from_le_bytes(chunk.try_into().expect("chunks_exact(8)"));
            bytes_equal(word, b'=').count_ones()
        })
        .sum();
    whole as usize + tail.iter().filter(|&&b| b == b'=').count()
}

/// The bytes of `word` that `set` stops at: 0x80 in each such byte, 0 elsewhere.
#[inline(always)]
fn word_matches(word: u64, set: u8) -> u64 {
    let mut hits = 0;
    if set & COMMA_SPACE != 0 {
        hits |= bytes_equal(word, b',') | bytes_equal(word, b' ');
    }
    if set & EQUALS != 0 {
        hits |= bytes_equal(word, b'=');
    }
    if set & BACKSLASH != 0 {
        hits |= bytes_equal(word, b'\\');
    }
    hits
}

/// 0x80 in each byte of `word` equal to `byte`, 0 elsewhere. Exact for every byte (the
/// additions cannot carry from one byte into the next, since `(x & 0x7f) + 0x7f <= 0xfe`),
/// so the lowest set bit marks the first match.
#[inline(always)]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (u64::from(byte) * 0x0101_0101_0101_0101);
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Removes the backslash of every escape in `raw`: a backslash followed by a byte for which
/// `escapable` holds. Other backslashes stay. Borrows when there is nothing to remove,
/// which is the case for every name without a backslash (the common case).
pub(super) fn unescape(raw: &str, escapable: impl Fn(u8) -> bool) -> Cow<'_, str> {
    let bytes = raw.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `raw` already in `out`
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' && escapable(bytes[i + 1]) {
            let buf = out.get_or_insert_with(|| String::with_capacity(raw.len()));
            buf.push_str(&raw[copied..i]);
            copied = i + 1; // keep the escaped byte, drop the backslash
            i += 2;
        } else {
            i += 1;
        }
    }
    match out {
        None => Cow::Borrowed(raw),
        Some(mut buf) => {
            buf.push_str(&raw[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// Unescapes a name scanned with class `class`; `backslash` is what [`scan_name`] said.
#[inline]
pub(super) fn name(raw: &str, backslash: bool, class: u8) -> Cow<'_, str> {
    if backslash {
        unescape(raw, |b| is_special(b, class))
    } else {
        Cow::Borrowed(raw)
    }
}

/// The index of the first byte at or after `i` that is not a space or a tab.
#[inline]
pub(super) fn skip_blanks(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The eight-bytes-at-a-time search agrees with a plain byte loop, from every start.
        #[test]
        fn find_agrees_with_a_byte_loop(
            bytes in prop::collection::vec(
                prop::sample::select(&[b'a', b',', b' ', b'=', b'\\', 0x80, 0xff, 0x00, 0x7f, 0xac][..]),
                0..40,
            ),
            set in 1u8..8,
        ) {
            for start in 0..=bytes.len() {
                let naive = (start..bytes.len())
                    .find(|&i| CLASS[bytes[i] as usize] & set != 0)
                    .unwrap_or(bytes.len());
                prop_assert_eq!(find(&bytes, start, set), naive);
            }
            let equals = bytes.iter().filter(|&&b| b == b'=').count();
            prop_assert_eq!(count_equals(&bytes), equals);
        }
    }

    #[test]
    fn scan_stops_at_the_first_unescaped_special_byte() {
        let scan = |s: &str, class| scan_name(s.as_bytes(), 0, class);
        assert_eq!(scan("cpu,host=a", MEASUREMENT), (3, false));
        assert_eq!(scan("cp=u x", MEASUREMENT), (4, false));
        assert_eq!(scan("cp=u x", KEY), (2, false));
        assert_eq!(scan(r"a\,b,c", MEASUREMENT), (4, true));
        assert_eq!(scan(r"a\ b c", KEY), (4, true));
        assert_eq!(scan(r"a\=b=c", KEY), (4, true));
        // `\=` is not an escape in a measurement: the `=` is ordinary anyway.
        assert_eq!(scan(r"a\=b c", MEASUREMENT), (4, true));
        // `\\,`: the second backslash escapes the comma.
        assert_eq!(scan(r"a\\,b c", MEASUREMENT), (5, true));
        assert_eq!(scan(r"ab\", KEY), (3, true));
        assert_eq!(scan(r"ab\,", KEY), (4, true));
        assert_eq!(scan("", KEY), (0, false));
    }

    #[test]
    fn unescape_drops_only_escaping_backslashes() {
        let key = |s| unescape(s, |b| is_special(b, KEY)).into_owned();
        assert_eq!(key(r"a\,b\=c\ d"), "a,b=c d");
        assert_eq!(key(r"a\b\\c"), r"a\b\\c");
        assert_eq!(key(r"a\\,b"), r"a\,b");
        assert_eq!(key(r"\"), r"\");
        assert_eq!(key(r"é\,🚀"), "é,🚀");
        let measurement = |s| unescape(s, |b| is_special(b, MEASUREMENT)).into_owned();
        assert_eq!(measurement(r"a\=b\,c"), r"a\=b,c");
        assert!(matches!(unescape(r"a\b", |b| b == b','), Cow::Borrowed(_)));
    }
}
