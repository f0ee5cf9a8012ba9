//! A fold racing a delete (`docs/format/mongodb.md`, "Deleting points and series"): a fold
//! of another handle that read a series' documents before a delete and inserts what it
//! merged after the delete has rewritten them holds the deleted points again, under their
//! old write numbers. Simulated here by putting the documents the fold read back after the
//! delete, exactly as they were (with `d`, as a fold's documents wait for its check). The
//! delete's mark keeps those points deleted for every reader, and the next fold pass
//! removes them for good; a point written after the delete is kept.

mod common;

use common::*;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use tickertape_backend::{Backend, DeleteRange, SeriesCatalog, ValueStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_that_read_before_a_delete_brings_nothing_back() {
    let db = fresh_db("delete_race");
    let backend = open(&db, 4).await;
    let s = backend
        .resolve_series(&[key("m", "a", "v")])
        .await
        .expect("register")[0];
    backend.append(vec![append(s, 0..6)]).await.expect("append");
    backend
        .append(vec![append(s, 6..10)])
        .await
        .expect("append");
    backend.compact().await.expect("compact");

    // What a fold of another handle reads now, before the delete.
    let client = Client::with_uri_str(uri_with_db(&db))
        .await
        .expect("client");
    let database = client.database(&db);
    let mut values = Vec::new();
    for name in database.list_collection_names().await.expect("collections") {
        if name.starts_with("sv.") {
            values.push(name);
        }
    }
    assert_eq!(values.len(), 1, "one value partition: {values:?}");
    let collection = database.collection::<Document>(&values[0]);
    let read_by_the_fold: Vec<Document> = {
        let mut cursor = collection.find(doc! {}).await.expect("find");
        let mut docs = Vec::new();
        while cursor.advance().await.expect("cursor") {
            docs.push(cursor.deserialize_current().expect("document"));
        }
        docs
    };
    assert!(!read_by_the_fold.is_empty());

    let range = DeleteRange::new(Some(3), Some(7)).expect("range");
    backend.delete_points(&[s], range).await.expect("delete");
    let want: Vec<i64> = [0, 1, 2, 7, 8, 9].into();
    assert_eq!(times(&read_all(&backend, s).await), want);

    // The racing fold's documents land after the delete.
    // (Those the delete did not touch are still there: a duplicate key.)
    let mut back = 0;
    for mut d in read_by_the_fold {
        d.insert("d", d.get_i64("s").expect("series"));
        d.remove("x");
        if collection.insert_one(d).await.is_ok() {
            back += 1;
        }
    }
    assert!(
        back > 0,
        "the delete rewrote some of the documents the fold read"
    );
    assert_eq!(
        times(&read_all(&backend, s).await),
        want,
        "the mark hides them"
    );
    let inside = read_range(&backend, s, 3, 7).await;
    assert_eq!(
        times(&inside),
        vec![2, 7],
        "only the neighbours of the deleted range"
    );

    // A later write into the range is kept; a fold removes the old points for good.
    backend.append(vec![append(s, [4])]).await.expect("append");
    backend.compact().await.expect("compact");
    let want: Vec<i64> = [0, 1, 2, 4, 7, 8, 9].into();
    assert_eq!(times(&read_all(&backend, s).await), want);
    let other = open(&db, 4).await;
    assert_eq!(times(&read_all(&other, s).await), want, "another handle");
    assert_eq!(
        other.heads(&[s]).await.expect("heads")[0].map(|h| h.last.time),
        Some(9)
    );
    let mut cursor = collection
        .find(doc! { "k": { "$exists": false } })
        .await
        .expect("find");
    let mut held = Vec::new();
    while cursor.advance().await.expect("cursor") {
        let d: Document = cursor.deserialize_current().expect("document");
        held.push((d.get_i64("lo").expect("lo"), d.get_i64("hi").expect("hi")));
    }
    let stored: i64 = held.len() as i64;
    assert!(stored >= 1, "the fold's documents: {held:?}");
    // The compacted documents hold exactly the points read back (no deleted ones).
    let points: i64 = {
        let mut cursor = collection
            .find(doc! { "k": { "$exists": false } })
            .await
            .expect("find");
        let mut n = 0;
        while cursor.advance().await.expect("cursor") {
            let d: Document = cursor.deserialize_current().expect("document");
            n += d.get_i64("n").expect("n");
        }
        n
    };
    assert_eq!(points, 7, "documents after compaction: {held:?}");
    other.shutdown().await;
    backend.shutdown().await;
}
