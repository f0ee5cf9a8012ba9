//! The redb tables of the embedded store and the byte layout of their values.
//! `docs/format/embedded.md` describes the same layout for readers of the file.

use redb::TableDefinition;
use tickertape_core::SeriesKey;

/// Series id → series key (JSON of [`SeriesKey`]).
pub const SERIES_KEYS: TableDefinition<u64, &[u8]> = TableDefinition::new("series_keys");
/// Series key (JSON) → series id. JSON of a `SeriesKey` is canonical: tags are sorted.
pub const SERIES_IDS: TableDefinition<&[u8], u64> = TableDefinition::new("series_ids");
/// Counters: `next_series_id`, `format_version`, the name store's `next_token.<ns>`.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

pub const NEXT_SERIES_ID: &str = "next_series_id";
/// `meta` key of the file's format version ([`FORMAT_VERSION`]).
pub const FORMAT_VERSION_KEY: &str = "format_version";
/// The layout this version writes and reads. 1 (never recorded: a file without the key)
/// kept rollup slots in bucket documents; 2 kept them in rows of 32 slots and value
/// segments in redb; 3 kept raw points in the write-ahead log and part files; 4 keeps the
/// rollups of value segments in the part files too.
pub const FORMAT_VERSION: u64 = 4;

pub fn encode_key(key: &SeriesKey) -> Vec<u8> {
    // Serializing a struct of strings to a Vec cannot fail.
    serde_json::to_vec(key).unwrap_or_default()
}

pub fn decode_key(bytes: &[u8]) -> Option<SeriesKey> {
    serde_json::from_slice(bytes).ok()
}
