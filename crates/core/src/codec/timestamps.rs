//! The timestamp section: delta-of-delta, Gorilla style.
//!
//! ```text
//! t0: 64 bits, two's complement
//! if n >= 2: the integer series of the n-1 deltas t(i) - t(i-1) (see `ints`),
//!            whose codes are therefore the deltas of deltas
//! zero bits to the byte boundary
//! ```
//!
//! A regular series (every delta equal) has all delta-of-deltas 0: the group mode then
//! spends 1 bit per 32 points (7 bits per 32 in version 1 blocks). Deltas wrap, so times in any order,
//! duplicates and `i64::MIN`/`i64::MAX` neighbours all round-trip.

use super::bits::{BitReader, BitWriter};
use super::{ints, CodecError};
use crate::model::Point;

/// Appends the timestamp section of `points` (not empty) to `out`.
pub(crate) fn encode(out: Vec<u8>, points: &[Point]) -> Vec<u8> {
    let mut w = BitWriter::new(out);
    let Some((first, rest)) = points.split_first() else {
        return w.finish();
    };
    w.write(first.time as u64, 64);
    let deltas: Vec<i64> = points
        .iter()
        .zip(rest)
        .map(|(a, b)| b.time.wrapping_sub(a.time))
        .collect();
    ints::encode(&mut w, &deltas);
    w.finish()
}

/// Reads the timestamp section into `points[..].time` and returns the bytes it took.
pub(crate) fn decode(
    bytes: &[u8],
    widths: ints::Widths,
    points: &mut [Point],
) -> Result<usize, CodecError> {
    let mut r = BitReader::new(bytes);
    let Some((first, rest)) = points.split_first_mut() else {
        return Ok(0);
    };
    let mut time = r.read(64) as i64;
    first.time = time;
    ints::decode(&mut r, widths, rest, |point, delta| {
        time = time.wrapping_add(delta);
        point.time = time;
    })?;
    r.finish()
}
