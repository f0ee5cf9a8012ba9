//! The points of one write group, held apart until the group is durable: readers never
//! see a point before its log frame is fsynced, nor one of a group that was aborted.

use super::head::Head;
use super::View;
use rustc_hash::FxHashMap;
use tickertape_backend::SeriesHead;
use tickertape_core::{Point, SeriesId};

#[derive(Default)]
pub struct Stage {
    points: Head,
    latest: FxHashMap<SeriesId, SeriesHead>,
}

impl Stage {
    /// Stages one series' points (strictly increasing): each replaces whatever the series
    /// holds at its time (the last write wins, when the stage is published over the head
    /// and read over the parts). `view` is the published store; the stage itself counts
    /// too, so two appends to one series in a group see each other.
    pub fn append(&mut self, view: &View, series: SeriesId, points: &[Point]) {
        self.points.insert_all(series, points, |_| {});
        let Some(&newest) = points.last() else {
            return;
        };
        let head = self
            .latest
            .get(&series)
            .or_else(|| view.latest.get(&series))
            .map(|h| h.last);
        if head.is_none_or(|last| newest.time >= last.time) {
            self.latest.insert(series, SeriesHead { last: newest });
        }
    }
    /// Makes the staged points readable (after the group is durable).
    pub fn publish(self, view: &mut View) {
        for (series, points) in self.points.iter() {
            view.head.insert_all(series, points, |_| {});
        }
        view.latest.extend(self.latest);
    }
}
