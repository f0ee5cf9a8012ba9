//! Gorilla's XOR float encoding, the fallback value encoding.
//!
//! ```text
//! v0: 64 bits
//! each next value, x = bits(v) XOR bits(previous):
//!   0                                  x == 0
//!   10 + `len` bits                    x fits the current window
//!   11 + lead (6) + len-1 (6) + `len` bits   a new window
//! ```
//!
//! A window is `(lead, len)`: the meaningful bits of `x` lie in bits `lead .. lead + len`
//! counted from the most significant. The window before the first `11` is `(0, 64)`, so
//! every stream is decodable. Invariant checked on decode: `lead + len <= 64`. Unlike
//! Gorilla, the encoder opens a new window whenever that is cheaper than reusing the
//! current one, not only when `x` does not fit it.
//!
//! It wins over the integer encodings when values share long runs of equal high and low
//! bits but their differences are large, e.g. values that jump between few magnitudes.

use super::bits::{BitReader, BitWriter};
use super::CodecError;
use crate::model::Point;

/// Bits of the `lead` and `len - 1` fields of a new window.
const FIELD_BITS: u32 = 6;

/// Writes the values of `points` (not empty).
pub(crate) fn encode(w: &mut BitWriter, points: &[Point]) {
    let Some((first, rest)) = points.split_first() else {
        return;
    };
    let mut prev = first.value.to_bits();
    w.write(prev, 64);
    let (mut lead, mut len) = (0u32, 64u32);
    for point in rest {
        let bits = point.value.to_bits();
        let x = bits ^ prev;
        prev = bits;
        if x == 0 {
            w.write_bit(false);
            continue;
        }
        let (x_lead, x_trail) = (x.leading_zeros(), x.trailing_zeros());
        let x_len = 64 - x_lead - x_trail;
        // Reuse the window when x fits it and that costs no more than opening a tight one
        // (12 bits of fields); otherwise a wide window, such as the initial one, would stick.
        let fits = x_lead >= lead && x_trail >= 64 - lead - len;
        if fits && len <= x_len + 2 * FIELD_BITS {
            w.write(0b10, 2);
            w.write(x >> (64 - lead - len), len);
        } else {
            (lead, len) = (x_lead, x_len);
            w.write(0b11, 2);
            w.write(u64::from(lead), FIELD_BITS);
            w.write(u64::from(len - 1), FIELD_BITS);
            w.write(x >> x_trail, len);
        }
    }
}

/// A lower bound on the bits [`encode`] takes for `points`: every changed value costs at
/// least its 2-bit prefix and its meaningful bits. Cheaper than encoding, so the caller can
/// skip this encoding when it cannot win.
pub(crate) fn min_bits(points: &[Point]) -> usize {
    let mut prev = points.first().map_or(0, |p| p.value.to_bits());
    let changes: usize = points
        .iter()
        .skip(1)
        .map(|p| {
            let x = p.value.to_bits() ^ prev;
            prev = p.value.to_bits();
            if x == 0 {
                1
            } else {
                (2 + 64 - x.leading_zeros() - x.trailing_zeros()) as usize
            }
        })
        .sum();
    64 + changes
}

/// Reads `points.len()` values into `points[..].value`.
pub(crate) fn decode(r: &mut BitReader<'_>, points: &mut [Point]) -> Result<(), CodecError> {
    let Some((first, rest)) = points.split_first_mut() else {
        return Ok(());
    };
    let mut prev = r.read(64);
    first.value = f64::from_bits(prev);
    let (mut lead, mut len) = (0u32, 64u32);
    for point in rest {
        if r.read_bit() {
            if r.read_bit() {
                lead = r.read(FIELD_BITS) as u32;
                len = r.read(FIELD_BITS) as u32 + 1;
                if lead + len > 64 {
                    return Err(CodecError::Corrupt("XOR window wider than 64 bits"));
                }
            }
            prev ^= r.read(len) << (64 - lead - len);
        }
        point.value = f64::from_bits(prev);
    }
    Ok(())
}
