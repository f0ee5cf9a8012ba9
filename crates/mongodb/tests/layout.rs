//! A database keeps the layout it was first written with (`meta` `{_id: "layout", v: 3,
//! pw, cs, rs, bp}`): a handle that asks for another slice width, collection period or
//! block size is refused, a handle that asks to adopt the stored layout takes it over, and
//! a database of layout version 1 (value segments in one chain per series) or 2 (one
//! collection per measurement and day) is refused with a message that names the way to
//! migrate, and left as it was.

mod common;

use common::*;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use tickertape_backend::{BackendError, SeriesCatalog, ValueStore};
use tickertape_mongodb::MongoBackend;

async fn raw_db(db: &str) -> mongodb::Database {
    Client::with_uri_str(uri_with_db(db))
        .await
        .expect("client")
        .database(db)
}

#[tokio::test]
async fn stored_layout_is_recorded_kept_or_adopted() {
    let db = fresh_db("layout");
    let mut first = options(&db, 4);
    first.partition_ns = 1_000;
    first.collection_slices = 1;
    let first = connect(first).await;
    let meta = raw_db(&db)
        .await
        .collection::<Document>("meta")
        .find_one(doc! { "_id": "layout" })
        .await
        .expect("find")
        .expect("the layout document");
    assert_eq!(meta.get_i64("v"), Ok(3), "{meta}");
    assert_eq!(meta.get_i64("pw"), Ok(1_000), "{meta}");
    assert_eq!(meta.get_i64("cs"), Ok(1), "{meta}");
    assert_eq!(meta.get_i64("rs"), Ok(56), "{meta}");
    assert_eq!(meta.get_i64("bp"), Ok(4), "{meta}");
    drop(first);

    // Day slices in two-week collections (the defaults) and 8 points a document: all
    // differ.
    let mut other = options(&db, 8);
    let refused = MongoBackend::connect(other.clone())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|e| e.contains("1000 ns") && e.contains("up to 4 points")),
        "a different layout is refused, naming the stored one: {refused:?}"
    );

    other.adopt_stored_layout = true;
    let adopted = MongoBackend::connect(other).await.expect("adopt");
    assert_eq!(adopted.partition_ns(), 1_000);
    assert_eq!(adopted.block_points(), 4);
    // The adopted layout is the one used: 10 points across two collections of one slice
    // each, 4 a document.
    let s = adopted
        .resolve_series(&[key("layout", "a", "v")])
        .await
        .expect("register")[0];
    adopted
        .append(vec![append(s, 995..1_005)])
        .await
        .expect("append");
    let names = raw_db(&db)
        .await
        .list_collection_names()
        .filter(doc! { "name": { "$regex": "^sv\\." } })
        .await
        .expect("list");
    let mut starts: Vec<i64> = names
        .iter()
        .filter_map(|n| n.strip_prefix("sv.")?.parse().ok())
        .collect();
    starts.sort_unstable();
    assert_eq!(starts, vec![0, 1_000], "{names:?}");
    assert_eq!(
        times(&read_all(&adopted, s).await),
        (995..1_005).collect::<Vec<_>>()
    );
    adopted.drop_database().await.expect("drop");
}

/// A store written by the first version: `meta` v1 with its protocol and capacity, a
/// series and its segment chain.
#[tokio::test]
async fn a_layout_version_1_database_is_refused_and_left_alone() {
    let db = fresh_db("layout_v1");
    let raw = raw_db(&db).await;
    raw.collection::<Document>("meta")
        .insert_one(doc! { "_id": "layout", "v": 1_i64, "p": "reserve", "cap": 160_i64 })
        .await
        .expect("insert meta");
    refused_and_left_alone(&db, raw, 1).await;
}

/// A store written by the previous version: `meta` v2 with its day partitions, a series,
/// its measurement id and one value document in its measurement's day collection.
#[tokio::test]
async fn a_layout_version_2_database_is_refused_with_the_way_to_migrate() {
    let db = fresh_db("layout_v2");
    let raw = raw_db(&db).await;
    let day = 86_400_000_000_000_i64;
    raw.collection::<Document>("meta")
        .insert_one(doc! { "_id": "layout", "v": 2_i64, "pw": day, "bp": 100_000_i64 })
        .await
        .expect("insert meta");
    raw.collection::<Document>("measurements")
        .insert_one(doc! { "_id": "cpu", "t": 1_i64 })
        .await
        .expect("insert measurement");
    raw.collection::<Document>(&format!("sv.1.{}", 19_723 * day))
        .insert_one(doc! {
            "_id": { "s": 1_i64, "w": 1_i64 }, "s": 1_i64, "u": 1_i64,
            "lo": 19_723 * day, "lv": 0_i64, "lw": 1_i64,
            "hi": 19_723 * day, "hv": 0_i64, "hw": 1_i64, "n": 1_i64,
        })
        .await
        .expect("insert value document");
    refused_and_left_alone(&db, raw, 2).await;
}

/// Connecting to `db` (a store of layout `version`, with a series) is refused, adopting
/// or not, with a message naming the database, both versions and the way to migrate
/// (export with the version that wrote it, import with this one); the database is left
/// as it was.
async fn refused_and_left_alone(db: &str, raw: mongodb::Database, version: i64) {
    raw.collection::<Document>("counters")
        .insert_one(doc! { "_id": "series", "n": 1_i64 })
        .await
        .expect("insert counter");
    raw.collection::<Document>("series")
        .insert_one(doc! {
            "_id": 1_i64,
            "ck": r#"["cpu",[["host","a"]],"usage"]"#,
            "k": { "m": "cpu", "t": [["host", "a"]], "f": "usage", "p": ["host\u{0}a"] },
            "sg": 0_i64,
        })
        .await
        .expect("insert series");
    raw.collection::<Document>("segments")
        .insert_one(doc! {
            "_id": { "s": 1_i64, "g": 0_i64 }, "s": 1_i64,
            "pe": i64::MIN, "ns": i64::MAX, "t": [10_i64], "v": [1.5], "c": 1_i64,
        })
        .await
        .expect("insert segment");
    let shape = |raw: mongodb::Database| async move {
        let mut names = raw.list_collection_names().await.expect("list");
        names.sort();
        let counters: Vec<Document> = {
            use futures::TryStreamExt;
            raw.collection::<Document>("counters")
                .find(doc! {})
                .await
                .expect("find")
                .try_collect()
                .await
                .expect("counters")
        };
        (names, counters)
    };
    let before = shape(raw.clone()).await;

    for adopt in [false, true] {
        let mut opts = options(db, 8);
        opts.adopt_stored_layout = adopt;
        let err = MongoBackend::connect(opts)
            .await
            .err()
            .expect("an older database is refused");
        let BackendError::Invalid(message) = &err else {
            panic!("expected Invalid, got {err:?}");
        };
        let stored = format!("layout version {version}");
        for part in [
            db,
            &stored,
            "layout version 3",
            "tickertape admin export --store",
            "tickertape import points.lp --store",
        ] {
            assert!(message.contains(part), "{part:?} missing from: {message}");
        }
    }
    assert_eq!(
        shape(raw.clone()).await,
        before,
        "the refused connect changed the database"
    );
    raw.drop().await.expect("drop");
}
