//! The head: the points written since the last freeze, in memory, per series sorted by
//! time with one value per time (the last written). Every point in it is also in the
//! write-ahead log, so a crash loses nothing the head held.

use std::collections::HashMap;
use tickertape_core::{Point, SeriesId};

#[derive(Default)]
pub struct Head {
    series: HashMap<SeriesId, Vec<Point>>,
    points: usize,
}

impl Head {
    /// Stores `point`, replacing the value at its time if there is one; returns the value
    /// it replaced. Appending after the last time (the usual case) is O(1).
    pub fn insert(&mut self, series: SeriesId, point: Point) -> Option<f64> {
        let points = self.series.entry(series).or_default();
        if points.last().is_none_or(|last| last.time < point.time) {
            points.push(point);
            self.points += 1;
            return None;
        }
        match points.binary_search_by_key(&point.time, |p| p.time) {
            Ok(at) => Some(std::mem::replace(&mut points[at], point).value),
            Err(at) => {
                points.insert(at, point);
                self.points += 1;
                None
            }
        }
    }

    /// The value at `time`, if the head holds one.
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
}
