//! `drop_raw_before`: whole value partitions dropped, as MMS drops whole collections
//! (seeds 001, 004), after their rollups are made to cover every point they hold.

use mongodb::bson::doc;
use tickertape_backend::Result;

use super::fold::Scope;
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
        let Some(token) = self.measurement_token(measurement).await? else {
            return Ok(Vec::new());
        };
        let by = self.layout.partitioning;
        let mut spans = Vec::new();
        for p in self.partitions(Some(token)).await? {
            let end = by.clamped_end_of(p.start);
            if p.resolution.is_some() || end > cutoff {
                continue;
            }
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
}
