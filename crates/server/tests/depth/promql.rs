//! PromQL: brackets and operators, to the limits and past them.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use tickertape_prometheus::promql::{MAX_NESTING, MAX_OPERATORS};

use super::support::TestServer;
use super::{chain, loaded, nest, post_form, runtime, T2};

pub(crate) async fn promql(server: &TestServer, query: &str) -> (u16, Value) {
    let time = (T2 + 1).to_string();
    let form = [("query", query), ("time", &time)];
    post_form(server, "/prometheus/api/v1/query", &form).await
}

/// The single value of an instant query's answer (a scalar or a one-series vector).
fn promql_value(body: &Value) -> Option<f64> {
    let data = &body["data"];
    let value = match data["resultType"].as_str()? {
        "scalar" => &data["result"][1],
        "vector" => &data["result"][0]["value"][1],
        _ => return None,
    };
    value.as_str()?.parse().ok()
}

/// A 400 in Prometheus' shape whose message names one of PromQL's limits.
fn refused_by_promql_limit(status: u16, body: &Value) -> bool {
    let limits = [
        format!("limit of {MAX_NESTING}"),
        format!("limit of {MAX_OPERATORS}"),
    ];
    status == 400
        && body["status"] == "error"
        && body["errorType"] == "bad_data"
        && body["error"]
            .as_str()
            .is_some_and(|e| limits.iter().any(|l| e.contains(l.as_str())))
}

#[test]
fn promql_answers_up_to_its_limits_and_refuses_past_them() {
    let rt = runtime();
    rt.block_on(async {
        let server = loaded().await;
        let h1 = r#"load_v{host="h1"}"#;
        let fits: Vec<(String, f64)> = vec![
            (nest("(", "1", ")", MAX_NESTING), 1.0),
            (
                chain("1", "+", MAX_OPERATORS + 1),
                (MAX_OPERATORS + 1) as f64,
            ),
            (
                chain(h1, " + ", MAX_OPERATORS + 1),
                3.0 * (MAX_OPERATORS + 1) as f64,
            ),
            // The selector's braces are a level: 63 calls around it.
            (nest("abs(", h1, ")", MAX_NESTING - 1), 3.0),
            (nest("sum(", h1, ")", MAX_NESTING - 1), 3.0),
            (format!("{}1", "-".repeat(MAX_OPERATORS)), 1.0),
            // The deepest tree the limits allow: every bracket and every operator stacked.
            (
                nest(
                    "abs(",
                    &chain(h1, " + ", MAX_OPERATORS + 1),
                    ")",
                    MAX_NESTING - 1,
                ),
                3.0 * (MAX_OPERATORS + 1) as f64,
            ),
            (
                nest("-(", &chain(h1, " + ", 129), ")", MAX_NESTING - 1),
                -(3.0 * 129.0),
            ),
            // Subqueries nested as deep as the brackets allow (each `[` an operator),
            // the longest sum left inside: every level evaluates the one below at its
            // own steps. At whole minutes h1 is still 2 (its 3 comes 10 s later).
            (nest("max_over_time(", h1, "[1m:1m])", MAX_NESTING - 1), 2.0),
            // The sum in parentheses: one level fewer.
            (
                nest(
                    "max_over_time(",
                    &format!("({})", chain(h1, " + ", MAX_OPERATORS - MAX_NESTING + 3)),
                    "[1m:1m] @ end())",
                    MAX_NESTING - 2,
                ),
                2.0 * (MAX_OPERATORS - MAX_NESTING + 3) as f64,
            ),
        ];
        for (query, value) in &fits {
            let (status, body) = promql(&server, query).await;
            assert_eq!(status, 200, "{query}: {body}");
            assert_eq!(promql_value(&body), Some(*value), "{query}: {body}");
        }
        let past = [
            nest("(", "1", ")", MAX_NESTING + 1),
            chain("1", "+", MAX_OPERATORS + 2),
            nest("abs(", h1, ")", MAX_NESTING),
            format!("{}1", "-".repeat(MAX_OPERATORS + 1)),
            // As first reported: each of these overflowed a worker's stack.
            nest("(", "1", ")", 10_000),
            chain("1", "+", 10_000),
            nest("sum(", h1, ")", 10_000),
            nest("rate(", "load_v[5m]", ")[5m:]", 1000),
            chain("up", " or ", 10_000),
            format!("{}1", "-".repeat(100_000)),
        ];
        for query in &past {
            let (status, body) = promql(&server, query).await;
            assert!(refused_by_promql_limit(status, &body), "{status} {body}");
        }
        // Selectors of the listing endpoints go through the same parser.
        let selector = nest("(", "load_v", ")", 10_000);
        let form = [("match[]", selector.as_str())];
        let (status, body) = post_form(&server, "/prometheus/api/v1/series", &form).await;
        assert!(refused_by_promql_limit(status, &body), "{status} {body}");
    });
}

/// One level wrapped around a PromQL expression.
#[derive(Clone, Debug)]
enum PromLevel {
    Paren,
    Abs,
    Sum,
    /// `-(x)`
    Negate,
    /// `1 + (x)`
    OnePlus,
    /// `(x) + 0 + 0 …`, this many times.
    PlusZero(usize),
}

impl PromLevel {
    /// (brackets, operators) it adds.
    fn counts(&self) -> (usize, usize) {
        match self {
            PromLevel::Paren | PromLevel::Abs | PromLevel::Sum => (1, 0),
            PromLevel::Negate | PromLevel::OnePlus => (1, 1),
            PromLevel::PlusZero(k) => (1, *k),
        }
    }

    fn wrap(&self, x: &str) -> String {
        match self {
            PromLevel::Paren => format!("({x})"),
            PromLevel::Abs => format!("abs({x})"),
            PromLevel::Sum => format!("sum({x})"),
            PromLevel::Negate => format!("-({x})"),
            PromLevel::OnePlus => format!("1 + ({x})"),
            PromLevel::PlusZero(k) => format!("({x}){}", " + 0".repeat(*k)),
        }
    }

    fn apply(&self, x: f64) -> f64 {
        match self {
            PromLevel::Paren | PromLevel::Sum | PromLevel::PlusZero(_) => x,
            PromLevel::Abs => x.abs(),
            PromLevel::Negate => -x,
            PromLevel::OnePlus => 1.0 + x,
        }
    }
}

fn prom_level() -> impl Strategy<Value = PromLevel> {
    prop_oneof![
        Just(PromLevel::Paren),
        Just(PromLevel::Abs),
        Just(PromLevel::Sum),
        Just(PromLevel::Negate),
        Just(PromLevel::OnePlus),
        (1..60usize).prop_map(PromLevel::PlusZero),
    ]
}

/// Random stacks of PromQL's recursive productions around a selector: a 400 naming a
/// limit exactly when the brackets or operators pass it, else 200 with the value a model
/// of each level gives; the server answers after each.
#[test]
fn promql_nesting_of_any_mix_is_refused_exactly_past_the_limits() {
    let rt = runtime();
    let server = rt.block_on(loaded());
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let stacks = prop::collection::vec(prom_level(), 1..(MAX_NESTING + 16));
    runner
        .run(&stacks, |stack| {
            let mut text = r#"load_v{host="h1"}"#.to_string();
            // The selector's braces.
            let (mut brackets, mut operators) = (1, 0);
            let mut value = 3.0;
            for level in &stack {
                text = level.wrap(&text);
                let (b, o) = level.counts();
                brackets += b;
                operators += o;
                value = level.apply(value);
            }
            let (status, body) = rt.block_on(promql(&server, &text));
            if brackets > MAX_NESTING || operators > MAX_OPERATORS {
                prop_assert!(refused_by_promql_limit(status, &body), "{}", body);
            } else {
                prop_assert_eq!(status, 200, "{}: {}", text, body);
                prop_assert_eq!(promql_value(&body), Some(value), "{}: {}", text, body);
            }
            Ok(())
        })
        .expect("every stack answers as its depth says");
}
