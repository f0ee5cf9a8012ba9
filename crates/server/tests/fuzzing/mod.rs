//! One HTTP request made of arbitrary bytes, run through the whole router on an in-memory
//! store, and what every answer must satisfy. Shared by the libFuzzer target
//! (`fuzz/fuzz_targets/http_router.rs`, which includes this file) and by the test that
//! replays its corpus and runs generated requests in CI (`tests/router_fuzz.rs`).
//!
//! # The input's shape
//! Byte 0 picks the method; the bytes after it up to the first `\n` are the request's
//! path and query; then header lines (`name: value`) up to an empty line; the rest is the
//! body. Readable, so a seed corpus is written by hand and libFuzzer's mutations of it
//! stay requests the router parses.
//!
//! # What an answer must be
//! - no panic (the router has no catch-all: a panic fails the run);
//! - no 5xx but 501 (the in-memory store does not fail; it has no snapshots);
//! - answered within [`ANSWER_WITHIN`], its body at most [`MAX_ANSWER_BYTES`].

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request};
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tickertape_core::time::Precision;
use tickertape_engine::{Engine, QueryLimits};
use tickertape_reference::ReferenceBackend;
use tickertape_server::ServerConfig;

/// Debug builds are slow, and two cores are shared: generous, yet far below a hang.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(20);
/// The largest answer body taken; larger is a failure (the query limits below bound
/// every answer far under it).
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// The request body limit of the server under test: small, so bodies at it are cheap.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

const METHODS: [Method; 7] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::PATCH,
];

/// The request `data` stands for; `None` when its path or a header is not one HTTP can
/// carry (no server ever sees such a request).
pub fn decode(data: &[u8]) -> Option<Request<Body>> {
    let (&method, rest) = data.split_first()?;
    let method = METHODS[usize::from(method) % METHODS.len()].clone();
    let (target, mut rest) = split_line(rest);
    let target = std::str::from_utf8(target).ok()?;
    if !target.starts_with('/') {
        return None;
    }
    let mut builder = Request::builder().method(method).uri(target);
    loop {
        let (line, after) = split_line(rest);
        rest = after;
        if line.is_empty() {
            break;
        }
        let text = std::str::from_utf8(line).ok()?;
        let (name, value) = text.split_once(':')?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
        let value = HeaderValue::from_str(value.trim()).ok()?;
        builder = builder.header(name, value);
    }
    builder.body(Body::from(rest.to_vec())).ok()
}

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The input bytes of a request (the inverse of [`decode`]), for generated cases.
pub fn encode(method: u8, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = vec![method];
    out.extend_from_slice(target.as_bytes());
    out.push(b'\n');
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\n").as_bytes());
    }
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// A router on a fresh in-memory store holding a few series in the default database
/// and in database `a`, with small limits so that every answer stays small.
pub async fn router() -> Router {
    let backend = ReferenceBackend::new(160).expect("a valid capacity");
    let engine = Engine::new(Arc::new(backend)).with_query_limits(QueryLimits {
        max_series: 1_000,
        max_points: 100_000,
        max_response_bytes: 4 << 20,
    });
    engine
        .create_database("a")
        .await
        .expect("create database a");
    let body = "cpu,host=h1,region=eu usage=1 1700000000000000000\n\
                cpu,host=h2,region=us usage=2 1700000010000000000\n\
                load,host=h1 v=0.5 1700000000000000000\n\
                load,host=h1 v=0.7 1700000060000000000\n";
    for db in [None, Some("a")] {
        let engine = engine.database(db).await.expect("the database");
        let report = engine
            .write_lines(body, Precision::Nanoseconds)
            .await
            .expect("seeding the store");
        assert_eq!(report.rejected, 0, "seeding the store");
    }
    let config = ServerConfig {
        max_body_bytes: MAX_BODY_BYTES,
        ..ServerConfig::default()
    };
    tickertape_server::router(engine, config)
}

/// Runs `request` through `router`; what is wrong with its answer, if anything.
pub async fn check(router: &Router, request: Request<Body>) -> Result<(), String> {
    let what = format!("{} {}", request.method(), request.uri());
    let mut service = router.clone();
    let answer = tokio::time::timeout(
        ANSWER_WITHIN,
        tower_service::Service::call(&mut service, request),
    )
    .await;
    let Ok(Ok(response)) = answer else {
        return Err(format!("{what}: not answered within {ANSWER_WITHIN:?}"));
    };
    let status = response.status();
    let body = tokio::time::timeout(
        ANSWER_WITHIN,
        axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES),
    )
    .await;
    let body = match body {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return Err(format!("{what}: answer body failed or too large: {e}")),
        Err(_) => {
            return Err(format!(
                "{what}: answer body not sent within {ANSWER_WITHIN:?}"
            ))
        }
    };
    if status.is_server_error() && status.as_u16() != 501 {
        return Err(format!(
            "{what}: answered {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        ));
    }
    Ok(())
}
