//! Online snapshots end to end: `POST /api/v1/admin/snapshot` on a `tickertape serve`
//! that is writing, then `kill -9` of that server right after the answer; the snapshot,
//! served by a new process, holds exactly every body acknowledged before the snapshot
//! was asked for, in value segments and in time buckets alike. And `tickertape admin
//! snapshot`, offline, refusing a store a server holds.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{serve, serve_with, text, tickertape};

/// `room` in time buckets of 1 s slots with the default rollups: its writes go through
/// redb transactions (most of them committed without fsync, the log making them
/// durable), beside `k` in value segments (the log and the head).
const CONFIG: &str = r#"
[measurements.room]
layout = "buckets"
interval = "1s"
"#;

/// 2023-11-14T22:13:20Z.
const T0: i64 = 1_700_000_000_000_000_000;
const SECOND: i64 = 1_000_000_000;
const LINES_PER_BODY: i64 = 20;

/// Body `n` of writer `run`: 20 points of `k,run=RUN` and 20 of `room,run=RUN`, at the
/// seconds `20n .. 20n+20` after T0, value `t + 0.25`.
fn body(run: &str, n: i64) -> String {
    (0..LINES_PER_BODY)
        .flat_map(|i| {
            let s = n * LINES_PER_BODY + i;
            let t = T0 + s * SECOND;
            let v = s as f64 + 0.25;
            [
                format!("k,run={run} v={v:?} {t}\n"),
                format!("room,run={run} v={v:?} {t}\n"),
            ]
        })
        .collect()
}

/// The points of the first `bodies` bodies of one writer in one measurement.
fn expected(bodies: i64) -> Vec<(i64, f64)> {
    (0..bodies * LINES_PER_BODY)
        .map(|s| (T0 + s * SECOND, s as f64 + 0.25))
        .collect()
}

/// Posts bodies 0, 1, … one after another until one is not answered 204, `max_bodies`
/// were sent or `until` passed; `acknowledged` holds the number answered 204 so far.
async fn write(url: String, run: &'static str, acknowledged: Arc<AtomicI64>, until: Instant) {
    let client = reqwest::Client::new();
    for n in 0..4_000 {
        if Instant::now() > until {
            return;
        }
        match client
            .post(format!("{url}/write"))
            .body(body(run, n))
            .send()
            .await
        {
            Ok(r) if r.status().as_u16() == 204 => acknowledged.store(n + 1, Ordering::SeqCst),
            _ => return,
        }
    }
}

async fn points(url: &str, measurement: &str, run: &str) -> Vec<(i64, f64)> {
    let end = T0 + 1_000_000 * SECOND;
    let answer: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "{url}/api/v1/query?measurement={measurement}&tag=run:{run}&start={T0}&end={end}"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    match answer["series"].as_array().and_then(|s| s.first()) {
        Some(series) => serde_json::from_value(series["points"].clone()).unwrap(),
        None => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_holds_every_body_acknowledged_before_it_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("schema.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let config = config.to_str().unwrap().to_string();
    let store = dir.path().join("store");
    let (mut child, url) = serve_with(&store, &["--config", &config]);
    let until = Instant::now() + Duration::from_secs(30);
    let runs = ["a", "b"];
    let counters: Vec<Arc<AtomicI64>> = runs.iter().map(|_| Arc::default()).collect();
    let writers: Vec<_> = runs
        .iter()
        .zip(&counters)
        .map(|(run, n)| tokio::spawn(write(url.clone(), run, n.clone(), until)))
        .collect();
    // Bounded wait until both writers have bodies acknowledged.
    for _ in 0..300 {
        if counters.iter().all(|c| c.load(Ordering::SeqCst) >= 20) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before: Vec<i64> = counters.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert!(
        before.iter().all(|&n| n > 0),
        "no body acknowledged: {before:?}"
    );
    let response = reqwest::Client::new()
        .post(format!("{url}/api/v1/admin/snapshot"))
        .send()
        .await
        .expect("snapshot request");
    let status = response.status().as_u16();
    let answer: serde_json::Value = response.json().await.expect("a JSON answer");
    child.kill().expect("kill -9 the server"); // SIGKILL: no shutdown code runs
    child.wait().expect("reap");
    assert_eq!(status, 200, "{answer}");
    let after: Vec<i64> = counters.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    for w in writers {
        w.await.expect("writer");
    }
    let snapshot = PathBuf::from(answer["path"].as_str().expect("a path"));
    assert!(
        snapshot.starts_with(store.join("snapshots")),
        "{snapshot:?}"
    );

    let (mut child, url) = serve_with(&snapshot, &["--config", &config]);
    let mut found = Vec::new();
    for (run, &acked) in runs.iter().zip(&before) {
        for measurement in ["k", "room"] {
            let got = points(&url, measurement, run).await;
            // Each writer's bodies were acknowledged in order: the snapshot holds its first
            // `bodies`, at least every one acknowledged before the snapshot was asked for.
            let bodies = got.len() as i64 / LINES_PER_BODY;
            found.push((run, measurement, acked, bodies));
            assert!(bodies >= acked, "{run} {measurement}: {bodies} < {acked}");
            assert_eq!(got, expected(bodies), "{run} {measurement}: exact");
        }
    }
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    eprintln!(
        "acknowledged before the snapshot, in it, acknowledged by the kill: {found:?} {after:?}"
    );
}

#[test]
fn admin_snapshot_copies_a_closed_store_and_refuses_one_a_server_holds() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (mut child, url) = serve(&store);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let status = reqwest::Client::new()
            .post(format!("{url}/write"))
            .body(body("a", 0))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 204);
    });
    let out = dir.path().join("out");
    let args = |out: &Path| {
        [
            "admin",
            "snapshot",
            "--store",
            store.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
    };
    let held = tickertape(&args(&out).each_ref().map(String::as_str));
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    assert!(!held.status.success());
    let message = text(&held.stderr);
    assert!(
        message.contains("POST /api/v1/admin/snapshot") && message.contains("already open"),
        "{message}"
    );
    assert!(!out.exists(), "nothing written when refused");

    let done = tickertape(&args(&out).each_ref().map(String::as_str));
    assert!(done.status.success(), "{}", text(&done.stderr));
    let summary = text(&done.stdout);
    assert!(
        summary.contains("files linked") && summary.contains("bytes"),
        "{summary}"
    );
    let again = tickertape(&args(&out).each_ref().map(String::as_str));
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("not empty"),
        "{}",
        text(&again.stderr)
    );

    let (mut child, url) = serve(&out);
    let got = runtime.block_on(points(&url, "k", "a"));
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    assert_eq!(got, expected(1));
}
