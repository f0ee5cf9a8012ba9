//! The bytes of one bucket document: a header, the raw totals when there are any, a bitmap
//! of written slots and the written slots' contents, packed. `docs/format/embedded.md`
//! ("Time buckets") has the same layout as a table.
//!
//! Why a bitmap rather than a dense array: a pre-allocated shell must tell "never written"
//! from a written 0 (DESIGN §3), and most documents are sparse for most of their life (the
//! current hour is being filled). The bitmap costs one bit per slot — 450 bytes for the
//! largest document, 3600 slots — and an unwritten slot costs nothing else, where a dense
//! array would spend 8 (raw) or 64 (rollup) bytes on it.
//!
//! Decoding never panics: every length is checked against the bytes present and every
//! inconsistency is a [`FormatError`], which callers report as corrupt data.

use std::collections::BTreeMap;
use thiserror::Error;
use tickertape_backend::BucketTotals;
use tickertape_core::query::Summary;
use tickertape_core::Point;

/// First byte of a raw document (values of a `layout = "buckets"` measurement or counter).
const RAW_TAG: u8 = 1;
/// First byte of a rollup document (a [`Summary`] per slot).
const ROLLUP_TAG: u8 = 2;
/// Flag bit: the raw totals (`n`, `sum`, `min`, `max`) follow the header.
const HAS_TOTALS: u8 = 1;
/// Tag, flags, slot count (`u32`).
const HEADER_LEN: usize = 6;
/// `count` u64, `sum`, `min`, `max` as f64 bits.
const TOTALS_LEN: usize = 32;
/// One raw slot: the value's f64 bits.
const RAW_SLOT_LEN: usize = 8;
/// One rollup slot: count, sum, min, max, first (time, value), last (time, value).
const SUMMARY_LEN: usize = 64;

/// Why stored bytes are not a bucket document.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    #[error("{0} bytes is too short for a bucket header")]
    Truncated(usize),
    #[error("unknown document tag {0}")]
    UnknownTag(u8),
    #[error("unknown flags {flags:#04x} for a {kind} document")]
    UnknownFlags { kind: &'static str, flags: u8 },
    #[error("the slot bitmap marks slots past the document's {slots}")]
    StrayBits { slots: u32 },
    #[error("expected {expected} bytes for the document, found {found}")]
    Length { expected: usize, found: usize },
}

/// A decoded bucket document. Slot indexes are below `slots`; the writer checks every
/// index against the family's geometry before it touches a document.
#[derive(Clone, Debug, PartialEq)]
pub enum Bucket {
    Raw {
        slots: u32,
        /// `None` until the first value is written (a pre-allocated shell).
        totals: Option<BucketTotals>,
        values: BTreeMap<u32, f64>,
    },
    Rollup {
        slots: u32,
        summaries: BTreeMap<u32, Summary>,
    },
}

/// What the header says, before the slots are read.
struct Header {
    tag: u8,
    slots: u32,
    totals: Option<BucketTotals>,
    /// Offset of the bitmap.
    body: usize,
}

impl Bucket {
    /// An empty raw document of `slots` slots: a pre-allocated shell.
    pub fn empty_raw(slots: u32) -> Self {
        Self::Raw {
            slots,
            totals: None,
            values: BTreeMap::new(),
        }
    }

    /// An empty rollup document of `slots` slots: a pre-allocated shell.
    pub fn empty_rollup(slots: u32) -> Self {
        Self::Rollup {
            slots,
            summaries: BTreeMap::new(),
        }
    }

    /// The number of slots the document was created with.
    pub fn slots(&self) -> u32 {
        match self {
            Self::Raw { slots, .. } | Self::Rollup { slots, .. } => *slots,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Raw {
                slots,
                totals,
                values,
            } => {
                let flags = if totals.is_some() { HAS_TOTALS } else { 0 };
                let mut out = header(RAW_TAG, flags, *slots, values.len() * RAW_SLOT_LEN);
                if let Some(t) = totals {
                    put_u64(&mut out, t.count);
                    put_f64(&mut out, t.sum);
                    put_f64(&mut out, t.min);
                    put_f64(&mut out, t.max);
                }
                put_bitmap(&mut out, *slots, values.keys());
                for &value in values.range(..*slots).map(|(_, v)| v) {
                    put_f64(&mut out, value);
                }
                out
            }
            Self::Rollup { slots, summaries } => {
                let mut out = header(ROLLUP_TAG, 0, *slots, summaries.len() * SUMMARY_LEN);
                put_bitmap(&mut out, *slots, summaries.keys());
                for s in summaries.range(..*slots).map(|(_, s)| s) {
                    put_summary(&mut out, s);
                }
                out
            }
        }
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
        let width = if head.tag == RAW_TAG {
            RAW_SLOT_LEN
        } else {
            SUMMARY_LEN
        };
        let start = head.body + bitmap_len;
        let expected = start + written.len() * width;
        if bytes.len() != expected {
            return Err(FormatError::Length {
                expected,
                found: bytes.len(),
            });
        }
        let chunks = bytes[start..].chunks_exact(width);
        Ok(if head.tag == RAW_TAG {
            Self::Raw {
                slots: head.slots,
                totals: head.totals,
                values: written.into_iter().zip(chunks.map(f64_at0)).collect(),
            }
        } else {
            Self::Rollup {
                slots: head.slots,
                summaries: written.into_iter().zip(chunks.map(summary_at)).collect(),
            }
        })
    }

    /// The header alone — kind, slot count and raw totals — without reading the slots:
    /// what a [`TotalsOnly`](tickertape_backend::BucketRead::TotalsOnly) read needs.
    pub fn peek(bytes: &[u8]) -> Result<Peek, FormatError> {
        read_header(bytes).map(|h| Peek {
            rollup: h.tag == ROLLUP_TAG,
            slots: h.slots,
            totals: h.totals,
        })
    }

    /// Whether this is a rollup document (`false`: a raw one).
    pub fn is_rollup(&self) -> bool {
        matches!(self, Self::Rollup { .. })
    }
}

/// A document's header, read by [`Bucket::peek`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peek {
    pub rollup: bool,
    pub slots: u32,
    /// The raw totals; `None` for a rollup or a shell.
    pub totals: Option<BucketTotals>,
}

fn header(tag: u8, flags: u8, slots: u32, values_len: usize) -> Vec<u8> {
    let capacity = HEADER_LEN + TOTALS_LEN + slots.div_ceil(8) as usize + values_len;
    let mut out = Vec::with_capacity(capacity);
    out.push(tag);
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
    let allowed = match tag {
        RAW_TAG => HAS_TOTALS,
        ROLLUP_TAG => 0,
        other => return Err(FormatError::UnknownTag(other)),
    };
    if flags & !allowed != 0 {
        let kind = if tag == RAW_TAG { "raw" } else { "rollup" };
        return Err(FormatError::UnknownFlags { kind, flags });
    }
    if flags & HAS_TOTALS == 0 {
        return Ok(Header {
            tag,
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
        tag,
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

fn put_summary(out: &mut Vec<u8>, s: &Summary) {
    put_u64(out, s.count);
    put_f64(out, s.sum);
    put_f64(out, s.min);
    put_f64(out, s.max);
    put_u64(out, s.first.time as u64);
    put_f64(out, s.first.value);
    put_u64(out, s.last.time as u64);
    put_f64(out, s.last.value);
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

fn summary_at(b: &[u8]) -> Summary {
    Summary {
        count: u64_at(b, 0),
        sum: f64_at(b, 8),
        min: f64_at(b, 16),
        max: f64_at(b, 24),
        first: Point::new(u64_at(b, 32) as i64, f64_at(b, 40)),
        last: Point::new(u64_at(b, 48) as i64, f64_at(b, 56)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::btree_map;
    use proptest::prelude::*;

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            Just(f64::NAN),
            Just(-0.0),
            Just(0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
        ]
    }

    fn any_summary() -> impl Strategy<Value = Summary> {
        (
            any::<u64>(),
            [any_f64(), any_f64(), any_f64(), any_f64(), any_f64()],
            any::<i64>(),
            any::<i64>(),
        )
            .prop_map(|(count, [sum, min, max, fv, lv], ft, lt)| Summary {
                count,
                sum,
                min,
                max,
                first: Point::new(ft, fv),
                last: Point::new(lt, lv),
            })
    }

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
                .prop_map(move |(totals, values)| Bucket::Raw {
                    slots,
                    totals,
                    values,
                })
        })
    }

    fn any_rollup() -> impl Strategy<Value = Bucket> {
        (1u32..4000).prop_flat_map(|slots| {
            btree_map(0..slots, any_summary(), 0..32usize.min(slots as usize))
                .prop_map(move |summaries| Bucket::Rollup { slots, summaries })
        })
    }

    /// Bit-exact equality: NaN payloads and the sign of zero must survive.
    fn assert_same(a: &Bucket, b: &Bucket) {
        assert_eq!(a.encode(), b.encode(), "{a:?} vs {b:?}");
        match (a, b) {
            (
                Bucket::Raw {
                    totals: ta,
                    values: va,
                    ..
                },
                Bucket::Raw {
                    totals: tb,
                    values: vb,
                    ..
                },
            ) => {
                let bits = |t: &Option<BucketTotals>| {
                    t.map(|t| (t.count, t.sum.to_bits(), t.min.to_bits(), t.max.to_bits()))
                };
                assert_eq!(bits(ta), bits(tb));
                let keys = |v: &BTreeMap<u32, f64>| {
                    v.iter().map(|(k, v)| (*k, v.to_bits())).collect::<Vec<_>>()
                };
                assert_eq!(keys(va), keys(vb));
            }
            (Bucket::Rollup { summaries: sa, .. }, Bucket::Rollup { summaries: sb, .. }) => {
                assert_eq!(sa.keys().collect::<Vec<_>>(), sb.keys().collect::<Vec<_>>());
                for (x, y) in sa.values().zip(sb.values()) {
                    assert_eq!(x.count, y.count);
                    for (p, q) in [
                        (x.sum, y.sum),
                        (x.min, y.min),
                        (x.max, y.max),
                        (x.first.value, y.first.value),
                        (x.last.value, y.last.value),
                    ] {
                        assert_eq!(p.to_bits(), q.to_bits());
                    }
                    assert_eq!((x.first.time, x.last.time), (y.first.time, y.last.time));
                }
            }
            _ => panic!("kinds differ: {a:?} vs {b:?}"),
        }
    }

    proptest! {
        #[test]
        fn raw_round_trips(bucket in any_raw()) {
            let decoded = Bucket::decode(&bucket.encode()).unwrap();
            assert_same(&bucket, &decoded);
            let Bucket::Raw { totals, .. } = &bucket else { unreachable!() };
            let peek = Bucket::peek(&bucket.encode()).unwrap();
            prop_assert!(!peek.rollup);
            prop_assert_eq!(peek.slots, bucket.slots());
            prop_assert_eq!(peek.totals.map(|t| t.sum.to_bits()), totals.map(|t| t.sum.to_bits()));
        }

        #[test]
        fn rollup_round_trips(bucket in any_rollup()) {
            let decoded = Bucket::decode(&bucket.encode()).unwrap();
            assert_same(&bucket, &decoded);
            prop_assert!(Bucket::peek(&bucket.encode()).unwrap().rollup);
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
        let shell = Bucket::empty_raw(3600);
        let bytes = shell.encode();
        assert_eq!(bytes.len(), HEADER_LEN + 450);
        assert_eq!(Bucket::decode(&bytes).unwrap(), shell);
        assert_eq!(Bucket::peek(&bytes).unwrap().totals, None);
        let rollup = Bucket::empty_rollup(60);
        assert_eq!(Bucket::decode(&rollup.encode()).unwrap(), rollup);
    }

    #[test]
    fn written_zero_is_kept_apart_from_unwritten() {
        let bucket = Bucket::Raw {
            slots: 10,
            totals: None,
            values: BTreeMap::from([(3, 0.0), (9, -0.0)]),
        };
        let Bucket::Raw { values, .. } = Bucket::decode(&bucket.encode()).unwrap() else {
            panic!("kind changed");
        };
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
        assert!(matches!(
            Bucket::decode(&[ROLLUP_TAG, HAS_TOTALS, 1, 0, 0, 0, 0]),
            Err(FormatError::UnknownFlags { .. })
        ));
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
