//! The client side of the name store (`docs/design.md#the-name-store`): tokens are issued
//! once and never change, so each engine keeps every token it has seen and asks the backend
//! only for new names.

use std::collections::HashMap;
use std::sync::RwLock;
use tickertape_backend::{NameKind, NameStore, Result};

/// Name → token, per namespace, for every name this engine has tokenized or looked up.
/// Keyed by namespace first so that a lookup by `&str` allocates nothing (the hot path:
/// once per series group of every body).
#[derive(Default)]
pub struct NameCache {
    tokens: RwLock<Tokens>,
}

type Tokens = HashMap<NameKind, HashMap<String, u64>>;

impl NameCache {
    /// The token of each name, asking `backend` only for the names not cached.
    pub async fn tokenize(
        &self,
        backend: &dyn NameStore,
        namespace: NameKind,
        names: &[&str],
    ) -> Result<Vec<u64>> {
        let mut out: Vec<Option<u64>> = {
            let tokens = self.read();
            let known = tokens.get(&namespace);
            names
                .iter()
                .map(|n| known.and_then(|k| k.get(*n)).copied())
                .collect()
        };
        let mut missing: Vec<String> = Vec::new();
        for (name, token) in names.iter().zip(&out) {
            if token.is_none() && !missing.iter().any(|m| m == name) {
                missing.push((*name).to_owned());
            }
        }
        if !missing.is_empty() {
            let issued = backend.tokenize(namespace, &missing).await?;
            let mut tokens = self.write();
            let known = tokens.entry(namespace).or_default();
            for (name, token) in missing.into_iter().zip(issued) {
                known.insert(name, token);
            }
            for (name, slot) in names.iter().zip(&mut out) {
                if slot.is_none() {
                    *slot = known.get(*name).copied();
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tokens> {
        // A panic while holding the lock cannot leave the map half-updated (inserts only).
        self.tokens.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tokens> {
        self.tokens.write().unwrap_or_else(|e| e.into_inner())
    }
}
