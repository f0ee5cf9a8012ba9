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

/// The plan works on any server and changes nothing: every collection with its key, the
/// next period's value partition included, none sharded here.
#[tokio::test]
async fn the_plan_names_every_collection_and_changes_nothing() {
    use tickertape_backend::{SeriesAppend, SeriesCatalog, ValueStore};
    use tickertape_core::Point;
    let db = fresh_db("admin_plan");
    let uri = uri_with_database(&server_uri(), &db);
    let backend = MongoBackend::connect(MongoOptions::new(&uri))
        .await
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"));
    let s = backend
        .resolve_series(&[key("cpu", "h1", "usage")])
        .await
        .expect("register")[0];
    let append = SeriesAppend::new(s, vec![Point::new(1_000, 1.0)]).expect("one point");
    backend.append(vec![append]).await.expect("append");
    let client = Client::with_uri_str(&uri).await.expect("client");
    let before = shape(&client, &db).await;

    let plan = backend.shard_plan().await.expect("plan");
    let json = plan.to_json();
    let collections = json["collections"].as_array().expect("collections");
    let find = |name: &str| collections.iter().find(|c| c["name"] == name);
    let series = find("series").expect("series is planned");
    assert!(
        series["key"].is_null() && series["sharded"] == false,
        "{series}"
    );
    let values: Vec<&serde_json::Value> = collections
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("sv.")))
        .collect();
    assert_eq!(
        values.len(),
        2,
        "this day's partition and the next: {values:?}"
    );
    for v in &values {
        assert_eq!(v["key"], serde_json::json!({ "s": "hashed" }), "{v}");
        assert_eq!(v["sharded"], false);
        assert!(!v["reason"].as_str().unwrap_or("").is_empty());
    }
    assert_eq!(
        values.iter().filter(|v| v["exists"] == true).count(),
        1,
        "{values:?}"
    );
    assert_eq!(
        shape(&client, &db).await,
        before,
        "the plan changed the database"
    );
    backend.drop_database().await.expect("drop");
}
