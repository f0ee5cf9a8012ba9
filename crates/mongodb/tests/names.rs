//! The name store (seed 002) on MongoDB: odd names, tokens per namespace, capped
//! documents, and one token per name when several handles add overlapping names at once.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use tickertape_backend::{Backend, NameSpace, NAMES_PER_DOCUMENT};
use tickertape_mongodb::{uri_with_database, MongoBackend, SegmentProtocol};

fn odd_names() -> Vec<String> {
    vec![
        "cpu".into(),
        "$set".into(),
        "$".into(),
        "a.b.c".into(),
        ".".into(),
        "with space".into(),
        " ".into(),
        "ünïcödé ✓ 東京".into(),
        "x".repeat(1024),
        "é".repeat(600),
        String::new(),
        "{\"$gt\": 1}".into(),
    ]
}

#[tokio::test]
async fn odd_names_get_tokens_and_come_back() {
    let db = fresh_db("names_odd");
    let b = open(&db, SegmentProtocol::Reserve, 8).await;
    let names = odd_names();
    let tokens = b
        .tokenize(NameSpace::TagValue, &names)
        .await
        .expect("tokenize");
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), names.len(), "{tokens:?}");
    assert_eq!(
        b.names_of(NameSpace::TagValue, &tokens)
            .await
            .expect("names_of"),
        names.iter().cloned().map(Some).collect::<Vec<_>>()
    );
    // Repeats within a call get one token; a second call the same ones.
    let twice: Vec<String> = names.iter().chain(&names).cloned().collect();
    let again = b
        .tokenize(NameSpace::TagValue, &twice)
        .await
        .expect("again");
    assert_eq!(
        again,
        tokens.iter().chain(&tokens).copied().collect::<Vec<_>>()
    );
    // Namespaces number their names on their own; unknown tokens have no name.
    let m = b
        .tokenize(NameSpace::Measurement, &names[..1])
        .await
        .expect("m");
    assert_eq!(m, vec![0]);
    assert_eq!(
        b.names_of(NameSpace::Measurement, &[1, 10_000, u64::MAX])
            .await
            .expect("unknown"),
        vec![None, None, None]
    );

    // Stored as values, never field names: `{_id: {ns, lv}, ns, lv, l}`.
    let uri = uri_with_database(&server_uri(), &db);
    let client = Client::with_uri_str(&uri).await.expect("client");
    let d = client
        .database(&db)
        .collection::<Document>("names")
        .find_one(doc! { "_id": { "ns": "tv", "lv": 0_i64 } })
        .await
        .expect("find")
        .expect("the first tag value document");
    assert_eq!(d.get_array("l").expect("l").len(), names.len());
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn full_documents_are_followed_by_the_next() {
    let db = fresh_db("names_full");
    let b = open(&db, SegmentProtocol::Reserve, 8).await;
    let n = NAMES_PER_DOCUMENT * 2 + 10;
    let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
    // In pieces that do not line up with the document boundary.
    let mut tokens = Vec::new();
    for chunk in names.chunks(97) {
        tokens.extend(b.tokenize(NameSpace::Field, chunk).await.expect("tokenize"));
    }
    assert_eq!(tokens, (0..n as u64).collect::<Vec<_>>());
    assert_eq!(
        b.names_of(
            NameSpace::Field,
            &[0, NAMES_PER_DOCUMENT as u64, n as u64 - 1]
        )
        .await
        .expect("names_of"),
        vec![
            Some("f0".to_string()),
            Some(format!("f{NAMES_PER_DOCUMENT}")),
            Some(format!("f{}", n - 1))
        ]
    );
    b.drop_database().await.expect("drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_handles_agree_on_every_token() {
    let db = fresh_db("names_race");
    let mut handles = Vec::new();
    for _ in 0..3 {
        handles.push(Arc::new(open(&db, SegmentProtocol::Reserve, 8).await));
    }
    // Overlapping sets, more than two documents' worth, odd names among them.
    let all: Vec<String> = (0..NAMES_PER_DOCUMENT * 2 + 50)
        .map(|i| format!("host {i}.$x"))
        .chain(odd_names())
        .collect();
    let mut tasks = Vec::new();
    for k in 0..6_usize {
        let b: Arc<MongoBackend> = handles[k % handles.len()].clone();
        let mut mine: Vec<String> = all
            .iter()
            .skip(k * 37)
            .step_by(1 + k % 3)
            .cloned()
            .collect();
        if k % 2 == 1 {
            mine.reverse();
        }
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for chunk in mine.chunks(40) {
                let tokens = b
                    .tokenize(NameSpace::TagKey, chunk)
                    .await
                    .expect("tokenize");
                out.extend(chunk.iter().cloned().zip(tokens));
            }
            out
        }));
    }
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for task in tasks {
        for (name, token) in task.await.expect("task") {
            let prior = seen.insert(name.clone(), token);
            assert!(
                prior.is_none_or(|p| p == token),
                "{name:?}: {prior:?} and {token}"
            );
        }
    }
    let mut by_token: BTreeMap<u64, &String> = BTreeMap::new();
    for (name, token) in &seen {
        assert!(
            by_token.insert(*token, name).is_none(),
            "token {token} issued twice"
        );
    }
    // Every handle, and a new one, reads the same tokens and names back.
    let names: Vec<String> = seen.keys().cloned().collect();
    let tokens: Vec<u64> = seen.values().copied().collect();
    let fresh = open(&db, SegmentProtocol::Reserve, 8).await;
    for b in handles.iter().map(|h| &**h).chain([&fresh]) {
        assert_eq!(
            b.tokenize(NameSpace::TagKey, &names).await.expect("again"),
            tokens
        );
        assert_eq!(
            b.names_of(NameSpace::TagKey, &tokens)
                .await
                .expect("names_of"),
            names.iter().cloned().map(Some).collect::<Vec<_>>()
        );
    }
    fresh.drop_database().await.expect("drop");
}
