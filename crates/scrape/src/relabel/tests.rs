//! Expectations from Prometheus' documented relabeling semantics (and its own test
//! cases' inputs and outputs), each step written as it would be in a configuration file.

use super::*;
use proptest::prelude::*;

fn steps(yaml: &str) -> Vec<RelabelConfig> {
    let raw: Vec<RawRelabel> = serde_yaml_ng::from_str(yaml).expect("valid YAML");
    raw.into_iter()
        .map(|r| RelabelConfig::new(r).expect("a valid step"))
        .collect()
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().copied().collect()
}

/// The output label set, or `None` when dropped.
fn run(input: &[(&str, &str)], yaml: &str) -> Option<Labels> {
    let mut set = labels(input);
    process(&mut set, &steps(yaml)).then_some(set)
}

#[test]
fn replace_with_groups() {
    let out = run(
        &[("a", "foo"), ("b", "bar"), ("c", "baz")],
        r#"- {source_labels: [a], regex: "f(.*)", target_label: d, replacement: "ch${1}-ch${1}"}"#,
    );
    assert_eq!(
        out,
        Some(labels(&[
            ("a", "foo"),
            ("b", "bar"),
            ("c", "baz"),
            ("d", "choo-choo")
        ]))
    );
}

#[test]
fn replace_chained_reads_the_previous_steps_output() {
    let out = run(
        &[("a", "foo"), ("b", "bar"), ("c", "baz")],
        r#"
- {source_labels: [a, b], regex: "f(.*);(.*)r", target_label: a, replacement: "b${1}${2}m"}
- {source_labels: [c, a], regex: "(b).*b(.*)ba(.*)", target_label: d, replacement: "$1$2$2$3"}
"#,
    );
    assert_eq!(
        out,
        Some(labels(&[
            ("a", "boobam"),
            ("b", "bar"),
            ("c", "baz"),
            ("d", "boooom")
        ]))
    );
}

#[test]
fn keep_and_drop_match_the_whole_value() {
    assert_eq!(
        run(
            &[("a", "foo")],
            r#"- {source_labels: [a], regex: ".*o.*", action: drop}"#
        ),
        None
    );
    assert!(run(
        &[("a", "foo")],
        r#"- {source_labels: [a], regex: "f|o", action: drop}"#
    )
    .is_some());
    assert_eq!(
        run(
            &[("a", "foo")],
            r#"- {source_labels: [a], regex: "no-match", action: keep}"#
        ),
        None
    );
    assert!(run(
        &[("a", "foo")],
        r#"- {source_labels: [a], regex: "f.*", action: keep}"#
    )
    .is_some());
    // A missing source label is the empty string: the default regex keeps it.
    assert!(run(&[("a", "foo")], r#"- {source_labels: [zzz], action: keep}"#).is_some());
}

#[test]
fn replace_without_a_match_changes_nothing() {
    let out = run(
        &[("a", "boo")],
        r#"- {source_labels: [a], regex: "f", target_label: b, replacement: bar}"#,
    );
    assert_eq!(out, Some(labels(&[("a", "boo")])));
}

#[test]
fn hashmod_takes_md5s_low_bytes() {
    let out = run(
        &[("a", "foo"), ("b", "bar"), ("c", "baz")],
        "- {source_labels: [c], target_label: d, action: hashmod, modulus: 1000}",
    );
    assert_eq!(out.unwrap().get("d"), "976");
    let out = run(
        &[("a", "foo\nbar")],
        "- {source_labels: [a], target_label: b, action: hashmod, modulus: 1000}",
    );
    assert_eq!(out.unwrap().get("b"), "734");
}

#[test]
fn labelmap_copies_matching_names() {
    let out = run(
        &[("a", "foo"), ("b1", "bar"), ("b2", "baz")],
        r#"- {regex: "(b.*)", replacement: "bar_${1}", action: labelmap}"#,
    );
    assert_eq!(
        out,
        Some(labels(&[
            ("a", "foo"),
            ("b1", "bar"),
            ("b2", "baz"),
            ("bar_b1", "bar"),
            ("bar_b2", "baz")
        ]))
    );
    let out = run(
        &[
            ("a", "foo"),
            ("__meta_my_bar", "aaa"),
            ("__meta_other", "ccc"),
        ],
        r#"- {regex: "__meta_(my.*)", replacement: "${1}", action: labelmap}"#,
    );
    assert_eq!(out.unwrap().get("my_bar"), "aaa");
}

#[test]
fn templated_target_labels() {
    let input = [("a", "some-name-value")];
    let out = run(
        &input,
        r#"- {source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${2}", target_label: "${1}"}"#,
    );
    assert_eq!(out.unwrap().get("name"), "value");
    // An empty replacement sets nothing.
    let out = run(
        &input,
        r#"- {source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${3}", target_label: "${1}"}"#,
    );
    assert_eq!(out, Some(labels(&input)));
    // A target that expands to an invalid name sets nothing.
    for target in ["${3}", "0${3}", "-${3}"] {
        let yaml = format!(
            r#"- {{source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${{1}}", target_label: "{target}"}}"#
        );
        let mut set = labels(&input);
        let parsed: Vec<RawRelabel> = serde_yaml_ng::from_str(&yaml).unwrap();
        // "0${3}" and "-${3}" are refused when loaded, as in Prometheus.
        match RelabelConfig::new(parsed[0].clone()) {
            Ok(step) => {
                assert!(step.apply(&mut set));
                assert_eq!(set, labels(&input), "{target}");
            }
            Err(e) => assert!(target != "${3}", "{target}: {e}"),
        }
    }
}

#[test]
fn a_real_life_chain() {
    let out = run(
        &[("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar")],
        r#"
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)path:(/[^,]+).*", replacement: "${1}", target_label: __metrics_path__}
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)job:([^,]+).*", replacement: "${1}", target_label: job}
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)label:([^=]+)=([^,]+).*", replacement: "${2}", target_label: "${1}"}
"#,
    )
    .unwrap();
    assert_eq!(out.get("__metrics_path__"), "/secret");
    assert_eq!(out.get("job"), "some-job");
    assert_eq!(out.get("foo"), "bar");
}

#[test]
fn labelkeep_labeldrop_case_and_equality() {
    let input = [("a", "foo"), ("b1", "bar"), ("b2", "baz")];
    assert_eq!(
        run(&input, r#"- {regex: "(b.*)", action: labelkeep}"#),
        Some(labels(&input[1..]))
    );
    assert_eq!(
        run(&input, r#"- {regex: "(b.*)", action: labeldrop}"#),
        Some(labels(&input[..1]))
    );
    let out = run(
        &[("foo", "bAr123Foo")],
        "- {source_labels: [foo], action: uppercase, target_label: foo_uppercase}\n- {source_labels: [foo], action: lowercase, target_label: foo_lowercase}",
    )
    .unwrap();
    assert_eq!(out.get("foo_uppercase"), "BAR123FOO");
    assert_eq!(out.get("foo_lowercase"), "bar123foo");
    let ports = [
        ("__tmp_port", "1234"),
        ("__port1", "1234"),
        ("__port2", "5678"),
    ];
    assert!(run(
        &ports,
        "- {source_labels: [__tmp_port], action: keepequal, target_label: __port1}"
    )
    .is_some());
    assert!(run(
        &ports,
        "- {source_labels: [__tmp_port], action: keepequal, target_label: __port2}"
    )
    .is_none());
    assert!(run(
        &ports,
        "- {source_labels: [__tmp_port], action: dropequal, target_label: __port1}"
    )
    .is_none());
    assert!(run(
        &ports,
        "- {source_labels: [__tmp_port], action: dropequal, target_label: __port2}"
    )
    .is_some());
}

#[test]
fn refused_as_prometheus_refuses_them() {
    let cases = [
        (
            "{action: hashmod, target_label: a}",
            "requires non-zero modulus",
        ),
        ("{action: replace}", "requires 'target_label'"),
        (
            "{action: lowercase, target_label: a, replacement: x}",
            "'replacement' can not be set",
        ),
        (
            "{action: labeldrop, source_labels: [a]}",
            "requires only 'regex'",
        ),
        (
            "{action: keepequal, target_label: a, regex: x}",
            "requires only 'source_labels'",
        ),
        (
            "{action: replace, target_label: 0a}",
            "invalid 'target_label'",
        ),
        ("{action: nope}", "unknown relabel action"),
        ("{regex: '(', target_label: a}", "invalid regex"),
        (
            "{source_labels: [a-b], target_label: a}",
            "not a valid label name",
        ),
    ];
    for (yaml, expected) in cases {
        let raw: RawRelabel = serde_yaml_ng::from_str(yaml).unwrap();
        let error = RelabelConfig::new(raw).expect_err(yaml).to_string();
        assert!(error.contains(expected), "{yaml}: {error}");
    }
    let unknown: Result<RawRelabel, _> = serde_yaml_ng::from_str("{action: keep, regexp: x}");
    assert!(unknown
        .unwrap_err()
        .to_string()
        .contains("unknown field `regexp`"));
}

fn label_set() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec(("[a-c_]{1,3}", "[a-c]{0,3}"), 0..6)
}

proptest! {
    /// `keep` and `drop` with the same regex partition every label set, and neither
    /// changes the labels it keeps.
    #[test]
    fn keep_and_drop_partition(pairs in label_set(), regex in "[a-c.*|]{0,4}") {
        let Ok(re) = Regex::new(&format!("^(?:{regex})$")) else { return Ok(()) };
        let _ = re;
        let input: Labels = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let make = |action: &str| {
            RelabelConfig::new(RawRelabel {
                source_labels: Some(vec!["a".into(), "b".into()]),
                regex: Some(regex.clone()),
                action: Some(action.into()),
                ..RawRelabel::default()
            }).unwrap()
        };
        let (mut kept, mut dropped) = (input.clone(), input.clone());
        let keep = make("keep").apply(&mut kept);
        let drop = make("drop").apply(&mut dropped);
        prop_assert_ne!(keep, drop);
        prop_assert_eq!(&kept, &input);
        prop_assert_eq!(&dropped, &input);
    }

    /// The default step (`replace`, `(.*)`, `$1`) copies the joined source values into
    /// the target, or removes the target when they are all empty.
    #[test]
    fn default_replace_copies(pairs in label_set()) {
        let mut set: Labels = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let expected = format!("{};{}", set.get("a"), set.get("b"));
        let step = RelabelConfig::new(RawRelabel {
            source_labels: Some(vec!["a".into(), "b".into()]),
            target_label: Some("t".into()),
            ..RawRelabel::default()
        }).unwrap();
        prop_assert!(step.apply(&mut set));
        prop_assert_eq!(set.get("t"), expected.as_str());
    }

    /// `labelkeep` and `labeldrop` with one regex split the names between them.
    #[test]
    fn labelkeep_and_labeldrop_split(pairs in label_set(), regex in "[a-c_.*]{0,3}") {
        if Regex::new(&regex).is_err() { return Ok(()); }
        let input: Labels = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let make = |action: &str| RelabelConfig::new(RawRelabel {
            regex: Some(regex.clone()),
            action: Some(action.into()),
            ..RawRelabel::default()
        }).unwrap();
        let (mut kept, mut dropped) = (input.clone(), input.clone());
        make("labelkeep").apply(&mut kept);
        make("labeldrop").apply(&mut dropped);
        prop_assert_eq!(kept.len() + dropped.len(), input.len());
        let mut union: Labels = kept.iter().chain(dropped.iter()).collect();
        union.retain(|_, _| true);
        prop_assert_eq!(union, input);
    }
}
