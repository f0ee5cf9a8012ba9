//! The client side of the name store (seed 002): tokens are issued once and never change,
//! so each engine keeps every token it has seen and asks the backend only for new names.

use std::collections::HashMap;
use std::sync::RwLock;
use tickertape_backend::{Backend, NameSpace, Result};
use tickertape_core::SeriesKey;

/// Name → token, per namespace, for every name this engine has tokenized or looked up.
/// Keyed by namespace first so that a lookup by `&str` allocates nothing (the hot path:
/// once per series group of every body).
#[derive(Default)]
pub struct NameCache {
    tokens: RwLock<Tokens>,
}

type Tokens = HashMap<NameSpace, HashMap<String, u64>>;

impl NameCache {
    /// The token of each name, asking `backend` only for the names not cached.
    pub async fn tokenize(
        &self,
        backend: &dyn Backend,
        namespace: NameSpace,
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

    /// Tokenizes every name of new series keys (measurement, tag keys and values, field),
    /// so that the name store holds each name a series uses.
    pub async fn tokenize_keys(&self, backend: &dyn Backend, keys: &[SeriesKey]) -> Result<()> {
        let mut by_space: HashMap<NameSpace, Vec<&str>> = HashMap::new();
        for key in keys {
            by_space
                .entry(NameSpace::Measurement)
                .or_default()
                .push(&key.measurement);
            by_space
                .entry(NameSpace::Field)
                .or_default()
                .push(&key.field);
            for (k, v) in &key.tags {
                by_space.entry(NameSpace::TagKey).or_default().push(k);
                by_space.entry(NameSpace::TagValue).or_default().push(v);
            }
        }
        for namespace in NameSpace::ALL {
            if let Some(names) = by_space.get(&namespace) {
                self.tokenize(backend, namespace, names).await?;
            }
        }
        Ok(())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tokens> {
        // A panic while holding the lock cannot leave the map half-updated (inserts only).
        self.tokens.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tokens> {
        self.tokens.write().unwrap_or_else(|e| e.into_inner())
    }
}
