//! Value segments (`docs/design.md#value-segments`), kept as one sorted list of points per
//! series; segments are derived from it on every read.
//!
//! Storing points rather than segments makes the rules visible: an append puts each point
//! at its time, replacing the value held there (the last write wins), and the chain
//! invariants of [`tickertape_core::segment`] hold by construction of [`segments_of`]:
//! chunks of `segment_capacity` points in time order, every chunk but the last sealed.
//! Where a backend cuts its segments is its own; readers compare points.

use std::collections::BTreeMap;
use tickertape_backend::{DeleteRange, SeriesAppend, SeriesHead};
use tickertape_core::codec;
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId};

/// The stored points of every series that has any, each list strictly increasing in time.
#[derive(Clone, Debug, Default)]
pub struct Points {
    by_series: BTreeMap<SeriesId, Vec<Point>>,
}

impl Points {
    /// Stores one [`SeriesAppend`] as `Backend::append` documents it: "a point at a time
    /// the series already holds replaces that value … an exact duplicate changes nothing".
    /// The caller has checked that the series is registered.
    pub fn append(&mut self, append: &SeriesAppend) {
        let stored = self.by_series.entry(append.series()).or_default();
        for &p in append.points() {
            match stored.binary_search_by_key(&p.time, |s| s.time) {
                Ok(at) => stored[at] = p,
                Err(at) => stored.insert(at, p),
            }
        }
    }

    /// "The latest stored point of each series (`None` for a series with no point yet)".
    pub fn head(&self, series: SeriesId) -> Option<SeriesHead> {
        let stored = self.by_series.get(&series)?;
        Some(SeriesHead {
            last: *stored.last()?,
        })
    }

    /// The segments of `series` that may hold points of `[start, end)` or its two
    /// neighbours, sorted by `prev_end`: those [`Segment::may_overlap`] selects
    /// (`Backend::read_segments`).
    pub fn read(&self, series: SeriesId, capacity: usize, start: i64, end: i64) -> Vec<Segment> {
        let stored = self.by_series.get(&series).map_or(&[][..], Vec::as_slice);
        segments_of(series, stored, capacity)
            .into_iter()
            .filter(|s| Segment::may_overlap(s.prev_end, s.next_start, start, end))
            .collect()
    }

    /// How many segments the stored points make, over every series.
    pub fn segment_count(&self, capacity: usize) -> u64 {
        self.by_series
            .values()
            .map(|points| points.len().div_ceil(capacity) as u64)
            .sum()
    }

    /// Points stored over every series.
    pub fn point_count(&self) -> u64 {
        self.by_series.values().map(|p| p.len() as u64).sum()
    }

    /// The stored points of `series` in `[start, end)`, by time.
    pub fn between(&self, series: SeriesId, start: i64, end: i64) -> &[Point] {
        let stored = self.by_series.get(&series).map_or(&[][..], Vec::as_slice);
        let lo = stored.partition_point(|p| p.time < start);
        let hi = stored.partition_point(|p| p.time < end).max(lo);
        &stored[lo..hi]
    }

    /// Removes the points of `series` in `[start, end)`; returns whether it held any.
    pub fn remove_between(&mut self, series: SeriesId, start: i64, end: i64) -> bool {
        let Some(stored) = self.by_series.get_mut(&series) else {
            return false;
        };
        let before = stored.len();
        stored.retain(|p| p.time < start || p.time >= end);
        before != stored.len()
    }

    /// Removes the points of `series` in `range`, and the series' list once it is empty.
    pub fn delete(&mut self, series: SeriesId, range: DeleteRange) {
        if let Some(stored) = self.by_series.get_mut(&series) {
            stored.retain(|p| !range.contains(p.time));
            if stored.is_empty() {
                self.by_series.remove(&series);
            }
        }
    }
}

/// The chain of segments a series' points make (see the module docs). The invariants of
/// [`tickertape_core::segment`]: the first `prev_end` is [`NO_PREVIOUS`], each `prev_end`
/// the last time of the segment before, each `next_start` the first time of the segment
/// after, and the last `next_start` [`NO_NEXT`].
pub fn segments_of(series: SeriesId, points: &[Point], capacity: usize) -> Vec<Segment> {
    let chunks: Vec<&[Point]> = points.chunks(capacity).collect();
    let last = chunks.len().saturating_sub(1);
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let prev_end = match i {
                0 => NO_PREVIOUS,
                _ => chunks[i - 1].last().map_or(NO_PREVIOUS, |p| p.time),
            };
            let next_start = chunks
                .get(i + 1)
                .and_then(|next| next.first())
                .map_or(NO_NEXT, |p| p.time);
            let body = if i == last {
                SegmentBody::Open(chunk.iter().copied().map(Some).collect())
            } else {
                SegmentBody::Sealed(codec::encode_block(chunk))
            };
            Segment {
                series,
                prev_end,
                next_start,
                body,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::segment::collect_points;

    fn points(times: &[i64]) -> Vec<Point> {
        times.iter().map(|&t| Point::new(t, t as f64)).collect()
    }

    #[test]
    fn chains_full_sealed_segments_and_one_open_one() {
        let all = points(&[1, 2, 3, 4, 5, 6, 7]);
        let chain = segments_of(SeriesId(1), &all, 3);
        let bounds: Vec<(i64, i64)> = chain.iter().map(|s| (s.prev_end, s.next_start)).collect();
        assert_eq!(bounds, vec![(NO_PREVIOUS, 4), (3, 7), (6, NO_NEXT)]);
        assert!(matches!(chain[0].body, SegmentBody::Sealed(_)));
        assert!(matches!(chain[1].body, SegmentBody::Sealed(_)));
        assert!(matches!(chain[2].body, SegmentBody::Open(_)));
        assert_eq!(collect_points(&chain).unwrap(), all);
        // A full last segment stays open until the next point arrives.
        let full = segments_of(SeriesId(1), &all[..6], 3);
        assert!(matches!(full[1].body, SegmentBody::Open(_)));
    }

    #[test]
    fn late_points_are_inserted_and_equal_times_replaced() {
        let mut store = Points::default();
        let append = |ps: Vec<Point>| SeriesAppend::new(SeriesId(1), ps).unwrap();
        store.append(&append(points(&[10, 30])));
        store.append(&append(vec![Point::new(20, 2.0), Point::new(30, -1.0)]));
        let all = store.read(SeriesId(1), 2, i64::MIN, i64::MAX);
        let stored = vec![
            Point::new(10, 10.0),
            Point::new(20, 2.0),
            Point::new(30, -1.0),
        ];
        assert_eq!(collect_points(&all).unwrap(), stored);
        assert_eq!(store.head(SeriesId(1)).map(|h| h.last), Some(stored[2]));
        // [20, 25) reads the segment of 20 and the one holding 30, the neighbour after.
        assert_eq!(store.read(SeriesId(1), 2, 20, 25).len(), 2);
    }
}
