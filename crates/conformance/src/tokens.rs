//! The token store's contract ([`TokenStore`]): tokens kept in order, a repeated hash
//! replaced, revoked by id, and what one handle wrote seen by a fresh one.

use std::sync::Arc;
use tickertape_backend::{BackendError, TokenStore};
use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};

fn token(secret: &str, scopes: &[Scope], created: i64) -> TokenRecord {
    TokenRecord {
        name: format!("name of {secret}"),
        scopes: Scopes::new(scopes.iter().copied()).expect("scopes"),
        hash: TokenHash::of(secret),
        created,
    }
}

/// `open` hands out a new handle on the same store each time it is called.
pub async fn tokens_are_kept_replaced_and_revoked<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn TokenStore>>,
{
    let store = open().await;
    assert!(
        store.tokens().await.expect("list").is_empty(),
        "a new store has no tokens"
    );
    let read = token("tt_a", &[Scope::Read], 1);
    let write = token("tt_b", &[Scope::Write], 2);
    let both = token("tt_c", &[Scope::Read, Scope::Admin], 3);
    for t in [&read, &write, &both] {
        store.add_token(t.clone()).await.expect("add");
    }
    assert_eq!(
        store.tokens().await.expect("list"),
        [read.clone(), write.clone(), both.clone()]
    );

    // The same hash again (a retried add) replaces, never doubles.
    let mut renamed = write.clone();
    renamed.name = "renamed".into();
    store.add_token(renamed.clone()).await.expect("add again");
    let listed = store.tokens().await.expect("list");
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(
        listed.contains(&renamed) && !listed.contains(&write),
        "{listed:?}"
    );

    assert_eq!(store.revoke_token(read.id()).await.expect("revoke"), 1);
    assert_eq!(
        store.revoke_token(read.id()).await.expect("revoke again"),
        0
    );
    for bad in ["", "abc", "ZZZZZZZZZZZZ", "0123456789abcdef"] {
        let refused = store.revoke_token(bad).await;
        assert!(
            matches!(refused, Err(BackendError::Invalid(_))),
            "revoke {bad:?}: {refused:?}"
        );
    }

    drop(store);
    let again = open().await;
    let mut listed = again.tokens().await.expect("list after reopening");
    listed.sort_by_key(|t| t.created);
    assert_eq!(
        listed,
        [renamed, both],
        "a fresh handle sees what the first kept"
    );
}
