//! Value segments (`docs/design.md#value-segments`): a series' points in fixed-capacity
//! chunks, chained by the time of the neighbouring chunks so that one range read also
//! yields the points just outside the range.
//!
//! Invariants, for one series with segments `S0, S1, …, Sk` (Sk the active one):
//! - times are strictly increasing across the whole chain;
//! - `S0.prev_end == i64::MIN`, `Si.prev_end == last time of S(i-1)`;
//! - `Si.next_start == first time of S(i+1)`, and `Sk.next_start == i64::MAX`;
//! - so every point of `Si` lies strictly inside `(prev_end, next_start)`.

use crate::codec::{self, CodecError};
use crate::model::{Point, SeriesId};

/// The most (time, value) pairs that fit 4 KiB once BSON-encoded: a memory page, and the
/// unit MongoDB's old power-of-two allocator handed out, so a full segment wastes nothing.
pub const DEFAULT_SEGMENT_CAPACITY: usize = 160;

/// `prev_end` of a series' first segment: nothing comes before it.
pub const NO_PREVIOUS: i64 = i64::MIN;
/// `next_start` of the active segment: nothing comes after it yet.
pub const NO_NEXT: i64 = i64::MAX;

/// The points a segment holds, in one of the two forms readers must accept.
#[derive(Clone, Debug, PartialEq)]
pub enum SegmentBody {
    /// Slots in chronological order. `None` is a hole: a slot reserved by a writer that
    /// stopped before filling it (MongoDB backend). Holes are skipped by readers; they can
    /// never be mistaken for a point, not even one at time 0.
    Open(Vec<Option<Point>>),
    /// A full segment compressed by [`codec::encode_block`].
    Sealed(Vec<u8>),
}

/// One value segment as read from a backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub series: SeriesId,
    /// Time of the last point of the previous segment, or [`NO_PREVIOUS`].
    pub prev_end: i64,
    /// Time of the first point of the next segment, or [`NO_NEXT`] while active.
    pub next_start: i64,
    pub body: SegmentBody,
}

impl Segment {
    /// The segment's points in time order, holes skipped.
    pub fn points(&self) -> Result<Vec<Point>, CodecError> {
        match &self.body {
            SegmentBody::Open(slots) => Ok(slots.iter().flatten().copied().collect()),
            SegmentBody::Sealed(block) => codec::decode_block(block),
        }
    }

    /// Whether this segment can hold points of `[start, end)` (half-open, as every range
    /// of tickertape), the nearest point before `start` or the nearest at or after `end`.
    ///
    /// Derivation: the segment's points lie inside `(prev_end, next_start)`. The point
    /// just before `start` lives in a segment with `prev_end < start <= next_start`; the
    /// first point at or after `end` in one with `prev_end < end`, since `prev_end` is a
    /// point before it. Both, and every segment with points in range, satisfy
    /// `prev_end < end && next_start >= start`. (The article the layout comes from prints
    /// this query with both bounds inclusive and the bounds swapped.)
    pub fn may_overlap(prev_end: i64, next_start: i64, start: i64, end: i64) -> bool {
        prev_end < end && next_start >= start
    }
}

/// Concatenates the points of segments sorted by `prev_end`.
pub fn collect_points(segments: &[Segment]) -> Result<Vec<Point>, CodecError> {
    let mut out = Vec::new();
    for segment in segments {
        out.extend(segment.points()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(prev_end: i64, next_start: i64, times: &[i64]) -> Segment {
        Segment {
            series: SeriesId(1),
            prev_end,
            next_start,
            body: SegmentBody::Open(
                times
                    .iter()
                    .map(|&t| Some(Point::new(t, t as f64)))
                    .collect(),
            ),
        }
    }

    /// Three segments [10,20] [30,40] [50,60]; every half-open query range must select the
    /// segments holding its points and its two neighbours.
    #[test]
    fn overlap_selects_neighbours_inside_gaps_and_across_boundaries() {
        let chain = [
            open(NO_PREVIOUS, 30, &[10, 20]),
            open(20, 50, &[30, 40]),
            open(40, NO_NEXT, &[50, 60]),
        ];
        let all: Vec<i64> = vec![10, 20, 30, 40, 50, 60];
        for start in 0..70 {
            for end in start..71 {
                let selected: Vec<i64> = chain
                    .iter()
                    .filter(|s| Segment::may_overlap(s.prev_end, s.next_start, start, end))
                    .flat_map(|s| s.points().unwrap())
                    .map(|p| p.time)
                    .collect();
                let before = all.iter().rev().find(|&&t| t < start);
                let after = all.iter().find(|&&t| t >= end);
                for t in all
                    .iter()
                    .filter(|&&t| t >= start && t < end)
                    .chain(before)
                    .chain(after)
                {
                    assert!(
                        selected.contains(t),
                        "[{start},{end}) misses {t}: {selected:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn holes_are_skipped_and_epoch_points_kept() {
        let seg = Segment {
            series: SeriesId(1),
            prev_end: NO_PREVIOUS,
            next_start: NO_NEXT,
            body: SegmentBody::Open(vec![
                Some(Point::new(0, 1.0)),
                None,
                Some(Point::new(5, 2.0)),
            ]),
        };
        assert_eq!(
            seg.points().unwrap(),
            vec![Point::new(0, 1.0), Point::new(5, 2.0)]
        );
    }
}
