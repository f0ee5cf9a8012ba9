//! Nesting limits, through the real server: every recursive production of InfluxQL and
//! PromQL nested past its limit answers 400 naming the limit, and the server still answers
//! afterwards; nested up to the limit answers 200 with the right result. Deeply nested
//! OTLP bodies (JSON and protobuf) and huge regexes are refused without harm too.
//!
//! The server runs on tokio worker threads with the default 2 MiB stack. Run in a debug
//! build (as CI does), whose frames are several times a release build's, these tests are
//! the proof that the limits keep every parse, evaluation and drop within that stack: a
//! limit set too high aborts the test binary with a stack overflow.

#[path = "../support/mod.rs"]
mod support;

mod bodies;
mod influxql;
mod promql;

use serde_json::Value;
use support::TestServer;

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
    server.write_seconds(body).await;
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

/// A POST form, as clients send long queries (a URL has a length limit); the server must
/// still answer after it.
async fn post_form(server: &TestServer, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let answer = server.post_form(path, form).await;
    still_serving(server).await;
    answer
}
