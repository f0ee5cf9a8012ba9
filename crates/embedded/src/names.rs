//! The name store (`docs/design.md#the-name-store`) in the embedded store: two tables, one per
//! direction, and a counter per namespace in `meta`.
//!
//! The MongoDB name store's capped documents (`lv` + index) exist so that MongoDB can add a
//! name with one atomic `$push`; a redb transaction is atomic already, so here a token is
//! simply the namespace's next counter value. The tokens come out the same: from 0 upward,
//! in the order names were first seen, never reused.
//!
//! Names are stored as redb `&str` keys, never spliced into anything, so `$`, `.`, spaces
//! and any Unicode are ordinary text here.

use crate::tables::META;
use crate::writer::storage;
use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use tickertape_backend::{BackendError, NameKind, Result};

/// (namespace code, name) → token.
pub const NAME_TOKENS: TableDefinition<(&str, &str), u64> = TableDefinition::new("name_tokens");
/// (namespace code, token) → name.
pub const TOKEN_NAMES: TableDefinition<(&str, u64), &str> = TableDefinition::new("token_names");

/// The `meta` key of a namespace's next token (`next_token.m`, `next_token.tk`, …).
fn counter_key(code: &str) -> String {
    format!("next_token.{code}")
}

/// The store's own namespace of the strings in series keys (`crate::series_keys`), apart
/// from the four of the name store API, whose tokens users see and count from 0.
pub const CATALOG_CODE: &str = "key";

/// The token of each name, `None` for names not issued yet. A read transaction: an
/// existing name never waits for the writer.
pub fn lookup(db: &Database, namespace: NameKind, names: &[String]) -> Result<Vec<Option<u64>>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(NAME_TOKENS).map_err(storage)?;
    let code = namespace.code();
    names
        .iter()
        .map(|name| {
            Ok(table
                .get((code, name.as_str()))
                .map_err(storage)?
                .map(|t| t.value()))
        })
        .collect()
}

/// The names of `tokens` (`None` for a token never issued).
pub fn names_of(db: &Database, namespace: NameKind, tokens: &[u64]) -> Result<Vec<Option<String>>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(TOKEN_NAMES).map_err(storage)?;
    let code = namespace.code();
    tokens
        .iter()
        .map(|&token| {
            Ok(table
                .get((code, token))
                .map_err(storage)?
                .map(|n| n.value().to_string()))
        })
        .collect()
}

/// The token of each name, issuing the next tokens, in order, to names that have none.
/// Runs in the writer's transaction, so a name two callers both found missing is looked
/// up again here and gets one token.
pub fn issue(txn: &WriteTransaction, namespace: NameKind, names: &[String]) -> Result<Vec<u64>> {
    issue_in(txn, namespace.code(), names)
}

/// [`issue`] in the namespace of stored code `code`.
pub fn issue_in(txn: &WriteTransaction, code: &str, names: &[String]) -> Result<Vec<u64>> {
    let mut tokens = txn.open_table(NAME_TOKENS).map_err(storage)?;
    let mut names_table = txn.open_table(TOKEN_NAMES).map_err(storage)?;
    let mut meta = txn.open_table(META).map_err(storage)?;
    let key = counter_key(code);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if let Some(token) = tokens.get((code, name.as_str())).map_err(storage)? {
            out.push(token.value());
            continue;
        }
        let next = meta
            .get(key.as_str())
            .map_err(storage)?
            .map_or(0, |v| v.value());
        let after = next
            .checked_add(1)
            .ok_or_else(|| BackendError::Invalid(format!("namespace {code} has no tokens left")))?;
        meta.insert(key.as_str(), after).map_err(storage)?;
        tokens
            .insert((code, name.as_str()), next)
            .map_err(storage)?;
        names_table
            .insert((code, next), name.as_str())
            .map_err(storage)?;
        out.push(next);
    }
    Ok(out)
}

/// Removes namespace `code` from the name store and returns its names in token order
/// (the migration of format 5 and 6 catalogs, whose strings moved into their rows).
/// Tokens are dense from 0; a gap is corruption.
pub fn take_namespace(txn: &WriteTransaction, code: &str) -> Result<Vec<String>> {
    let mut names = Vec::new();
    {
        let mut table = txn.open_table(TOKEN_NAMES).map_err(storage)?;
        for entry in table
            .extract_from_if((code, 0u64)..=(code, u64::MAX), |_, _| true)
            .map_err(storage)?
        {
            let (key, name) = entry.map_err(storage)?;
            if key.value().1 != names.len() as u64 {
                return Err(BackendError::Corrupt(format!(
                    "namespace {code}: tokens skip from {} to {}",
                    names.len(),
                    key.value().1
                )));
            }
            names.push(name.value().to_string());
        }
    }
    let mut tokens = txn.open_table(NAME_TOKENS).map_err(storage)?;
    for name in &names {
        tokens.remove((code, name.as_str())).map_err(storage)?;
    }
    txn.open_table(META)
        .map_err(storage)?
        .remove(counter_key(code).as_str())
        .map_err(storage)?;
    Ok(names)
}
