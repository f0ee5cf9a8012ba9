//! Background work on bucket documents: retention (drop whole time partitions once they
//! are older than their resolution's retention) and pre-allocation (write the next
//! period's empty documents ahead of the writes, seed 004). Both read time from the
//! engine's clock, so tests move time instead of sleeping.

use crate::{Engine, EngineError};
use std::collections::HashMap;
use tickertape_backend::{BucketFamily, NameSpace, Partition, SlotKind};
use tickertape_core::rollup::{BucketGeometry, ResolutionOrRaw};
use tickertape_core::schema::Layout;
use tickertape_core::SeriesSelector;

/// A partition retention dropped (or would drop, in a dry run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiredPartition {
    pub measurement: String,
    pub resolution: ResolutionOrRaw,
    /// The partition covers `[start, end)`, ns.
    pub start: i64,
    pub end: i64,
    /// The retention it exceeded, ns.
    pub retention: i64,
}

/// What one retention pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub dropped: Vec<ExpiredPartition>,
    /// Partitions looked at and kept.
    pub kept: usize,
}

impl Engine {
    /// Drops every partition whose newest possible point is older than its resolution's
    /// retention at the clock's "now" (`end <= now - retention`): data is kept at least as
    /// long as configured, and dropped a partition at a time. With `dry_run`, only reports.
    /// A partition of a measurement or resolution without a retention is kept.
    pub async fn apply_retention(&self, dry_run: bool) -> Result<RetentionReport, EngineError> {
        let now = self.clock.now_nanos();
        let partitions = self.backend.list_partitions().await?;
        let names = self.measurement_names(&partitions).await?;
        let mut report = RetentionReport::default();
        for partition in partitions {
            let Some(name) = names.get(&partition.family.measurement) else {
                report.kept += 1;
                continue;
            };
            let level = partition.family.resolution();
            let retention = self.schema.for_measurement(name).retention_ns(level);
            let expired = retention.filter(|&keep| partition.end() <= now.saturating_sub(keep));
            let Some(retention) = expired else {
                report.kept += 1;
                continue;
            };
            if !dry_run {
                self.backend.drop_partition(partition).await?;
                tracing::info!(
                    measurement = %name, resolution = %level, start = partition.start,
                    "retention dropped a partition"
                );
            }
            report.dropped.push(ExpiredPartition {
                measurement: name.clone(),
                resolution: level,
                start: partition.start,
                end: partition.end(),
                retention,
            });
        }
        Ok(report)
    }

    /// The measurement name of each token the partitions use.
    async fn measurement_names(
        &self,
        partitions: &[Partition],
    ) -> Result<HashMap<u64, String>, EngineError> {
        let mut tokens: Vec<u64> = partitions.iter().map(|p| p.family.measurement).collect();
        tokens.sort_unstable();
        tokens.dedup();
        let names = self
            .backend
            .names_of(NameSpace::Measurement, &tokens)
            .await?;
        Ok(tokens
            .into_iter()
            .zip(names)
            .filter_map(|(t, n)| Some((t, n?)))
            .collect())
    }

    /// Writes empty raw bucket documents for the period after the current one, for every
    /// series of every measurement configured with `preallocate = true`. Returns how many
    /// documents were created (existing ones are left alone).
    pub async fn preallocate_next_period(&self) -> Result<u64, EngineError> {
        let now = self.clock.now_nanos();
        let mut created = 0;
        for (name, schema) in &self.schema.measurements {
            let Layout::Buckets { interval_ns } = schema.layout else {
                continue;
            };
            if !schema.preallocate {
                continue;
            }
            let Some(geometry) = BucketGeometry::for_slot(interval_ns) else {
                continue;
            };
            let Some((current, _)) = geometry.slot_of(now) else {
                continue;
            };
            let Some(next) = current.checked_add(geometry.period_ns()) else {
                continue;
            };
            let selector = SeriesSelector {
                measurement: name.clone(),
                ..SeriesSelector::default()
            };
            let series: Vec<_> = self
                .backend
                .find_series(&selector)
                .await?
                .into_iter()
                .map(|s| s.id)
                .collect();
            if series.is_empty() {
                continue;
            }
            let family = BucketFamily {
                measurement: self.measurement_token(name).await?,
                slots: SlotKind::Raw { interval_ns },
            };
            created += self.backend.preallocate(family, &series, next).await?;
        }
        Ok(created)
    }
}
