//! A rollup block: the slot summaries of one series at one resolution within one part's
//! partition, in the part file beside the series' raw block (`part.rs`).
//!
//! Stored as six columns, each a block of the segment codec keyed by a strictly
//! increasing time, so they compress like raw points (the slot starts are evenly spaced,
//! and counts are small integers):
//!
//! ```text
//! u32 len · (slot start, count) · u32 len · (slot start, sum) · u32 len · (slot start, min)
//! · u32 len · (slot start, max) · u32 len · (first time, first value) · u32 len · (last time, last value)
//! ```
//!
//! Counts are stored as `f64`, exact up to 2^53 points a slot.

use tickertape_core::codec::{self, CodecError};
use tickertape_core::query::Summary;
use tickertape_core::Point;

const COLUMNS: usize = 6;

/// Encodes summaries sorted by slot start, one per slot.
pub fn encode(slots: &[(i64, Summary)]) -> Vec<u8> {
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

/// Why a rollup block does not decode.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("rollup block cut short")]
    Short,
    #[error("rollup column: {0}")]
    Column(#[from] CodecError),
    #[error("rollup columns of different lengths or slots")]
    Mismatch,
}

/// Decodes what [`encode`] wrote.
pub fn decode(mut bytes: &[u8]) -> Result<Vec<(i64, Summary)>, SummaryError> {
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

    #[test]
    fn summaries_come_back_bit_for_bit() {
        let points: Vec<Point> = (0..10_000)
            .map(|i| Point::new(i * 10_000_000_000 + 7, (i as f64 * 0.37).sin() * 1e3))
            .chain([Point::new(100_000_000_000_000, -0.0)])
            .collect();
        let slots = summarize_slots(&points, 0, i64::MAX, Resolution::HOUR);
        assert!(slots.len() > 20);
        let back = decode(&encode(&slots)).unwrap();
        let bits = |v: &[(i64, Summary)]| -> Vec<(i64, [u64; 8])> {
            v.iter().map(|(t, s)| (*t, s.to_bits())).collect()
        };
        assert_eq!(bits(&back), bits(&slots));
        assert!(decode(&encode(&[])).unwrap().is_empty());
    }

    #[test]
    fn a_cut_block_is_an_error() {
        let slots = summarize_slots(&[Point::new(5, 1.0)], 0, 10, Resolution::MINUTE);
        let bytes = encode(&slots);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
