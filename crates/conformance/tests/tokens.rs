//! The token store's conformance case on each backend's token store: the reference's in
//! memory, the embedded store's `tokens.json`, MongoDB's `api_tokens` collection (needs
//! `TICKERTAPE_MONGODB_URI`, as `conformance.rs`).

use std::sync::Arc;
use tickertape_backend::TokenStore;
use tickertape_conformance::tokens_are_kept_replaced_and_revoked;
use tickertape_embedded::TokenFile;
use tickertape_mongodb::{MongoBackend, MongoOptions};
use tickertape_reference::MemoryTokens;

#[tokio::test]
async fn reference() {
    let tokens = Arc::new(MemoryTokens::default());
    tokens_are_kept_replaced_and_revoked(|| {
        let tokens = tokens.clone();
        async move { tokens as Arc<dyn TokenStore> }
    })
    .await;
}

#[tokio::test]
async fn embedded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store");
    tokens_are_kept_replaced_and_revoked(|| {
        let path = path.clone();
        async move { Arc::new(TokenFile::new(path)) as Arc<dyn TokenStore> }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongodb() {
    let server = std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    });
    let db = format!("tt_tokens_{}", std::process::id());
    let uri = tickertape_mongodb::uri_with_database(&server, &db);
    tokens_are_kept_replaced_and_revoked(|| {
        let uri = uri.clone();
        async move {
            let backend = MongoBackend::connect(MongoOptions::new(&uri))
                .await
                .unwrap_or_else(|e| panic!("connect to {uri}: {e}"));
            Arc::new(backend.token_store()) as Arc<dyn TokenStore>
        }
    })
    .await;
}
