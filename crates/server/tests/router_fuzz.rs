//! The HTTP router under hostile requests, in CI: every file of the libFuzzer target's
//! corpus (`fuzz/corpus/http_router`, kept from longer runs), then requests generated from
//! every route with hostile parameters, headers and bodies. What an answer must be is
//! `fuzzing::check`'s (no panic, no 5xx but 501, bounded in time and size); and the
//! process' peak memory stays bounded over the whole run.

mod fuzzing;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::PathBuf;

/// Peak resident memory of the whole test process over all the cases: a request that
/// makes the server hold far more than its answer shows up here.
const MAX_PEAK_RSS_BYTES: u64 = 1536 * 1024 * 1024;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/http_router")
}

#[test]
fn the_fuzz_corpus_is_answered_within_bounds() {
    let runtime = runtime();
    let router = runtime.block_on(fuzzing::router());
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus directory")
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the corpus has {} files", files.len());
    let mut decoded = 0;
    for file in &files {
        let data = std::fs::read(file).expect("a corpus file");
        let Some(request) = fuzzing::decode(&data) else {
            continue;
        };
        decoded += 1;
        if let Err(e) = runtime.block_on(fuzzing::check(&router, request)) {
            panic!("{}: {e}", file.display());
        }
    }
    assert!(decoded * 2 >= files.len(), "only {decoded} files decode");
    assert_peak_rss_bounded();
}

const ROUTES: &[&str] = &[
    "/write",
    "/api/v2/write",
    "/query",
    "/ping",
    "/health",
    "/metrics",
    "/",
    "/api/v1/query",
    "/api/v1/series",
    "/api/v1/schema",
    "/api/v1/measurements",
    "/api/v1/fields",
    "/api/v1/tag_keys",
    "/api/v1/tag_values",
    "/api/v1/status/cardinality",
    "/api/v1/databases",
    "/api/v1/admin/databases",
    "/api/v1/admin/compact",
    "/api/v1/admin/delete",
    "/api/v1/admin/snapshot",
    "/opentelemetry/v1/metrics",
    "/prometheus/api/v1/write",
    "/prometheus/api/v1/read",
    "/prometheus/api/v1/query",
    "/prometheus/api/v1/query_range",
    "/prometheus/api/v1/series",
    "/prometheus/api/v1/labels",
    "/prometheus/api/v1/label/__name__/values",
    "/prometheus/api/v1/label/host/values",
    "/prometheus/api/v1/status/tsdb",
    "/prometheus/api/v1/status/buildinfo",
    "/prometheus/api/v1/metadata",
    "/prometheus/api/v1/admin/tsdb/delete_series",
    "/prometheus/db/a/api/v1/query",
    "/prometheus/db/a/api/v1/write",
    "/prometheus/db//api/v1/query",
    "/prometheus/db/../api/v1/write",
    "/prometheus/db/%2e%2e/api/v1/query",
    "//api/v1/query",
    "/api/v1/../query",
    "/assets/x/app.js",
];

const KEYS: &[&str] = &[
    "db",
    "q",
    "query",
    "match[]",
    "start",
    "end",
    "step",
    "time",
    "measurement",
    "field",
    "tag",
    "agg",
    "epoch",
    "precision",
    "bucket",
    "limit",
    "max_points",
    "name",
    "timeout",
    "resolution",
    "neighbors",
    "format",
    "pretty",
    "u",
    "p",
    "rp",
    "lookback_delta",
];

/// Values of every kind a parameter is given: valid, empty, names that cannot be
/// databases, huge and negative numbers, deep nesting, long text.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("a".to_string()),
        Just("..".to_string()),
        Just(".".to_string()),
        Just("nonexist".to_string()),
        Just("cpu".to_string()),
        Just("usage".to_string()),
        Just("host:h1".to_string()),
        Just("1ms".to_string()),
        Just("1ns".to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1700000000".to_string()),
        Just("2023-11-14T22:13:20Z".to_string()),
        Just("avg".to_string()),
        Just("s".to_string()),
        Just("cpu_usage".to_string()),
        Just("rate(cpu_usage[5m])".to_string()),
        Just("sum by (host) (cpu_usage)".to_string()),
        Just("{__name__=~\".+\"}".to_string()),
        Just("SELECT mean(usage) FROM cpu GROUP BY time(1m)".to_string()),
        Just("SELECT * FROM /.*/".to_string()),
        Just("SHOW MEASUREMENTS; SHOW TAG KEYS; SHOW DATABASES".to_string()),
        Just("CREATE DATABASE \"..\"".to_string()),
        Just("SELECT usage FROM \"\"..\"cpu\"".to_string()),
        (1usize..3000).prop_map(|n| format!("{}1{}", "(".repeat(n), ")".repeat(n))),
        (1usize..3000).prop_map(|n| vec!["1"; n].join("+")),
        (1usize..2000).prop_map(|n| format!(
            "SELECT usage FROM cpu WHERE {}host='h1'{}",
            "(".repeat(n),
            ")".repeat(n)
        )),
        "[ -~]{0,64}",
        "\\PC{0,16}",
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        Just(b"cpu,host=h3 usage=3 1700000020000000000\n".to_vec()),
        Just(b"cpu,host=h3 usage=3 1700000020\nbad line\n\ncpu usage=x\n".to_vec()),
        Just(b"q=SHOW+DATABASES&db=a".to_vec()),
        Just(b"match[]=cpu_usage&db=a".to_vec()),
        Just(b"query=cpu_usage&db=nonexist".to_vec()),
        Just(vec![0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff]),
        Just(br#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"asDouble":1,"timeUnixNano":"1700000000000000000"}]}}]}]}]}"#.to_vec()),
        (1usize..500).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..256),
    ]
}

fn header() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop_oneof![
        Just(("Content-Type", "application/x-www-form-urlencoded")),
        Just(("Content-Type", "application/x-protobuf")),
        Just(("Content-Type", "application/json")),
        Just(("Content-Type", "text/plain")),
        Just(("Content-Encoding", "gzip")),
        Just(("Content-Encoding", "x-gzip")),
        Just(("Content-Encoding", "snappy")),
        Just(("Content-Encoding", "br")),
        Just(("Content-Encoding", "deflate")),
        Just(("Content-Encoding", "identity")),
        Just(("Content-Encoding", "gzip, gzip")),
        Just(("Accept", "application/csv")),
        Just(("Accept-Encoding", "gzip")),
        Just(("Authorization", "Bearer nonsense")),
        Just(("X-Prometheus-Remote-Write-Version", "0.1.0")),
        Just(("Content-Length", "5")),
    ]
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    (
        // Mostly the methods the routes take, so that most requests reach a handler.
        prop_oneof![3 => Just(0u8), 3 => Just(1u8), 1 => any::<u8>()],
        proptest::sample::select(ROUTES),
        proptest::collection::vec((proptest::sample::select(KEYS), value()), 0..4),
        proptest::collection::vec(header(), 0..3),
        body(),
    )
        .prop_map(|(method, route, params, headers, body)| {
            let query: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params)
                .finish();
            let target = if query.is_empty() {
                route.to_string()
            } else {
                format!("{route}?{query}")
            };
            fuzzing::encode(method, &target, &headers, &body)
        })
}

#[test]
fn generated_requests_on_every_route_are_answered_within_bounds() {
    let runtime = runtime();
    let router = runtime.block_on(fuzzing::router());
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&request(), |data| {
            let Some(request) = fuzzing::decode(&data) else {
                return Ok(());
            };
            runtime
                .block_on(fuzzing::check(&router, request))
                .map_err(TestCaseError::fail)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_peak_rss_bounded();
}

fn assert_peak_rss_bounded() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let Some(kb) = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    else {
        return; // not Linux: nothing to read
    };
    assert!(
        kb * 1024 <= MAX_PEAK_RSS_BYTES,
        "peak RSS {} MiB over the run",
        kb / 1024
    );
}
