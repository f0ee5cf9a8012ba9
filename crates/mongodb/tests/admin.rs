//! `MongoBackend::shard` on a server that is not a `mongos`: a clear refusal, nothing changed.

mod common;

use common::*;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use tickertape_backend::BackendError;
use tickertape_mongodb::{uri_with_database, MongoBackend, MongoOptions};

/// Collection names and, per collection, its index names and keys, sorted.
async fn shape(client: &Client, db: &str) -> Vec<(String, Vec<String>)> {
    let db = client.database(db);
    let mut names = db.list_collection_names().await.expect("list collections");
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let indexes = db
            .run_command(doc! { "listIndexes": &name })
            .await
            .expect("listIndexes");
        let batch = indexes
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .expect("listIndexes cursor")
            .clone();
        let mut keys: Vec<String> = batch
            .iter()
            .filter_map(|i| i.as_document())
            .map(|i: &Document| format!("{:?} {:?}", i.get("name"), i.get("key")))
            .collect();
        keys.sort();
        out.push((name, keys));
    }
    out
}

#[tokio::test]
async fn shard_on_a_non_mongos_says_so_and_changes_nothing() {
    let db = fresh_db("admin_shard");
    let uri = uri_with_database(&server_uri(), &db);
    let backend = MongoBackend::connect(MongoOptions::new(&uri))
        .await
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"));
    let client = Client::with_uri_str(&uri).await.expect("client");
    let before = shape(&client, &db).await;
    assert!(
        before.iter().any(|(c, _)| c == "series"),
        "connect creates the collections: {before:?}"
    );

    let err = backend
        .shard()
        .await
        .expect_err("secantusdb is not a mongos");
    let BackendError::Invalid(message) = &err else {
        panic!("expected Invalid, got {err:?}");
    };
    assert!(message.contains("is not a mongos"), "{message}");
    assert!(message.contains("nothing was changed"), "{message}");

    assert_eq!(
        shape(&client, &db).await,
        before,
        "shard changed the database"
    );
    let config = client
        .database("config")
        .collection::<Document>("collections")
        .count_documents(doc! { "_id": { "$regex": format!("^{db}\\.") } })
        .await
        .unwrap_or(0);
    assert_eq!(config, 0, "a collection of {db} was registered as sharded");
    backend.drop_database().await.expect("drop");
}
