//! Where a store keeps its API tokens (hashed: [`TokenRecord`]).
//!
//! Not part of [`crate::Backend`]: tokens are managed while a server holds the store (the
//! embedded store's data files are then locked, its token file is not), and the server
//! reads them on its own schedule. Each backend crate has one implementation; the
//! conformance suite runs the same cases over each.

use crate::BackendError;
use async_trait::async_trait;
use tickertape_core::auth::TokenRecord;

#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Every token kept, in the order they were added.
    async fn tokens(&self) -> Result<Vec<TokenRecord>, BackendError>;

    /// Keeps `token`, durably once this returns. A token with the same hash is replaced
    /// (a secret is 192 random bits: a repeat is a retry of the same add).
    async fn add_token(&self, token: TokenRecord) -> Result<(), BackendError>;

    /// Removes the token whose id ([`TokenRecord::id`]) is `id`, durably once this
    /// returns; answers how many were removed (0: none had it). Refuses with
    /// [`BackendError::Invalid`] what cannot be an id (12 lowercase hex digits).
    async fn revoke_token(&self, id: &str) -> Result<usize, BackendError>;
}

/// Refuses what cannot be a token id (see [`TokenStore::revoke_token`]).
pub fn check_token_id(id: &str) -> Result<(), BackendError> {
    let valid = id.len() == 12
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !valid {
        return Err(BackendError::Invalid(format!(
            "{id:?} is not a token id: an id is the 12 hex digits `admin token list` shows"
        )));
    }
    Ok(())
}
