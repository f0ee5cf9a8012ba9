//! A rollup block: the slot summaries of one series at one resolution within one part's
//! partition, in the part file beside the series' raw block (`part.rs`).
//!
//! Stored column by column with the segment codec's sections, the slot starts once:
//!
//! ```text
//! codec version u8 · n LEB128 · slot starts (time column) · counts · sums · mins · maxs
//! (value columns) · first times (time column) · first values · last times · last values
//! ```
//!
//! Counts are stored as `f64`, exact up to 2^53 points a slot. Parts of format version 2
//! (`TTPART02`) hold the older layout, six whole codec blocks keyed by time each
//! ([`decode`] reads both; [`encode`] writes the new one only): repeating the slot starts
//! in four of them cost ~100 bytes per series and day at the default rollups.

use tickertape_core::codec::{self, CodecError};
use tickertape_core::query::Summary;
use tickertape_core::Point;

const COLUMNS: usize = 6;

/// The layout of a rollup block, from its part file's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `TTPART02`: six codec blocks, each with its own times.
    Blocks,
    /// `TTPART03`: the columns above.
    Columns,
}

/// Encodes summaries sorted by slot start, one per slot ([`Layout::Columns`]).
pub fn encode(slots: &[(i64, Summary)]) -> Vec<u8> {
    let mut out = vec![codec::FORMAT_VERSION];
    codec::write_varint(&mut out, slots.len() as u64);
    let times =
        |f: &dyn Fn(&Summary) -> i64| -> Vec<i64> { slots.iter().map(|(_, s)| f(s)).collect() };
    let values =
        |f: &dyn Fn(&Summary) -> f64| -> Vec<f64> { slots.iter().map(|(_, s)| f(s)).collect() };
    let starts: Vec<i64> = slots.iter().map(|(t, _)| *t).collect();
    out = codec::encode_time_column(out, &starts);
    out = codec::encode_value_column(out, &values(&|s| s.count as f64));
    out = codec::encode_value_column(out, &values(&|s| s.sum));
    out = codec::encode_value_column(out, &values(&|s| s.min));
    out = codec::encode_value_column(out, &values(&|s| s.max));
    out = codec::encode_time_column(out, &times(&|s| s.first.time));
    out = codec::encode_value_column(out, &values(&|s| s.first.value));
    out = codec::encode_time_column(out, &times(&|s| s.last.time));
    codec::encode_value_column(out, &values(&|s| s.last.value))
}

/// Why a rollup block does not decode.
#[derive(Debug, thiserror::Error)]
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

/// Decodes a rollup block of `layout`.
pub fn decode(bytes: &[u8], layout: Layout) -> Result<Vec<(i64, Summary)>, SummaryError> {
    match layout {
        Layout::Blocks => decode_blocks(bytes),
        Layout::Columns => decode_columns(bytes),
    }
}

fn decode_columns(bytes: &[u8]) -> Result<Vec<(i64, Summary)>, SummaryError> {
    let (&version, rest) = bytes.split_first().ok_or(SummaryError::Short)?;
    let (n, rest) = codec::read_varint(rest).map_err(|_| SummaryError::Short)?;
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
        let (column, used) = codec::decode_time_column(self.rest, self.version, self.n)?;
        self.rest = &self.rest[used..];
        Ok(column)
    }

    fn values(&mut self) -> Result<Vec<f64>, SummaryError> {
        let (column, used) = codec::decode_value_column(self.rest, self.version, self.n)?;
        self.rest = &self.rest[used..];
        Ok(column)
    }
}

/// The `TTPART02` layout: six codec blocks, each `u32` length-prefixed and keyed by time.
fn decode_blocks(mut bytes: &[u8]) -> Result<Vec<(i64, Summary)>, SummaryError> {
    let mut columns: Vec<Vec<Point>> = Vec::with_capacity(COLUMNS);
    for _ in 0..COLUMNS {
        let (len, rest) = bytes.split_first_chunk::<4>().ok_or(SummaryError::Short)?;
        let len = u32::from_le_bytes(*len) as usize;
        let block = rest.get(..len).ok_or(SummaryError::Short)?;
        columns.push(codec::decode_block(block)?);
        bytes = &rest[len..];
    }
    let [counts, sums, mins, maxs, firsts, lasts] =
        <[Vec<Point>; COLUMNS]>::try_from(columns).map_err(|_| SummaryError::Mismatch)?;
    let n = counts.len();
    if [&sums, &mins, &maxs, &firsts, &lasts]
        .iter()
        .any(|c| c.len() != n)
    {
        return Err(SummaryError::Mismatch);
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let slot = counts[i].time;
        if sums[i].time != slot || mins[i].time != slot || maxs[i].time != slot {
            return Err(SummaryError::Mismatch);
        }
        out.push((
            slot,
            Summary {
                count: counts[i].value as u64,
                sum: sums[i].value,
                min: mins[i].value,
                max: maxs[i].value,
                first: firsts[i],
                last: lasts[i],
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::rollup::{summarize_slots, Resolution};

    /// The `TTPART02` encoder, kept to check that its blocks still decode.
    fn encode_blocks(slots: &[(i64, Summary)]) -> Vec<u8> {
        let column = |value: &dyn Fn(&(i64, Summary)) -> Point| -> Vec<Point> {
            slots.iter().map(value).collect()
        };
        let columns: [Vec<Point>; COLUMNS] = [
            column(&|(t, s)| Point::new(*t, s.count as f64)),
            column(&|(t, s)| Point::new(*t, s.sum)),
            column(&|(t, s)| Point::new(*t, s.min)),
            column(&|(t, s)| Point::new(*t, s.max)),
            column(&|(_, s)| s.first),
            column(&|(_, s)| s.last),
        ];
        let mut out = Vec::new();
        for points in &columns {
            let block = codec::encode_block(points);
            out.extend_from_slice(&(block.len() as u32).to_le_bytes());
            out.extend_from_slice(&block);
        }
        out
    }

    fn bits(v: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
        v.iter().map(|(t, s)| (*t, s.to_bits())).collect()
    }

    #[test]
    fn summaries_come_back_bit_for_bit_in_both_layouts() {
        let points: Vec<Point> = (0..10_000)
            .map(|i| Point::new(i * 10_000_000_000 + 7, (i as f64 * 0.37).sin() * 1e3))
            .chain([Point::new(100_000_000_000_000, -0.0)])
            .collect();
        let slots = summarize_slots(&points, 0, i64::MAX, Resolution::HOUR);
        assert!(slots.len() > 20);
        let columns = encode(&slots);
        let blocks = encode_blocks(&slots);
        assert_eq!(
            bits(&decode(&columns, Layout::Columns).unwrap()),
            bits(&slots)
        );
        assert_eq!(
            bits(&decode(&blocks, Layout::Blocks).unwrap()),
            bits(&slots)
        );
        assert!(
            columns.len() < blocks.len(),
            "{} vs {}",
            columns.len(),
            blocks.len()
        );
        assert!(decode(&encode(&[]), Layout::Columns).unwrap().is_empty());
    }

    #[test]
    fn a_cut_or_padded_block_is_an_error() {
        let points: Vec<Point> = (0..100)
            .map(|i| Point::new(i * 60_000_000_000, i as f64))
            .collect();
        let slots = summarize_slots(&points, 0, i64::MAX, Resolution::HOUR);
        let bytes = encode(&slots);
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], Layout::Columns).is_err(),
                "cut at {cut}"
            );
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(decode(&padded, Layout::Columns).is_err());
        let old = encode_blocks(&slots);
        assert!(decode(&old[..old.len() - 1], Layout::Blocks).is_err());
    }
}
