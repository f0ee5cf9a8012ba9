//! [`MemoryTokens`]: the token store's contract as plain code, for tests and the
//! conformance suite.

use async_trait::async_trait;
use std::sync::Mutex;
use tickertape_backend::tokens::check_token_id;
use tickertape_backend::{BackendError, TokenStore};
use tickertape_core::auth::TokenRecord;

/// Tokens in memory, in the order they were added.
#[derive(Default)]
pub struct MemoryTokens {
    tokens: Mutex<Vec<TokenRecord>>,
}

impl MemoryTokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<TokenRecord>> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl TokenStore for MemoryTokens {
    async fn tokens(&self) -> Result<Vec<TokenRecord>, BackendError> {
        Ok(self.lock().clone())
    }

    /// "A token with the same hash is replaced."
    async fn add_token(&self, token: TokenRecord) -> Result<(), BackendError> {
        let mut tokens = self.lock();
        tokens.retain(|t| t.hash != token.hash);
        tokens.push(token);
        Ok(())
    }

    /// "Removes the token whose id is `id` … refuses what cannot be an id."
    async fn revoke_token(&self, id: &str) -> Result<usize, BackendError> {
        check_token_id(id)?;
        let mut tokens = self.lock();
        let before = tokens.len();
        tokens.retain(|t| t.id() != id);
        Ok(before - tokens.len())
    }
}
