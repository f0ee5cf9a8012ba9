//! The point-shaped answer of a range read of many series at once
//! ([`ValueStore::read_points`](crate::ValueStore::read_points)): each series' points in
//! the range and, when asked, the nearest stored point on each side.

use tickertape_core::Point;

/// What a batched read asks of every series it names: the points with times in `[start,
/// end)` (nanoseconds, `start` inclusive, `end` exclusive) and, with `neighbors`, the
/// nearest stored point before `start` and the nearest at or after `end`. `start >= end`
/// reads no point in range: with `neighbors`, just the two neighbours of `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointsRange {
    pub start: i64,
    pub end: i64,
    pub neighbors: bool,
}

impl PointsRange {
    /// The points of `[start, end)` alone.
    pub fn new(start: i64, end: i64) -> Self {
        Self {
            start,
            end,
            neighbors: false,
        }
    }

    /// The points of `[start, end)` and the nearest point on each side.
    pub fn with_neighbors(start: i64, end: i64) -> Self {
        Self {
            start,
            end,
            neighbors: true,
        }
    }
}

/// One series' answer to a [`PointsRange`]. Invariant: `before` (when present) is earlier
/// than every point of `points`, which are strictly increasing in time and all in the
/// range, and `after` later than all of them; `before` and `after` are `None` unless the
/// read asked for neighbours.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RangePoints {
    /// The latest stored point before `start`.
    pub before: Option<Point>,
    /// The stored points with times in `[start, end)`, by time.
    pub points: Vec<Point>,
    /// The earliest stored point at or after `end`.
    pub after: Option<Point>,
}

impl RangePoints {
    /// The answer to `range` from `all`, a series' points in time order that hold at
    /// least those of the range and its two neighbours (points further out are left out).
    pub fn from_sorted(all: &[Point], range: PointsRange) -> Self {
        let (inside, before, after) = split(all, range);
        Self {
            before,
            points: all[inside].to_vec(),
            after,
        }
    }

    /// [`from_sorted`](Self::from_sorted) of a vector it may take apart: the points of the
    /// range are moved, not copied (a long range of one series is most of what a read
    /// holds).
    pub fn from_sorted_vec(mut all: Vec<Point>, range: PointsRange) -> Self {
        let (inside, before, after) = split(&all, range);
        all.truncate(inside.end);
        all.drain(..inside.start);
        Self {
            before,
            points: all,
            after,
        }
    }

    /// `before`, the points and `after`, in time order.
    pub fn into_all(self) -> Vec<Point> {
        let Self {
            before,
            mut points,
            after,
        } = self;
        if let Some(p) = before {
            points.insert(0, p);
        }
        points.extend(after);
        points
    }

    /// Whether the answer holds no point at all.
    pub fn is_empty(&self) -> bool {
        self.before.is_none() && self.points.is_empty() && self.after.is_none()
    }
}

/// Where `range` lies in `all` (sorted by time): the indices of its points, and its
/// neighbours when it asks for them.
fn split(
    all: &[Point],
    range: PointsRange,
) -> (std::ops::Range<usize>, Option<Point>, Option<Point>) {
    let first_in = all.partition_point(|p| p.time < range.start);
    let first_after = all.partition_point(|p| p.time < range.end).max(first_in);
    let (before, after) = match range.neighbors {
        true => (
            first_in.checked_sub(1).map(|i| all[i]),
            all.get(first_after).copied(),
        ),
        false => (None, None),
    };
    (first_in..first_after, before, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(times: &[i64]) -> Vec<Point> {
        times.iter().map(|&t| Point::new(t, t as f64)).collect()
    }

    #[test]
    fn splits_a_sorted_read() {
        let all = at(&[1, 5, 10, 15, 20]);
        let got = RangePoints::from_sorted(&all, PointsRange::with_neighbors(5, 15));
        assert_eq!(got.before, Some(Point::new(1, 1.0)));
        assert_eq!(got.points, at(&[5, 10]));
        assert_eq!(got.after, Some(Point::new(15, 15.0)));
        assert_eq!(got.clone().into_all(), at(&[1, 5, 10, 15]));
        let alone = RangePoints::from_sorted(&all, PointsRange::new(5, 15));
        assert_eq!((alone.before, alone.after), (None, None));
        assert_eq!(alone.points, at(&[5, 10]));
    }

    #[test]
    fn a_vector_taken_apart_answers_as_a_borrowed_one() {
        let all = at(&[1, 5, 10, 15, 20]);
        for range in [
            PointsRange::with_neighbors(5, 15),
            PointsRange::new(5, 15),
            PointsRange::with_neighbors(5, 5),
            PointsRange::with_neighbors(6, 2),
            PointsRange::new(0, 100),
            PointsRange::with_neighbors(30, 40),
        ] {
            assert_eq!(
                RangePoints::from_sorted_vec(all.clone(), range),
                RangePoints::from_sorted(&all, range),
                "{range:?}"
            );
        }
    }

    #[test]
    fn an_empty_range_has_its_neighbours_only() {
        let all = at(&[1, 5, 10]);
        let got = RangePoints::from_sorted(&all, PointsRange::with_neighbors(5, 5));
        assert_eq!(got.before, Some(Point::new(1, 1.0)));
        assert!(got.points.is_empty());
        assert_eq!(got.after, Some(Point::new(5, 5.0)));
        let reversed = RangePoints::from_sorted(&all, PointsRange::with_neighbors(6, 2));
        assert!(reversed.points.is_empty());
        assert_eq!(reversed.before, Some(Point::new(5, 5.0)));
        assert_eq!(reversed.after, Some(Point::new(10, 10.0)));
        assert!(RangePoints::from_sorted(&[], PointsRange::with_neighbors(0, 9)).is_empty());
    }
}
