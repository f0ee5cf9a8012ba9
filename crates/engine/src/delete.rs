//! Deleting series' points: a selection resolved to series, their points deleted over a
//! range on whatever layout their measurement has, and the series left with no point
//! removed from the catalog (as Prometheus removes a series deleted whole).
//!
//! Value segments delete through `ValueStore::delete_points`, on every backend. A bucket
//! measurement (`layout = "buckets"`) has no per-point delete in the trait: its series are
//! deleted whole only (no `start` or `end`), by removing them from the catalog — the
//! documents of the removed ids are unreachable and go with their partitions at retention
//! — and a range over one is refused before anything is deleted.

use crate::{Engine, EngineError};
use std::collections::BTreeMap;
use tickertape_backend::{DeleteRange, SeriesInfo};
use tickertape_core::schema::Layout;
use tickertape_core::{SeriesId, SeriesSelector};

/// What a delete did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// Series the selection matched: their points in the range are deleted.
    pub series_matched: u64,
    /// Of those, the series left with no point, removed from the catalog: no longer
    /// listed, and a later write of the same key starts a new series.
    pub series_removed: u64,
}

impl Engine {
    /// Deletes the points in `range` of every series `selector` selects (a measurement,
    /// tag conditions, optionally a field), and removes the series left with no point.
    pub async fn delete(
        &self,
        selector: &SeriesSelector,
        range: DeleteRange,
    ) -> Result<DeleteReport, EngineError> {
        let series = self.find_stored(selector).await?;
        self.delete_series(series, range).await
    }

    /// [`delete`](Self::delete) for series another API's selection found (Prometheus'
    /// `match[]`); each series counted once however often it is given.
    pub async fn delete_series(
        &self,
        series: Vec<SeriesInfo>,
        range: DeleteRange,
    ) -> Result<DeleteReport, EngineError> {
        let by_id: BTreeMap<SeriesId, SeriesInfo> = series.into_iter().map(|s| (s.id, s)).collect();
        let mut values = Vec::new();
        let mut buckets = Vec::new();
        for (id, info) in &by_id {
            match self.schema.for_measurement(&info.key.measurement).layout {
                Layout::Segments => values.push(*id),
                Layout::Buckets { .. } if range.is_all() => buckets.push(*id),
                Layout::Buckets { .. } => {
                    return Err(EngineError::BadQuery(format!(
                        "measurement {:?} keeps buckets, whose points can be deleted only \
                         whole: leave out start and end to delete its series",
                        info.key.measurement
                    )))
                }
            }
        }
        if !values.is_empty() {
            self.backend.delete_points(&values, range).await?;
        }
        let heads = self.backend.heads(&values).await?;
        let mut empty: Vec<SeriesId> = values
            .iter()
            .zip(heads)
            .filter(|(_, head)| head.is_none())
            .map(|(id, _)| *id)
            .collect();
        empty.extend(buckets);
        let removed = match empty.is_empty() {
            true => 0,
            false => self.backend.remove_series(&empty).await?,
        };
        if removed > 0 {
            // Their ids are gone: a line naming them again registers them anew.
            self.db.cache.clear();
        }
        tracing::info!(
            matched = by_id.len(),
            removed,
            start = range.start(),
            end = ?range.end(),
            "deleted series points"
        );
        Ok(DeleteReport {
            series_matched: by_id.len() as u64,
            series_removed: removed,
        })
    }
}
