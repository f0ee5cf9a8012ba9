//! A small bit writer and reader, most significant bit first.
//!
//! Bit order: the first bit written is the most significant bit of the first byte, and a
//! value of width `w` is written from its most significant bit down. A stream ends with
//! zero bits up to the next byte boundary.
//!
//! Both sides keep a `u64` accumulator so that a write or read costs a shift and an OR,
//! with a memory access only every 32 written bits or 56+ read bits. The reader never
//! fails and never panics: past the end of its bytes it reads zeros, and the caller asks
//! [`BitReader::finish`] whether it went past the end (a truncated or corrupt stream).

use super::CodecError;

/// The widest value a width field (7 bits, see [`BitWriter::write_prefixed`]) may announce.
const MAX_WIDTH: u32 = 64;
/// Bits in a width field: enough for 0..=64.
pub(crate) const WIDTH_FIELD_BITS: u32 = 7;

/// Number of significant bits in `v`: 0 for 0, 64 for values with the top bit set.
#[inline]
pub(crate) fn bit_width(v: u64) -> u32 {
    u64::BITS - v.leading_zeros()
}

/// Maps signed to unsigned so that small magnitudes of either sign get small codes:
/// 0, -1, 1, -2, 2, … become 0, 1, 2, 3, 4, …
#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`]; total, so any `u64` read from a corrupt block maps somewhere.
#[inline]
pub(crate) fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Appends bits to a byte vector.
///
/// Invariant between calls: the low `pending` bits of `acc` (`pending < 32`) are the
/// stream bits not yet pushed to `out`, oldest bit highest. Bits of `acc` above them are
/// stale and always shifted or masked away.
pub(crate) struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    pending: u32,
}

impl BitWriter {
    /// Starts a stream at the end of `out`, which may already hold whole bytes (a header).
    pub(crate) fn new(out: Vec<u8>) -> Self {
        Self {
            out,
            acc: 0,
            pending: 0,
        }
    }

    /// Writes the low `width` bits of `value` (`width <= 64`); higher bits are ignored.
    #[inline]
    pub(crate) fn write(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 64);
        if width > 32 {
            self.write_small(value >> 32, width - 32);
            self.write_small(value, 32);
        } else {
            self.write_small(value, width);
        }
    }

    #[inline]
    pub(crate) fn write_bit(&mut self, bit: bool) {
        self.write_small(u64::from(bit), 1);
    }

    /// Writes `value` as a 7-bit width `w` followed by its `w` significant bits, so that
    /// small numbers cost few bits and any `u64` still fits.
    pub(crate) fn write_prefixed(&mut self, value: u64) {
        let width = bit_width(value);
        self.write_small(u64::from(width), WIDTH_FIELD_BITS);
        self.write(value, width);
    }

    /// Writes the low `width` bits of every value. Same bits as calling [`Self::write`] for
    /// each, but the accumulator stays in registers for the whole run (through `self` the
    /// compiler must assume the output buffer may alias it and store it after every value).
    pub(crate) fn write_all(&mut self, values: &[u64], width: u32) {
        debug_assert!(width <= 64);
        let (mut acc, mut pending) = (self.acc, self.pending);
        match width {
            0 => {}
            1..=32 => values
                .iter()
                .for_each(|&v| push(&mut acc, &mut pending, &mut self.out, v, width)),
            _ => values.iter().for_each(|&v| {
                push(&mut acc, &mut pending, &mut self.out, v >> 32, width - 32);
                push(&mut acc, &mut pending, &mut self.out, v, 32);
            }),
        }
        (self.acc, self.pending) = (acc, pending);
    }

    #[inline]
    fn write_small(&mut self, value: u64, width: u32) {
        push(
            &mut self.acc,
            &mut self.pending,
            &mut self.out,
            value,
            width,
        );
    }

    /// Bits written so far, header bytes included.
    pub(crate) fn bit_len(&self) -> usize {
        self.out.len() * 8 + self.pending as usize
    }

    /// Pads the stream with zero bits to a byte boundary and returns the bytes.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        while self.pending >= 8 {
            self.pending -= 8;
            self.out.push((self.acc >> self.pending) as u8);
        }
        if self.pending > 0 {
            self.out.push((self.acc << (8 - self.pending)) as u8);
        }
        self.out
    }
}

/// Appends the low `width <= 32` bits of `value` to the accumulator, moving 32 bits to
/// `out` once it holds that many. With `pending < 32` on entry the accumulator cannot
/// overflow, and `pending < 32` again on return.
#[inline(always)]
fn push(acc: &mut u64, pending: &mut u32, out: &mut Vec<u8>, value: u64, width: u32) {
    debug_assert!(width <= 32 && *pending < 32);
    let mask = (1u64 << width) - 1;
    *acc = (*acc << width) | (value & mask);
    *pending += width;
    if *pending >= 32 {
        *pending -= 32;
        out.extend_from_slice(&((*acc >> *pending) as u32).to_be_bytes());
    }
}

/// Reads bits from a byte slice.
///
/// Invariants: the top `avail` bits of `acc` are the next stream bits; the bits below them
/// are either zero or the stream bits that follow (a refill may load a few bytes early and
/// OR them in again later, which changes nothing). `next` is the index of the first byte
/// not yet accounted for in `avail`; it may run past the end of `bytes`, where the stream
/// reads as zeros.
pub(crate) struct BitReader<'a> {
    bytes: &'a [u8],
    next: usize,
    acc: u64,
    avail: u32,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            next: 0,
            acc: 0,
            avail: 0,
        }
    }

    /// Reads `width` bits (`width <= 64`) as an unsigned number.
    #[inline]
    pub(crate) fn read(&mut self, width: u32) -> u64 {
        debug_assert!(width <= 64);
        if width > 56 {
            let high = self.read_small(32);
            let low = self.read_small(width - 32);
            return (high << (width - 32)) | low;
        }
        self.read_small(width)
    }

    #[inline]
    pub(crate) fn read_bit(&mut self) -> bool {
        self.read_small(1) != 0
    }

    /// Reads a value written by [`BitWriter::write_prefixed`].
    pub(crate) fn read_prefixed(&mut self) -> Result<u64, CodecError> {
        let width = self.read_small(WIDTH_FIELD_BITS) as u32;
        if width > MAX_WIDTH {
            return Err(CodecError::Corrupt("bit width above 64"));
        }
        Ok(self.read(width))
    }

    /// Reads a 7-bit width field and checks it is at most 64.
    #[inline]
    pub(crate) fn read_width(&mut self) -> Result<u32, CodecError> {
        let width = self.read_small(WIDTH_FIELD_BITS) as u32;
        if width > MAX_WIDTH {
            return Err(CodecError::Corrupt("bit width above 64"));
        }
        Ok(width)
    }

    /// The next 4 bits without consuming them (for prefix codes).
    #[inline]
    pub(crate) fn peek4(&mut self) -> u32 {
        if self.avail < 4 {
            self.refill();
        }
        (self.acc >> 60) as u32
    }

    /// Consumes `width` bits already made available by a peek of at least that many.
    #[inline]
    pub(crate) fn skip_peeked(&mut self, width: u32) {
        debug_assert!(width <= 4 && width <= self.avail);
        self.acc <<= width;
        self.avail -= width;
    }

    /// Reads `width <= 56` bits: the fast path for callers that know their width is small.
    /// `(acc >> 1) >> (63 - width)` is `acc >> (64 - width)` without the out-of-range shift
    /// when `width == 0`.
    #[inline(always)]
    pub(crate) fn read_small(&mut self, width: u32) -> u64 {
        debug_assert!(width <= 56);
        if self.avail < width {
            self.refill();
        }
        let value = (self.acc >> 1) >> (63 - width);
        self.acc <<= width;
        self.avail -= width;
        value
    }

    /// Tops `avail` up to at least 56 bits.
    #[inline]
    fn refill(&mut self) {
        let word = self
            .bytes
            .get(self.next..)
            .and_then(|rest| rest.first_chunk::<8>());
        if let Some(word) = word {
            // Loads 8 bytes, accounts only for the whole bytes that fit; the rest are
            // loaded again by the next refill (see the struct invariant).
            self.acc |= u64::from_be_bytes(*word) >> self.avail;
            let bytes = (63 - self.avail) / 8;
            self.next += bytes as usize;
            self.avail += bytes * 8;
        } else {
            self.refill_tail();
        }
    }

    /// Byte-at-a-time refill near the end of the slice, reading zeros past it.
    #[cold]
    fn refill_tail(&mut self) {
        while self.avail <= 56 {
            let byte = self.bytes.get(self.next).copied().unwrap_or(0);
            self.acc |= u64::from(byte) << (56 - self.avail);
            self.next += 1;
            self.avail += 8;
        }
    }

    /// Ends the stream: checks that no bit was read past the end of the slice and that the
    /// padding up to the byte boundary is zero, and returns the number of bytes the stream
    /// took, padding included.
    pub(crate) fn finish(self) -> Result<usize, CodecError> {
        let consumed = self.next * 8 - self.avail as usize;
        if consumed > self.bytes.len() * 8 {
            return Err(CodecError::Corrupt("block is truncated"));
        }
        let used = consumed.div_ceil(8);
        let padding = used * 8 - consumed;
        if padding > 0 {
            let last = self.bytes.get(used - 1).copied().unwrap_or(0);
            if last & ((1u8 << padding) - 1) != 0 {
                return Err(CodecError::Corrupt("nonzero padding bits"));
            }
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, 2, -2, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn writes_msb_first_and_pads_with_zeros() {
        let mut w = BitWriter::new(vec![0xAA]);
        w.write(0b101, 3);
        w.write_bit(true);
        assert_eq!(w.bit_len(), 12);
        assert_eq!(w.finish(), vec![0xAA, 0b1011_0000]);
    }

    #[test]
    fn mixed_widths_round_trip() {
        let items: Vec<(u64, u32)> = (0..=64u32)
            .flat_map(|w| {
                let max = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                [(0, w), (max, w), (max / 3, w)]
            })
            .collect();
        let mut w = BitWriter::new(Vec::new());
        for &(v, width) in &items {
            w.write(v, width);
            w.write_prefixed(v);
        }
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        for &(v, width) in &items {
            assert_eq!(r.read(width), v);
            assert_eq!(r.read_prefixed(), Ok(v));
        }
        assert_eq!(r.finish(), Ok(bytes.len()));
    }

    #[test]
    fn write_all_matches_single_writes() {
        let values = [0, 1, u64::MAX, 0x1234_5678_9ABC_DEF0, 7];
        for width in 0..=64 {
            let mut one = BitWriter::new(vec![1]);
            let mut all = BitWriter::new(vec![1]);
            one.write(3, 5);
            all.write(3, 5);
            values.iter().for_each(|&v| one.write(v, width));
            all.write_all(&values, width);
            assert_eq!(one.finish(), all.finish(), "width {width}");
        }
    }

    #[test]
    fn reading_past_the_end_is_reported() {
        let mut r = BitReader::new(&[0xFF]);
        assert_eq!(r.read(8), 0xFF);
        assert_eq!(r.finish(), Ok(1));
        let mut r = BitReader::new(&[0xFF]);
        assert_eq!(r.read(12), 0xFF0);
        assert!(r.finish().is_err());
    }

    #[test]
    fn nonzero_padding_is_reported() {
        let mut r = BitReader::new(&[0b1010_0001]);
        assert_eq!(r.read(3), 0b101);
        assert!(r.finish().is_err());
    }
}
