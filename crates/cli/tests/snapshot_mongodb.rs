//! Snapshots on a MongoDB store: the server's endpoint answers 501 and `admin snapshot`
//! fails, both saying to use MongoDB's own backup tools, and neither writes anything.

mod support;

use support::{serve, text, tickertape};

fn server_uri() -> String {
    std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    })
}

/// A database of this test's own on the test server.
fn store() -> String {
    let uri = server_uri();
    let base = uri.split('?').next().unwrap_or(&uri).trim_end_matches('/');
    format!("{base}/tt_snapshot_{}", std::process::id())
}

#[tokio::test]
async fn a_mongodb_store_answers_501_naming_its_own_backup_tools() {
    let store = store();
    let (mut child, url) = serve(std::path::Path::new(&store));
    let response = reqwest::Client::new()
        .post(format!("{url}/api/v1/admin/snapshot"))
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let answer: serde_json::Value = response.json().await.expect("a JSON answer");
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    assert_eq!(status, 501, "{answer}");
    let message = answer["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("mongodump") && message.contains("balancer"),
        "{message}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let refused = tickertape(&[
        "admin",
        "snapshot",
        "--store",
        &store,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("mongodump"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!out.exists(), "nothing written");
}
