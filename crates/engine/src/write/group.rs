//! A request's pending points grouped per series, sorted by time with the last write of a
//! time kept, and the points that need not be written (unchanged values, stale markers of
//! bucket slots).

use super::{Origin, Pending};
use crate::{Engine, EngineError};
use rustc_hash::FxHashMap;
use tickertape_core::model::is_stale_marker;
use tickertape_core::schema::{Layout, MeasurementSchema, Schema};
use tickertape_core::{Point, SeriesId};

/// The points of one series in this body, in line order.
pub(super) struct Group<'s> {
    pub(super) series: SeriesId,
    pub(super) measurement: &'s str,
    pub(super) schema: &'s MeasurementSchema,
    pub(super) points: Vec<Point>,
    /// For each point, the index of the pending point it came from.
    pub(super) origins: Vec<usize>,
}

impl Engine {
    /// The change-only filter (a value that did not change is not stored again), for
    /// measurements whose schema asks for it: drops a point whose value equals (bit for
    /// bit) the value before it in its series — the last stored one or the previous point
    /// of this body. Returns how many were dropped.
    ///
    /// A point that is not after the stored last time is kept (it may replace another
    /// value at its time, or fall between two changes): the filter only drops repeats at
    /// the series' end. Readers see the value hold until the next stored point;
    /// `neighbors=true` returns the point that carries it into a range. The heads it
    /// compares with are read from the primary store, never a lagging copy.
    pub(super) async fn drop_unchanged(
        &self,
        groups: &mut [Group<'_>],
    ) -> Result<u64, EngineError> {
        let filtered: Vec<usize> = (0..groups.len())
            .filter(|&g| {
                groups[g].schema.change_only && groups[g].schema.layout == Layout::Segments
            })
            .collect();
        if filtered.is_empty() {
            return Ok(0);
        }
        let ids: Vec<SeriesId> = filtered.iter().map(|&g| groups[g].series).collect();
        let heads = self.backend.heads(&ids).await?;
        let mut dropped = 0u64;
        for (&g, head) in filtered.iter().zip(heads) {
            let group = &mut groups[g];
            let mut previous = head.map(|h| h.last);
            let mut kept = 0;
            for i in 0..group.points.len() {
                let point = group.points[i];
                let after_last = previous.is_none_or(|p| point.time > p.time);
                let same = previous.is_some_and(|p| p.value.to_bits() == point.value.to_bits());
                if after_last && same {
                    dropped += 1;
                    continue;
                }
                if after_last {
                    previous = Some(point);
                }
                group.points[kept] = point;
                group.origins[kept] = group.origins[i];
                kept += 1;
            }
            group.points.truncate(kept);
            group.origins.truncate(kept);
        }
        Ok(dropped)
    }
}

/// Drops the stale markers of bucket measurements: a bucket slot holds one periodic
/// value, and a NaN in it would make its document's sum, min and max NaN for good. An
/// unwritten slot already says what the marker says (no value at that time). Returns how
/// many were dropped; they count as stored.
pub(super) fn drop_stale_markers_from_buckets(groups: &mut [Group<'_>]) -> u64 {
    let mut dropped = 0;
    for group in groups
        .iter_mut()
        .filter(|g| matches!(g.schema.layout, Layout::Buckets { .. }))
    {
        let before = group.points.len();
        let mut i = 0;
        group.origins.retain(|_| {
            let keep = !is_stale_marker(group.points[i].value);
            i += 1;
            keep
        });
        group.points.retain(|p| !is_stale_marker(p.value));
        dropped += (before - group.points.len()) as u64;
    }
    dropped
}

/// Groups pending points by series in line order. For value segments each group is then
/// sorted by time and, of points at the same time, the last line's is kept (the last write
/// wins, within a body as across bodies). Bucket slots take points in any order. Returns
/// the groups and how many points a later line of the body replaced.
pub(super) fn group_by_series<'s, O: Origin>(
    schema: &'s Schema,
    pending: &'s [Pending<'s, O>],
    ids: &[SeriesId],
) -> (Vec<Group<'s>>, u64) {
    let mut index: FxHashMap<SeriesId, usize> = FxHashMap::default();
    let mut groups: Vec<Group> = Vec::new();
    for (i, (p, &series)) in pending.iter().zip(ids).enumerate() {
        let g = *index.entry(series).or_insert_with(|| {
            let measurement: &str = p.source.measurement();
            groups.push(Group {
                series,
                measurement,
                schema: schema.for_measurement(measurement),
                points: Vec::new(),
                origins: Vec::new(),
            });
            groups.len() - 1
        });
        groups[g].points.push(p.point);
        groups[g].origins.push(i);
    }
    let superseded = groups
        .iter_mut()
        .filter(|g| g.schema.layout == Layout::Segments)
        .map(sort_keeping_last)
        .sum();
    (groups, superseded)
}

/// Sorts a group's points by time (stable: line order among equal times) and keeps, of
/// several at one time, the last: the body's own last write wins, as a later body's would.
/// Returns how many were superseded (written, then replaced within the body).
fn sort_keeping_last(group: &mut Group<'_>) -> u64 {
    if group.points.windows(2).all(|w| w[0].time < w[1].time) {
        return 0;
    }
    let before = group.points.len();
    let mut order: Vec<(Point, usize)> = group
        .points
        .iter()
        .copied()
        .zip(group.origins.iter().copied())
        .collect();
    order.sort_by_key(|(p, _)| p.time);
    let mut kept: Vec<(Point, usize)> = Vec::with_capacity(order.len());
    for entry in order {
        match kept.last_mut() {
            Some(last) if last.0.time == entry.0.time => *last = entry,
            _ => kept.push(entry),
        }
    }
    (group.points, group.origins) = kept.into_iter().unzip();
    (before - group.points.len()) as u64
}
