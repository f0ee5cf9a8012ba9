//! The points of one write group, held apart until the group is durable: readers never
//! see a point before its log frame is fsynced, nor one of a group that was aborted.

use super::head::Head;
use super::{Partitioning, View};
use rustc_hash::FxHashMap;
use tickertape_backend::{AppendOutcome, Result, SeriesHead};
use tickertape_core::{Point, SeriesId};

#[derive(Default)]
pub struct Stage {
    points: Head,
    latest: FxHashMap<SeriesId, SeriesHead>,
    /// Part blocks decoded to check late points, for the rest of the group.
    blocks: FxHashMap<(u64, SeriesId), Vec<Point>>,
}

impl Stage {
    /// Stages one series' points (strictly increasing) under the last-write-wins rule and
    /// says which of them the store held already. `view` is the published store; the
    /// stage itself counts too, so two appends to one series in a group see each other.
    pub fn append(
        &mut self,
        view: &View,
        by: Partitioning,
        series: SeriesId,
        points: &[Point],
    ) -> Result<AppendOutcome> {
        let mut outcome = AppendOutcome::all_new();
        let mut head = self
            .latest
            .get(&series)
            .or_else(|| view.latest.get(&series))
            .copied();
        // Indices of points that replaced a point staged earlier in this group, ascending.
        let mut restaged = Vec::new();
        self.points.insert_all(series, points, |i| restaged.push(i));
        let mut restaged = restaged.into_iter().peekable();
        for (i, &p) in points.iter().enumerate() {
            let staged_before = restaged.next_if_eq(&i).is_some();
            // Only a point at or before the series' latest time can exist already; the
            // usual append after it costs no lookup.
            let late = head.is_some_and(|h| p.time <= h.last.time);
            let existed =
                staged_before || (late && view.contains(series, p.time, by, &mut self.blocks)?);
            if existed {
                outcome.existing.push(i);
            }
            head = Some(match head {
                None => SeriesHead { last: p, count: 1 },
                Some(h) => SeriesHead {
                    last: if p.time >= h.last.time { p } else { h.last },
                    count: h.count + u64::from(!existed),
                },
            });
        }
        if let Some(h) = head {
            self.latest.insert(series, h);
        }
        Ok(outcome)
    }

    /// Makes the staged points readable (after the group is durable).
    pub fn publish(self, view: &mut View) {
        for (series, points) in self.points.iter() {
            view.head.insert_all(series, points, |_| {});
        }
        view.latest.extend(self.latest);
    }
}
