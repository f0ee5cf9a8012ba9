//! The name store (docs/design.md#the-name-store) as MongoDB keeps it: names stored as values in capped
//! documents, and one token per name when several handles (clients) add overlapping
//! names at once. The rules of `tokenize`/`names_of` on one handle are checked on every
//! backend by the conformance suite.

mod common;

use std::sync::Arc;

use common::*;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use tickertape_backend::{Backend, NameKind, NameStore, NAMES_PER_DOCUMENT};
use tickertape_conformance::{odd_names, tokenize_at_once};
use tickertape_mongodb::uri_with_database;

/// Names are stored as values, never field names, in capped documents
/// `{_id: {ns, lv}, ns, lv, l: [names…]}` of `NAMES_PER_DOCUMENT` names each.
#[tokio::test]
async fn names_are_stored_as_values_in_capped_documents() {
    let db = fresh_db("names_stored");
    let b = open(&db, 8).await;
    let names: Vec<String> = odd_names()
        .into_iter()
        .chain((0..NAMES_PER_DOCUMENT + 10).map(|i| format!("v{i}")))
        .collect();
    let tokens = b
        .tokenize(NameKind::TagValue, &names)
        .await
        .expect("tokenize");
    assert_eq!(tokens, (0..names.len() as u64).collect::<Vec<_>>());
    let uri = uri_with_database(&server_uri(), &db);
    let client = Client::with_uri_str(&uri).await.expect("client");
    let stored = client.database(&db).collection::<Document>("names");
    let second = NAMES_PER_DOCUMENT as i64;
    for (lv, count) in [
        (0, NAMES_PER_DOCUMENT),
        (second, names.len() - NAMES_PER_DOCUMENT),
    ] {
        let d = stored
            .find_one(doc! { "_id": { "ns": "tv", "lv": lv } })
            .await
            .expect("find")
            .unwrap_or_else(|| panic!("the tag value document at {lv}"));
        let l = d.get_array("l").expect("l");
        assert_eq!(l.len(), count, "names in the document at {lv}");
        let first = &names[lv as usize];
        assert_eq!(l[0].as_str(), Some(first.as_str()));
    }
    b.drop_database().await.expect("drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_handles_agree_on_every_token() {
    let db = fresh_db("names_race");
    let mut handles = Vec::new();
    for _ in 0..3 {
        handles.push(Arc::new(open(&db, 8).await));
    }
    // Overlapping sets, more than two documents' worth, odd names among them.
    let all: Vec<String> = (0..NAMES_PER_DOCUMENT * 2 + 50)
        .map(|i| format!("host {i}.$x"))
        .chain(odd_names())
        .collect();
    let shared: Vec<Arc<dyn Backend>> = handles
        .iter()
        .map(|h| h.clone() as Arc<dyn Backend>)
        .collect();
    let seen = tokenize_at_once(&shared, 6, NameKind::TagKey, &all).await;
    // Every handle, and a new one, reads the same tokens and names back.
    let names: Vec<String> = seen.keys().cloned().collect();
    let tokens: Vec<u64> = seen.values().copied().collect();
    let fresh = open(&db, 8).await;
    for b in handles.iter().map(|h| &**h).chain([&fresh]) {
        assert_eq!(
            b.tokenize(NameKind::TagKey, &names).await.expect("again"),
            tokens
        );
        assert_eq!(
            b.names_of(NameKind::TagKey, &tokens)
                .await
                .expect("names_of"),
            names.iter().cloned().map(Some).collect::<Vec<_>>()
        );
    }
    fresh.drop_database().await.expect("drop");
}
