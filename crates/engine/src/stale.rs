//! Prometheus' stale markers in tickertape's own answers: stored, read raw by PromQL
//! (`samples_read.rs`), but no values here. Summaries leave them out in `core`; this is
//! the part that needs reads: the value next to a range when the point there is a marker.

use crate::{Engine, EngineError};
use tickertape_backend::SeriesInfo;
use tickertape_core::model::is_stale_marker;
use tickertape_core::query::without_stale_markers;
use tickertape_core::schema::MeasurementSchema;
use tickertape_core::Point;

/// Reads past consecutive stale markers to find a neighbouring value, at most this many.
/// A series has a marker where it stopped and values again once it resumes, so one read
/// is the usual case; the bound keeps a pathological run of markers from turning one
/// query into an unbounded walk (past it, the range simply has no neighbour there).
const MAX_NEIGHBOR_READS: usize = 16;

impl Engine {
    /// `all`, a raw read of `[start, end)` with the points around it, without stale
    /// markers, and with the value before `start` and the first at or after `end` in
    /// place of the points around it when those are markers.
    pub(crate) async fn values_with_neighbors(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        all: Vec<Point>,
        start: i64,
        end: i64,
    ) -> Result<Vec<Point>, EngineError> {
        let first = all.first().map(|p| p.time);
        let last = all.last().map(|p| p.time);
        let mut values = without_stale_markers(all);
        // Points were read before `start` (after `end`) and none of them is a value: they
        // are markers, and the neighbouring value lies further out.
        if let Some(first) = first.filter(|&t| t < start) {
            if values.first().is_none_or(|p| p.time >= start) {
                if let Some(p) = self.value_before(info, schema, first).await? {
                    values.insert(0, p);
                }
            }
        }
        if let Some(last) = last.filter(|&t| t >= end) {
            if values.last().is_none_or(|p| p.time < end) {
                if let Some(p) = self.value_after(info, schema, last).await? {
                    values.push(p);
                }
            }
        }
        Ok(values)
    }

    /// The last value (not a stale marker) strictly before `time`, reading back past
    /// markers at most [`MAX_NEIGHBOR_READS`] times.
    pub(crate) async fn value_before(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        mut time: i64,
    ) -> Result<Option<Point>, EngineError> {
        for _ in 0..MAX_NEIGHBOR_READS {
            // An empty range reads the points around it: the one before `time` included.
            let around = self.raw_points(info, schema, time, time).await?;
            let before = &around[..around.partition_point(|p| p.time < time)];
            if let Some(value) = before.iter().rev().find(|p| !is_stale_marker(p.value)) {
                return Ok(Some(*value));
            }
            match before.first() {
                Some(marker) => time = marker.time,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The first value strictly after `time`, reading on past markers at most
    /// [`MAX_NEIGHBOR_READS`] times.
    async fn value_after(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        mut time: i64,
    ) -> Result<Option<Point>, EngineError> {
        for _ in 0..MAX_NEIGHBOR_READS {
            let Some(from) = time.checked_add(1) else {
                return Ok(None);
            };
            let around = self.raw_points(info, schema, from, from).await?;
            let after = &around[around.partition_point(|p| p.time < from)..];
            if let Some(value) = after.iter().find(|p| !is_stale_marker(p.value)) {
                return Ok(Some(*value));
            }
            match after.last() {
                Some(marker) => time = marker.time,
                None => return Ok(None),
            }
        }
        Ok(None)
    }
}
