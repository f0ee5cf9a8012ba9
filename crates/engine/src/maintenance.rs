//! Background work on bucket documents: retention (drop whole time partitions once they
//! are older than their resolution's retention) and pre-allocation (write the next
//! period's empty documents ahead of the writes, `docs/design.md#pre-allocation`). Both
//! read time from the engine's clock, so tests move time instead of sleeping.

use crate::{Engine, EngineError};
use std::collections::HashMap;
use tickertape_backend::DocumentStart;
use tickertape_backend::{
    BackendError, BucketFamily, BucketWrite, Expiry, NameKind, Partition, SeriesInfo,
};
use tickertape_core::database::{describe_stored, split_stored, DatabaseName};
use tickertape_core::query::{select_range, without_stale_markers};
use tickertape_core::retention_policy::PolicyRetention;
use tickertape_core::rollup::{rollup_updates, BucketGeometry, Resolution, ResolutionOrRaw};
use tickertape_core::schema::Layout;
use tickertape_core::time::window_start;
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

/// What a rollup rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Rollup partitions dropped and computed again from raw points.
    pub rebuilt: usize,
    /// Partitions left alone because their raw points are past the raw retention.
    pub skipped: usize,
    pub series: usize,
    /// Raw points read (once per resolution).
    pub points: u64,
}

/// Most partitions one rebuild may cover, so that a range like "everything" is refused
/// rather than walked partition by partition for centuries.
const MAX_REBUILD_PARTITIONS: i64 = 10_000;

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
        let policies = self.policy_retentions().await?;
        let mut report = self
            .apply_segment_retention(now, dry_run, &policies)
            .await?;
        let partitions = self.backend.list_partitions().await?;
        let names = self.measurement_names(&partitions).await?;
        for partition in partitions {
            let Some(stored) = names.get(&partition.family().measurement()) else {
                report.kept += 1;
                continue;
            };
            let name = &describe_stored(stored);
            let level = partition.family().resolution();
            let retention = self.retention_of_stored(stored, level, &policies);
            let expired = retention.filter(|&keep| partition.end() <= now.saturating_sub(keep));
            let Some(retention) = expired else {
                report.kept += 1;
                continue;
            };
            if !dry_run {
                self.backend.drop_partition(partition).await?;
                tracing::info!(
                    measurement = %name, resolution = %level, start = partition.start(),
                    "retention dropped a partition"
                );
            }
            report.dropped.push(ExpiredPartition {
                measurement: name.clone(),
                resolution: level,
                start: partition.start(),
                end: partition.end(),
                retention,
            });
        }
        Ok(report)
    }

    /// The retention of value-segment measurements, raw points and the rollups the
    /// backend derives from them (which outlive the raw points), of every measurement
    /// stored in every database — listed in the config or taking the defaults: one
    /// `Backend::drop_expired` for all of them, so a store whose partitions hold every
    /// measurement rewrites each partition once per pass.
    async fn apply_segment_retention(
        &self,
        now: i64,
        dry_run: bool,
        policies: &HashMap<DatabaseName, PolicyRetention>,
    ) -> Result<RetentionReport, EngineError> {
        let mut kept = Vec::new();
        for stored in self.stored_measurements().await? {
            let m = self.schema.for_measurement(split_stored(&stored).1);
            if self.writes_rollups_of(m) {
                continue;
            }
            let levels = std::iter::once(ResolutionOrRaw::Raw)
                .chain(m.rollups.iter().map(|&r| ResolutionOrRaw::Rollup(r)));
            for level in levels {
                if let Some(retention) = self.retention_of_stored(&stored, level, policies) {
                    kept.push((stored.clone(), (level, retention)));
                }
            }
        }
        if kept.is_empty() {
            return Ok(RetentionReport::default());
        }
        let expiries: Vec<Expiry> = kept
            .iter()
            .map(|(stored, (level, retention))| Expiry {
                measurement: stored.clone(),
                level: *level,
                cutoff: now.saturating_sub(*retention),
            })
            .collect();
        let dropped = self.backend.drop_expired(&expiries, dry_run).await?;
        let mut report = RetentionReport::default();
        for ((stored, (level, retention)), dropped) in kept.into_iter().zip(dropped) {
            let name = describe_stored(&stored);
            for (start, end) in dropped {
                if !dry_run {
                    tracing::info!(measurement = %name, resolution = %level, start, "retention dropped a partition of value segments");
                }
                report.dropped.push(ExpiredPartition {
                    measurement: name.clone(),
                    resolution: level,
                    start,
                    end,
                    retention,
                });
            }
        }
        Ok(report)
    }

    /// How long `level` of the measurement stored as `stored` is kept, ns (`None`:
    /// forever): its schema under its database's retention policies
    /// (`MeasurementSchema::retention_ns_under`, the one rule of precedence).
    fn retention_of_stored(
        &self,
        stored: &str,
        level: ResolutionOrRaw,
        policies: &HashMap<DatabaseName, PolicyRetention>,
    ) -> Option<i64> {
        let (database, measurement) = split_stored(stored);
        let database = match database {
            None => Some(self.default_database().clone()),
            Some(name) => DatabaseName::of_store(name).ok(),
        };
        let policy = database
            .and_then(|d| policies.get(&d).copied())
            .unwrap_or(PolicyRetention::Unset);
        self.schema
            .for_measurement(measurement)
            .retention_ns_under(level, policy)
    }

    /// Every measurement the store holds series of, by its stored name (every database's).
    async fn stored_measurements(&self) -> Result<Vec<String>, EngineError> {
        let mut names: Vec<String> = self
            .backend
            .list_fields()
            .await?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// `(measurement, raw retention)` of the configured value-segment measurements that
    /// have one.
    fn raw_segment_retentions(&self) -> Vec<(String, i64)> {
        self.schema
            .measurements
            .iter()
            .filter(|(_, m)| m.layout == Layout::Segments)
            .filter_map(|(name, m)| Some((name.clone(), m.retention_ns(ResolutionOrRaw::Raw)?)))
            .collect()
    }

    /// Refuses a schema the store cannot follow: a raw retention for value segments in a
    /// store that does not keep them in time partitions (MongoDB). A dry run drops nothing.
    pub async fn check_schema_fits_store(&self) -> Result<(), EngineError> {
        let mut probes: Vec<String> = self
            .raw_segment_retentions()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if self
            .schema
            .defaults
            .retention_ns(ResolutionOrRaw::Raw)
            .is_some()
        {
            // Any name: the question is whether the store keeps raw partitions at all.
            probes.push("retention-probe".into());
        }
        for name in probes {
            self.backend.drop_raw_before(&name, i64::MIN, true).await?;
        }
        Ok(())
    }

    /// The stored measurement name of each token the partitions use.
    pub(crate) async fn measurement_names(
        &self,
        partitions: &[Partition],
    ) -> Result<HashMap<u64, String>, EngineError> {
        let mut tokens: Vec<u64> = partitions
            .iter()
            .map(|p| p.family().measurement())
            .collect();
        tokens.sort_unstable();
        tokens.dedup();
        let names = self
            .backend
            .names_of(NameKind::Measurement, &tokens)
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
        let mut created = 0;
        for name in self.list_databases().await? {
            created += self
                .database(Some(name.as_str()))
                .await?
                .preallocate_in_database()
                .await?;
        }
        Ok(created)
    }

    /// [`preallocate_next_period`](Self::preallocate_next_period) in this database.
    async fn preallocate_in_database(&self) -> Result<u64, EngineError> {
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
                .find_stored(&selector)
                .await?
                .into_iter()
                .map(|s| s.id)
                .collect();
            if series.is_empty() {
                continue;
            }
            let family = BucketFamily::raw(self.measurement_token(name).await?, interval_ns)?;
            created += self
                .backend
                .preallocate(DocumentStart::new(family, next)?, &series)
                .await?;
        }
        Ok(created)
    }
}

impl Engine {
    /// Computes a measurement's rollups in `[start, end)` again from its raw points: every
    /// rollup partition overlapping the range is dropped and refilled, for every series.
    ///
    /// The repair for rollups that missed points: the engine updates rollups after the
    /// raw write, so a process that dies between the two leaves those points out of the
    /// rollups (and a retried body is refused as already stored). Run it while nothing
    /// writes to the measurement: a write landing between the drop and the refill of a
    /// partition is rolled up twice or not at all. A partition whose raw points may be
    /// past the raw retention is skipped, never emptied.
    pub async fn rebuild_rollups(
        &self,
        measurement: &str,
        start: i64,
        end: i64,
    ) -> Result<RebuildReport, EngineError> {
        let schema = self.schema.for_measurement(measurement);
        if !self.writes_rollups_of(schema) {
            return Err(EngineError::BadQuery(format!(
                "the {} store computes the rollups of measurement {measurement:?} from its \
                 raw points itself, so they never miss any: nothing to rebuild",
                self.backend.kind()
            )));
        }
        let series = self
            .find_stored(&SeriesSelector {
                measurement: measurement.to_string(),
                ..SeriesSelector::default()
            })
            .await?;
        let token = self.measurement_token(measurement).await?;
        let raw_horizon = schema
            .raw_retention_ns_under(self.policy_retention().await?)
            .map(|keep| self.clock.now_nanos().saturating_sub(keep));
        let mut report = RebuildReport {
            series: series.len(),
            ..RebuildReport::default()
        };
        for &resolution in &schema.rollups {
            let family = BucketFamily::rollup(token, resolution);
            for partition_start in partition_starts(resolution.geometry(), start, end)? {
                let partition = Partition::new(family, partition_start)?;
                if raw_horizon.is_some_and(|h| partition.start() < h) {
                    report.skipped += 1;
                    continue;
                }
                self.backend.drop_partition(partition).await?;
                for info in &series {
                    report.points += self.refill(info, resolution, partition).await?;
                }
                report.rebuilt += 1;
            }
        }
        Ok(report)
    }

    /// Rolls up one series' raw points of one partition's span into `resolution`.
    async fn refill(
        &self,
        info: &SeriesInfo,
        resolution: Resolution,
        partition: Partition,
    ) -> Result<u64, EngineError> {
        let schema = self.schema.for_measurement(&info.key.measurement);
        let (from, to) = (partition.start(), partition.end());
        let all = self.raw_points(info, schema, from, to).await?;
        // Stale markers are in no rollup; left out first, each slot gets one update.
        let points = without_stale_markers(select_range(&all, from, to, false));
        if points.is_empty() {
            return Ok(0);
        }
        let updates = rollup_updates(&points, &[resolution])
            .map_err(|e| BackendError::Invalid(e.to_string()))?;
        let token = partition.family().measurement();
        let writes = updates
            .iter()
            .map(|u| BucketWrite::rollup(token, info.id, u, &points))
            .collect::<Result<Vec<_>, _>>()?;
        self.backend.write_buckets(writes).await?;
        Ok(points.len() as u64)
    }
}

/// The starts of the partitions of `geometry` overlapping `[start, end)`.
fn partition_starts(
    geometry: BucketGeometry,
    start: i64,
    end: i64,
) -> Result<Vec<i64>, EngineError> {
    let width = geometry.partition_ns();
    if end <= start {
        return Ok(Vec::new());
    }
    let first = window_start(start, width);
    let count = (end as i128 - first as i128 + width as i128 - 1) / width as i128;
    if count > MAX_REBUILD_PARTITIONS as i128 {
        return Err(EngineError::BadQuery(format!(
            "the range covers {count} partitions; rebuild at most {MAX_REBUILD_PARTITIONS} at a time (narrow --start/--end)"
        )));
    }
    Ok((0..count as i64).map(|i| first + i * width).collect())
}
