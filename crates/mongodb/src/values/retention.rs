//! Retention: whole value partitions dropped, as MMS drops whole collections (seeds 001,
//! 004), after their rollups are made to cover every point they hold; whole rollup
//! partitions dropped by their own retention.

use mongodb::bson::doc;
use tickertape_backend::Result;
use tickertape_core::rollup::Resolution;

use super::fold::Scope;
use super::names::PartitionName;
use super::write::PENDING;
use crate::error::map_err;
use crate::Shared;

impl Shared {
    pub(crate) async fn drop_values_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let mut spans = Vec::new();
        for (p, end) in self.ended_partitions(measurement, None, cutoff).await? {
            spans.push((p.start, end));
            if dry_run {
                continue;
            }
            let collection = p.collection();
            // The rollups outlive the points: bring them up to date first.
            self.fold_one(&collection, Scope::Verify).await?;
            self.drop_collection(&p).await?;
            self.collection(PENDING)
                .delete_one(doc! { "_id": &collection })
                .await
                .map_err(|e| map_err("clear fold mark", e))?;
        }
        Ok(spans)
    }

    /// Drops `measurement`'s rollup partitions at `resolution` that end at or before
    /// `cutoff` (whole collections), or lists them.
    pub(crate) async fn drop_rollups_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let ended = self
            .ended_partitions(measurement, Some(resolution.nanos()), cutoff)
            .await?;
        let mut spans = Vec::new();
        for (p, end) in ended {
            if !dry_run {
                self.drop_collection(&p).await?;
            }
            spans.push((p.start, end));
        }
        Ok(spans)
    }

    /// `measurement`'s partitions of values (`resolution: None`) or of rollups at a
    /// resolution that end at or before `cutoff`, with their ends.
    async fn ended_partitions(
        &self,
        measurement: &str,
        resolution: Option<i64>,
        cutoff: i64,
    ) -> Result<Vec<(PartitionName, i64)>> {
        let Some(token) = self.measurement_token(measurement).await? else {
            return Ok(Vec::new());
        };
        let by = self.layout.partitioning;
        Ok(self
            .partitions(Some(token))
            .await?
            .into_iter()
            .filter(|p| p.resolution == resolution)
            .map(|p| (p, by.clamped_end_of(p.start)))
            .filter(|&(_, end)| end <= cutoff)
            .collect())
    }
}
