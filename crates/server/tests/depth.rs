//! Nesting limits, through the real server: every recursive production of InfluxQL and
//! PromQL nested past its limit answers 400 naming the limit, and the server still answers
//! afterwards; nested up to the limit answers 200 with the right result. Deeply nested
//! OTLP bodies (JSON and protobuf) and huge regexes are refused without harm too.
//!
//! The server runs on tokio worker threads with the default 2 MiB stack. Run in a debug
//! build (as CI does), whose frames are several times a release build's, these tests are
//! the proof that the limits keep every parse, evaluation and drop within that stack: a
//! limit set too high aborts the test binary with a stack overflow.

mod support;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};
use support::TestServer;
use tickertape_influxql::MAX_DEPTH;
use tickertape_prometheus::promql::{MAX_NESTING, MAX_OPERATORS};

/// Two points of `load,host=h1` (v = 2 then 3) and one of `h2`, at these seconds.
const T1: i64 = 1_596_240_000;
const T2: i64 = 1_596_240_010;

/// Tokio's multi-threaded runtime as the server binary builds it: worker threads with
/// the default 2 MiB stack (set here so that a change of default cannot weaken the test).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(2 << 20)
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn loaded() -> TestServer {
    let server = TestServer::start().await;
    let body = format!("load,host=h1 v=2 {T1}\nload,host=h1 v=3 {T2}\nload,host=h2 v=5 {T1}\n");
    let r = server
        .client
        .post(format!("{}/write?precision=s", server.url))
        .body(body)
        .send()
        .await
        .expect("write");
    assert_eq!(r.status().as_u16(), 204);
    server
}

async fn still_serving(server: &TestServer) {
    let (status, _) = server.get("/health", &[]).await;
    assert_eq!(status, 200, "the server stopped answering");
}

fn nest(open: &str, inner: &str, close: &str, levels: usize) -> String {
    format!("{}{inner}{}", open.repeat(levels), close.repeat(levels))
}

fn chain(term: &str, op: &str, terms: usize) -> String {
    vec![term; terms].join(op)
}

// ---------------------------------------------------------------------------------------
// InfluxQL

/// A POST form, as clients send long queries (a URL has a length limit).
async fn post_form(server: &TestServer, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let r = server
        .client
        .post(format!("{}{path}", server.url))
        .form(form)
        .send()
        .await
        .expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    still_serving(server).await;
    (status, body)
}

async fn influxql(server: &TestServer, q: &str) -> (u16, Value) {
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

// ---------------------------------------------------------------------------------------
// PromQL

async fn promql(server: &TestServer, query: &str) -> (u16, Value) {
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

// ---------------------------------------------------------------------------------------
// OTLP and regexes

const OTLP: &str = "/opentelemetry/v1/metrics";

async fn post(server: &TestServer, path: &str, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let r = server
        .client
        .post(format!("{}{path}", server.url))
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    still_serving(server).await;
    (status, text)
}

/// An OTLP/JSON export of one gauge point whose attribute `a` is `value`.
fn otlp_json(value: &str) -> Vec<u8> {
    format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{{"name":"g","gauge":{{"dataPoints":[
            {{"timeUnixNano":"1596240000000000000","asDouble":1,
              "attributes":[{{"key":"a","value":{value}}}]}}]}}}}]}}]}}]}}"#
    )
    .into_bytes()
}

fn nested_json_array_value(levels: usize) -> String {
    nest(
        r#"{"arrayValue":{"values":["#,
        r#"{"intValue":"1"}"#,
        "]}}",
        levels,
    )
}

#[test]
fn otlp_json_nested_past_serde_jsons_limit_is_a_400() {
    let rt = runtime();
    rt.block_on(async {
        let server = TestServer::start().await;
        // Three JSON levels an array level, under serde_json's limit of 128 in all.
        let (status, text) = post(
            &server,
            OTLP,
            "application/json",
            otlp_json(&nested_json_array_value(30)),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let body = otlp_json(&nested_json_array_value(10_000));
        let (status, text) = post(&server, OTLP, "application/json", body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("recursion limit exceeded"), "{text}");
        // An unknown field is skipped by a loop, not by recursion: any depth is harmless.
        let unknown_field = format!(
            r#"{{"resourceMetrics":[],"x":{}}}"#,
            nest("[", "", "]", 100_000)
        );
        let (status, text) = post(&server, OTLP, "application/json", unknown_field.into()).await;
        assert_eq!(status, 200, "{text}");
        // Refused at the first bracket: not even a request's shape.
        let body = nest("[", "", "]", 100_000).into_bytes();
        let (status, text) = post(&server, OTLP, "application/json", body).await;
        assert_eq!(status, 400, "{text}");
    });
}

/// Protobuf field `field` of wire type 2 holding `bytes`.
fn field(field: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, u64::from(field << 3 | 2));
    varint(&mut out, bytes.len() as u64);
    out.extend_from_slice(bytes);
    out
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// An `ExportMetricsServiceRequest` whose resource has one attribute, an `AnyValue`
/// holding an array holding an array… `levels` deep (written by hand from the message
/// definitions: `AnyValue.array_value = 5`, `ArrayValue.values = 1`,
/// `KeyValue { key = 1, value = 2 }`, `Resource.attributes = 1`,
/// `ResourceMetrics.resource = 1`, `ExportMetricsServiceRequest.resource_metrics = 1`).
fn otlp_protobuf(levels: usize) -> Vec<u8> {
    // AnyValue { int_value = 3: 1 }
    let mut value = vec![3 << 3, 1];
    for _ in 0..levels {
        value = field(5, &field(1, &value));
    }
    let key_value = [field(1, b"a"), field(2, &value)].concat();
    field(1, &field(1, &field(1, &key_value)))
}

#[test]
fn otlp_protobuf_nested_past_prosts_limit_is_a_400() {
    let rt = runtime();
    rt.block_on(async {
        let server = TestServer::start().await;
        let protobuf = "application/x-protobuf";
        let (status, text) = post(&server, OTLP, protobuf, otlp_protobuf(30)).await;
        assert_eq!(status, 200, "{text}");
        let (status, text) = post(&server, OTLP, protobuf, otlp_protobuf(10_000)).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("recursion limit reached"), "{text}");
    });
}

#[test]
fn regexes_nested_too_deep_or_compiled_too_large_are_refused() {
    let rt = runtime();
    rt.block_on(async {
        let server = loaded().await;
        let deep = nest("(", "h1", ")", 10_000);
        let huge = "h1{1000}{1000}";
        for pattern in [deep.as_str(), huge] {
            let q = format!("SELECT v FROM load WHERE host =~ /{pattern}/");
            let (status, body) = influxql(&server, &q).await;
            // Refused with the query, as InfluxDB refuses it while parsing.
            let error = body["error"].as_str().unwrap_or_default();
            let refused = "error parsing query: invalid regex";
            assert!(status == 400 && error.starts_with(refused), "{status}");
            let query = format!(r#"load_v{{host=~"{pattern}"}}"#);
            let (status, body) = promql(&server, &query).await;
            assert_eq!(status, 400, "{body}");
            assert_eq!(body["errorType"], "bad_data", "{body}");
        }
    });
}
