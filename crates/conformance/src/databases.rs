//! The database list (`DatabaseCatalog`): created, listed sorted, dropped, durable.

use crate::StoreFactory;
use tickertape_core::database::DatabaseName;

fn name(text: &str) -> DatabaseName {
    DatabaseName::new(text).expect("a valid database name")
}

/// Creating is idempotent, the list is sorted, a drop answers whether the name was there,
/// and the list survives reopening.
pub async fn databases_are_created_listed_and_dropped(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    assert_eq!(b.databases().await.expect("list"), Vec::new());
    for text in ["telegraf", "app", "a.b-c_d"] {
        assert!(
            b.create_database(&name(text)).await.expect("create"),
            "{text} is new"
        );
    }
    assert!(
        !b.create_database(&name("app")).await.expect("create again"),
        "creating an existing database changes nothing"
    );
    let want = vec![name("a.b-c_d"), name("app"), name("telegraf")];
    assert_eq!(b.databases().await.expect("list"), want);
    drop(b);
    let b = store.open().await;
    assert_eq!(b.databases().await.expect("list after reopen"), want);
    assert!(b.drop_database(&name("app")).await.expect("drop"));
    assert!(!b.drop_database(&name("app")).await.expect("drop again"));
    assert!(!b.drop_database(&name("never")).await.expect("drop unknown"));
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.databases().await.expect("list after drop"),
        vec![name("a.b-c_d"), name("telegraf")]
    );
}
