//! The value section: one tag byte, then a bit stream in the encoding it names.
//!
//! | tag | encoding | stream |
//! |-----|----------|--------|
//! | 0 | decimal | exponent `e` (4 bits), then the integer series (see `ints`) of the mantissas `n`, where each value is `n as f64 / 10^e` |
//! | 1 | float keys | the integer series of the order-preserving keys of the values' bits ([`float_key`]) |
//! | 2 | XOR | Gorilla's XOR stream (see `xor`) |
//!
//! The encoder sizes every encoding that applies and writes the shortest (ties go to the
//! lower tag, the faster to decode). The integer encodings are sized exactly without being
//! written; XOR is written only when a lower bound says it could win. Decimal applies only
//! when every value is exactly some `n / 10^e`, checked bit for bit, so it is lossless by
//! construction.

use super::bits::{BitReader, BitWriter};
use super::{ints, xor, CodecError};
use crate::model::Point;

const TAG_DECIMAL: u8 = 0;
const TAG_FLOAT_KEYS: u8 = 1;
const TAG_XOR: u8 = 2;

/// Largest decimal exponent the encoder tries. Metrics rarely carry more than a dozen
/// decimals; beyond that the mantissas grow as wide as the float keys anyway.
const MAX_ENCODER_DECIMALS: usize = 12;
/// Bits of the exponent field; the decoder accepts every exponent they can hold.
const EXPONENT_BITS: u32 = 4;

/// 10^e for every exponent the field can hold. Each is exactly representable (up to 10^22
/// are), so `n as f64 / 10^e` is one correctly rounded division on every platform.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// 2^63 as f64: mantissas must lie in `[-2^63, 2^63)` to convert to `i64` exactly.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// Appends the value section (tag byte and stream) of `points` (not empty) to `out`.
pub(crate) fn encode(mut out: Vec<u8>, points: &[Point]) -> Vec<u8> {
    let keys: Vec<i64> = points
        .iter()
        .map(|p| float_key(p.value.to_bits()))
        .collect();
    let mut best = Candidate::Ints(TAG_FLOAT_KEYS, None, ints::Plan::new(&keys));
    if let Some((e, mantissas)) = find_decimal(points) {
        let decimal = Candidate::Ints(TAG_DECIMAL, Some(e), ints::Plan::new(&mantissas));
        if decimal.bits() <= best.bits() {
            best = decimal;
        }
    }
    // XOR rarely wins; its lower bound rules it out at a fraction of an encode.
    if xor::min_bits(points) < best.bits() {
        let mut w = BitWriter::new(Vec::with_capacity(points.len() * 8));
        xor::encode(&mut w, points);
        if w.bit_len() < best.bits() {
            best = Candidate::Xor(w.finish());
        }
    }
    match best {
        Candidate::Ints(tag, exponent, plan) => {
            out.push(tag);
            let mut w = BitWriter::new(out);
            if let Some(e) = exponent {
                w.write(e as u64, EXPONENT_BITS);
            }
            plan.write(&mut w);
            w.finish()
        }
        Candidate::Xor(stream) => {
            out.push(TAG_XOR);
            out.extend_from_slice(&stream);
            out
        }
    }
}

/// An encoding considered for a block: planned (size known, nothing written yet) for the
/// integer encodings, already written for XOR.
enum Candidate {
    /// Tag, decimal exponent if decimal, and the integer series.
    Ints(u8, Option<usize>, ints::Plan),
    Xor(Vec<u8>),
}

impl Candidate {
    /// Bits of the stream after the tag byte.
    fn bits(&self) -> usize {
        match self {
            Candidate::Ints(_, exponent, plan) => {
                plan.bits() + exponent.map_or(0, |_| EXPONENT_BITS as usize)
            }
            Candidate::Xor(stream) => stream.len() * 8,
        }
    }
}

/// Reads a value section into `points[..].value` and returns the bytes it took.
pub(crate) fn decode(
    bytes: &[u8],
    widths: ints::Widths,
    points: &mut [Point],
) -> Result<usize, CodecError> {
    let (&tag, stream) = bytes
        .split_first()
        .ok_or(CodecError::Corrupt("value section is missing"))?;
    let mut r = BitReader::new(stream);
    match tag {
        TAG_DECIMAL => {
            let e = r.read(EXPONENT_BITS) as usize;
            let scale = *POW10.get(e).ok_or(CodecError::Corrupt("bad exponent"))?;
            ints::decode(&mut r, widths, points, |p, n| {
                p.value = from_decimal(n, scale)
            })?;
        }
        TAG_FLOAT_KEYS => {
            ints::decode(&mut r, widths, points, |p, key| {
                p.value = f64::from_bits(float_key(key as u64) as u64);
            })?;
        }
        TAG_XOR => xor::decode(&mut r, points)?,
        _ => return Err(CodecError::Corrupt("unknown value encoding")),
    }
    Ok(1 + r.finish()?)
}

/// The smallest exponent `e <= MAX_ENCODER_DECIMALS` at which every value is exactly a
/// decimal `n / 10^e`, with the mantissas. Most exponents fail on the first value, so the
/// search costs little more than one pass.
fn find_decimal(points: &[Point]) -> Option<(usize, Vec<i64>)> {
    let mut mantissas = Vec::with_capacity(points.len());
    'exponents: for (e, &scale) in POW10.iter().enumerate().take(MAX_ENCODER_DECIMALS + 1) {
        mantissas.clear();
        for p in points {
            match to_decimal(p.value, scale) {
                Some(n) => mantissas.push(n),
                None => continue 'exponents,
            }
        }
        return Some((e, mantissas));
    }
    None
}

/// The mantissa `n` with `from_decimal(n, scale)` bit-identical to `v`, if there is one.
/// NaN, infinities and -0.0 never qualify (no integer divides back to them).
#[inline]
fn to_decimal(v: f64, scale: f64) -> Option<i64> {
    let scaled = (v * scale).round();
    if !(-TWO_POW_63..TWO_POW_63).contains(&scaled) {
        return None;
    }
    let n = scaled as i64;
    (from_decimal(n, scale).to_bits() == v.to_bits()).then_some(n)
}

#[inline]
fn from_decimal(n: i64, scale: f64) -> f64 {
    n as f64 / scale
}

/// Maps f64 bits to an `i64` whose order is the floats' numeric order (with -0.0 just
/// below +0.0 and NaNs at the ends), so that close values get close keys and small
/// deltas. Negative floats (sign-magnitude) get their magnitude bits flipped, turning
/// sign-magnitude into two's complement order. The map is its own inverse.
#[inline]
pub(crate) fn float_key(bits: u64) -> i64 {
    let signed = bits as i64;
    signed ^ (((signed >> 63) as u64) >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_key_is_monotone_and_self_inverse() {
        let ordered = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE,
            -5e-324,
            -0.0,
            0.0,
            5e-324,
            1.0,
            f64::INFINITY,
        ];
        let keys: Vec<i64> = ordered.iter().map(|v| float_key(v.to_bits())).collect();
        assert!(keys.windows(2).all(|k| k[0] < k[1]), "{keys:?}");
        for v in ordered {
            assert_eq!(float_key(float_key(v.to_bits()) as u64) as u64, v.to_bits());
        }
    }

    fn chosen_tag(values: impl IntoIterator<Item = f64>) -> u8 {
        let points: Vec<Point> = values.into_iter().map(|v| Point::new(0, v)).collect();
        let section = encode(Vec::new(), &points);
        let mut decoded = vec![Point::new(0, 0.0); points.len()];
        assert_eq!(
            decode(&section, ints::Widths::Bounded, &mut decoded),
            Ok(section.len())
        );
        assert!(points.iter().zip(&decoded).all(|(a, b)| a.bit_eq(b)));
        section[0]
    }

    #[test]
    fn each_encoding_wins_where_it_should() {
        let walk = |i: i32| 50.0 + f64::from(i % 17) - f64::from(i % 5) * 0.37;
        assert_eq!(
            chosen_tag((0..160).map(|i| (walk(i) * 100.0).round() / 100.0)),
            TAG_DECIMAL
        );
        assert_eq!(chosen_tag((0..160).map(|i| walk(i).sqrt())), TAG_FLOAT_KEYS);
        // Mixed signs and scales with short mantissas: the keys of negative values have
        // their low bits set, so no gcd helps, while the XORs stay in the top 16 bits.
        let short = |i: i32| {
            let sign = if i * 7 % 3 == 0 { -1.0 } else { 1.0 };
            sign * 2f64.powi(-(i % 11)) * (1.0 + f64::from(i % 5) / 8.0)
        };
        assert_eq!(chosen_tag((0..160).map(short)), TAG_XOR);
    }

    #[test]
    fn corrupt_sections_are_refused() {
        let mut points = vec![Point::new(0, 0.0); 3];
        assert!(decode(&[], ints::Widths::Bounded, &mut points).is_err());
        assert!(decode(&[3, 0], ints::Widths::Bounded, &mut points).is_err());
        // XOR: a new window with lead 63 and length 64.
        let mut w = BitWriter::new(vec![TAG_XOR]);
        w.write(0, 64);
        w.write(0b11, 2);
        w.write(63, 6);
        w.write(63, 6);
        assert!(decode(&w.finish(), ints::Widths::Bounded, &mut points).is_err());
    }

    #[test]
    fn decimal_finds_the_smallest_exponent() {
        let points = |vs: &[f64]| vs.iter().map(|&v| Point::new(0, v)).collect::<Vec<_>>();
        assert_eq!(find_decimal(&points(&[1.0, -3.0])), Some((0, vec![1, -3])));
        assert_eq!(
            find_decimal(&points(&[23.93, 0.1])),
            Some((2, vec![2393, 10]))
        );
        assert_eq!(find_decimal(&points(&[0.5, -0.0])), None);
        assert_eq!(find_decimal(&points(&[f64::NAN])), None);
        assert_eq!(find_decimal(&points(&[1e300])), None);
        assert_eq!(find_decimal(&points(&[std::f64::consts::PI])), None);
    }
}
