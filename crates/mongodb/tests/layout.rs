//! A database keeps the layout it was first written with: a handle that asks for another
//! one is refused, and a handle that asks to adopt the stored layout takes it over.

mod common;

use tickertape_mongodb::{MongoBackend, MongoOptions, SegmentProtocol};

#[tokio::test]
async fn stored_layout_is_kept_or_adopted() {
    let db = common::fresh_db("layout");
    let first = common::open(&db, SegmentProtocol::Reserve, 4).await;
    drop(first);

    let mut other = MongoOptions::new(common::uri_with_db(&db));
    other.protocol = SegmentProtocol::Conditional;
    let refused = MongoBackend::connect(other.clone())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        refused.as_deref().is_some_and(|e| e.contains("reserve")),
        "a different protocol is refused: {refused:?}"
    );

    other.adopt_stored_layout = true;
    let adopted = MongoBackend::connect(other).await.expect("adopt");
    assert_eq!(adopted.protocol(), SegmentProtocol::Reserve);
    assert_eq!(adopted.segment_capacity(), 4);
    adopted.drop_database().await.expect("drop");
}
