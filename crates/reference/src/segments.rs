//! Value segments (seed 000), kept as one sorted list of points per series; segments are
//! derived from it on every read.
//!
//! Storing points rather than segments makes the rules visible: what an append keeps is a
//! question about the last stored time only, and the chain invariants of
//! [`tickertape_core::segment`] hold by construction of [`segments_of`]. The segmentation
//! is the one every backend produces when points arrive in order: chunks of
//! `segment_capacity` points in time order, every chunk but the last full and sealed, the
//! last one open (the active segment, even when full: it rolls over with the next point).

use std::collections::BTreeMap;
use tickertape_backend::{AppendOutcome, AppendRule, SeriesAppend, SeriesHead};
use tickertape_core::codec;
use tickertape_core::segment::{Segment, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId};

/// The stored points of every series that has any, each list strictly increasing in time.
#[derive(Clone, Debug, Default)]
pub struct Points {
    by_series: BTreeMap<SeriesId, Vec<Point>>,
}

impl Points {
    /// Appends one [`SeriesAppend`] as `Backend::append` documents it under `rule`. The
    /// caller has checked that the series is registered.
    pub fn append(&mut self, append: &SeriesAppend, rule: AppendRule) -> AppendOutcome {
        let stored = self.by_series.entry(append.series()).or_default();
        match rule {
            AppendRule::RefuseOlder => refuse_older(stored, append.points()),
            AppendRule::LastWriteWins => last_write_wins(stored, append.points()),
        }
    }

    /// "The latest stored point of each series (`None` for a series with no point yet)".
    pub fn head(&self, series: SeriesId) -> Option<SeriesHead> {
        let stored = self.by_series.get(&series)?;
        Some(SeriesHead {
            last: *stored.last()?,
            count: stored.len() as u64,
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
}

/// "Points at or before the series' last stored time are refused; since the batch is
/// strictly increasing they form a prefix" ([`AppendOutcome`]).
fn refuse_older(stored: &mut Vec<Point>, points: &[Point]) -> AppendOutcome {
    let last_time = stored.last().map(|p| p.time);
    let refused = match last_time {
        Some(last) => points.partition_point(|p| p.time <= last),
        None => 0,
    };
    stored.extend_from_slice(&points[refused..]);
    // "The series' last stored time before this append, when it refused anything."
    AppendOutcome::refused_prefix(refused, last_time)
}

/// "A point at a time the series already holds replaces that value … Such points are
/// listed in `existing`" ([`AppendRule::LastWriteWins`]).
fn last_write_wins(stored: &mut Vec<Point>, points: &[Point]) -> AppendOutcome {
    let mut outcome = AppendOutcome::all_new();
    for (i, &p) in points.iter().enumerate() {
        match stored.binary_search_by_key(&p.time, |s| s.time) {
            Ok(at) => {
                stored[at] = p;
                outcome.existing.push(i);
            }
            Err(at) => stored.insert(at, p),
        }
    }
    outcome
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
    fn refuses_the_prefix_at_or_before_the_last_time() {
        let mut store = Points::default();
        let append = |times: &[i64]| SeriesAppend::new(SeriesId(1), points(times)).unwrap();
        let first = store.append(&append(&[10, 20]), AppendRule::RefuseOlder);
        assert_eq!((first.refused, first.last_time), (0, None));
        let second = store.append(&append(&[15, 20, 30]), AppendRule::RefuseOlder);
        assert_eq!((second.refused, second.last_time), (2, Some(20)));
        let all = store.read(SeriesId(1), 2, i64::MIN, i64::MAX);
        assert_eq!(collect_points(&all).unwrap(), points(&[10, 20, 30]));
        assert_eq!(store.head(SeriesId(1)).map(|h| h.count), Some(3));
        // [20, 25) reads the segment of 20 and the one holding 30, the neighbour after.
        assert_eq!(store.read(SeriesId(1), 2, 20, 25).len(), 2);
    }

    #[test]
    fn last_write_wins_inserts_late_points_and_replaces_equal_times() {
        let mut store = Points::default();
        let rule = AppendRule::LastWriteWins;
        let append = |ps: Vec<Point>| SeriesAppend::new(SeriesId(1), ps).unwrap();
        store.append(&append(points(&[10, 30])), rule);
        let late = store.append(
            &append(vec![Point::new(20, 2.0), Point::new(30, -1.0)]),
            rule,
        );
        assert_eq!((late.refused, late.existing), (0, vec![1]));
        let all = store.read(SeriesId(1), 2, i64::MIN, i64::MAX);
        let stored = vec![
            Point::new(10, 10.0),
            Point::new(20, 2.0),
            Point::new(30, -1.0),
        ];
        assert_eq!(collect_points(&all).unwrap(), stored);
        assert_eq!(store.head(SeriesId(1)).map(|h| h.count), Some(3));
    }
}
