//! A field key given twice keeps its last value (InfluxDB 1.x's rule): whole lines, and a
//! property test against a model of it.

use super::tests::{error, field_value, parse, spell, NOW, NS};
use super::*;
use proptest::prelude::*;

/// The keys of a line's fields, in order.
pub(super) fn field_keys(line: &Line<'_>) -> Vec<String> {
    line.fields.iter().map(|(k, _)| k.to_string()).collect()
}

#[test]
fn a_field_given_twice_keeps_its_last_value() {
    // InfluxDB 1.x keeps the last value of a key given twice; tickertape keeps it at the
    // place of its last occurrence, the other fields in their order.
    let line = parse("cpu v=1,w=2,v=3 7");
    assert_eq!(
        line.fields,
        vec![
            (Cow::Borrowed("w"), FieldValue::Float(2.0)),
            (Cow::Borrowed("v"), FieldValue::Float(3.0)),
        ]
    );
    assert_eq!(line.timestamp, 7);
    // Whatever the types: the last one is the value.
    let line = parse(r#"m s="text",n=1i,s=2.5,n=true,n=3u"#);
    assert_eq!(
        line.fields,
        vec![
            (Cow::Borrowed("s"), FieldValue::Float(2.5)),
            (Cow::Borrowed("n"), FieldValue::Unsigned(3)),
        ]
    );
    let line = parse(r#"m a=1,a="last""#);
    assert_eq!(
        line.fields,
        vec![(
            Cow::Borrowed("a"),
            FieldValue::String(Cow::Borrowed("last"))
        )]
    );
    // Three times, interleaved, and the same key under two escapings.
    assert_eq!(
        field_keys(&parse("m a=1,b=1,a=2,c=1,b=2,a=3")),
        ["c", "b", "a"]
    );
    assert_eq!(field_keys(&parse(r"m a\ b=1,a\ b=2,x=0")), ["a b", "x"]);
    // A bad value anywhere still refuses the line, even one a later value would replace.
    assert!(matches!(
        error("m a=oops,a=1"),
        LineError::InvalidFieldValue { .. }
    ));
    // Past the pairwise limit: every key twice, the second value kept, in order.
    let first: Vec<String> = (0..40).map(|i| format!("f{i}=1")).collect();
    let second: Vec<String> = (0..40).map(|i| format!("f{i}=2")).collect();
    let line = format!("m {},{}", first.join(","), second.join(","));
    let fields = parse(&line).fields;
    assert_eq!(fields.len(), 40);
    for (i, (key, value)) in fields.iter().enumerate() {
        assert_eq!(key, &format!("f{i}"));
        assert_eq!(value, &FieldValue::Float(2.0));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn fields_given_twice_keep_their_last_values(
        // Keys from a small set, so that most lines repeat some; up to 40 fields, so that
        // both the pairwise and the sorting path are taken.
        fields in prop::collection::vec(
            (prop::sample::select(vec!["a", "b", "c d", "e=f", "g,h"]), field_value()),
            1..40,
        ),
        variant in 0usize..10,
    ) {
        let text: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={}", escape_field_key(k).unwrap(), spell(v, variant)))
            .collect();
        let text = format!("m {} 1", text.join(","));
        let line = parse_line(&text, NS, NOW)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?
            .ok_or_else(|| TestCaseError::fail("a blank line"))?;
        // The model: each key once, with its last value, ordered by its last occurrence.
        let want: Vec<(&str, &FieldValue<'_>)> = fields
            .iter()
            .enumerate()
            .filter(|(i, (k, _))| !fields[i + 1..].iter().any(|(later, _)| later == k))
            .map(|(_, (k, v))| (*k, v))
            .collect();
        let got: Vec<(&str, &FieldValue<'_>)> =
            line.fields.iter().map(|(k, v)| (k.as_ref(), v)).collect();
        prop_assert_eq!(got.len(), want.len(), "{:?}", text);
        for ((got_key, got), (want_key, want)) in got.iter().zip(&want) {
            prop_assert_eq!(got_key, want_key);
            match (got, want) {
                (FieldValue::Float(a), FieldValue::Float(b)) => prop_assert_eq!(a.to_bits(), b.to_bits()),
                _ => prop_assert_eq!(got, want),
            }
        }
    }
}
