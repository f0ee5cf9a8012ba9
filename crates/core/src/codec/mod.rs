//! The sealed-segment block codec: a value segment's points compressed into one block.
//!
//! The byte layout, every encoding and the invariants are specified in
//! `docs/format/segment-block.md`; in short:
//!
//! ```text
//! version (1 byte) · n (LEB128) · [n > 0: timestamp section · value section]
//! ```
//!
//! - `bits`: the MSB-first bit writer and reader every section uses.
//! - `ints`: integer series (first value, gcd, deltas in groups or Gorilla buckets),
//!   shared by timestamps and two value encodings.
//! - `timestamps`: delta-of-delta timestamps.
//! - `values`: the per-block choice of value encoding (decimal, float keys, XOR).
//! - `xor`: Gorilla's XOR floats.
//! - `summaries`: blocks of rollup slot summaries, column by column with these sections.
//!
//! Contract: [`decode_block`] of [`encode_block`] returns the same points in the same
//! order, bit for bit, for any times (any order, duplicates, extremes) and any f64 bit
//! patterns. [`decode_block`] never panics and allocates at most
//! [`MAX_POINTS_PER_BYTE`] points per input byte, whatever the input.

mod bits;
mod ints;
mod summaries;
mod timestamps;
mod values;
mod xor;

#[cfg(test)]
mod tests;

use crate::model::Point;
use thiserror::Error;

pub use summaries::{decode_summaries, encode_summaries, SummaryError};

/// Why a block could not be decoded: it is truncated or corrupt, or was written by a newer
/// format version. The message names the check that failed.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("segment block is truncated or corrupt: {0}")]
    Corrupt(&'static str),
}

/// The format version written in a block's first byte. Bump it for any change to the
/// layout; decoders keep reading every older version. Version 3 adds the bounded mode of
/// integer series (a 2-bit mode field); version 2 writes a group's width as one bit when
/// it repeats the previous group's; version 1 wrote 7 bits every group.
pub const FORMAT_VERSION: u8 = 3;

/// A bound on points per block byte that every valid block respects, so a corrupt count
/// cannot make the decoder allocate more than this many points per byte of input.
///
/// Why it holds: each point costs at least 1/32 bit in each of the two sections (a group
/// of 32 zero codes is one repeated-width bit), so a point takes at least 2/32 bit and a
/// byte holds at most 128 points.
pub const MAX_POINTS_PER_BYTE: usize = 128;

/// Compresses points into one block. Accepts any i64 times and any f64 bit patterns, in
/// any order; the block records them as given.
pub fn encode_block(points: &[Point]) -> Vec<u8> {
    // Room for a full-precision block (~6.3 bytes per point) without reallocating.
    let mut out = Vec::with_capacity(32 + points.len() * 8);
    out.push(FORMAT_VERSION);
    write_varint(&mut out, points.len() as u64);
    if points.is_empty() {
        return out;
    }
    let out = timestamps::encode(out, points);
    values::encode(out, points)
}

/// Restores exactly the points given to [`encode_block`], bit for bit.
///
/// Errors with [`CodecError::Corrupt`] on an unknown version, a truncated block, trailing
/// bytes, or any field out of range; never panics.
pub fn decode_block(bytes: &[u8]) -> Result<Vec<Point>, CodecError> {
    let (&version, rest) = bytes
        .split_first()
        .ok_or(CodecError::Corrupt("empty block"))?;
    let widths = widths_of(version)?;
    let (count, rest) = read_varint(rest)?;
    let limit = bytes.len().saturating_mul(MAX_POINTS_PER_BYTE);
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= limit)
        .ok_or(CodecError::Corrupt(
            "point count exceeds what the block can hold",
        ))?;
    let mut points = vec![Point::new(0, 0.0); count];
    let mut rest = rest;
    if count > 0 {
        let used = timestamps::decode(rest, widths, &mut points)?;
        rest = rest.get(used..).unwrap_or_default();
        let used = values::decode(rest, widths, &mut points)?;
        rest = rest.get(used..).unwrap_or_default();
    }
    if !rest.is_empty() {
        return Err(CodecError::Corrupt("trailing bytes after the block"));
    }
    Ok(points)
}

/// Appends a column of times alone — the timestamp section of a block of these times —
/// for containers that keep several value columns against one time column (the summary
/// blocks of `summaries`). The container records the `FORMAT_VERSION` it wrote with.
pub fn encode_time_column(out: Vec<u8>, times: &[i64]) -> Vec<u8> {
    let points: Vec<Point> = times.iter().map(|&t| Point::new(t, 0.0)).collect();
    match points.is_empty() {
        true => out,
        false => timestamps::encode(out, &points),
    }
}

/// Reads `n` times written by [`encode_time_column`] with format `version`; returns them
/// and the bytes they took.
pub fn decode_time_column(
    bytes: &[u8],
    version: u8,
    n: usize,
) -> Result<(Vec<i64>, usize), CodecError> {
    let widths = widths_of(version)?;
    let mut points = bounded_points(bytes, n)?;
    let used = match n {
        0 => 0,
        _ => timestamps::decode(bytes, widths, &mut points)?,
    };
    Ok((points.iter().map(|p| p.time).collect(), used))
}

/// Appends a column of values alone (a block's value section), as [`encode_time_column`].
pub fn encode_value_column(out: Vec<u8>, values: &[f64]) -> Vec<u8> {
    let points: Vec<Point> = values.iter().map(|&v| Point::new(0, v)).collect();
    match points.is_empty() {
        true => out,
        false => values::encode(out, &points),
    }
}

/// Reads `n` values written by [`encode_value_column`] with format `version`; returns
/// them, bit for bit, and the bytes they took.
pub fn decode_value_column(
    bytes: &[u8],
    version: u8,
    n: usize,
) -> Result<(Vec<f64>, usize), CodecError> {
    let widths = widths_of(version)?;
    let mut points = bounded_points(bytes, n)?;
    let used = match n {
        0 => 0,
        _ => values::decode(bytes, widths, &mut points)?,
    };
    Ok((points.iter().map(|p| p.value).collect(), used))
}

fn widths_of(version: u8) -> Result<ints::Widths, CodecError> {
    match version {
        1 => Ok(ints::Widths::EveryGroup),
        2 => Ok(ints::Widths::Repeated),
        3 => Ok(ints::Widths::Bounded),
        _ => Err(CodecError::Corrupt("unknown format version")),
    }
}

/// `n` placeholder points, refused first when `bytes` cannot hold `n` (the allocation
/// bound of [`MAX_POINTS_PER_BYTE`], here for one section: twice the points).
fn bounded_points(bytes: &[u8], n: usize) -> Result<Vec<Point>, CodecError> {
    if n > bytes.len().saturating_mul(2 * MAX_POINTS_PER_BYTE) {
        return Err(CodecError::Corrupt(
            "column count exceeds what its bytes can hold",
        ));
    }
    Ok(vec![Point::new(0, 0.0); n])
}

/// LEB128: 7 bits per byte, least significant group first, high bit = more follows.
/// Public for the containers around blocks and columns (the embedded store's rollup
/// blocks and series records), so the format has one varint.
pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 `u64`; rejects encodings longer than 10 bytes or overflowing 64 bits.
/// Returns the number and the bytes after it. (The messages name a block's point count,
/// its use here; other callers map the error to their own.)
pub fn read_varint(bytes: &[u8]) -> Result<(u64, &[u8]), CodecError> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        let group = u64::from(b & 0x7F);
        if shift == 63 && group > 1 {
            return Err(CodecError::Corrupt("point count overflows 64 bits"));
        }
        v |= group << shift;
        if b & 0x80 == 0 {
            return Ok((v, bytes.get(i + 1..).unwrap_or_default()));
        }
    }
    Err(CodecError::Corrupt("point count is truncated"))
}
