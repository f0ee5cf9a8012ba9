//! A rollup block: the slot summaries of one series at one resolution within one part's
//! partition, in the part file beside the series' raw block (`part.rs`).
//!
//! Parts of format version 3 (`TTPART03`) hold the core codec's summary block
//! (`tickertape_core::codec::encode_summaries`: column by column, the slot starts once),
//! which MongoDB's rollup documents hold too. Parts of format version 2 (`TTPART02`) hold
//! the older layout, six whole codec blocks keyed by time each ([`decode`] reads both;
//! [`encode`] writes the new one only): repeating the slot starts in four of them cost
//! ~100 bytes per series and day at the default rollups.

use tickertape_core::codec::{self, SummaryError};
use tickertape_core::query::Summary;
use tickertape_core::Point;

const COLUMNS: usize = 6;

/// The layout of a rollup block, from its part file's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `TTPART02`: six codec blocks, each with its own times.
    Blocks,
    /// `TTPART03`: the core codec's summary block, column by column.
    Columns,
}

/// Encodes summaries sorted by slot start, one per slot ([`Layout::Columns`]: the core
/// codec's summary block, `tickertape_core::codec::encode_summaries`).
pub fn encode(slots: &[(i64, Summary)]) -> Vec<u8> {
    codec::encode_summaries(slots)
}

/// Decodes a rollup block of `layout`.
pub fn decode(bytes: &[u8], layout: Layout) -> Result<Vec<(i64, Summary)>, SummaryError> {
    match layout {
        Layout::Blocks => decode_blocks(bytes),
        Layout::Columns => codec::decode_summaries(bytes),
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
