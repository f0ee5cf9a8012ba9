//! Fuzzes the line-protocol parser with arbitrary UTF-8 bodies.
//!
//! Oracle, beyond "never panics": every line the parser accepts keeps the `Line`
//! invariants, and writing it back with `Line::to_line_protocol` and parsing that gives
//! the same line (floats bit for bit). That catches an escaping rule the parser and the
//! writer disagree on, which a no-panic fuzzer alone would not.
//!
//! Run: `cargo +nightly fuzz run line_protocol` from the repository root.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tickertape_core::lineproto::{parse_body, parse_line, FieldValue, Line};
use tickertape_core::time::Precision;

const PRECISIONS: [Precision; 4] = [
    Precision::Nanoseconds,
    Precision::Microseconds,
    Precision::Milliseconds,
    Precision::Seconds,
];

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    // The first byte picks the precision, so the corpus explores all of them.
    let precision = PRECISIONS[data.first().map_or(0, |b| usize::from(b % 4))];
    for (number, result) in parse_body(body, precision, 0) {
        assert!(number >= 1);
        if let Ok(line) = result {
            check(body, &line);
        }
    }
});

fn check(body: &str, line: &Line<'_>) {
    assert!(!line.measurement.is_empty());
    assert!(!line.fields.is_empty());
    assert!(line
        .tags
        .iter()
        .all(|(k, v)| !k.is_empty() && !v.is_empty()));
    assert!(line.fields.iter().all(|(k, _)| !k.is_empty()));
    // Field keys are unique: a key given twice was kept once, with its last value.
    for (i, (key, _)) in line.fields.iter().enumerate() {
        assert!(
            !line.fields[..i].iter().any(|(k, _)| k == key),
            "{key:?} twice"
        );
    }
    assert!(body.contains(line.series_text));

    let text = line
        .to_line_protocol()
        .expect("an accepted line can be written back");
    let again = parse_line(&text, Precision::Nanoseconds, 0)
        .expect("a written line parses")
        .expect("a written line is not blank");
    assert_eq!(again.measurement, line.measurement);
    assert_eq!(again.tags, line.tags);
    assert_eq!(again.timestamp, line.timestamp);
    assert_eq!(again.fields.len(), line.fields.len());
    for ((key_a, a), (key_b, b)) in again.fields.iter().zip(&line.fields) {
        assert_eq!(key_a, key_b);
        match (a, b) {
            (FieldValue::Float(x), FieldValue::Float(y)) => assert_eq!(x.to_bits(), y.to_bits()),
            _ => assert_eq!(a, b),
        }
    }
}
