//! A block of slot summaries: the rollup slots of one series at one resolution over one
//! time partition, as both backends keep them beside the raw points they summarise (the
//! embedded store in its part files, MongoDB in its rollup documents).
//!
//! Stored column by column with the segment codec's sections, the slot starts once:
//!
//! ```text
//! codec version u8 · n LEB128 · slot starts (time column) · counts · sums · mins · maxs
//! (value columns) · first times (time column) · first values · last times · last values
//! ```
//!
//! Counts are stored as `f64`, exact up to 2^53 points a slot. Every field comes back bit
//! for bit (`-0.0`, NaN payloads), so a rollup answer from a block is the raw answer.

use super::{
    decode_time_column, decode_value_column, encode_time_column, encode_value_column, read_varint,
    write_varint, CodecError, FORMAT_VERSION,
};
use crate::model::Point;
use crate::query::Summary;
use thiserror::Error;

/// Why a summary block does not decode.
#[derive(Debug, Error)]
pub enum SummaryError {
    #[error("rollup block cut short")]
    Short,
    #[error("rollup column: {0}")]
    Column(#[from] CodecError),
    #[error("rollup columns of different lengths or slots")]
    Mismatch,
    #[error("rollup block has bytes after its last column")]
    Trailing,
}

/// Encodes summaries sorted by slot start, one per slot.
pub fn encode_summaries(slots: &[(i64, Summary)]) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    write_varint(&mut out, slots.len() as u64);
    let times =
        |f: &dyn Fn(&Summary) -> i64| -> Vec<i64> { slots.iter().map(|(_, s)| f(s)).collect() };
    let values =
        |f: &dyn Fn(&Summary) -> f64| -> Vec<f64> { slots.iter().map(|(_, s)| f(s)).collect() };
    let starts: Vec<i64> = slots.iter().map(|(t, _)| *t).collect();
    out = encode_time_column(out, &starts);
    out = encode_value_column(out, &values(&|s| s.count as f64));
    out = encode_value_column(out, &values(&|s| s.sum));
    out = encode_value_column(out, &values(&|s| s.min));
    out = encode_value_column(out, &values(&|s| s.max));
    out = encode_time_column(out, &times(&|s| s.first.time));
    out = encode_value_column(out, &values(&|s| s.first.value));
    out = encode_time_column(out, &times(&|s| s.last.time));
    encode_value_column(out, &values(&|s| s.last.value))
}

/// Decodes a block of [`encode_summaries`]; never panics on any input.
pub fn decode_summaries(bytes: &[u8]) -> Result<Vec<(i64, Summary)>, SummaryError> {
    let (&version, rest) = bytes.split_first().ok_or(SummaryError::Short)?;
    let (n, rest) = read_varint(rest).map_err(|_| SummaryError::Short)?;
    let n = usize::try_from(n).map_err(|_| SummaryError::Mismatch)?;
    let mut c = Columns { rest, version, n };
    let starts = c.times()?;
    let (counts, sums, mins, maxs) = (c.values()?, c.values()?, c.values()?, c.values()?);
    let (first_times, first_values) = (c.times()?, c.values()?);
    let (last_times, last_values) = (c.times()?, c.values()?);
    if !c.rest.is_empty() {
        return Err(SummaryError::Trailing);
    }
    Ok((0..n)
        .map(|i| {
            let summary = Summary {
                count: counts[i] as u64,
                sum: sums[i],
                min: mins[i],
                max: maxs[i],
                first: Point::new(first_times[i], first_values[i]),
                last: Point::new(last_times[i], last_values[i]),
            };
            (starts[i], summary)
        })
        .collect())
}

/// The columns of a block still to read, each of `n` entries.
struct Columns<'a> {
    rest: &'a [u8],
    version: u8,
    n: usize,
}

impl Columns<'_> {
    fn times(&mut self) -> Result<Vec<i64>, SummaryError> {
        let (column, used) = decode_time_column(self.rest, self.version, self.n)?;
        self.rest = &self.rest[used..];
        Ok(column)
    }

    fn values(&mut self) -> Result<Vec<f64>, SummaryError> {
        let (column, used) = decode_value_column(self.rest, self.version, self.n)?;
        self.rest = &self.rest[used..];
        Ok(column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollup::{summarize_slots, Resolution};

    fn bits(v: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
        v.iter().map(|(t, s)| (*t, s.to_bits())).collect()
    }

    #[test]
    fn summaries_come_back_bit_for_bit() {
        let points: Vec<Point> = (0..10_000)
            .map(|i| Point::new(i * 10_000_000_000 + 7, (i as f64 * 0.37).sin() * 1e3))
            .chain([Point::new(100_000_000_000_000, -0.0)])
            .collect();
        let slots = summarize_slots(&points, 0, i64::MAX, Resolution::HOUR);
        assert!(slots.len() > 20);
        let block = encode_summaries(&slots);
        assert_eq!(bits(&decode_summaries(&block).unwrap()), bits(&slots));
        assert!(decode_summaries(&encode_summaries(&[])).unwrap().is_empty());
    }

    #[test]
    fn a_cut_or_padded_block_is_an_error() {
        let points: Vec<Point> = (0..100)
            .map(|i| Point::new(i * 60_000_000_000, i as f64))
            .collect();
        let slots = summarize_slots(&points, 0, i64::MAX, Resolution::HOUR);
        let bytes = encode_summaries(&slots);
        for cut in 0..bytes.len() {
            assert!(decode_summaries(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(decode_summaries(&padded).is_err());
    }
}
