//! The series catalog on disk: `series_keys` maps a series id to its key written as name
//! store tokens (formats 5 and 6), not as text.
//!
//! A record is LEB128 varints: `measurement · tag count · (tag key · tag value)* · field`,
//! each the token of the string in the store's own namespace of the name store tables
//! ([`names::CATALOG_CODE`], apart from the namespaces users tokenize in). A devops series
//! (one measurement, ten tags, one field) takes ~25 bytes where its JSON took ~280, and
//! each distinct string is stored once however many series share it.
//!
//! There is no key → id table, and since format 6 the catalog namespace keeps no name →
//! token rows either: the catalog is loaded whole at open ([`load`]) and answers both in
//! memory; the writer, the only one who registers, writes a new series with two appends
//! (its record, and one row per string it is the first to use).

use crate::catalog::{Catalog, Pending, Unwritten};
use crate::names;
use crate::tables::SERIES_KEYS;
use crate::writer::storage;
use redb::{Database, ReadableTable, WriteTransaction};
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::{SeriesId, SeriesKey};

/// Series loaded per [`Catalog::add`] at open, so the transient records stay small.
const LOAD_CHUNK: usize = 65_536;

/// Writes what a job registered: the new strings (token → name only: their name → token
/// map is the catalog in memory) with the namespace's counter, and the new series'
/// records. Tokens and ids are increasing, so every insert lands at a table's end.
pub fn write(txn: &WriteTransaction, new: Unwritten<'_>) -> Result<()> {
    if new.strings.is_empty() && new.series.is_empty() {
        return Ok(());
    }
    if !new.strings.is_empty() {
        let mut names_table = txn.open_table(names::TOKEN_NAMES).map_err(storage)?;
        for (n, name) in new.strings.iter().enumerate() {
            let token = u64::from(new.first_token) + n as u64;
            names_table
                .insert((names::CATALOG_CODE, token), name.as_str())
                .map_err(storage)?;
        }
        drop(names_table);
        names::set_next_token(txn, names::CATALOG_CODE, new.next_token)?;
    }
    let mut table = txn.open_table(SERIES_KEYS).map_err(storage)?;
    for (id, record) in new.series {
        table
            .insert(id.0, encode(record).as_slice())
            .map_err(storage)?;
    }
    Ok(())
}

/// A record in memory (`[measurement, field, tag key, tag value, …]`) as stored:
/// `measurement · tag count · (tag key · tag value)* · field`.
fn encode(record: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * record.len() + 2);
    let tags = &record[2..];
    codec::write_varint(&mut out, record[0].into());
    codec::write_varint(&mut out, (tags.len() / 2) as u64);
    for &t in tags {
        codec::write_varint(&mut out, t.into());
    }
    codec::write_varint(&mut out, record[1].into());
    out
}

/// Fills `catalog` with every registered series: the catalog namespace's strings in token
/// order, then the records in id order.
pub fn load(db: &Database, catalog: &Catalog) -> Result<()> {
    let strings = names::catalog_names(db)?;
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(SERIES_KEYS).map_err(storage)?;
    let mut chunk: Vec<(SeriesId, Vec<u32>)> = Vec::with_capacity(LOAD_CHUNK);
    let mut first = true;
    for entry in table.iter().map_err(storage)? {
        let (id, raw) = entry.map_err(storage)?;
        let record = decode(raw.value(), strings.len()).ok_or_else(|| {
            BackendError::Corrupt(format!(
                "series {} has a malformed key record in series_keys",
                id.value()
            ))
        })?;
        chunk.push((SeriesId(id.value()), record));
        if chunk.len() == LOAD_CHUNK {
            catalog.add(if first { &strings } else { &[] }, &chunk)?;
            first = false;
            chunk.clear();
        }
    }
    catalog.add(if first { &strings } else { &[] }, &chunk)
}

/// Rewrites a format 4 catalog (JSON keys, and a `series_ids` table of the same JSON)
/// as token records, keeping every id; the caller drops `series_ids` and records the
/// new format in the same transaction.
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
    // A format 4 store has no catalog strings yet: they start at token 0.
    let empty = Catalog::default();
    let mut pending = Pending::default();
    for (key, id) in &keys {
        pending.insert_with_id(&empty, key, *id)?;
    }
    write(txn, pending.unwritten())?;
    Ok(keys.len())
}

/// A stored record as tokens in memory order; `None` if malformed or if it names a
/// token at or above `strings` (one never issued).
fn decode(mut bytes: &[u8], strings: usize) -> Option<Vec<u32>> {
    let bytes = &mut bytes;
    let token = |bytes: &mut &[u8]| {
        let t = u32::try_from(read_varint(bytes)?).ok()?;
        ((t as usize) < strings).then_some(t)
    };
    let measurement = token(bytes)?;
    let count = read_varint(bytes)?;
    let mut record = Vec::with_capacity(2 + 2 * count.min(256) as usize);
    record.extend([measurement, 0]);
    for _ in 0..count {
        record.push(token(bytes)?);
        record.push(token(bytes)?);
    }
    record[1] = token(bytes)?;
    bytes.is_empty().then_some(record)
}

/// The next varint of `bytes`, which moves past it.
fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let (v, rest) = codec::read_varint(bytes).ok()?;
    *bytes = rest;
    Some(v)
}
