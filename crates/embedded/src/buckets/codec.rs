//! The bytes of one raw bucket document: a header, the totals when there are any, a bitmap
//! of written slots and the written slots' values, packed. `docs/format/embedded.md`
//! ("Time buckets") has the same layout as a table. Rollup slots are not documents but one
//! row each (see [`super::rows`]).
//!
//! Why a bitmap rather than a dense array: a pre-allocated shell must tell "never written"
//! from a written 0 (a pre-allocated slot reads as absent, never as 0), and most documents
//! are sparse for most of their life (the current hour is being filled). The bitmap costs
//! one bit per slot — 450 bytes for the largest document, 3600 slots — and an unwritten
//! slot costs nothing else, where a dense array would spend 8 bytes on it.
//!
//! Decoding never panics: every length is checked against the bytes present and every
//! inconsistency is a [`FormatError`], which callers report as corrupt data.

use std::collections::BTreeMap;
use thiserror::Error;
use tickertape_backend::BucketTotals;

/// First byte of a raw document (values of a `layout = "buckets"` measurement or counter).
/// Tag 2 was the rollup document of format 1; format 2 stores rollup slots as rows, so a
/// 2 here is an unknown tag like any other.
const RAW_TAG: u8 = 1;
/// Flag bit: the raw totals (`n`, `sum`, `min`, `max`) follow the header.
const HAS_TOTALS: u8 = 1;
/// Tag, flags, slot count (`u32`).
const HEADER_LEN: usize = 6;
/// `count` u64, `sum`, `min`, `max` as f64 bits.
const TOTALS_LEN: usize = 32;
/// One raw slot: the value's f64 bits.
const RAW_SLOT_LEN: usize = 8;

/// Why stored bytes are not a bucket document.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    #[error("{0} bytes is too short for a bucket header")]
    Truncated(usize),
    #[error("unknown document tag {0}")]
    UnknownTag(u8),
    #[error("unknown flags {0:#04x}")]
    UnknownFlags(u8),
    #[error("the slot bitmap marks slots past the document's {slots}")]
    StrayBits { slots: u32 },
    #[error("expected {expected} bytes for the document, found {found}")]
    Length { expected: usize, found: usize },
}

/// A decoded raw bucket document. Slot indexes are below `slots`; the writer checks every
/// index against the family's geometry before it touches a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub slots: u32,
    /// `None` until the first value is written (a pre-allocated shell).
    pub totals: Option<BucketTotals>,
    pub values: BTreeMap<u32, f64>,
}

/// What the header says, before the slots are read.
struct Header {
    slots: u32,
    totals: Option<BucketTotals>,
    /// Offset of the bitmap.
    body: usize,
}

impl Bucket {
    /// An empty document of `slots` slots: a pre-allocated shell.
    pub fn empty(slots: u32) -> Self {
        Self {
            slots,
            totals: None,
            values: BTreeMap::new(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let flags = if self.totals.is_some() { HAS_TOTALS } else { 0 };
        let mut out = header(flags, self.slots, self.values.len() * RAW_SLOT_LEN);
        if let Some(t) = self.totals {
            put_u64(&mut out, t.count);
            put_f64(&mut out, t.sum);
            put_f64(&mut out, t.min);
            put_f64(&mut out, t.max);
        }
        put_bitmap(&mut out, self.slots, self.values.keys());
        for &value in self.values.range(..self.slots).map(|(_, v)| v) {
            put_f64(&mut out, value);
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
        let head = read_header(bytes)?;
        let bitmap_len = head.slots.div_ceil(8) as usize;
        let bitmap = bytes
            .get(head.body..head.body + bitmap_len)
            .ok_or(FormatError::Length {
                expected: head.body + bitmap_len,
                found: bytes.len(),
            })?;
        let written = written_slots(bitmap, head.slots)?;
        let start = head.body + bitmap_len;
        let expected = start + written.len() * RAW_SLOT_LEN;
        if bytes.len() != expected {
            return Err(FormatError::Length {
                expected,
                found: bytes.len(),
            });
        }
        let chunks = bytes[start..].chunks_exact(RAW_SLOT_LEN);
        Ok(Self {
            slots: head.slots,
            totals: head.totals,
            values: written.into_iter().zip(chunks.map(f64_at0)).collect(),
        })
    }

    /// The header alone — slot count and totals — without reading the slots: what a
    /// [`TotalsOnly`](tickertape_backend::BucketRead::TotalsOnly) read needs.
    pub fn peek(bytes: &[u8]) -> Result<Peek, FormatError> {
        read_header(bytes).map(|h| Peek {
            slots: h.slots,
            totals: h.totals,
        })
    }
}

/// A document's header, read by [`Bucket::peek`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peek {
    pub slots: u32,
    /// The totals; `None` for a shell.
    pub totals: Option<BucketTotals>,
}

fn header(flags: u8, slots: u32, values_len: usize) -> Vec<u8> {
    let capacity = HEADER_LEN + TOTALS_LEN + slots.div_ceil(8) as usize + values_len;
    let mut out = Vec::with_capacity(capacity);
    out.push(RAW_TAG);
    out.push(flags);
    out.extend_from_slice(&slots.to_le_bytes());
    out
}

fn read_header(bytes: &[u8]) -> Result<Header, FormatError> {
    let fixed: &[u8; HEADER_LEN] = bytes
        .get(..HEADER_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or(FormatError::Truncated(bytes.len()))?;
    let [tag, flags, s0, s1, s2, s3] = *fixed;
    let slots = u32::from_le_bytes([s0, s1, s2, s3]);
    if tag != RAW_TAG {
        return Err(FormatError::UnknownTag(tag));
    }
    if flags & !HAS_TOTALS != 0 {
        return Err(FormatError::UnknownFlags(flags));
    }
    if flags & HAS_TOTALS == 0 {
        return Ok(Header {
            slots,
            totals: None,
            body: HEADER_LEN,
        });
    }
    let body = HEADER_LEN + TOTALS_LEN;
    let t = bytes.get(HEADER_LEN..body).ok_or(FormatError::Length {
        expected: body,
        found: bytes.len(),
    })?;
    Ok(Header {
        slots,
        totals: Some(BucketTotals {
            count: u64_at(t, 0),
            sum: f64_at(t, 8),
            min: f64_at(t, 16),
            max: f64_at(t, 24),
        }),
        body,
    })
}

/// Slot `i` is bit `i % 8` (least significant first) of byte `i / 8`.
fn put_bitmap<'a>(out: &mut Vec<u8>, slots: u32, written: impl Iterator<Item = &'a u32>) {
    let start = out.len();
    out.resize(start + slots.div_ceil(8) as usize, 0);
    for &slot in written.take_while(|&&s| s < slots) {
        out[start + (slot / 8) as usize] |= 1 << (slot % 8);
    }
}

/// The indexes of the set bits, ascending; bits past `slots` are an error.
fn written_slots(bitmap: &[u8], slots: u32) -> Result<Vec<u32>, FormatError> {
    let mut out = Vec::new();
    for (i, &byte) in bitmap.iter().enumerate() {
        for bit in 0..8u32 {
            if byte & (1 << bit) == 0 {
                continue;
            }
            // i < slots.div_ceil(8) <= u32::MAX / 8 + 1, so this cannot overflow.
            let slot = i as u32 * 8 + bit;
            if slot >= slots {
                return Err(FormatError::StrayBits { slots });
            }
            out.push(slot);
        }
    }
    Ok(out)
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_f64(out: &mut Vec<u8>, v: f64) {
    put_u64(out, v.to_bits());
}

/// The u64 at `at` of a chunk whose length the caller checked; 0 if it is short, which
/// the callers' length checks make impossible.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn f64_at(bytes: &[u8], at: usize) -> f64 {
    f64::from_bits(u64_at(bytes, at))
}

fn f64_at0(bytes: &[u8]) -> f64 {
    f64_at(bytes, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::btree_map;
    use proptest::prelude::*;

    use crate::buckets::strategies::any_f64;

    fn any_totals() -> impl Strategy<Value = Option<BucketTotals>> {
        proptest::option::of((any::<u64>(), any_f64(), any_f64(), any_f64()).prop_map(
            |(count, sum, min, max)| BucketTotals {
                count,
                sum,
                min,
                max,
            },
        ))
    }

    fn any_raw() -> impl Strategy<Value = Bucket> {
        (1u32..4000).prop_flat_map(|slots| {
            (
                any_totals(),
                btree_map(0..slots, any_f64(), 0..64usize.min(slots as usize)),
            )
                .prop_map(move |(totals, values)| Bucket {
                    slots,
                    totals,
                    values,
                })
        })
    }

    /// Bit-exact equality: NaN payloads and the sign of zero must survive.
    fn assert_same(a: &Bucket, b: &Bucket) {
        assert_eq!(a.encode(), b.encode(), "{a:?} vs {b:?}");
        let bits = |t: &Option<BucketTotals>| {
            t.map(|t| (t.count, t.sum.to_bits(), t.min.to_bits(), t.max.to_bits()))
        };
        assert_eq!(bits(&a.totals), bits(&b.totals));
        let keys =
            |v: &BTreeMap<u32, f64>| v.iter().map(|(k, v)| (*k, v.to_bits())).collect::<Vec<_>>();
        assert_eq!(keys(&a.values), keys(&b.values));
    }

    proptest! {
        #[test]
        fn raw_round_trips(bucket in any_raw()) {
            let decoded = Bucket::decode(&bucket.encode()).unwrap();
            assert_same(&bucket, &decoded);
            let peek = Bucket::peek(&bucket.encode()).unwrap();
            prop_assert_eq!(peek.slots, bucket.slots);
            prop_assert_eq!(
                peek.totals.map(|t| t.sum.to_bits()),
                bucket.totals.map(|t| t.sum.to_bits())
            );
        }

        /// Whatever the bytes, decoding returns (never panics).
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Bucket::decode(&bytes);
            let _ = Bucket::peek(&bytes);
        }

        /// Every truncation of a valid document is refused.
        #[test]
        fn truncations_are_refused(bucket in any_raw(), cut in any::<prop::sample::Index>()) {
            let bytes = bucket.encode();
            let cut = cut.index(bytes.len());
            prop_assert!(Bucket::decode(&bytes[..cut]).is_err());
        }
    }

    #[test]
    fn shell_has_no_slots_and_no_totals() {
        let shell = Bucket::empty(3600);
        let bytes = shell.encode();
        assert_eq!(bytes.len(), HEADER_LEN + 450);
        assert_eq!(Bucket::decode(&bytes).unwrap(), shell);
        assert_eq!(Bucket::peek(&bytes).unwrap().totals, None);
    }

    #[test]
    fn written_zero_is_kept_apart_from_unwritten() {
        let bucket = Bucket {
            slots: 10,
            totals: None,
            values: BTreeMap::from([(3, 0.0), (9, -0.0)]),
        };
        let values = Bucket::decode(&bucket.encode()).unwrap().values;
        assert_eq!(values.keys().copied().collect::<Vec<_>>(), vec![3, 9]);
        assert_eq!(values[&9].to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn malformed_headers_are_named() {
        assert_eq!(Bucket::decode(&[]), Err(FormatError::Truncated(0)));
        assert_eq!(
            Bucket::decode(&[9, 0, 1, 0, 0, 0, 0]),
            Err(FormatError::UnknownTag(9))
        );
        // Format 1's rollup document.
        assert_eq!(
            Bucket::decode(&[2, 0, 1, 0, 0, 0, 0]),
            Err(FormatError::UnknownTag(2))
        );
        assert_eq!(
            Bucket::decode(&[RAW_TAG, 2, 1, 0, 0, 0, 0]),
            Err(FormatError::UnknownFlags(2))
        );
        // 3 slots, bit 5 set.
        assert_eq!(
            Bucket::decode(&[RAW_TAG, 0, 3, 0, 0, 0, 0b10_0000]),
            Err(FormatError::StrayBits { slots: 3 })
        );
        // A huge slot count with no bitmap behind it.
        assert!(matches!(
            Bucket::decode(&[RAW_TAG, 0, 255, 255, 255, 255]),
            Err(FormatError::Length { .. })
        ));
    }
}
