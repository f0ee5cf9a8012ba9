//! `POST /api/v1/admin/snapshot` over HTTP: on the embedded store a new directory that
//! opens as a store with every point written before; on a store without files a 501 that
//! says what to use instead.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tickertape_backend::{Backend, SNAPSHOTS_DIR};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::Engine;
use tickertape_reference::ReferenceBackend;
use tickertape_server::ServerConfig;
use tokio::sync::oneshot;

/// A server on `backend` on a loopback port; stops when the sender is dropped.
async fn start(backend: Arc<dyn Backend>, config: ServerConfig) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(tickertape_server::serve(
        listener,
        Engine::new(backend),
        config,
        async {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

fn embedded(dir: &Path) -> Arc<dyn Backend> {
    Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir)).expect("open store"))
}

async fn post_snapshot(url: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}/api/v1/admin/snapshot"))
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn write(url: &str, body: &str) {
    let status = reqwest::Client::new()
        .post(format!("{url}/write"))
        .body(body.to_string())
        .send()
        .await
        .expect("write")
        .status();
    assert_eq!(status.as_u16(), 204);
}

async fn points(url: &str) -> Value {
    let answer: Value = reqwest::Client::new()
        .get(format!("{url}/api/v1/query?measurement=m"))
        .send()
        .await
        .expect("query")
        .json()
        .await
        .expect("json");
    answer["series"][0]["points"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_goes_to_the_stores_snapshots_folder_or_the_snapshot_dir() {
    let dir = tempfile::tempdir().unwrap();
    let (url, stop) = start(embedded(dir.path()), ServerConfig::default()).await;
    write(&url, "m,host=a v=1 10\nm,host=a v=2 20\n").await;
    let (status, body) = post_snapshot(&url).await;
    assert_eq!(status, 200, "{body}");
    let path = PathBuf::from(body["path"].as_str().expect("a path"));
    assert_eq!(
        path.parent(),
        Some(dir.path().join(SNAPSHOTS_DIR).as_path())
    );
    write(&url, "m,host=a v=3 30\n").await;
    drop(stop);

    let elsewhere = tempfile::tempdir().unwrap();
    let (copy_url, copy_stop) = start(
        embedded(&path),
        ServerConfig {
            snapshot_dir: Some(elsewhere.path().to_path_buf()),
            ..ServerConfig::default()
        },
    )
    .await;
    assert_eq!(
        points(&copy_url).await,
        serde_json::json!([[10, 1.0], [20, 2.0]]),
        "the snapshot holds what was written before it, not after"
    );
    let (status, body) = post_snapshot(&copy_url).await;
    assert_eq!(status, 200, "{body}");
    let again = PathBuf::from(body["path"].as_str().expect("a path"));
    assert_eq!(again.parent(), Some(elsewhere.path()));
    drop(copy_stop);
}

#[tokio::test]
async fn a_store_without_files_answers_501_saying_what_to_use() {
    let reference = Arc::new(ReferenceBackend::new(4).expect("a valid capacity"));
    let (url, _stop) = start(reference, ServerConfig::default()).await;
    let (status, body) = post_snapshot(&url).await;
    assert_eq!(status, 501, "{body}");
    let message = body["error"].as_str().expect("an error message");
    assert!(message.contains("admin export"), "{message}");
}
