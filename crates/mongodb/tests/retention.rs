//! Retention in collections every measurement shares: one measurement's expired slices
//! are deleted and the others' points stay; the collection goes whole once the last
//! measurement in it has expired, and its rollups outlive the points until their own
//! retention.

mod common;

use std::sync::Arc;

use common::*;
use mongodb::bson::doc;
use tickertape_backend::{Backend, SeriesCatalog, ValueStore};
use tickertape_core::rollup::Resolution;

const SLICE: i64 = 1_000;

async fn value_collections(b: &tickertape_mongodb::MongoBackend) -> Vec<String> {
    let db = mongodb::Client::with_uri_str(uri_with_db(b.database_name()))
        .await
        .expect("client")
        .database(b.database_name());
    let mut names = db
        .list_collection_names()
        .filter(doc! { "name": { "$regex": "^sv\\." } })
        .await
        .expect("list");
    names.sort();
    names
}

#[tokio::test]
async fn a_measurement_expires_alone_and_the_collection_with_the_last() {
    let db = fresh_db("retention");
    let mut opts = options(&db, 8);
    opts.partition_ns = SLICE;
    opts.collection_slices = 4;
    let b = connect(opts).await;
    let kept = Resolution::new(100).expect("resolution");
    b.derive_segment_rollups(Arc::new(move |_: &str| vec![kept]));
    let series = b
        .resolve_series(&[key("short", "a", "v"), key("long", "a", "v")])
        .await
        .expect("register");
    // Slices 0, 1 and 2 (one collection of four slices) for both measurements.
    for &s in &series {
        b.append(vec![append(s, (0..30).map(|i| i * 100))])
            .await
            .expect("append");
    }
    b.compact().await.expect("compact");
    assert_eq!(value_collections(&b).await, ["sv.0"]);
    let rollup_before = b
        .read_segment_rollup(series[0], kept, 0, 2 * SLICE)
        .await
        .expect("rollup");

    // `short` expires before 2,500: slices 0 and 1 (2 is cut by the cutoff, kept).
    let dry = b.drop_raw_before("short", 2_500, true).await.expect("dry");
    assert_eq!(dry, [(0, SLICE), (SLICE, 2 * SLICE)]);
    assert_eq!(
        read_all(&b, series[0]).await.len(),
        30,
        "a dry run drops nothing"
    );
    let dropped = b
        .drop_raw_before("short", 2_500, false)
        .await
        .expect("drop");
    assert_eq!(dropped, dry);
    assert_eq!(
        times(&read_all(&b, series[0]).await),
        (20..30).map(|i| i * 100).collect::<Vec<_>>()
    );
    assert_eq!(
        read_all(&b, series[1]).await.len(),
        30,
        "the other one stays"
    );
    assert_eq!(
        value_collections(&b).await,
        ["sv.0"],
        "still holding points"
    );
    assert_eq!(
        summary_bits(
            &b.read_segment_rollup(series[0], kept, 0, 2 * SLICE)
                .await
                .expect("rollup")
        ),
        summary_bits(&rollup_before),
        "the rollups outlive the points"
    );
    assert!(
        b.drop_raw_before("short", 2_500, false)
            .await
            .expect("again")
            .is_empty(),
        "nothing left to drop"
    );

    // Both expire past the collection: it goes whole.
    b.drop_raw_before("long", 4 * SLICE, false)
        .await
        .expect("drop long");
    assert_eq!(
        value_collections(&b).await,
        ["sv.0"],
        "short's slice 2 is left"
    );
    b.drop_raw_before("short", 4 * SLICE, false)
        .await
        .expect("drop short");
    assert!(value_collections(&b).await.is_empty());
    assert!(read_all(&b, series[0]).await.is_empty());
    assert_eq!(
        summary_bits(
            &b.read_segment_rollup(series[0], kept, 0, 2 * SLICE)
                .await
                .expect("rollup")
        ),
        summary_bits(&rollup_before),
        "the rollups outlive the collection"
    );
    let gone = b
        .drop_segment_rollup_before("short", kept, 4 * SLICE, false)
        .await
        .expect("drop rollups");
    assert_eq!(gone.len(), 3);
    assert!(b
        .read_segment_rollup(series[0], kept, 0, 4 * SLICE)
        .await
        .expect("rollup")
        .is_empty());
    assert!(!b
        .read_segment_rollup(series[1], kept, 0, 4 * SLICE)
        .await
        .expect("rollup")
        .is_empty());
    b.drop_database().await.expect("drop");
}
