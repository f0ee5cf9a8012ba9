//! The reader on small inputs written here (the real files are read by the harness).

use super::*;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn values(s: &str) -> Vec<Option<f64>> {
    parse_values(s).unwrap()
}

#[test]
fn expanding_notation() {
    assert_eq!(values("0+10x3"), [0.0, 10.0, 20.0, 30.0].map(Some));
    assert_eq!(values("8-2x2"), [8.0, 6.0, 4.0].map(Some));
    assert_eq!(values("-1+1x2"), [-1.0, 0.0, 1.0].map(Some));
    assert_eq!(
        values("0x2"),
        [0.0, 0.0, 0.0].map(Some),
        "vxN repeats N+1 times"
    );
    assert_eq!(values("1e-3+1e+3x1"), [0.001, 1000.001].map(Some));
    assert_eq!(values("1 _ 3"), [Some(1.0), None, Some(3.0)]);
    assert_eq!(
        values("_x3 5"),
        [None, None, None, Some(5.0)],
        "_xN is N gaps"
    );
    assert_eq!(values("{{schema:0 sum:1}} 2"), [None, Some(2.0)]);
    let special = values("Inf -Inf NaN stale");
    assert_eq!(special[0], Some(f64::INFINITY));
    assert_eq!(special[1], Some(f64::NEG_INFINITY));
    assert!(special[2].unwrap().is_nan());
    assert_eq!(special[3].unwrap().to_bits(), STALE_NAN_BITS);
    assert!(parse_values("1+x3").is_err());
    assert!(parse_values("1+2").is_err(), "a step without a count");
}

#[test]
fn steps_accumulate_like_prometheus() {
    let got = values("0+0.1x10");
    let mut v = 0.0f64;
    for g in got {
        assert_eq!(g.unwrap().to_bits(), v.to_bits());
        v += 0.1;
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ms("5m"), Ok(300_000));
    assert_eq!(parse_duration_ms("1h30m"), Ok(5_400_000));
    assert_eq!(parse_duration_ms("100ms"), Ok(100));
    assert_eq!(parse_duration_ms("0m"), Ok(0));
    assert_eq!(parse_duration_ms("2d"), Ok(172_800_000));
    assert!(parse_duration_ms("5").is_err());
    assert!(parse_duration_ms("").is_err());
}

#[test]
fn metrics_and_quoting() {
    let (l, rest) = parse_metric(r#"foo:bar{a="x\"y", b='z',c=`\n`} 1"#).unwrap();
    assert_eq!(
        l,
        labels(&[
            ("__name__", "foo:bar"),
            ("a", "x\"y"),
            ("b", "z"),
            ("c", "\\n")
        ])
    );
    assert_eq!(rest, " 1");
    let (l, _) = parse_metric(r#"{__name__="m", a="\u00e9\n"} 1"#).unwrap();
    assert_eq!(l, labels(&[("__name__", "m"), ("a", "é\n")]));
    assert_eq!(parse_metric("{} 2").unwrap().0, Labels::new());
    assert!(parse_metric(r#"x{a="b} 1"#).is_err());
}

#[test]
fn a_small_file() {
    let text = r#"
# a comment
load 5m
  http{job="api", instance="0"}  0+10x2
  other 1 _ stale

eval instant at 10m sum(http)
  {} 20

eval_ordered instant at 1h5m topk(1, http)
  http{job="api", instance="0"} 20

eval instant at 50m 0x10
  16

eval_fail instant at 0m nope(

clear

eval instant at 0m absent(http)
"#;
    let cmds = parse_file(text).unwrap();
    assert_eq!(cmds.len(), 7);
    let Command::Load(series) = &cmds[0] else {
        panic!("{:?}", cmds[0])
    };
    assert_eq!(
        series[0].labels,
        labels(&[("__name__", "http"), ("instance", "0"), ("job", "api")])
    );
    assert_eq!(
        series[0].samples,
        [(0, 0.0), (300_000, 10.0), (600_000, 20.0)]
    );
    assert_eq!(series[1].samples.len(), 2);
    assert_eq!(series[1].samples[1].0, 600_000, "the gap keeps its slot");
    assert_eq!(series[1].samples[1].1.to_bits(), STALE_NAN_BITS);

    let Command::Eval(sum) = &cmds[1] else {
        panic!()
    };
    assert_eq!(
        (sum.line, sum.at_ms, sum.kind),
        (7, 600_000, EvalKind::Instant)
    );
    assert_eq!(sum.expr, "sum(http)");
    assert_eq!(sum.expected, Expected::Vector(vec![(Labels::new(), 20.0)]));
    let Command::Eval(top) = &cmds[2] else {
        panic!()
    };
    assert_eq!((top.at_ms, top.kind), (3_900_000, EvalKind::Ordered));
    assert_eq!(cmds[3], eval_of(&cmds[3], Expected::Scalar(16.0)));
    let Command::Eval(fail) = &cmds[4] else {
        panic!()
    };
    assert_eq!(fail.kind, EvalKind::Fail);
    assert_eq!(cmds[5], Command::Clear);
    assert_eq!(cmds[6], eval_of(&cmds[6], Expected::Vector(vec![])));
}

/// `cmd` (an eval) with `expected` in place of its own: compares everything else.
fn eval_of(cmd: &Command, expected: Expected) -> Command {
    let Command::Eval(e) = cmd else {
        panic!("{cmd:?}")
    };
    Command::Eval(EvalCase {
        expected,
        ..e.clone()
    })
}

#[test]
fn errors_name_the_line() {
    let err = parse_file("load 5m\n  foo 1 2\n  bar{ 1\n").unwrap_err();
    assert!(err.starts_with("line 3:"), "{err}");
    let err = parse_file("eval instant at 5m 1\n  1\n  2\n").unwrap_err();
    assert!(err.starts_with("line 1:"), "{err}");
    assert!(parse_file("frobnicate\n").is_err());
}
