//! The whole HTTP router on arbitrary requests, on an in-memory store seeded with a few
//! series: no panic, no 5xx but 501, every answer in bounded time and size. The input's
//! shape and the checks are `crates/server/tests/fuzzing/mod.rs`, shared with the CI test
//! that replays this target's corpus (`fuzz/corpus/http_router`).
#![no_main]

#[path = "../../crates/server/tests/fuzzing/mod.rs"]
mod fuzzing;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let router = runtime.block_on(fuzzing::router());
        Harness { runtime, router }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(request) = fuzzing::decode(data) else {
        return;
    };
    let harness = harness();
    if let Err(e) = harness
        .runtime
        .block_on(fuzzing::check(&harness.router, request))
    {
        panic!("{e}");
    }
});
