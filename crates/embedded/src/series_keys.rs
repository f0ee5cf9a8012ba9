//! The series catalog on disk (format 7): `catalog_batches` holds, per registering job,
//! one row with the strings it was first to use and the keys of the series it registered,
//! keyed by the first of those series' ids.
//!
//! A row is LEB128 varints:
//!
//! ```text
//! first string token · string count · (byte length · UTF-8 bytes)*
//! series count · (id − previous id (the first: the id itself) · key)*
//! key = measurement · tag count · (tag key · tag value)* · field
//! ```
//!
//! each name in a key being the token of a string, issued densely from 0 in row order.
//! A devops series (one measurement, ten tags, one field) takes ~25 bytes, and each
//! distinct string is stored once however many series share it.
//!
//! A series removed from the catalog keeps its row; its id is recorded in
//! `removed_series` and skipped when the catalog is loaded.
//!
//! There is no key → id table and no name → token table: the catalog is loaded whole at
//! open ([`load`]) and answers both in memory. Registering a body's new series writes one
//! row, and a million series load from a hundred rows, not from two million.
//!
//! Formats 4 (JSON keys), 5 and 6 (one row per series in `series_keys`, strings in the
//! name store tables) are rewritten as rows at open ([`migrate_from_json`], [`migrate_rows`]).

use crate::catalog::{Catalog, Pending, Unwritten};
use crate::names;
use crate::tables::{CATALOG_BATCHES, REMOVED_SERIES, SERIES_KEYS};
use crate::writer::storage;
use redb::{Database, ReadableTable, ReadableTableMetadata, WriteTransaction};
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::{SeriesId, SeriesKey};

/// Series per row when an older catalog is rewritten.
const MIGRATION_ROW: usize = 65_536;

/// Writes what a job registered as one row.
pub fn write(txn: &WriteTransaction, new: Unwritten<'_>) -> Result<()> {
    let Some((first_id, _)) = new.series.first() else {
        // Strings are only ever new with a series that uses them.
        return Ok(());
    };
    let mut row = Vec::with_capacity(16 * new.series.len() + new.strings.len() * 12);
    codec::write_varint(&mut row, new.first_token.into());
    codec::write_varint(&mut row, new.strings.len() as u64);
    for s in new.strings {
        codec::write_varint(&mut row, s.len() as u64);
        row.extend_from_slice(s.as_bytes());
    }
    codec::write_varint(&mut row, new.series.len() as u64);
    let mut previous = 0;
    for (id, record) in new.series {
        codec::write_varint(&mut row, id.0.wrapping_sub(previous));
        previous = id.0;
        encode(record, &mut row);
    }
    txn.open_table(CATALOG_BATCHES)
        .map_err(storage)?
        .insert(first_id.0, row.as_slice())
        .map_err(storage)?;
    Ok(())
}

/// A record in memory (`[measurement, field, tag key, tag value, …]`) as stored:
/// `measurement · tag count · (tag key · tag value)* · field`.
fn encode(record: &[u32], out: &mut Vec<u8>) {
    let tags = &record[2..];
    codec::write_varint(out, record[0].into());
    codec::write_varint(out, (tags.len() / 2) as u64);
    for &t in tags {
        codec::write_varint(out, t.into());
    }
    codec::write_varint(out, record[1].into());
}

/// Fills `catalog` with every registered series, row by row.
pub fn load(db: &Database, catalog: &Catalog) -> Result<()> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(CATALOG_BATCHES).map_err(storage)?;
    let rows = table.len().map_err(storage)? as usize;
    catalog.load_with(|loader| {
        let mut record = Vec::new();
        let mut total_bytes = 0;
        for entry in table.iter().map_err(storage)? {
            let (first_id, row) = entry.map_err(storage)?;
            let corrupt = |what: &str| {
                BackendError::Corrupt(format!(
                    "catalog row of series {}: {what}",
                    first_id.value()
                ))
            };
            let mut bytes = row.value();
            if total_bytes == 0 {
                // Sized from the first row: rows are alike (one body's new series each).
                total_bytes = bytes.len() * rows;
                loader.reserve(total_bytes / 16, total_bytes / 16, total_bytes / 2);
            }
            let bytes = &mut bytes;
            let first_token = read_varint(bytes).ok_or_else(|| corrupt("cut"))?;
            if first_token != loader.string_count() as u64 {
                return Err(corrupt(&format!(
                    "its strings start at token {first_token}, not {}",
                    loader.string_count()
                )));
            }
            for _ in 0..read_varint(bytes).ok_or_else(|| corrupt("cut"))? {
                let s = read_string(bytes).ok_or_else(|| corrupt("a malformed string"))?;
                loader.push_string(s)?;
            }
            let known = loader.string_count();
            let mut id = 0u64;
            for _ in 0..read_varint(bytes).ok_or_else(|| corrupt("cut"))? {
                id = id.wrapping_add(read_varint(bytes).ok_or_else(|| corrupt("cut"))?);
                if !decode_into(bytes, known, &mut record) {
                    return Err(corrupt(&format!("series {id} has a malformed key")));
                }
                loader.push_series(SeriesId(id), &record)?;
            }
            if !bytes.is_empty() {
                return Err(corrupt("bytes after its last series"));
            }
        }
        Ok(())
    })?;
    catalog.remove(&removed(&txn)?);
    Ok(())
}

/// The series removed from the catalog ([`REMOVED_SERIES`]; none in a file without it).
fn removed(txn: &redb::ReadTransaction) -> Result<Vec<SeriesId>> {
    let table = match txn.open_table(REMOVED_SERIES) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(storage(e)),
    };
    let mut ids = Vec::new();
    for entry in table.iter().map_err(storage)? {
        ids.push(SeriesId(entry.map_err(storage)?.0.value()));
    }
    Ok(ids)
}

/// Removes `ids` from the catalog: recorded in [`REMOVED_SERIES`] by one durable commit,
/// then taken out of the catalog in memory. Returns how many were registered. Runs on the
/// writer thread between groups, so no registration is pending.
pub fn remove(db: &Database, catalog: &Catalog, ids: &[SeriesId]) -> Result<u64> {
    let known: Vec<SeriesId> = ids
        .iter()
        .copied()
        .filter(|&id| catalog.first_unknown([id]).is_none())
        .collect();
    if known.is_empty() {
        return Ok(0);
    }
    let mut txn = db.begin_write().map_err(storage)?;
    txn.set_durability(redb::Durability::Immediate);
    {
        let mut table = txn.open_table(REMOVED_SERIES).map_err(storage)?;
        for id in &known {
            table.insert(id.0, ()).map_err(storage)?;
        }
    }
    txn.commit().map_err(storage)?;
    Ok(catalog.remove(&known))
}

/// Rewrites `keys` (with the ids they have) as rows, issuing string tokens from 0: the
/// catalog namespace of an older format is discarded with it.
fn write_rows(txn: &WriteTransaction, keys: &[(SeriesKey, SeriesId)]) -> Result<()> {
    let empty = Catalog::default();
    let mut pending = Pending::default();
    for chunk in keys.chunks(MIGRATION_ROW) {
        for (key, id) in chunk {
            pending.insert_with_id(&empty, key, *id)?;
        }
        write(txn, pending.unwritten())?;
    }
    Ok(())
}

/// Rewrites a format 4 catalog (JSON keys, and a `series_ids` table of the same JSON)
/// as rows, keeping every id; the caller drops `series_ids` and records the new format
/// in the same transaction.
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
    txn.delete_table(SERIES_KEYS).map_err(storage)?;
    write_rows(txn, &keys)?;
    Ok(keys.len())
}

/// Rewrites a format 5 or 6 catalog (a `series_keys` row per series, its strings in the name
/// store tables under [`names::CATALOG_CODE`]) as rows, keeping every id, and removes the
/// old rows; the caller records the new format in the same transaction.
pub fn migrate_rows(txn: &WriteTransaction) -> Result<usize> {
    let strings = names::take_namespace(txn, names::CATALOG_CODE)?;
    let mut keys = Vec::new();
    {
        let table = txn.open_table(SERIES_KEYS).map_err(storage)?;
        let mut record = Vec::new();
        for entry in table.iter().map_err(storage)? {
            let (id, raw) = entry.map_err(storage)?;
            let mut bytes = raw.value();
            if !decode_into(&mut bytes, strings.len(), &mut record) || !bytes.is_empty() {
                return Err(BackendError::Corrupt(format!(
                    "series {} has a malformed key record in series_keys",
                    id.value()
                )));
            }
            let s = |t: u32| strings[t as usize].clone();
            let tags = record[2..]
                .chunks_exact(2)
                .map(|p| (s(p[0]), s(p[1])))
                .collect();
            keys.push((
                SeriesKey::new(s(record[0]), tags, s(record[1])),
                SeriesId(id.value()),
            ));
        }
    }
    txn.delete_table(SERIES_KEYS).map_err(storage)?;
    write_rows(txn, &keys)?;
    Ok(keys.len())
}

/// Decodes one key from the front of `bytes` (which moves past it) into `record`, as
/// tokens in memory order; `false` if malformed or if it names a token at or above
/// `strings` (one never issued). The caller checks for bytes left over.
fn decode_into(bytes: &mut &[u8], strings: usize, record: &mut Vec<u32>) -> bool {
    record.clear();
    let token = |bytes: &mut &[u8]| {
        let t = u32::try_from(read_varint(bytes)?).ok()?;
        ((t as usize) < strings).then_some(t)
    };
    let Some(measurement) = token(bytes) else {
        return false;
    };
    let Some(count) = read_varint(bytes) else {
        return false;
    };
    record.extend([measurement, 0]);
    for _ in 0..count {
        match (token(bytes), token(bytes)) {
            (Some(k), Some(v)) => record.extend([k, v]),
            _ => return false,
        }
    }
    match token(bytes) {
        Some(field) => record[1] = field,
        None => return false,
    }
    true
}

/// A length-prefixed UTF-8 string from the front of `bytes`, which moves past it.
fn read_string<'a>(bytes: &mut &'a [u8]) -> Option<&'a str> {
    let len = usize::try_from(read_varint(bytes)?).ok()?;
    let (s, rest) = (bytes.get(..len)?, bytes.get(len..)?);
    *bytes = rest;
    std::str::from_utf8(s).ok()
}

/// The next varint of `bytes`, which moves past it.
fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let (v, rest) = codec::read_varint(bytes).ok()?;
    *bytes = rest;
    Some(v)
}
