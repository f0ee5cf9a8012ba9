//! The redb tables of the embedded store and the byte layout of their values.
//! `docs/format/embedded.md` describes the same layout for readers of the file.

use redb::TableDefinition;
use tickertape_core::codec;
use tickertape_core::segment::{Segment, SegmentBody};
use tickertape_core::{Point, SeriesId, SeriesKey};

/// Series id → series key (JSON of [`SeriesKey`]).
pub const SERIES_KEYS: TableDefinition<u64, &[u8]> = TableDefinition::new("series_keys");
/// Series key (JSON) → series id. JSON of a `SeriesKey` is canonical: tags are sorted.
pub const SERIES_IDS: TableDefinition<&[u8], u64> = TableDefinition::new("series_ids");
/// Series id → head ([`Head`]).
pub const HEADS: TableDefinition<u64, &[u8]> = TableDefinition::new("heads");
/// (series id, prev_end) → segment ([`encode_segment`]). `prev_end` is unique within a
/// series and increases along its chain, so a key range scan walks segments in time order.
pub const SEGMENTS: TableDefinition<(u64, i64), &[u8]> = TableDefinition::new("segments");
/// Counters: `next_series_id`, `format_version`, the name store's `next_token.<ns>`.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

pub const NEXT_SERIES_ID: &str = "next_series_id";
/// `meta` key of the file's format version ([`FORMAT_VERSION`]).
pub const FORMAT_VERSION_KEY: &str = "format_version";
/// The layout this version writes and reads. 1 (never recorded: a file without the key)
/// kept rollup slots in bucket documents; 2 keeps them in rows of 32 slots.
pub const FORMAT_VERSION: u64 = 2;

/// The series head: where the active segment starts and the last point written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Head {
    pub last: Point,
    pub count: u64,
    /// `prev_end` of the active segment: its key in [`SEGMENTS`].
    pub active_prev_end: i64,
}

impl Head {
    pub const ENCODED_LEN: usize = 32;

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[0..8].copy_from_slice(&self.last.time.to_le_bytes());
        out[8..16].copy_from_slice(&self.last.value.to_bits().to_le_bytes());
        out[16..24].copy_from_slice(&self.count.to_le_bytes());
        out[24..32].copy_from_slice(&self.active_prev_end.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let word = |i: usize| -> Option<[u8; 8]> { bytes.get(i * 8..i * 8 + 8)?.try_into().ok() };
        Some(Self {
            last: Point::new(
                i64::from_le_bytes(word(0)?),
                f64::from_bits(u64::from_le_bytes(word(1)?)),
            ),
            count: u64::from_le_bytes(word(2)?),
            active_prev_end: i64::from_le_bytes(word(3)?),
        })
    }
}

/// A stored segment: `next_start` (i64, little endian) followed by a codec block.
///
/// Both the active and the sealed segments are stored as codec blocks: a write transaction
/// rewrites the active segment's value anyway, and a block of 160 points is a few hundred
/// bytes where the raw arrays take 2.5 KiB, so compressing on every append writes less.
pub fn encode_segment(next_start: i64, points: &[Point]) -> Vec<u8> {
    let block = codec::encode_block(points);
    let mut out = Vec::with_capacity(8 + block.len());
    out.extend_from_slice(&next_start.to_le_bytes());
    out.extend_from_slice(&block);
    out
}

pub fn decode_segment(series: SeriesId, prev_end: i64, bytes: &[u8]) -> Option<Segment> {
    let next_start = i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    Some(Segment {
        series,
        prev_end,
        next_start,
        body: SegmentBody::Sealed(bytes[8..].to_vec()),
    })
}

pub fn encode_key(key: &SeriesKey) -> Vec<u8> {
    // Serializing a struct of strings to a Vec cannot fail.
    serde_json::to_vec(key).unwrap_or_default()
}

pub fn decode_key(bytes: &[u8]) -> Option<SeriesKey> {
    serde_json::from_slice(bytes).ok()
}
