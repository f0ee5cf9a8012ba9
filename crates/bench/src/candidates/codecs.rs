//! The block codecs compared: one block is a run of one series' points, encoded alone.
//!
//! - `Own`: `tickertape_core::codec` (delta-of-delta times; decimal-aware, ordered-integer
//!   or XOR values), the sealed-segment codec the store ships.
//! - `Pco`: pcodec's standalone format, times as i64 and values as f64, default
//!   `ChunkConfig` (level 8, automatic mode and delta detection).
//! - `OwnTimesPcoValues`: the own codec's times and pco's values. The core crate exposes
//!   only whole blocks, so the times travel in an own block whose values are all 0.0; that
//!   constant column's few bytes are counted against this candidate.
//!
//! Two-section blocks are `len of first section (LEB128) · first section · second section`.

use anyhow::{bail, ensure, Context, Result};
use pco::standalone::{simple_compress, simple_decompress};
use pco::ChunkConfig;
use tickertape_core::codec::{decode_block, encode_block};
use tickertape_core::Point;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Own,
    Pco,
    OwnTimesPcoValues,
}

impl Codec {
    pub const ALL: [Codec; 3] = [Codec::Own, Codec::Pco, Codec::OwnTimesPcoValues];

    pub fn name(self) -> &'static str {
        match self {
            Codec::Own => "own codec",
            Codec::Pco => "pco",
            Codec::OwnTimesPcoValues => "own times + pco values",
        }
    }

    pub fn encode(self, points: &[Point]) -> Result<Vec<u8>> {
        match self {
            Codec::Own => Ok(encode_block(points)),
            Codec::Pco => {
                let times: Vec<i64> = points.iter().map(|p| p.time).collect();
                Ok(two_sections(&pco_encode(&times)?, &pco_values(points)?))
            }
            Codec::OwnTimesPcoValues => {
                let times: Vec<Point> = points.iter().map(|p| Point::new(p.time, 0.0)).collect();
                Ok(two_sections(&encode_block(&times), &pco_values(points)?))
            }
        }
    }

    pub fn decode(self, block: &[u8]) -> Result<Vec<Point>> {
        match self {
            Codec::Own => Ok(decode_block(block)?),
            Codec::Pco => {
                let (times, values) = split_sections(block)?;
                let times: Vec<i64> = simple_decompress(times)?;
                zip_columns(times, simple_decompress(values)?)
            }
            Codec::OwnTimesPcoValues => {
                let (times, values) = split_sections(block)?;
                let times = decode_block(times)?.into_iter().map(|p| p.time).collect();
                zip_columns(times, simple_decompress(values)?)
            }
        }
    }
}

/// Where one block's bytes go, column by column.
#[derive(Clone, Copy, Debug, Default)]
pub struct ColumnBytes {
    /// The own codec's whole block.
    pub own_block: u64,
    /// The own codec's block of the same times with every value 0.0: the times section
    /// plus a constant value section (a regular column costs ~0.22 bit/point either way).
    pub own_times_and_zeros: u64,
    pub pco_times: u64,
    pub pco_values: u64,
}

impl ColumnBytes {
    pub fn of(points: &[Point]) -> Result<Self> {
        let times: Vec<i64> = points.iter().map(|p| p.time).collect();
        let zeros: Vec<Point> = points.iter().map(|p| Point::new(p.time, 0.0)).collect();
        Ok(Self {
            own_block: encode_block(points).len() as u64,
            own_times_and_zeros: encode_block(&zeros).len() as u64,
            pco_times: pco_encode(&times)?.len() as u64,
            pco_values: pco_values(points)?.len() as u64,
        })
    }

    pub fn add(&mut self, other: Self) {
        self.own_block += other.own_block;
        self.own_times_and_zeros += other.own_times_and_zeros;
        self.pco_times += other.pco_times;
        self.pco_values += other.pco_values;
    }
}

fn pco_values(points: &[Point]) -> Result<Vec<u8>> {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    pco_encode(&values)
}

fn pco_encode<T: pco::data_types::Number>(column: &[T]) -> Result<Vec<u8>> {
    simple_compress(column, &ChunkConfig::default()).context("pco cannot compress the column")
}

fn two_sections(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(first.len() + second.len() + 4);
    let mut len = first.len() as u64;
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(first);
    out.extend_from_slice(second);
    out
}

fn split_sections(block: &[u8]) -> Result<(&[u8], &[u8])> {
    let mut len = 0u64;
    for (i, &byte) in block.iter().enumerate().take(10) {
        len |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            let rest = &block[i + 1..];
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            ensure!(len <= rest.len(), "block section is longer than the block");
            return Ok(rest.split_at(len));
        }
    }
    bail!("block has no valid section length")
}

fn zip_columns(times: Vec<i64>, values: Vec<f64>) -> Result<Vec<Point>> {
    ensure!(
        times.len() == values.len(),
        "block holds {} times but {} values",
        times.len(),
        values.len()
    );
    Ok(times
        .into_iter()
        .zip(values)
        .map(|(t, v)| Point::new(t, v))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_bit_for_bit() {
        let points: Vec<Point> = (0..500)
            .map(|i| Point::new(1_000 + i * 10, (i as f64 * 0.37).sin() * 100.0))
            .chain([Point::new(-5, f64::NAN), Point::new(i64::MAX, -0.0)])
            .collect();
        for codec in Codec::ALL {
            let back = codec.decode(&codec.encode(&points).unwrap()).unwrap();
            assert_eq!(back.len(), points.len(), "{}", codec.name());
            for (a, b) in back.iter().zip(&points) {
                assert_eq!((a.time, a.value.to_bits()), (b.time, b.value.to_bits()));
            }
        }
    }

    #[test]
    fn a_truncated_two_section_block_is_refused() {
        let points = [Point::new(1, 1.0), Point::new(2, 2.0)];
        let block = Codec::Pco.encode(&points).unwrap();
        assert!(Codec::Pco.decode(&block[..3]).is_err());
        assert!(Codec::Pco.decode(&[]).is_err());
    }
}
