//! The manifest: which part files make up the store, how far the write-ahead log is
//! checkpointed, and each series' latest point and count as of that checkpoint. Small,
//! mutable state, so it lives in redb beside the catalog; the part files hold the bulk.
//!
//! Invariant: every part the `parts` table names is a whole file on disk (it was fsynced
//! and renamed before the transaction that names it committed). A file in `parts/` that
//! the table does not name is the leftover of a crash and is deleted at open.

use crate::tables::META;
use crate::writer::storage;
use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use std::collections::HashMap;
use tickertape_backend::{BackendError, Result, SeriesHead};
use tickertape_core::{Point, SeriesId};

/// Part id → its `max_lsn` (the file's footer says the rest).
pub const PARTS: TableDefinition<u64, u64> = TableDefinition::new("parts");
/// Part id → `(pack id, base, len)`: where a packed part lies (`pack.rs`). A part named
/// in [`PARTS`] and not here has a file of its own.
pub const PACKED: TableDefinition<u64, (u64, u64, u64)> = TableDefinition::new("packed_parts");
/// Series id → latest point and count as of the checkpoint ([`encode_head`]).
pub const SERIES_STATE: TableDefinition<u64, &[u8]> = TableDefinition::new("series_state");

/// Measurement → the number that names it in part files. The store's own numbering,
/// apart from the name store, whose tokens only `tokenize` issues.
pub const MEASUREMENTS: TableDefinition<&str, u64> = TableDefinition::new("part_measurements");
/// `meta`: the next number [`MEASUREMENTS`] gives.
const NEXT_MEASUREMENT: &str = "parts.next_measurement";

/// `meta`: every frame up to this LSN is in part files.
pub const CHECKPOINT_LSN: &str = "wal.checkpoint_lsn";
/// `meta`: the bucket writes of every frame up to this LSN are in the bucket tables.
pub const APPLIED_LSN: &str = "wal.applied_lsn";
/// `meta`: the width of a time partition of part files, fixed when the store is created.
pub const PARTITION_NS: &str = "parts.partition_ns";

pub fn meta(db: &Database, key: &str) -> Result<Option<u64>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(META).map_err(storage)?;
    Ok(table.get(key).map_err(storage)?.map(|v| v.value()))
}

pub fn set_meta(txn: &WriteTransaction, key: &str, value: u64) -> Result<()> {
    let mut table = txn.open_table(META).map_err(storage)?;
    table.insert(key, value).map_err(storage)?;
    Ok(())
}

/// Where the part lies: `None` in a file of its own, else `(pack id, base, len)`.
pub type PartPlace = Option<(u64, u64, u64)>;

/// The parts the manifest names, by id, each with its place.
pub fn part_places(db: &Database) -> Result<Vec<(u64, PartPlace)>> {
    let txn = db.begin_read().map_err(storage)?;
    let parts = txn.open_table(PARTS).map_err(storage)?;
    let packed = txn.open_table(PACKED).map_err(storage)?;
    let mut out = Vec::new();
    for entry in parts.iter().map_err(storage)? {
        let id = entry.map_err(storage)?.0.value();
        let place = packed.get(id).map_err(storage)?.map(|v| v.value());
        out.push((id, place));
    }
    Ok(out)
}

/// The files the manifest's parts are in (`<id>.part` or `<pack id>.pack`, in `dir`),
/// each once, sorted.
pub fn part_files(db: &Database, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<std::path::PathBuf> = part_places(db)?
        .into_iter()
        .map(|(id, place)| match place {
            Some((pack, _, _)) => super::pack::pack_path(dir, pack),
            None => super::part::part_path(dir, id),
        })
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Names `added` and forgets `removed` (and where they were packed) in `txn`.
pub fn swap_parts(txn: &WriteTransaction, added: &[(u64, u64)], removed: &[u64]) -> Result<()> {
    let mut table = txn.open_table(PARTS).map_err(storage)?;
    let mut packed = txn.open_table(PACKED).map_err(storage)?;
    for &(id, max_lsn) in added {
        table.insert(id, max_lsn).map_err(storage)?;
    }
    for id in removed {
        table.remove(id).map_err(storage)?;
        packed.remove(id).map_err(storage)?;
    }
    Ok(())
}

/// Records that the parts `placed` now lie in pack `pack`.
pub fn place_in_pack(
    txn: &WriteTransaction,
    pack: u64,
    placed: &[super::pack::Placement],
) -> Result<()> {
    let mut packed = txn.open_table(PACKED).map_err(storage)?;
    for &(id, base, len) in placed {
        packed.insert(id, (pack, base, len)).map_err(storage)?;
    }
    Ok(())
}

/// The number of each measurement in part files, giving new ones the next numbers.
pub fn measurement_numbers(txn: &WriteTransaction, names: &[String]) -> Result<Vec<u64>> {
    let mut table = txn.open_table(MEASUREMENTS).map_err(storage)?;
    let mut meta = txn.open_table(META).map_err(storage)?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if let Some(n) = table.get(name.as_str()).map_err(storage)? {
            out.push(n.value());
            continue;
        }
        let next = meta
            .get(NEXT_MEASUREMENT)
            .map_err(storage)?
            .map_or(0, |v| v.value());
        meta.insert(NEXT_MEASUREMENT, next + 1).map_err(storage)?;
        table.insert(name.as_str(), next).map_err(storage)?;
        out.push(next);
    }
    Ok(out)
}

/// The number of each of `names` in part files, where it has one, in one read.
pub fn measurement_numbers_of<'a>(
    db: &Database,
    names: impl Iterator<Item = &'a str>,
) -> Result<Vec<Option<u64>>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(MEASUREMENTS).map_err(storage)?;
    names
        .map(|name| Ok(table.get(name).map_err(storage)?.map(|v| v.value())))
        .collect()
}

/// Every measurement name with its number in part files.
pub fn measurement_names(db: &Database) -> Result<HashMap<u64, String>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(MEASUREMENTS).map_err(storage)?;
    let mut names = HashMap::new();
    for entry in table.iter().map_err(storage)? {
        let (name, number) = entry.map_err(storage)?;
        names.insert(number.value(), name.value().to_string());
    }
    Ok(names)
}

pub fn load_heads(db: &Database) -> Result<HashMap<SeriesId, SeriesHead>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = txn.open_table(SERIES_STATE).map_err(storage)?;
    let mut heads = HashMap::new();
    for entry in table.iter().map_err(storage)? {
        let (id, raw) = entry.map_err(storage)?;
        let head = decode_head(raw.value()).ok_or_else(|| {
            BackendError::Corrupt(format!(
                "latest point of series {} is malformed",
                id.value()
            ))
        })?;
        heads.insert(SeriesId(id.value()), head);
    }
    Ok(heads)
}

/// Writes the heads that changed since the last checkpoint.
pub fn save_heads<'a>(
    txn: &WriteTransaction,
    heads: impl Iterator<Item = (&'a SeriesId, &'a SeriesHead)>,
) -> Result<()> {
    let mut table = txn.open_table(SERIES_STATE).map_err(storage)?;
    for (series, head) in heads {
        table
            .insert(series.0, encode_head(head).as_slice())
            .map_err(storage)?;
    }
    Ok(())
}

/// `time i64 · value f64 bits`, little endian. Stores written before kept a point count
/// after them (24 bytes), which [`decode_head`] ignores.
fn encode_head(head: &SeriesHead) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[0..8].copy_from_slice(&head.last.time.to_le_bytes());
    out[8..16].copy_from_slice(&head.last.value.to_bits().to_le_bytes());
    out
}

fn decode_head(bytes: &[u8]) -> Option<SeriesHead> {
    let word = |i: usize| -> Option<[u8; 8]> { bytes.get(i * 8..i * 8 + 8)?.try_into().ok() };
    Some(SeriesHead {
        last: Point::new(
            i64::from_le_bytes(word(0)?),
            f64::from_bits(u64::from_le_bytes(word(1)?)),
        ),
    })
}
