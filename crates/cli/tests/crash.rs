//! A 204 means durable: points acknowledged by a `tickertape serve` process survive
//! `kill -9` of that process.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `tickertape serve` on a free loopback port; returns the child and its base URL.
fn serve(store: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store.to_str().unwrap(),
        ])
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

#[tokio::test]
async fn acknowledged_points_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let (mut child, url) = serve(dir.path());
    let mut expected = Vec::new();
    for batch in 0..20i64 {
        let body: String = (0..50)
            .map(|i| {
                let t = batch * 50 + i + 1;
                expected.push((t, t as f64 / 4.0));
                format!("k,host=a v={} {t}\n", t as f64 / 4.0)
            })
            .collect();
        let status = client
            .post(format!("{url}/write"))
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 204);
    }
    child.kill().expect("kill -9 the server"); // SIGKILL: no shutdown code runs
    child.wait().expect("reap");

    let (mut child, url) = serve(dir.path());
    let answer: serde_json::Value = client
        .get(format!("{url}/api/v1/query?measurement=k"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    let points: Vec<(i64, f64)> =
        serde_json::from_value(answer["series"][0]["points"].clone()).unwrap();
    assert_eq!(
        points, expected,
        "every acknowledged point is there after kill -9"
    );
}
