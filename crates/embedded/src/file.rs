//! The redb file of a store: opening it, its fixed tables, the format version it was
//! written in (and the migrations from older catalogs), the partition width it keeps; and
//! the bytes the store's files occupy.

use crate::faults::{self, IoFaults};
use crate::names;
use crate::series_keys;
use crate::tables::{CATALOG_BATCHES, FORMAT_VERSION, FORMAT_VERSION_KEY, META, SERIES_IDS_V4};
use crate::values::manifest::{self, PARTITION_NS};
use crate::values::Partitioning;
use crate::writer::storage;
use redb::{Database, ReadableTable};
use std::path::Path;
use tickertape_backend::{BackendError, Result, SNAPSHOTS_DIR};

/// The partition width the store was created with, recorded at creation.
pub fn partitioning(db: &Database, wanted: i64) -> Result<Partitioning> {
    let invalid =
        |w: i64| BackendError::Invalid(format!("partition width {w} ns: must be positive"));
    let stored = manifest::meta(db, PARTITION_NS)?;
    let width = match stored {
        Some(w) => {
            i64::try_from(w).map_err(|_| BackendError::Corrupt(format!("partition width {w}")))?
        }
        None => {
            Partitioning::new(wanted).ok_or_else(|| invalid(wanted))?;
            let txn = db.begin_write().map_err(storage)?;
            manifest::set_meta(&txn, PARTITION_NS, wanted as u64)?;
            txn.commit().map_err(storage)?;
            wanted
        }
    };
    if stored.is_some() && width != wanted {
        tracing::info!(
            width,
            wanted,
            "the store keeps the partition width it was created with"
        );
    }
    Partitioning::new(width).ok_or_else(|| invalid(width))
}

/// Opens (or creates) the redb file, behind the fault switch when a test gave one.
pub fn open_database(file: &Path, faults: Option<IoFaults>) -> Result<Database> {
    let opened = match faults {
        None => Database::create(file),
        Some(faults) => std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(file)
            .map_err(redb::DatabaseError::from)
            .and_then(redb::backends::FileBackend::new)
            .and_then(|backend| {
                Database::builder().create_with_backend(faults::FaultyFile::new(backend, faults))
            }),
    };
    opened.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => BackendError::Unavailable(format!(
            "the store {} is already open in another process",
            file.display()
        )),
        e => BackendError::Storage(format!("cannot open {}: {e}", file.display())),
    })
}

/// Creates the fixed tables and records the format version in a new store; refuses a
/// store written in another layout rather than misread it.
pub fn create_tables(db: &Database) -> Result<()> {
    let txn = db.begin_write().map_err(storage)?;
    // Any table at all means the file was written before: by this layout only if it says so.
    let used = txn.list_tables().map_err(storage)?.next().is_some();
    txn.open_table(CATALOG_BATCHES).map_err(storage)?;
    txn.open_table(manifest::PARTS).map_err(storage)?;
    txn.open_table(manifest::PACKED).map_err(storage)?;
    txn.open_table(manifest::SERIES_STATE).map_err(storage)?;
    txn.open_table(manifest::MEASUREMENTS).map_err(storage)?;
    txn.open_table(names::NAME_TOKENS).map_err(storage)?;
    txn.open_table(names::TOKEN_NAMES).map_err(storage)?;
    {
        let mut meta = txn.open_table(META).map_err(storage)?;
        let version = meta
            .get(FORMAT_VERSION_KEY)
            .map_err(storage)?
            .map(|v| v.value());
        match version {
            Some(FORMAT_VERSION) => {}
            None if !used => {
                meta.insert(FORMAT_VERSION_KEY, FORMAT_VERSION)
                    .map_err(storage)?;
            }
            Some(4) => {
                // Format 4 differs only in how the catalog is written: rewrite it here,
                // in the same transaction as the new version number.
                drop(meta);
                let series = series_keys::migrate_from_json(&txn)?;
                txn.delete_table(SERIES_IDS_V4).map_err(storage)?;
                txn.open_table(META)
                    .map_err(storage)?
                    .insert(FORMAT_VERSION_KEY, FORMAT_VERSION)
                    .map_err(storage)?;
                tracing::info!(
                    series,
                    "migrated the series catalog from format 4 to {FORMAT_VERSION}"
                );
            }
            Some(old @ (7..=10)) => {
                // Format 8 adds `removed_series` (created on the first removal), 9 named
                // databases (created by the first `CREATE DATABASE`), 10 parts of many
                // measurements (the older parts, of one, are read as they are) and 11
                // pack files (`packed_parts`, created above); an older store has none of
                // them, so the number is all that changes.
                meta.insert(FORMAT_VERSION_KEY, FORMAT_VERSION)
                    .map_err(storage)?;
                tracing::info!("recorded the store's format as {FORMAT_VERSION} (was {old})");
            }
            Some(5 | 6) => {
                drop(meta);
                let series = series_keys::migrate_rows(&txn)?;
                txn.open_table(META)
                    .map_err(storage)?
                    .insert(FORMAT_VERSION_KEY, FORMAT_VERSION)
                    .map_err(storage)?;
                tracing::info!(
                    series,
                    "migrated the series catalog to format {FORMAT_VERSION}"
                );
            }
            found => {
                // Dropping `txn` without a commit leaves the file as it was.
                return Err(BackendError::Corrupt(format!(
                    "the store was written in format {} and this version reads format \
                     {FORMAT_VERSION} only ({}); re-import its data into a new store",
                    found.unwrap_or(1),
                    match found {
                        Some(3) =>
                            "format 3 kept the rollups of value segments in redb rows; \
                             format 4 keeps them in the part files",
                        Some(2) =>
                            "format 2 kept raw points in redb value segments; format 4 \
                             keeps them in a write-ahead log and part files",
                        _ => "rollup slots moved from documents to rows",
                    }
                )));
            }
        }
    }
    txn.commit().map_err(storage)
}

/// Bytes the store's files occupy: everything in `dir` but its `snapshots/` folder, which
/// holds copies, not the store.
pub fn store_bytes(dir: &Path) -> u64 {
    disk_bytes(dir, Some(SNAPSHOTS_DIR))
}

/// Bytes the files under `dir` occupy on disk (allocated blocks, not apparent lengths),
/// leaving out the entry of `dir` named `skip`.
fn disk_bytes(dir: &Path, skip: Option<&str>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| skip.is_none_or(|skip| e.file_name() != skip))
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path(), None),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}
