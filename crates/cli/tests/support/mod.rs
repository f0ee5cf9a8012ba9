//! What the CLI's process tests share: the binary run to its end, and a `tickertape serve`
//! of their own.

// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `tickertape serve` on a free loopback port; returns the child and its base URL.
pub fn serve(store: &std::path::Path) -> (Child, String) {
    serve_with(store, &[])
}

/// `serve`, with more flags.
pub fn serve_with(store: &std::path::Path, flags: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store.to_str().unwrap(),
        ])
        .args(flags)
        .env("TICKERTAPE_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tickertape serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            let url = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            // Keep draining stderr so the child never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return (child, url);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("tickertape serve did not report its address");
}

/// Runs the `tickertape` binary with `args` to its end.
pub fn tickertape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args(args)
        .env("TICKERTAPE_LOG", "warn")
        .output()
        .expect("run tickertape")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `tickertape import FILE --store STORE --precision s`.
pub fn import(store: &Path, file: &Path) -> Output {
    tickertape(&[
        "import",
        file.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--precision",
        "s",
    ])
}
