//! Whole-line tests: one per rule and per error, then property tests — random lines built
//! with the escaping helpers parse back to exactly what was built, and no input panics.

use super::duplicate_tests::field_keys;
use super::*;
use proptest::prelude::*;

pub(super) const NOW: i64 = 1_700_000_000_000_000_000;
pub(super) const NS: Precision = Precision::Nanoseconds;

pub(super) fn parse(line: &str) -> Line<'_> {
    match parse_line(line, NS, NOW) {
        Ok(Some(parsed)) => parsed,
        other => panic!("{line:?} gave {other:?}"),
    }
}

pub(super) fn error(line: &str) -> LineError {
    match parse_line(line, NS, NOW) {
        Err(e) => e,
        other => panic!("{line:?} should be refused, gave {other:?}"),
    }
}

fn owned<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(Cow<'a, str>, Cow<'a, str>)> {
    pairs
        .iter()
        .map(|&(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v)))
        .collect()
}

const SAMPLE: &str = "cpu,hostname=host_0,region=ap-northeast-1,datacenter=ap-northeast-1c,rack=11,os=Ubuntu16.04LTS,arch=x86,team=SF,service=1,service_version=1,service_environment=test usage_user=23.930060193093336,usage_system=0.38486041030339213,usage_idle=43.68172924584467,usage_nice=9.380027024329898,usage_iowait=59.39047275323102,usage_irq=6.784172448854041,usage_softirq=32.08445555341417,usage_steal=44.857675098422504,usage_guest=90.9095396657719,usage_guest_nice=9.553162666460507 1451606400000000000";

#[test]
fn the_sample_line_parses_borrowing_everything() {
    let line = parse(SAMPLE);
    assert_eq!(line.measurement, "cpu");
    assert_eq!(line.tags.len(), 10);
    assert_eq!(
        line.tags[0],
        (Cow::Borrowed("hostname"), Cow::Borrowed("host_0"))
    );
    assert_eq!(line.tags[9].1, "test");
    assert_eq!(line.fields.len(), 10);
    assert_eq!(line.fields[0].0, "usage_user");
    assert_eq!(line.fields[0].1, FieldValue::Float(23.930060193093336));
    assert_eq!(line.fields[9].1, FieldValue::Float(9.553162666460507));
    assert_eq!(line.timestamp, 1_451_606_400_000_000_000);
    assert!(SAMPLE.starts_with(line.series_text));
    assert!(line.series_text.ends_with("service_environment=test"));
    assert!(matches!(line.measurement, Cow::Borrowed(_)));
    assert!(line
        .tags
        .iter()
        .all(|(k, v)| matches!((k, v), (Cow::Borrowed(_), Cow::Borrowed(_)))));
    assert!(line
        .fields
        .iter()
        .all(|(k, _)| matches!(k, Cow::Borrowed(_))));
}

#[test]
fn minimal_lines_and_every_value_type() {
    let line = parse(r#"m f=1.5,i=-12i,u=12u,b=true,s="hi there",g=1"#);
    assert_eq!(line.measurement, "m");
    assert!(line.tags.is_empty());
    assert_eq!(line.series_text, "m");
    assert_eq!(
        line.fields,
        vec![
            (Cow::Borrowed("f"), FieldValue::Float(1.5)),
            (Cow::Borrowed("i"), FieldValue::Integer(-12)),
            (Cow::Borrowed("u"), FieldValue::Unsigned(12)),
            (Cow::Borrowed("b"), FieldValue::Boolean(true)),
            (Cow::Borrowed("s"), FieldValue::String("hi there".into())),
            (Cow::Borrowed("g"), FieldValue::Float(1.0)),
        ]
    );
    assert_eq!(line.timestamp, NOW, "a missing timestamp takes the default");
}

#[test]
fn tags_keep_arrival_order_and_series_text_keeps_escapes() {
    let line = parse(r"my\ cpu\,x,z=1,a\ b=c\,d\=e v=1 5");
    assert_eq!(line.measurement, "my cpu,x");
    assert_eq!(line.tags, owned(&[("z", "1"), ("a b", "c,d=e")]));
    assert_eq!(line.series_text, r"my\ cpu\,x,z=1,a\ b=c\,d\=e");
    assert_eq!(line.timestamp, 5);
}

#[test]
fn escapes_in_every_kind_of_name() {
    let line = parse(r"m\ a\,b,k\ 1\,\==v\ 1\,\= f\ 1\,\==1 1");
    assert_eq!(line.measurement, "m a,b");
    assert_eq!(line.tags, owned(&[("k 1,=", "v 1,=")]));
    assert_eq!(line.fields[0].0, "f 1,=");
    assert!(matches!(line.measurement, Cow::Owned(_)));
}

#[test]
fn backslash_rules_per_element() {
    // Measurement: `\=` is not an escape, so it stays as two characters.
    assert_eq!(parse(r"a\=b v=1").measurement, r"a\=b");
    // A backslash before an ordinary character is literal, in every element.
    let line = parse(r#"a\b,k\x=v\y f\z="s\t" 1"#);
    assert_eq!(line.measurement, r"a\b");
    assert_eq!(line.tags, owned(&[(r"k\x", r"v\y")]));
    assert_eq!(line.fields[0].0, r"f\z");
    assert_eq!(line.fields[0].1, FieldValue::String(r"s\t".into()));
    // `\\` is literal in names, but the second backslash still escapes a special byte.
    let line = parse(r"m,k=a\\,b v=1");
    assert_eq!(line.tags, owned(&[("k", r"a\,b")]));
}

#[test]
fn string_values_unescape_quote_and_backslash_and_may_hold_delimiters() {
    let line = parse(r#"m s="a \"b\", c=d \\ e",t="" 1"#);
    assert_eq!(
        line.fields[0].1,
        FieldValue::String(r#"a "b", c=d \ e"#.into())
    );
    assert_eq!(line.fields[1].1, FieldValue::String("".into()));
    assert!(matches!(
        &line.fields[1].1,
        FieldValue::String(Cow::Borrowed(_))
    ));
    // The docs' table: `\\\` is `\` escaped then a literal `\`.
    let line = parse(r#"m s="\\\x" 1"#);
    assert_eq!(line.fields[0].1, FieldValue::String(r"\\x".into()));
    // Unicode anywhere.
    let line = parse(r#"mé,🚀=ü f🍭="Launch 🚀" 1"#);
    assert_eq!(line.measurement, "mé");
    assert_eq!(line.tags, owned(&[("🚀", "ü")]));
    assert_eq!(line.fields[0].1, FieldValue::String("Launch 🚀".into()));
}

#[test]
fn quotes_are_ordinary_in_names() {
    let line = parse(r#""m",'k'="v" "f"=1"#);
    assert_eq!(line.measurement, r#""m""#);
    assert_eq!(line.tags, owned(&[("'k'", r#""v""#)]));
    assert_eq!(line.fields[0].0, r#""f""#);
}

#[test]
fn timestamps_use_the_precision_and_may_be_negative() {
    let at = |line, precision| parse_line(line, precision, NOW).unwrap().unwrap().timestamp;
    assert_eq!(
        at("m v=1 1451606400", Precision::Seconds),
        1_451_606_400_000_000_000
    );
    assert_eq!(
        at("m v=1 1451606400000", Precision::Milliseconds),
        1_451_606_400_000_000_000
    );
    assert_eq!(
        at("m v=1 1451606400000000", Precision::Microseconds),
        1_451_606_400_000_000_000
    );
    assert_eq!(at("m v=1 -1", Precision::Seconds), -1_000_000_000);
    assert_eq!(
        at("m v=1", Precision::Seconds),
        NOW,
        "the default is already nanoseconds"
    );
}

#[test]
fn blanks_comments_and_line_endings() {
    for skipped in [
        "",
        "   ",
        "\t \t",
        "\r",
        "# comment",
        "  # indented comment",
        "#m v=1 1",
    ] {
        assert_eq!(parse_line(skipped, NS, NOW), Ok(None), "{skipped:?}");
    }
    assert_eq!(parse("m v=1 7\r").timestamp, 7);
    assert_eq!(parse("m v=1\r").fields[0].1, FieldValue::Float(1.0));
    let line = parse("  \tm,k=v v=1");
    assert_eq!(line.series_text, "m,k=v");
    // Extra blanks between the field set and the timestamp, and after it.
    assert_eq!(parse("m v=1   \t 7 \t ").timestamp, 7);
    // And between the series and the field set.
    assert_eq!(parse("m,k=v   v=1").fields.len(), 1);
}

#[test]
fn a_field_key_may_start_with_a_tab() {
    // Tabs have no escape, so they are not skipped before the field set (found by proptest).
    let line = parse("m \tk=1");
    assert_eq!(line.fields[0].0, "\tk");
}

#[test]
fn many_equals_signs_neither_confuse_nor_overallocate() {
    let value = "=".repeat(100_000);
    let text = format!("m,k=v s=\"{value}\",t=1");
    let line = parse(&text);
    assert_eq!(line.fields[0].1, FieldValue::String(value.as_str().into()));
    assert!(line.fields.capacity() <= 64, "{}", line.fields.capacity());
}

#[test]
fn a_body_yields_numbered_results_for_real_lines_only() {
    let body = "# header\r\nm v=1 1\r\n\r\nbad\nm,k=v v=2 2\n  \nm v= 3\n";
    let results: Vec<_> = parse_body(body, NS, NOW).collect();
    let numbers: Vec<usize> = results.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [2, 4, 5, 7]);
    assert_eq!(results[0].1.as_ref().unwrap().timestamp, 1);
    assert_eq!(results[1].1, Err(LineError::MissingFieldSet));
    assert_eq!(results[2].1.as_ref().unwrap().series_text, "m,k=v");
    assert!(matches!(
        results[3].1,
        Err(LineError::MissingFieldValue { .. })
    ));
    assert_eq!(parse_body("", NS, NOW).count(), 0);
    assert_eq!(parse_body("\n\n# x\n", NS, NOW).count(), 0);
}

#[test]
fn a_newline_ends_a_line_even_inside_quotes() {
    let results: Vec<_> = parse_body("m s=\"a\nb\" 1\nm v=1 2", NS, NOW).collect();
    assert!(matches!(
        results[0].1,
        Err(LineError::UnterminatedString { .. })
    ));
    assert!(results[1].1.is_err());
    assert_eq!(results[2].1.as_ref().unwrap().timestamp, 2);
}

#[test]
fn every_error_with_its_message() {
    let cases: &[(&str, LineError, &str)] = &[
        (",k=v v=1", LineError::MissingMeasurement, "missing measurement"),
        ("cpu", LineError::MissingFieldSet, "missing field set"),
        ("cpu ", LineError::MissingFieldSet, "missing field set"),
        ("cpu,k=v", LineError::MissingFieldSet, "missing field set"),
        ("cpu, v=1", LineError::MissingTagKey, "missing tag key"),
        ("cpu,=v v=1", LineError::MissingTagKey, "missing tag key"),
        ("cpu,k=v, v=1", LineError::MissingTagKey, "missing tag key"),
        ("cpu,host v=1", LineError::TagKeyWithoutValue { key: "host".into() }, "tag key \"host\" without value"),
        ("cpu,host,a=b v=1", LineError::TagKeyWithoutValue { key: "host".into() }, "tag key \"host\" without value"),
        ("cpu,host= v=1", LineError::EmptyTagValue { key: "host".into() }, "tag \"host\" has an empty value"),
        ("cpu,host=,a=b v=1", LineError::EmptyTagValue { key: "host".into() }, "empty value"),
        ("cpu,host=a=b v=1", LineError::EqualsInTagValue { key: "host".into() }, "unescaped '=' in the value of tag \"host\""),
        ("cpu,k=a,j=b,k=c v=1", LineError::DuplicateTag { key: "k".into() }, "duplicate tag key \"k\""),
        ("cpu =1", LineError::MissingFieldKey, "missing field key"),
        ("cpu v=1,=2", LineError::MissingFieldKey, "missing field key"),
        ("cpu v=1,", LineError::MissingFieldKey, "missing field key"),
        ("cpu usage", LineError::FieldKeyWithoutValue { key: "usage".into() }, "field key \"usage\" without value"),
        ("cpu usage,v=1", LineError::FieldKeyWithoutValue { key: "usage".into() }, "without value"),
        ("cpu usage=", LineError::MissingFieldValue { key: "usage".into() }, "missing value for field \"usage\""),
        ("cpu usage=,v=1", LineError::MissingFieldValue { key: "usage".into() }, "missing value"),
        ("cpu usage= 1", LineError::MissingFieldValue { key: "usage".into() }, "missing value"),
        ("cpu usage=abc", LineError::InvalidFieldValue { key: "usage".into(), value: "abc".into(), reason: "expected a float (1.5), integer (1i), unsigned (1u), boolean (true) or double-quoted string" }, "invalid field value \"abc\" for field \"usage\""),
        ("cpu usage=NaN", LineError::InvalidFieldValue { key: "usage".into(), value: "NaN".into(), reason: "NaN and infinity are not accepted" }, "NaN and infinity are not accepted"),
        ("cpu usage=inf 1", LineError::InvalidFieldValue { key: "usage".into(), value: "inf".into(), reason: "NaN and infinity are not accepted" }, "invalid field value \"inf\""),
        ("cpu s=\"abc", LineError::UnterminatedString { key: "s".into() }, "unterminated string value for field \"s\""),
        ("cpu s=\"abc\\\"", LineError::UnterminatedString { key: "s".into() }, "unterminated"),
        ("cpu s=\"abc\"def 1", LineError::TextAfterString { key: "s".into(), after: "def".into() }, "unexpected \"def\" after the closing quote of field \"s\""),
        ("cpu v=1 12a", LineError::InvalidTimestamp { text: "12a".into() }, "invalid timestamp \"12a\""),
        ("cpu v=1 1.5", LineError::InvalidTimestamp { text: "1.5".into() }, "invalid timestamp"),
        ("cpu v=1 99999999999999999999", LineError::TimestampOutOfRange { text: "99999999999999999999".into() }, "timestamp 99999999999999999999 out of range"),
        ("cpu v=1 1 2", LineError::TrailingText { text: "2".into() }, "unexpected text \"2\" after the timestamp"),
    ];
    for (line, want, message) in cases {
        let got = error(line);
        assert_eq!(&got, want, "{line:?}");
        let shown = got.to_string();
        assert!(
            shown.contains(message),
            "{line:?}: {shown:?} lacks {message:?}"
        );
    }
}

#[test]
fn timestamp_overflow_from_precision_is_out_of_range() {
    let got = parse_line("m v=1 9223372037", Precision::Seconds, NOW);
    assert!(matches!(got, Err(LineError::TimestampOutOfRange { .. })));
    let got = parse_line("m v=1 -9223372036854775807", NS, NOW);
    assert!(matches!(got, Err(LineError::TimestampOutOfRange { .. })));
}

#[test]
fn duplicates_compare_unescaped_names_and_scale() {
    assert!(matches!(
        error(r"m,a\ b=1,a\ b=2 v=1"),
        LineError::DuplicateTag { .. }
    ));
    assert_eq!(field_keys(&parse(r"m a\=b=1,a\=b=2")), ["a=b"]);
    // The same names with different escaping: `a\b` is literal, `a\,b` is "a,b".
    assert_eq!(parse(r"m,a\b=1,a\,b=2 v=1").tags.len(), 2);
    assert_eq!(parse(r"m a\b=1,a\,b=2").fields.len(), 2);
    // Past the pairwise limit the sorted path finds them too.
    let many: Vec<String> = (0..100).map(|i| format!("f{i}=1")).collect();
    let line = format!("m {}", many.join(","));
    assert_eq!(parse(&line).fields.len(), 100);
    let line = format!("m {},f42=2", many.join(","));
    let fields = parse(&line).fields;
    assert_eq!(fields.len(), 100);
    assert_eq!(
        fields.last(),
        Some(&(Cow::Borrowed("f42"), FieldValue::Float(2.0)))
    );
    assert!(!fields[..99].iter().any(|(k, _)| k == "f42"));
}

#[test]
fn long_values_are_cut_in_messages() {
    let value = "x".repeat(10_000);
    let message = error(&format!("m v={value}")).to_string();
    assert!(message.len() < 300, "{}", message.len());
    assert!(message.contains('…'));
}

#[test]
fn a_parsed_line_writes_back_to_an_equal_line() {
    let line = parse(r#"my\ cpu,k\=1=v\,2 f=-0.0,i=3i,u=4u,b=F,s="q\"\\" 99"#);
    let text = line.to_line_protocol().unwrap();
    assert_eq!(
        text,
        r#"my\ cpu,k\=1=v\,2 f=-0.0,i=3i,u=4u,b=false,s="q\"\\" 99"#
    );
    assert_eq!(parse(&text), line);
}

// ---------------------------------------------------------------------------------------
// Property tests.

/// Characters that stress every rule: all delimiters, both escapes, quotes, comment and
/// blank characters, a carriage return, and multi-byte UTF-8.
const NASTY: &[char] = &[
    'a', 'b', 'z', '0', '9', '.', '-', '_', ' ', ',', '=', '\\', '"', '\'', '#', '\t', '\r', 'é',
    '🚀', '中', 'i', 'u', 'e', 't',
];

fn nasty_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(NASTY), 0..max)
        .prop_map(|chars| chars.into_iter().collect())
}

/// A name the protocol can express: non-empty and not ending with a backslash. (The
/// refusal of the others is tested in `write`.)
fn name() -> impl Strategy<Value = String> {
    nasty_text(10).prop_map(|mut s| {
        if s.is_empty() || s.ends_with('\\') {
            s.push('n');
        }
        s
    })
}

/// A measurement also must not start with `#` or a tab.
fn measurement() -> impl Strategy<Value = String> {
    name().prop_map(|s| {
        if s.starts_with(['#', '\t']) {
            format!("m{s}")
        } else {
            s
        }
    })
}

pub(super) fn field_value() -> impl Strategy<Value = FieldValue<'static>> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(FieldValue::Float),
        (-1e6f64..1e6).prop_map(FieldValue::Float),
        any::<i64>().prop_map(FieldValue::Integer),
        any::<u64>().prop_map(FieldValue::Unsigned),
        any::<bool>().prop_map(FieldValue::Boolean),
        nasty_text(16).prop_map(|s| FieldValue::String(s.into())),
        "\\PC*".prop_map(|s: String| FieldValue::String(s.replace('\n', "").into())),
    ]
}

/// Keeps the first pair for each key, preserving order.
fn dedup_keys<V>(pairs: Vec<(String, V)>) -> Vec<(String, V)> {
    let mut seen = std::collections::HashSet::new();
    pairs
        .into_iter()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect()
}

/// Writes a value independently of `format_field_value`, picking among the spellings
/// the parser must accept for it.
pub(super) fn spell(value: &FieldValue<'_>, variant: usize) -> String {
    match value {
        FieldValue::Float(v) if variant < 5 => format!("{v:?}"),
        FieldValue::Float(v) => format!("{v}"),
        FieldValue::Integer(v) => format!("{v}i"),
        FieldValue::Unsigned(v) => format!("{v}u"),
        FieldValue::Boolean(true) => ["t", "T", "true", "True", "TRUE"][variant % 5].into(),
        FieldValue::Boolean(false) => ["f", "F", "false", "False", "FALSE"][variant % 5].into(),
        FieldValue::String(s) => escape_string_value(s).unwrap(),
    }
}

fn precision() -> impl Strategy<Value = Precision> {
    prop_oneof![
        Just(Precision::Nanoseconds),
        Just(Precision::Microseconds),
        Just(Precision::Milliseconds),
        Just(Precision::Seconds),
    ]
}

/// A timestamp in `precision` units whose nanoseconds are in range.
fn timestamp_in(precision: Precision) -> impl Strategy<Value = i64> {
    let unit = precision.nanos_per_unit();
    (MIN_TIMESTAMP / unit)..=(MAX_TIMESTAMP / unit)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn built_lines_parse_back_exactly(
        measurement in measurement(),
        tags in prop::collection::vec((name(), name()), 0..6).prop_map(dedup_keys),
        fields in prop::collection::vec((name(), field_value()), 1..6).prop_map(dedup_keys),
        (precision, time) in precision().prop_flat_map(|p| (Just(p), prop::option::of(timestamp_in(p)))),
        variant in 0usize..10,
        crlf in any::<bool>(),
    ) {
        let mut series = escape_measurement(&measurement).unwrap().into_owned();
        for (k, v) in &tags {
            series.push_str(&format!(",{}={}", escape_tag_key(k).unwrap(), escape_tag_value(v).unwrap()));
        }
        let field_text: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={}", escape_field_key(k).unwrap(), spell(v, variant)))
            .collect();
        let mut text = format!("{series} {}", field_text.join(","));
        if let Some(t) = time {
            text.push_str(&format!(" {t}"));
        }
        let body = format!("# built\n{text}{}", if crlf { "\r\n" } else { "\n" });

        let results: Vec<_> = parse_body(&body, precision, NOW).collect();
        prop_assert_eq!(results.len(), 1);
        let (number, result) = &results[0];
        prop_assert_eq!(*number, 2);
        let line = result.as_ref().map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;

        prop_assert_eq!(&line.measurement, &measurement);
        prop_assert_eq!(line.series_text, series.as_str());
        let got_tags: Vec<(&str, &str)> = line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
        let want_tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        prop_assert_eq!(got_tags, want_tags);
        prop_assert_eq!(line.fields.len(), fields.len());
        for ((got_key, got), (want_key, want)) in line.fields.iter().zip(&fields) {
            prop_assert_eq!(got_key, want_key);
            match (got, want) {
                (FieldValue::Float(a), FieldValue::Float(b)) => prop_assert_eq!(a.to_bits(), b.to_bits()),
                _ => prop_assert_eq!(got, want),
            }
        }
        let want_time = time.map_or(NOW, |t| precision.to_nanos(t).unwrap());
        prop_assert_eq!(line.timestamp, want_time);

        // And the writer agrees with the hand-built text, modulo spelling.
        let rewritten = line.to_line_protocol().unwrap();
        let again = parse_line(&rewritten, Precision::Nanoseconds, NOW).unwrap().unwrap();
        prop_assert_eq!(again.measurement, line.measurement.clone());
        prop_assert_eq!(again.series_text, line.series_text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC*", precision in precision()) {
        check_invariants(&text, precision);
    }

    #[test]
    fn delimiter_soup_never_panics(text in nasty_text(80), precision in precision()) {
        check_invariants(&text, precision);
    }

    #[test]
    fn mutated_lines_never_panic(cut in 0usize..SAMPLE.len(), insert in prop::sample::select(NASTY)) {
        let mut text = SAMPLE.to_string();
        let at = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.insert(at, insert);
        check_invariants(&text, Precision::Nanoseconds);
        check_invariants(&SAMPLE[..cut], Precision::Nanoseconds);
    }
}

/// Whatever `text` is, parsing returns; what it accepts keeps the `Line` invariants and
/// writes back to an equal line.
fn check_invariants(text: &str, precision: Precision) {
    for (_, result) in parse_body(text, precision, NOW) {
        let Ok(line) = result else { continue };
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
        assert!(text.contains(line.series_text));
        let rewritten = line
            .to_line_protocol()
            .expect("a parsed line can be written");
        let again = parse_line(&rewritten, Precision::Nanoseconds, NOW)
            .expect("a written line parses")
            .expect("and is not blank");
        assert_eq!(again.measurement, line.measurement);
        assert_eq!(again.tags, line.tags);
        assert_eq!(again.timestamp, line.timestamp);
        assert_eq!(again.fields.len(), line.fields.len());
        for (a, b) in again.fields.iter().zip(&line.fields) {
            assert_eq!(a.0, b.0);
            match (&a.1, &b.1) {
                (FieldValue::Float(x), FieldValue::Float(y)) => {
                    assert_eq!(x.to_bits(), y.to_bits())
                }
                (x, y) => assert_eq!(x, y),
            }
        }
    }
}

#[test]
fn a_line_over_the_limit_is_refused_and_the_others_parse() {
    let long = format!("m,t={} v=1 1", "x".repeat(100));
    let body = format!("m v=1 1\n{long}\n\nm v=2 2\r\n");
    let results: Vec<_> = super::parse_body_within(&body, Precision::Nanoseconds, 0, 64).collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1.is_ok());
    assert_eq!(
        results[1],
        (
            2,
            Err(LineError::TooLong {
                bytes: long.len(),
                max: 64
            })
        )
    );
    assert_eq!(results[2].0, 4);
    assert!(results[2].1.is_ok());
    let message = results[1].1.clone().unwrap_err().to_string();
    assert!(message.contains("--max-line-bytes"), "{message}");
}
