//! The redb tables of the embedded store and the byte layout of their values.
//! `docs/format/embedded.md` describes the same layout for readers of the file.

use redb::TableDefinition;

/// First series id of a row → the strings and series keys one job registered
/// ([`crate::series_keys`]).
pub const CATALOG_BATCHES: TableDefinition<u64, &[u8]> = TableDefinition::new("catalog_batches");
/// Series id → nothing: series removed from the catalog (`SeriesCatalog::remove_series`),
/// whose `catalog_batches` rows stay; applied when the catalog is loaded.
pub const REMOVED_SERIES: TableDefinition<u64, ()> = TableDefinition::new("removed_series");
/// Formats 4 to 6 only: series id → its key (JSON in 4, name store tokens in 5 and 6);
/// the migration to format 7 rewrites it as `catalog_batches` rows and deletes it.
pub const SERIES_KEYS: TableDefinition<u64, &[u8]> = TableDefinition::new("series_keys");
/// Format 4 only: series key (JSON) → series id. Format 5 dropped it (the catalog is in
/// memory); the migration from format 4 deletes it.
pub const SERIES_IDS_V4: TableDefinition<&[u8], u64> = TableDefinition::new("series_ids");
/// Counters: `next_series_id`, `format_version`, the name store's `next_token.<ns>`.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

pub const NEXT_SERIES_ID: &str = "next_series_id";
/// `meta` key of the file's format version ([`FORMAT_VERSION`]).
pub const FORMAT_VERSION_KEY: &str = "format_version";
/// The layout this version writes and reads. 1 (never recorded: a file without the key)
/// kept rollup slots in bucket documents; 2 kept them in rows of 32 slots and value
/// segments in redb; 3 kept raw points in the write-ahead log and part files; 4 kept the
/// rollups of value segments in the part files too; 5 writes series keys as name store
/// tokens instead of JSON, once; 6 stopped writing their name → token rows; 7 writes the
/// catalog as one row per registering job, strings included; 8 may hold series removed
/// from the catalog (`removed_series`), which a binary reading 7 would list again; 9 may
/// hold series of named databases (measurement names marked as `tickertape_core::database`
/// says, and the `databases` table), which a binary reading 8 would show in the default
/// database; 10 writes part files of every measurement of a time partition (`TTPART04`),
/// which a binary reading 9 would refuse part by part; 11 packs the parts of weeks that
/// are over into pack files (`packed_parts`), which a binary reading 10 would not find
/// (formats 4 to 10 are migrated in place at open; 7 to 10 only record the number: their
/// parts are read as they are, and packed when their weeks are packed).
pub const FORMAT_VERSION: u64 = 11;
