//! The head: the points written since the last freeze, in memory, per series sorted by
//! time with one value per time (the last written). Every point in it is also in the
//! write-ahead log, so a crash loses nothing the head held.

use rustc_hash::FxHashMap;
use tickertape_core::{Point, SeriesId};

/// Keyed by series id with FxHash: ids are small integers the store issues itself, so
/// SipHash's defence against chosen keys buys nothing here, and it was ~5% of ingest.
#[derive(Default)]
pub struct Head {
    series: FxHashMap<SeriesId, Vec<Point>>,
    points: usize,
}

impl Head {
    /// Stores `point`, replacing the value at its time if there is one; returns the value
    /// it replaced. Appending after the last time (the usual case) is O(1). The store
    /// inserts in batches ([`insert_all`](Self::insert_all)); tests check both agree.
    #[cfg(test)]
    pub fn insert(&mut self, series: SeriesId, point: Point) -> Option<f64> {
        let replaced = insert_sorted(self.series.entry(series).or_default(), point);
        self.points += usize::from(replaced.is_none());
        replaced
    }

    /// Stores one series' `points` (any order) as [`insert`](Self::insert) would, one
    /// after the other, calling `replaced(i)` for each `points[i]` that replaced a value.
    /// One map lookup for all of them, and one copy when they all follow the series'
    /// last time in order (the usual append).
    pub fn insert_all(
        &mut self,
        series: SeriesId,
        points: &[Point],
        mut replaced: impl FnMut(usize),
    ) {
        let stored = self.series.entry(series).or_default();
        let in_order = points.windows(2).all(|w| w[0].time < w[1].time);
        let after_last = match (stored.last(), points.first()) {
            (Some(last), Some(first)) => last.time < first.time,
            _ => true,
        };
        if in_order && after_last {
            stored.extend_from_slice(points);
            self.points += points.len();
            return;
        }
        for (i, &p) in points.iter().enumerate() {
            match insert_sorted(stored, p) {
                Some(_) => replaced(i),
                None => self.points += 1,
            }
        }
    }

    /// The value at `time`, if the head holds one.
    #[cfg(test)]
    pub fn get(&self, series: SeriesId, time: i64) -> Option<f64> {
        let points = self.series.get(&series)?;
        let at = points.binary_search_by_key(&time, |p| p.time).ok()?;
        Some(points[at].value)
    }

    /// The series' points, sorted by time, one per time.
    pub fn points(&self, series: SeriesId) -> &[Point] {
        self.series.get(&series).map_or(&[], Vec::as_slice)
    }

    /// Every series with points, and its points.
    pub fn iter(&self) -> impl Iterator<Item = (SeriesId, &[Point])> {
        self.series.iter().map(|(&s, p)| (s, p.as_slice()))
    }

    /// Points held, over every series.
    pub fn len(&self) -> usize {
        self.points
    }

    pub fn is_empty(&self) -> bool {
        self.points == 0
    }
}

/// Inserts `point` into `points` (sorted by time, one per time), replacing the value at
/// its time; returns the value replaced.
fn insert_sorted(points: &mut Vec<Point>, point: Point) -> Option<f64> {
    if points.last().is_none_or(|last| last.time < point.time) {
        points.push(point);
        return None;
    }
    match points.binary_search_by_key(&point.time, |p| p.time) {
        Ok(at) => Some(std::mem::replace(&mut points[at], point).value),
        Err(at) => {
            points.insert(at, point);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_points_are_inserted_in_order_and_equal_times_replaced() {
        let mut head = Head::default();
        let s = SeriesId(1);
        for t in [10, 30, 20, 5, 40] {
            assert_eq!(head.insert(s, Point::new(t, t as f64)), None);
        }
        assert_eq!(head.insert(s, Point::new(20, -1.0)), Some(20.0));
        let times: Vec<i64> = head.points(s).iter().map(|p| p.time).collect();
        assert_eq!(times, vec![5, 10, 20, 30, 40]);
        assert_eq!(head.get(s, 20), Some(-1.0));
        assert_eq!(head.get(s, 21), None);
        assert_eq!(head.len(), 5);
    }

    #[test]
    fn insert_all_is_insert_one_by_one() {
        let batches: [&[i64]; 4] = [&[10, 20, 30], &[40, 50], &[25, 50, 5, 60], &[60, 60]];
        let (mut one, mut all) = (Head::default(), Head::default());
        let s = SeriesId(3);
        for (b, times) in batches.iter().enumerate() {
            let points: Vec<Point> = times
                .iter()
                .map(|&t| Point::new(t, (t + b as i64) as f64))
                .collect();
            let expected: Vec<usize> = (0..points.len())
                .filter(|&i| one.insert(s, points[i]).is_some())
                .collect();
            let mut replaced = Vec::new();
            all.insert_all(s, &points, |i| replaced.push(i));
            assert_eq!(replaced, expected, "batch {b}");
            assert_eq!(all.points(s), one.points(s));
            assert_eq!(all.len(), one.len());
        }
        assert_eq!(all.len(), 8);
    }
}
