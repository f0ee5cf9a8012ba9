//! InfluxQL: every recursive production of an expression, to the limit and past it.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};
use tickertape_influxql::MAX_DEPTH;

use super::support::TestServer;
use super::{chain, loaded, nest, post_form, runtime, T1, T2};

pub(crate) async fn influxql(server: &TestServer, q: &str) -> (u16, Value) {
    post_form(server, "/query", &[("q", q), ("epoch", "s")]).await
}

fn influxql_values(body: &Value) -> Value {
    body["results"][0]["series"][0]["values"].clone()
}

/// A 400 whose message names InfluxQL's limit.
fn refused_by_influxql_limit(status: u16, body: &Value) -> bool {
    let limit = format!("at most {MAX_DEPTH} levels of nesting");
    status == 400
        && body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("error parsing query: ") && e.contains(&limit))
}

/// Each shape from its number of repetitions; the most repetitions the limit allows; the
/// values it answers then.
type Shape = (&'static str, fn(usize) -> String, usize, Value);

fn influxql_shapes() -> Vec<Shape> {
    let h1 = json!([[T1, 2.0], [T2, 3.0]]);
    vec![
        (
            "parentheses around a WHERE condition",
            |n| {
                format!(
                    "SELECT v FROM load WHERE {}",
                    nest("(", "host = 'h1'", ")", n)
                )
            },
            // The comparison is two levels itself.
            MAX_DEPTH - 2,
            h1.clone(),
        ),
        (
            "parentheses in a field",
            |n| {
                format!(
                    "SELECT {} FROM load WHERE host = 'h1'",
                    nest("(", "v", ")", n)
                )
            },
            MAX_DEPTH - 1,
            h1.clone(),
        ),
        (
            "a chain of +",
            |n| {
                format!(
                    "SELECT {} FROM load WHERE host = 'h1'",
                    chain("v", " + ", n)
                )
            },
            MAX_DEPTH,
            json!([[T1, 2.0 * MAX_DEPTH as f64], [T2, 3.0 * MAX_DEPTH as f64]]),
        ),
        (
            "a right-grouping chain of -",
            // v - (v - (v - …)): an odd number of levels is 0.
            |n| {
                format!(
                    "SELECT {} FROM load WHERE host = 'h1'",
                    nest("v - (", "v", ")", n)
                )
            },
            (MAX_DEPTH - 1) / 2,
            json!([[T1, 0.0], [T2, 0.0]]),
        ),
        (
            "nested cumulative_sum",
            |n| {
                let field = nest("cumulative_sum(", "v", ")", n);
                format!("SELECT {field} FROM load WHERE host = 'h1'")
            },
            MAX_DEPTH - 1,
            // Each sum adds the first value to the second: 3 + 2·levels.
            json!([[T1, 2.0], [T2, 3.0 + 2.0 * (MAX_DEPTH - 1) as f64]]),
        ),
        (
            "an OR chain of conditions",
            |n| {
                let others = chain("host = 'h9'", " OR ", n - 1);
                format!("SELECT v FROM load WHERE {others} OR host = 'h1'")
            },
            MAX_DEPTH - 1,
            h1.clone(),
        ),
        (
            "an AND chain of parenthesised ORs",
            |n| {
                let condition = chain("(host = 'h1' OR host = 'h9')", " AND ", n);
                format!("SELECT v FROM load WHERE {condition}")
            },
            // Each term is a parenthesis, an OR and a comparison: four levels.
            MAX_DEPTH - 3,
            h1,
        ),
        (
            "an OR chain in SHOW TAG VALUES",
            |n| {
                let others = chain("host = 'h9'", " OR ", n - 1);
                format!("SHOW TAG VALUES WITH KEY = host WHERE {others} OR host = 'h1'")
            },
            MAX_DEPTH - 1,
            json!([["host", "h1"]]),
        ),
    ]
}

#[test]
fn influxql_answers_up_to_its_limit_and_refuses_past_it() {
    let rt = runtime();
    rt.block_on(async {
        let server = loaded().await;
        for (what, text, most, values) in influxql_shapes() {
            let (status, body) = influxql(&server, &text(most)).await;
            assert_eq!(status, 200, "{what} at {most}: {body}");
            assert_eq!(influxql_values(&body), values, "{what} at {most}");
            let (status, body) = influxql(&server, &text(most + 1)).await;
            assert!(
                refused_by_influxql_limit(status, &body),
                "{what}: {status} {body}"
            );
        }
    });
}

#[test]
fn influxql_far_past_its_limit_is_a_400_not_a_crash() {
    let rt = runtime();
    rt.block_on(async {
        let server = loaded().await;
        for q in [
            format!(
                "SELECT v FROM load WHERE {}",
                nest("(", "host = 'h1'", ")", 1000)
            ),
            format!("SELECT {} FROM load", nest("(", "v", ")", 1000)),
            format!("SELECT {} FROM load", chain("v", "+", 10_000)),
            format!(
                "SELECT {} FROM load",
                nest("cumulative_sum(", "v", ")", 1000)
            ),
            format!(
                "SELECT v FROM load WHERE {}",
                chain("host='h1'", " OR ", 10_000)
            ),
            format!("SELECT {} FROM load", nest("(", "v", ")", 100_000)),
            format!(
                "SHOW SERIES WHERE {}",
                nest("(", "host = 'h1'", ")", 10_000)
            ),
            format!(
                "SHOW TAG KEYS WHERE {}",
                chain("host = 'h1'", " AND ", 10_000)
            ),
            format!(
                "SELECT {} FROM load",
                nest("count(distinct(", "v", "))", 1000)
            ),
        ] {
            let (status, body) = influxql(&server, &q).await;
            assert!(refused_by_influxql_limit(status, &body), "{status} {body}");
        }
    });
}

/// One level wrapped around an InfluxQL field expression, unambiguous in any context.
#[derive(Clone, Debug)]
enum FieldLevel {
    /// `(x)`: one level.
    Paren,
    /// `cumulative_sum(x)`: one level.
    CumulativeSum,
    /// `(x) + v`: two (the parenthesis and the operator).
    PlusV,
    /// `v - (x)`: two.
    VMinus,
    /// `(x) * 1 * 1 …`, this many times: one for the parenthesis and one per operator.
    TimesOne(usize),
}

impl FieldLevel {
    fn levels(&self) -> usize {
        match self {
            FieldLevel::Paren | FieldLevel::CumulativeSum => 1,
            FieldLevel::PlusV | FieldLevel::VMinus => 2,
            FieldLevel::TimesOne(k) => 1 + k,
        }
    }

    fn wrap(&self, x: &str) -> String {
        match self {
            FieldLevel::Paren => format!("({x})"),
            FieldLevel::CumulativeSum => format!("cumulative_sum({x})"),
            FieldLevel::PlusV => format!("({x}) + v"),
            FieldLevel::VMinus => format!("v - ({x})"),
            FieldLevel::TimesOne(k) => format!("({x}){}", " * 1".repeat(*k)),
        }
    }

    /// The values at T1 and T2 of the wrapped expression, from those of `x`; `v` is 2
    /// then 3.
    fn apply(&self, [a, b]: [f64; 2]) -> [f64; 2] {
        match self {
            FieldLevel::Paren | FieldLevel::TimesOne(_) => [a, b],
            FieldLevel::CumulativeSum => [a, a + b],
            FieldLevel::PlusV => [a + 2.0, b + 3.0],
            FieldLevel::VMinus => [2.0 - a, 3.0 - b],
        }
    }
}

fn field_level() -> impl Strategy<Value = FieldLevel> {
    prop_oneof![
        Just(FieldLevel::Paren),
        Just(FieldLevel::CumulativeSum),
        Just(FieldLevel::PlusV),
        Just(FieldLevel::VMinus),
        (1..40usize).prop_map(FieldLevel::TimesOne),
    ]
}

/// Random stacks of every recursive production of a field expression, around `v`, as
/// deep as the limit and past it: a 400 naming the limit exactly when the levels add up
/// past it, else 200 with the values a model of each level gives; the server answers
/// after each.
#[test]
fn influxql_nesting_of_any_mix_is_refused_exactly_past_the_limit() {
    let rt = runtime();
    let server = rt.block_on(loaded());
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let stacks = prop::collection::vec(field_level(), 1..(MAX_DEPTH / 4));
    runner
        .run(&stacks, |stack| {
            let mut text = "v".to_string();
            let mut depth = 1;
            // Small values: sums of 2 and 3 stay exact far past 2^53 ÷ 2^(levels).
            let mut values = [2.0, 3.0];
            for level in &stack {
                text = level.wrap(&text);
                depth += level.levels();
                values = level.apply(values);
            }
            let q = format!("SELECT {text} FROM load WHERE host = 'h1'");
            let (status, body) = rt.block_on(influxql(&server, &q));
            if depth > MAX_DEPTH {
                prop_assert!(refused_by_influxql_limit(status, &body), "{depth}: {body}");
            } else {
                prop_assert_eq!(status, 200, "{}: {}", depth, body);
                let expected = json!([[T1, values[0]], [T2, values[1]]]);
                prop_assert_eq!(influxql_values(&body), expected, "{}", q);
            }
            Ok(())
        })
        .expect("every stack answers as its depth says");
}
