//! Integer series: the packing shared by timestamps (as deltas) and by values (as
//! decimal mantissas or order-preserving float keys).
//!
//! A series `x0, x1, …, x(m-1)` (m >= 1) is written as:
//!
//! ```text
//! prefixed(zigzag(x0))
//! if m >= 2:
//!   prefixed(g)            g >= 1: the gcd of every |x(i) - x(i-1)|, or 1 if all are 0
//!   mode: 2 bits           00 = groups, 01 = buckets, 10 = bounded (version 3;
//!                          versions 1 and 2: 1 bit, 0 = groups, 1 = buckets)
//!   m-1 codes of zigzag((x(i) - x(i-1)) / g), packed as the mode says
//! ```
//!
//! `prefixed(v)` is a 7-bit width `w` then the `w` significant bits of `v`. Differences
//! wrap (two's complement), so any `i64` series round-trips, and dividing by the gcd is
//! exact, so the decoder's wrapping multiply restores every difference.
//!
//! Why both modes: **groups** (of [`GROUP`] codes, each a width then every code in that
//! width) cost 1/32 bit per code when all codes are 0 and stay within a bit of the largest
//! code when they are all alike (jitter, random walks). A group's width is written as one
//! bit `1` when it equals the previous group's (the first group's "previous" is 0), else
//! `0` and the 7-bit width ([`Widths::Repeated`], block version 2); version 1 blocks wrote
//! the 7-bit width before every group ([`Widths::EveryGroup`]), 0.22 bit per code.
//! **Buckets** (Gorilla's prefix code, see [`bucket_of`]) cost 1 bit per zero and spend
//! bits only on the codes that are not, so they win when a few outliers would widen whole
//! groups (a regular series with one late point). **Bounded** (version 3) writes the
//! largest code `M` once, then every code in a truncated binary code over the `M + 1`
//! values `0..=M`: `k = floor(log2(M + 1))` bits for the `2^(k+1) - (M + 1)` smallest
//! codes, `k + 1` for the rest. It wins on codes spread evenly below a bound that is not a
//! power of two — the steps of a random walk rounded to 2 decimals fall in `0..=202` and
//! take 7.74 bits where groups take 8.03. The encoder computes every mode's size and writes
//! the smallest (groups, then buckets, then bounded on a tie).
//!
//! Why the gcd: timestamps written with `precision=s` or `ms` are multiples of 10^9 or
//! 10^6 ns, and non-periodic series have irregular differences that are still
//! multiples of those; floats converted from `f32` differ by multiples of 2^29 ulps.

use super::bits::{bit_width, unzigzag, zigzag, BitReader, BitWriter, WIDTH_FIELD_BITS};
use super::CodecError;

/// Codes per group in the group mode. 32 keeps the width field at 7/32 bit per code while
/// letting the width follow a series whose spread changes within a 160-point block.
const GROUP: usize = 32;

/// What the block format version changes in an integer series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Widths {
    /// Version 1: a 7-bit width before every group; a 1-bit mode.
    EveryGroup,
    /// Version 2: `1` for the previous group's width, else `0` + 7 bits; a 1-bit mode.
    Repeated,
    /// Version 3 (written today): widths as version 2; a 2-bit mode with bounded codes.
    Bounded,
}

/// How the codes of a series are packed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Groups,
    Buckets,
    /// Truncated binary below the largest code, which is at least 1.
    Bounded(u64),
}

impl Mode {
    fn code(self) -> u64 {
        match self {
            Self::Groups => 0,
            Self::Buckets => 1,
            Self::Bounded(_) => 2,
        }
    }
}

/// Bits of the mode field in version 3.
const MODE_BITS: u32 = 2;

/// A series ready to write, with its exact size known, so that callers can compare
/// encodings without writing the losers.
#[derive(Default)]
pub(crate) struct Plan {
    /// `zigzag(x0)`; `None` for an empty series, which writes nothing.
    first: Option<u64>,
    gcd: u64,
    codes: Vec<u64>,
    mode: Mode,
    bits: usize,
}

impl Plan {
    /// Plans the series `xs`.
    pub(crate) fn new(xs: &[i64]) -> Self {
        let Some((&first, rest)) = xs.split_first() else {
            return Self::default();
        };
        let first = zigzag(first);
        let mut plan = Self {
            first: Some(first),
            gcd: 1,
            bits: prefixed_bits(first),
            ..Self::default()
        };
        if rest.is_empty() {
            return plan;
        }
        let diffs = xs.iter().zip(rest).map(|(a, b)| b.wrapping_sub(*a));
        let g = diffs
            .clone()
            .try_fold(0u64, |g, d| match gcd(g, d.unsigned_abs()) {
                1 => None,
                g => Some(g),
            })
            .unwrap_or(1)
            .max(1);
        plan.codes = if g == 1 {
            diffs.map(zigzag).collect()
        } else {
            diffs.map(|d| zigzag(div_exact(d, g))).collect()
        };
        plan.gcd = g;
        let mut best = (group_cost(&plan.codes), Mode::Groups);
        let buckets = bucket_cost(&plan.codes);
        if buckets < best.0 {
            best = (buckets, Mode::Buckets);
        }
        let largest = plan.codes.iter().copied().max().unwrap_or(0);
        if let Some(bounded) = TruncatedBinary::new(largest) {
            let bits = prefixed_bits(largest) + bounded.cost(&plan.codes);
            if bits < best.0 {
                best = (bits, Mode::Bounded(largest));
            }
        }
        plan.mode = best.1;
        plan.bits += prefixed_bits(g) + MODE_BITS as usize + best.0;
        plan
    }

    /// Exactly the bits [`Self::write`] writes.
    pub(crate) fn bits(&self) -> usize {
        self.bits
    }

    pub(crate) fn write(&self, w: &mut BitWriter) {
        let Some(first) = self.first else {
            return;
        };
        w.write_prefixed(first);
        if self.codes.is_empty() {
            return;
        }
        w.write_prefixed(self.gcd);
        w.write(self.mode.code(), MODE_BITS);
        match self.mode {
            Mode::Groups => {
                let mut previous = 0;
                for group in self.codes.chunks(GROUP) {
                    previous = write_group(w, group, previous);
                }
            }
            Mode::Buckets => self.codes.iter().for_each(|&z| write_bucket(w, z)),
            Mode::Bounded(largest) => {
                w.write_prefixed(largest);
                if let Some(bounded) = TruncatedBinary::new(largest) {
                    self.codes.iter().for_each(|&z| bounded.write(w, z));
                }
            }
        }
    }
}

/// Writes the series `xs` (an empty slice writes nothing).
pub(crate) fn encode(w: &mut BitWriter, xs: &[i64]) {
    Plan::new(xs).write(w);
}

fn prefixed_bits(v: u64) -> usize {
    (WIDTH_FIELD_BITS + bit_width(v)) as usize
}

/// Reads a series of `out.len()` integers, calling `put(slot, x)` for each in order.
///
/// Never panics: a corrupt stream yields `Err` or garbage numbers, and reads past the end
/// are zeros that the caller detects with [`BitReader::finish`].
#[inline]
pub(crate) fn decode<T>(
    r: &mut BitReader<'_>,
    widths: Widths,
    out: &mut [T],
    mut put: impl FnMut(&mut T, i64),
) -> Result<(), CodecError> {
    let Some((first, rest)) = out.split_first_mut() else {
        return Ok(());
    };
    let mut x = unzigzag(r.read_prefixed()?);
    put(first, x);
    if rest.is_empty() {
        return Ok(());
    }
    let g = r.read_prefixed()?;
    if g == 0 {
        return Err(CodecError::Corrupt("integer series gcd is zero"));
    }
    let mode = match widths {
        Widths::EveryGroup | Widths::Repeated => match r.read_bit() {
            false => Mode::Groups,
            true => Mode::Buckets,
        },
        Widths::Bounded => match r.read(MODE_BITS) {
            0 => Mode::Groups,
            1 => Mode::Buckets,
            2 => Mode::Bounded(r.read_prefixed()?),
            _ => return Err(CodecError::Corrupt("unknown integer series mode")),
        },
    };
    if g == 1 {
        let step = |slot: &mut T, z: u64| {
            x = x.wrapping_add(unzigzag(z));
            put(slot, x);
        };
        read_codes(r, widths, rest, mode, step)
    } else {
        let g = g as i64;
        let step = |slot: &mut T, z: u64| {
            x = x.wrapping_add(unzigzag(z).wrapping_mul(g));
            put(slot, x);
        };
        read_codes(r, widths, rest, mode, step)
    }
}

#[inline]
fn read_codes<T>(
    r: &mut BitReader<'_>,
    widths: Widths,
    out: &mut [T],
    mode: Mode,
    mut step: impl FnMut(&mut T, u64),
) -> Result<(), CodecError> {
    if let Mode::Bounded(largest) = mode {
        let bounded = TruncatedBinary::new(largest).ok_or(CodecError::Corrupt(
            "bounded codes need a largest code of 1 to 2^63",
        ))?;
        for slot in out {
            step(slot, bounded.read(r));
        }
    } else if mode == Mode::Buckets {
        for slot in out {
            step(slot, read_bucket(r));
        }
    } else {
        let mut previous = 0;
        for group in out.chunks_mut(GROUP) {
            let width = match widths {
                Widths::Repeated | Widths::Bounded if r.read_bit() => previous,
                _ => r.read_width()?,
            };
            previous = width;
            // One branch per group rather than per code: most widths take the short read.
            match width {
                0 => group.iter_mut().for_each(|slot| step(slot, 0)),
                width @ 1..=56 => group
                    .iter_mut()
                    .for_each(|slot| step(slot, r.read_small(width))),
                width => group.iter_mut().for_each(|slot| step(slot, r.read(width))),
            }
        }
    }
    Ok(())
}

/// `d / g` for a `g` that divides `d`, exact for every `i64` (including `i64::MIN`, whose
/// magnitude does not fit an `i64`): the quotient times `g`, wrapping, is `d` again.
fn div_exact(d: i64, g: u64) -> i64 {
    let q = (d.unsigned_abs() / g) as i64;
    if d < 0 {
        q.wrapping_neg()
    } else {
        q
    }
}

/// Binary gcd; `gcd(0, b) == b`.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    if a == 0 || b == 0 {
        return a | b;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// Bits the group mode takes for `codes`.
fn group_cost(codes: &[u64]) -> usize {
    let mut previous = 0;
    codes
        .chunks(GROUP)
        .map(|g| {
            let width = group_width(g);
            let field = width_field_bits(width, previous);
            previous = width;
            field + g.len() * width as usize
        })
        .sum()
}

/// Bits of a group's width field after a group of width `previous`.
fn width_field_bits(width: u32, previous: u32) -> usize {
    if width == previous {
        1
    } else {
        1 + WIDTH_FIELD_BITS as usize
    }
}

fn group_width(group: &[u64]) -> u32 {
    bit_width(group.iter().fold(0, |acc, &z| acc | z))
}

/// Writes a group after one of width `previous`; returns this group's width.
fn write_group(w: &mut BitWriter, group: &[u64], previous: u32) -> u32 {
    let width = group_width(group);
    w.write_bit(width == previous);
    if width != previous {
        w.write(u64::from(width), WIDTH_FIELD_BITS);
    }
    w.write_all(group, width);
    width
}

/// The truncated binary code of `0..=largest`: `k = floor(log2(largest + 1))` bits for
/// codes below `short = 2^(k+1) - (largest + 1)`, and `code + short` in `k + 1` bits
/// for the rest.
#[derive(Clone, Copy)]
struct TruncatedBinary {
    k: u32,
    short: u64,
}

impl TruncatedBinary {
    /// `None` unless `1 <= largest < 2^63`: at least a bit per code (the decoder's
    /// allocation bound relies on it) and `k + 1 <= 64`.
    fn new(largest: u64) -> Option<Self> {
        if largest == 0 || largest >= 1 << 63 {
            return None;
        }
        let n = largest + 1;
        let k = 63 - n.leading_zeros();
        // 2^(k+1) - n < 2^64 even when k = 63 (then every code is short).
        let short = ((2u128 << k) - u128::from(n)) as u64;
        Some(Self { k, short })
    }

    fn cost(self, codes: &[u64]) -> usize {
        let long = codes.iter().filter(|&&z| z >= self.short).count();
        codes.len() * self.k as usize + long
    }

    fn write(self, w: &mut BitWriter, z: u64) {
        if z < self.short {
            w.write(z, self.k);
        } else {
            w.write(z + self.short, self.k + 1);
        }
    }

    /// Never above `largest`: `k + 1` bits hold at most `2^(k+1) - 1`, minus `short`.
    #[inline]
    fn read(self, r: &mut BitReader<'_>) -> u64 {
        let high = r.read(self.k);
        if high < self.short {
            high
        } else {
            ((high << 1) | u64::from(r.read_bit())) - self.short
        }
    }
}

/// Gorilla's timestamp buckets, widened for 64-bit codes: `(prefix, prefix bits, payload
/// bits)` for the smallest bucket that holds `z`.
///
/// | prefix | payload | holds        |
/// |--------|---------|--------------|
/// | `0`    | 0       | 0            |
/// | `10`   | 8       | < 2^8        |
/// | `110`  | 16      | < 2^16       |
/// | `1110` | 32      | < 2^32       |
/// | `1111` | 64      | any          |
fn bucket_of(z: u64) -> (u64, u32, u32) {
    match bit_width(z) {
        0 => (0b0, 1, 0),
        1..=8 => (0b10, 2, 8),
        9..=16 => (0b110, 3, 16),
        17..=32 => (0b1110, 4, 32),
        _ => (0b1111, 4, 64),
    }
}

fn bucket_cost(codes: &[u64]) -> usize {
    codes
        .iter()
        .map(|&z| {
            let (_, prefix_bits, payload_bits) = bucket_of(z);
            (prefix_bits + payload_bits) as usize
        })
        .sum()
}

fn write_bucket(w: &mut BitWriter, z: u64) {
    let (prefix, prefix_bits, payload_bits) = bucket_of(z);
    w.write(prefix, prefix_bits);
    w.write(z, payload_bits);
}

#[inline]
fn read_bucket(r: &mut BitReader<'_>) -> u64 {
    // Leading ones of the 4-bit peek select the bucket; the prefix is ones + 1 bits long,
    // except the last bucket's, which has no closing zero.
    let ones = (r.peek4() << 28).leading_ones();
    let (prefix_bits, payload_bits) = match ones {
        0 => (1, 0),
        1 => (2, 8),
        2 => (3, 16),
        3 => (4, 32),
        _ => (4, 64),
    };
    r.skip_peeked(prefix_bits);
    r.read(payload_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(xs: &[i64]) -> usize {
        let mut w = BitWriter::new(Vec::new());
        let plan = Plan::new(xs);
        plan.write(&mut w);
        let bits = w.bit_len();
        assert_eq!(plan.bits(), bits);
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        let mut out = vec![0i64; xs.len()];
        decode(&mut r, Widths::Bounded, &mut out, |slot, x| *slot = x).unwrap();
        assert_eq!(r.finish(), Ok(bytes.len()));
        assert_eq!(out, xs);
        bits
    }

    proptest::proptest! {
        /// The planned size is what the comparison between encodings relies on.
        #[test]
        fn planned_bits_match_written_bits(
            xs in proptest::collection::vec(
                proptest::prop_oneof![proptest::prelude::any::<i64>(), -300i64..300],
                0..300,
            )
        ) {
            round_trip(&xs);
        }
    }

    #[test]
    fn extremes_round_trip() {
        round_trip(&[]);
        round_trip(&[i64::MIN]);
        round_trip(&[i64::MIN, i64::MAX, i64::MIN, 0, -1, i64::MAX]);
        round_trip(&[i64::MIN, 0, i64::MIN]);
        round_trip(&[5, 5, 5, 5]);
    }

    #[test]
    fn gcd_divides_out_common_steps() {
        let xs: Vec<i64> = (0..100).map(|i| i * i * 1_000_000_000).collect();
        let bits = round_trip(&xs);
        // Differences are 10^9·(2i+1): without the gcd each would take ~40 bits.
        assert!(bits < 100 * 10, "{bits} bits");
    }

    #[test]
    fn one_outlier_picks_buckets() {
        let mut xs = vec![0i64; 200];
        xs[100] = 1 << 40;
        let bits = round_trip(&xs);
        assert!(bits < 200 + 2 * 68 + 30, "{bits} bits");
    }

    #[test]
    fn a_constant_series_costs_a_fraction_of_a_bit() {
        let xs = vec![-7i64; 320];
        assert!(round_trip(&xs) < 100);
    }

    #[test]
    fn evenly_spread_steps_take_the_bounded_mode() {
        // Steps in -101..=101, as a random walk rounded to 2 decimals: codes 0..=202.
        let mut x = 0i64;
        let xs: Vec<i64> = (0..3000i64)
            .map(|i| {
                x += (i * 7919 % 203) - 101;
                x
            })
            .collect();
        assert_eq!(Plan::new(&xs).mode, Mode::Bounded(202));
        let bits = round_trip(&xs);
        assert!(bits < 3000 * 78 / 10, "{bits} bits");
    }

    #[test]
    fn truncated_binary_round_trips_at_every_bound() {
        for largest in [1, 2, 3, 4, 5, 7, 8, 202, 255, 256, (1 << 63) - 1] {
            let code = TruncatedBinary::new(largest).unwrap();
            let codes: Vec<u64> = [0, 1, largest / 2, largest - 1, largest].to_vec();
            let mut w = BitWriter::new(Vec::new());
            codes.iter().for_each(|&z| code.write(&mut w, z));
            assert_eq!(w.bit_len(), code.cost(&codes));
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            let back: Vec<u64> = codes.iter().map(|_| code.read(&mut r)).collect();
            assert_eq!(back, codes, "largest {largest}");
        }
        assert!(TruncatedBinary::new(0).is_none());
        assert!(TruncatedBinary::new(1 << 63).is_none());
    }

    #[test]
    fn div_exact_handles_min() {
        for (d, g) in [(i64::MIN, 1), (i64::MIN, 1 << 63), (-6, 3), (6, 3)] {
            let q = div_exact(d, g);
            assert_eq!((q as u64).wrapping_mul(g) as i64, d);
        }
    }

    #[test]
    fn gcd_basics() {
        assert_eq!(gcd(0, 0), 0);
        assert_eq!(gcd(0, 12), 12);
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(1 << 63, 1 << 62), 1 << 62);
    }
}
