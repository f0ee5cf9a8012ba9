//! Rollup slots in rows of [`CHUNK_SLOTS`]: key `(series, bucket start, row index)`, value
//! a bitmap of the row's written slots and a compact [`Summary`] for each.
//! `docs/format/embedded.md` ("Time buckets") has the same layout as a table.
//!
//! Why rows rather than one document per bucket, as raw data has: every ingest body merges
//! into a few slots of each rollup of each series it touches, and a document is read,
//! decoded, re-encoded and rewritten whole for that — a day of 5-minute slots is 18 KB
//! (a 32 KiB redb page), rewritten to change 64 bytes. A row of 32 slots is at most 1.7 KB,
//! and a body's slots of one rollup of one series usually fall in one row. Raw documents
//! stay documents: a raw slot is written once, never merged into.
//!
//! A document exists when at least one of its rows does. A pre-allocated document that
//! nothing was written to is the one row [`SHELL_SLOT`] with an empty value; the row stays
//! when slots are written later (it is never read as a slot).
//!
//! Decoding never panics: every length is checked and an inconsistency is a [`RowError`],
//! which callers report as corrupt data.

use redb::TableDefinition;
use thiserror::Error;
use tickertape_core::query::Summary;
use tickertape_core::Point;

/// The type of every rollup partition's table: `(series id, bucket start ns, row index)` →
/// [`encode_chunk`]ed slots, or empty for [`SHELL_SLOT`].
pub type RowTable<'n> = TableDefinition<'n, (u64, i64, u32), &'static [u8]>;

/// The table of a rollup partition, by name.
pub fn row_definition(name: &str) -> RowTable<'_> {
    TableDefinition::new(name)
}

/// The row index of a pre-allocated document's marker row: past every real row (a document
/// has at most 3600 slots), so it sorts after the document's rows and never collides.
pub const SHELL_SLOT: u32 = u32::MAX;

/// Bytes of the five `f64`s (sum, min, max, first value, last value) after the varints.
const VALUES_LEN: usize = 40;
/// Longest LEB128 encoding of a `u64`.
const MAX_VARINT_LEN: usize = 10;

/// Why stored bytes are not a rollup slot.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowError {
    #[error("a varint runs past the end of the row or past 64 bits")]
    BadVarint,
    #[error("expected {expected} bytes for the slot, found {found}")]
    Length { expected: usize, found: usize },
    #[error("a row with no slots")]
    NoSlots,
    #[error("a slot past the document's {slots}")]
    PastDocument { slots: u32 },
}

/// The row value of `summary`, whose slot starts at `slot_start`.
///
/// `count` is a varint (a slot of a rollup rarely counts more than a few thousand points);
/// `first.time` is stored as its offset from the slot start and `last.time` as its offset
/// from `first.time`, both zigzag varints, since both lie within the slot for every
/// summary the engine writes (5 or 6 bytes each rather than 8, for nanosecond offsets up to
/// a day). Any `i64`s round-trip: the offsets wrap, so a summary whose times lie outside its
/// slot is still stored exactly. The values are `f64` bits, never rounded.
pub fn encode(summary: &Summary, slot_start: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 * MAX_VARINT_LEN + VALUES_LEN);
    put_varint(&mut out, summary.count);
    put_varint(
        &mut out,
        zigzag(summary.first.time.wrapping_sub(slot_start)),
    );
    put_varint(
        &mut out,
        zigzag(summary.last.time.wrapping_sub(summary.first.time)),
    );
    for v in [
        summary.sum,
        summary.min,
        summary.max,
        summary.first.value,
        summary.last.value,
    ] {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    out
}

/// The inverse of [`encode`]; any other length is an error.
pub fn decode(bytes: &[u8], slot_start: i64) -> Result<Summary, RowError> {
    let mut at = 0;
    let count = take_varint(bytes, &mut at)?;
    let first_time = slot_start.wrapping_add(unzigzag(take_varint(bytes, &mut at)?));
    let last_time = first_time.wrapping_add(unzigzag(take_varint(bytes, &mut at)?));
    let expected = at + VALUES_LEN;
    if bytes.len() != expected {
        return Err(RowError::Length {
            expected,
            found: bytes.len(),
        });
    }
    let v = |i: usize| {
        let word = bytes
            .get(at + 8 * i..at + 8 * i + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        f64::from_bits(word)
    };
    Ok(Summary {
        count,
        sum: v(0),
        min: v(1),
        max: v(2),
        first: Point::new(first_time, v(3)),
        last: Point::new(last_time, v(4)),
    })
}

/// Slots per rollup row: a row holds the written slots among `CHUNK_SLOTS` consecutive
/// slots of one document (row `i` holds slots `32i .. 32i + 31`).
///
/// Measured on the reference ingest (1000 series, 50 points per series per body, rollups
/// 1m/5m/1h/1d), writer-thread CPU against whole documents: one slot per row +34% (a
/// B-tree lookup and insert per slot, and half-full leaves: +10 bytes/point), 16 slots
/// −21%, 32 slots −18% with the fewest bytes (25.7 bytes/point against 30.8; 64 gained
/// nothing more). A whole document per row rewrote up to 18 KB to change one slot.
pub const CHUNK_SLOTS: u32 = 32;
/// Bytes of a row's bitmap.
const BITMAP_LEN: usize = CHUNK_SLOTS.div_ceil(8) as usize;
// The bitmap is handled as a u64.
const _: () = assert!(CHUNK_SLOTS <= 64);

/// The written slots of one row, by slot index within the document.
pub type Chunk = std::collections::BTreeMap<u32, Summary>;

/// A row's value: a bitmap (bit `slot % CHUNK_SLOTS`, little endian) then each written slot's
/// [`encode`]d summary, in slot order. `slot_start` gives each slot's start time.
pub fn encode_chunk(chunk: &Chunk, slot_start: impl Fn(u32) -> i64) -> Vec<u8> {
    let mut bitmap = 0u64;
    for slot in chunk.keys() {
        bitmap |= 1 << (slot % CHUNK_SLOTS);
    }
    let mut out = Vec::with_capacity(BITMAP_LEN + chunk.len() * (3 + VALUES_LEN + 8));
    out.extend_from_slice(&bitmap.to_le_bytes()[..BITMAP_LEN]);
    for (&slot, summary) in chunk {
        out.extend_from_slice(&encode(summary, slot_start(slot)));
    }
    out
}

/// The inverse of [`encode_chunk`] for row `index` of a document of `slots` slots: a bit
/// for a slot past the document, an empty bitmap or any other length is an error.
pub fn decode_chunk(
    bytes: &[u8],
    index: u32,
    slots: u32,
    slot_start: impl Fn(u32) -> i64,
) -> Result<Chunk, RowError> {
    let head = bytes.get(..BITMAP_LEN).ok_or(RowError::Length {
        expected: BITMAP_LEN,
        found: bytes.len(),
    })?;
    let mut word = [0u8; 8];
    word[..BITMAP_LEN].copy_from_slice(head);
    let bitmap = u64::from_le_bytes(word);
    if bitmap == 0 {
        return Err(RowError::NoSlots);
    }
    let mut at = BITMAP_LEN;
    let mut out = Chunk::new();
    for bit in (0..CHUNK_SLOTS).filter(|b| bitmap & (1 << b) != 0) {
        let slot = index
            .checked_mul(CHUNK_SLOTS)
            .and_then(|s| s.checked_add(bit))
            .filter(|&s| s < slots)
            .ok_or(RowError::PastDocument { slots })?;
        out.insert(slot, take_summary(bytes, &mut at, slot_start(slot))?);
    }
    if at != bytes.len() {
        return Err(RowError::Length {
            expected: at,
            found: bytes.len(),
        });
    }
    Ok(out)
}

/// One [`encode`]d summary starting at `at`, which moves past it.
fn take_summary(bytes: &[u8], at: &mut usize, slot_start: i64) -> Result<Summary, RowError> {
    let start = *at;
    let mut end = start;
    for _ in 0..3 {
        take_varint(bytes, &mut end)?;
    }
    end += VALUES_LEN;
    let summary = decode(
        bytes.get(start..end).ok_or(RowError::Length {
            expected: end,
            found: bytes.len(),
        })?,
        slot_start,
    )?;
    *at = end;
    Ok(summary)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// LEB128: seven bits a byte, least significant first, high bit set on all but the last.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(bytes: &[u8], at: &mut usize) -> Result<u64, RowError> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT_LEN {
        let byte = *bytes.get(*at + i).ok_or(RowError::BadVarint)?;
        let bits = u64::from(byte & 0x7f);
        // The tenth byte holds bit 63 only.
        if i == MAX_VARINT_LEN - 1 && bits > 1 {
            return Err(RowError::BadVarint);
        }
        v |= bits << (7 * i);
        if byte & 0x80 == 0 {
            *at += i + 1;
            return Ok(v);
        }
    }
    Err(RowError::BadVarint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::buckets::strategies::any_f64;

    fn bits(s: &Summary) -> [u64; 8] {
        s.to_bits()
    }

    proptest! {
        /// Any summary at any slot start comes back bit for bit.
        #[test]
        fn summaries_round_trip(
            count in any::<u64>(),
            [sum, min, max, fv, lv] in [any_f64(), any_f64(), any_f64(), any_f64(), any_f64()],
            [ft, lt, start] in [any::<i64>(), any::<i64>(), any::<i64>()],
        ) {
            let s = Summary {
                count, sum, min, max,
                first: Point::new(ft, fv),
                last: Point::new(lt, lv),
            };
            prop_assert_eq!(bits(&decode(&encode(&s, start), start).unwrap()), bits(&s));
        }

        /// Whatever the bytes, decoding returns (never panics).
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&bytes, 0);
        }

        /// Every truncation and every extension of a valid row is refused.
        #[test]
        fn wrong_lengths_are_refused(count in any::<u64>(), cut in any::<prop::sample::Index>()) {
            let s = Summary { count, ..Summary::of(Point::new(7, 1.5)) };
            let bytes = encode(&s, 0);
            prop_assert!(decode(&bytes[..cut.index(bytes.len())], 0).is_err());
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(decode(&longer, 0).is_err());
        }
    }

    #[test]
    fn a_typical_slot_is_small() {
        // Six points 10 s apart in a 1-minute slot.
        let start = 1_451_606_400_000_000_000;
        let s = Summary {
            count: 6,
            sum: 1.0,
            min: 0.0,
            max: 1.0,
            first: Point::new(start, 0.0),
            last: Point::new(start + 50_000_000_000, 1.0),
        };
        let bytes = encode(&s, start);
        assert_eq!(bytes.len(), 1 + 1 + 6 + VALUES_LEN);
    }

    proptest! {
        /// Any set of slots of a row comes back bit for bit; truncations are refused.
        #[test]
        fn chunks_round_trip(
            index in 0u32..4,
            picks in proptest::collection::btree_set(0u32..CHUNK_SLOTS, 1..=CHUNK_SLOTS as usize),
            count in any::<u64>(),
            v in any_f64(),
            cut in any::<prop::sample::Index>(),
        ) {
            let start = |slot: u32| -1_000 + i64::from(slot) * 60;
            let chunk: Chunk = picks
                .iter()
                .map(|&b| {
                    let slot = index * CHUNK_SLOTS + b;
                    (slot, Summary { count, sum: v, ..Summary::of(Point::new(start(slot) + 7, v)) })
                })
                .collect();
            let bytes = encode_chunk(&chunk, start);
            let back = decode_chunk(&bytes, index, 4 * CHUNK_SLOTS, start).unwrap();
            prop_assert_eq!(
                back.iter().map(|(k, s)| (*k, bits(s))).collect::<Vec<_>>(),
                chunk.iter().map(|(k, s)| (*k, bits(s))).collect::<Vec<_>>()
            );
            let cut = &bytes[..cut.index(bytes.len())];
            prop_assert!(decode_chunk(cut, index, 4 * CHUNK_SLOTS, start).is_err());
            // The same row as the last of a document too short for its slots.
            let last = index * CHUNK_SLOTS + picks.iter().max().copied().unwrap_or(0);
            prop_assert!(decode_chunk(&bytes, index, last, start).is_err());
        }
    }

    #[test]
    fn overlong_varints_are_refused() {
        let mut bytes = vec![0xff; 10];
        bytes.extend_from_slice(&[0; 42]);
        assert_eq!(decode(&bytes, 0), Err(RowError::BadVarint));
        assert_eq!(decode(&[0x80], 0), Err(RowError::BadVarint));
    }
}
