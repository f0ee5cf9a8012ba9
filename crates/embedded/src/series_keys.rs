//! The series catalog on disk: `series_keys` maps a series id to its key written as name
//! store tokens (format 5), not as text.
//!
//! A record is LEB128 varints: `measurement · tag count · (tag key · tag value)* · field`,
//! each the token of the string in the store's own namespace of the name store tables
//! ([`names::CATALOG_CODE`], apart from the namespaces users tokenize in). A devops series
//! (one measurement, ten tags, one field) takes ~25 bytes where its JSON took ~280, and
//! each distinct string is stored once however many series share it.
//!
//! There is no key → id table: the catalog is loaded whole at open ([`load`]), and the
//! writer, the only one who registers, looks keys up in memory.

use crate::names;
use crate::tables::SERIES_KEYS;
use crate::writer::storage;
use redb::{Database, ReadableTable, WriteTransaction};
use std::collections::HashMap;
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::{SeriesId, SeriesKey};

/// Writes the records of `keys` (new series, ids given), issuing the tokens their names
/// lack: one name store call per namespace for the whole batch.
pub fn insert(txn: &WriteTransaction, keys: &[(SeriesKey, SeriesId)]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let mut strings: Vec<String> = keys
        .iter()
        .flat_map(|(k, _)| {
            let tags = k.tags.iter().flat_map(|(t, v)| [t, v]);
            [&k.measurement, &k.field].into_iter().chain(tags).cloned()
        })
        .collect();
    strings.sort_unstable();
    strings.dedup();
    let tokens = names::issue_in(txn, names::CATALOG_CODE, &strings)?;
    let token_of: HashMap<&str, u64> = strings.iter().map(String::as_str).zip(tokens).collect();
    // Every string of every key was issued just above.
    let token = |s: &str| token_of.get(s).copied().unwrap_or(u64::MAX);
    let mut table = txn.open_table(SERIES_KEYS).map_err(storage)?;
    for (key, id) in keys {
        let mut record = Vec::with_capacity(8 + 4 * key.tags.len());
        codec::write_varint(&mut record, token(&key.measurement));
        codec::write_varint(&mut record, key.tags.len() as u64);
        for (k, v) in &key.tags {
            codec::write_varint(&mut record, token(k));
            codec::write_varint(&mut record, token(v));
        }
        codec::write_varint(&mut record, token(&key.field));
        table.insert(id.0, record.as_slice()).map_err(storage)?;
    }
    Ok(())
}

/// Every registered series, decoded with the name store's tokens.
pub fn load(db: &Database) -> Result<Vec<(SeriesKey, SeriesId)>> {
    let names = names::catalog_names(db)?;
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(SERIES_KEYS).map_err(storage)?;
    let mut out = Vec::new();
    for entry in table.iter().map_err(storage)? {
        let (id, raw) = entry.map_err(storage)?;
        let key = decode(raw.value(), &names).ok_or_else(|| {
            BackendError::Corrupt(format!(
                "series {} has a malformed key record in series_keys",
                id.value()
            ))
        })?;
        out.push((key, SeriesId(id.value())));
    }
    Ok(out)
}

/// Rewrites a format 4 catalog (JSON keys, and a `series_ids` table of the same JSON)
/// as token records; the caller drops `series_ids` and records format 5 in the same
/// transaction.
pub fn migrate_from_json(txn: &WriteTransaction) -> Result<usize> {
    let mut keys = Vec::new();
    {
        let table = txn.open_table(SERIES_KEYS).map_err(storage)?;
        for entry in table.iter().map_err(storage)? {
            let (id, raw) = entry.map_err(storage)?;
            let key: SeriesKey = serde_json::from_slice(raw.value()).map_err(|e| {
                BackendError::Corrupt(format!(
                    "series {} has a malformed JSON key in a format 4 store: {e}",
                    id.value()
                ))
            })?;
            keys.push((key, SeriesId(id.value())));
        }
    }
    insert(txn, &keys)?;
    Ok(keys.len())
}

fn decode(mut bytes: &[u8], names: &HashMap<u64, String>) -> Option<SeriesKey> {
    let bytes = &mut bytes;
    let name = |bytes: &mut &[u8]| names.get(&read_varint(bytes)?).cloned();
    let measurement = name(bytes)?;
    let count = read_varint(bytes)?;
    let mut tags = Vec::with_capacity(count.min(256) as usize);
    for _ in 0..count {
        let k = name(bytes)?;
        let v = name(bytes)?;
        tags.push((k, v));
    }
    let field = name(bytes)?;
    bytes
        .is_empty()
        .then(|| SeriesKey::new(measurement, tags, field))
}

/// The next varint of `bytes`, which moves past it.
fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let (v, rest) = codec::read_varint(bytes).ok()?;
    *bytes = rest;
    Some(v)
}
