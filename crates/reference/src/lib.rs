//! The in-memory reference backend: the storage contract of `tickertape-backend` as plain
//! code. Every rule written on [`Backend`] and its types is implemented here where it can
//! be seen, with the doc it implements quoted beside it; speed is not a goal.
//!
//! The conformance suite (`crates/conformance`) runs its tests on this backend too, and
//! its model check drives a real backend and a fresh reference with the same random
//! operations and compares every answer: where they differ, the trait docs decide which
//! one is wrong. The engine's own tests run on it where storage is not what they test.
//!
//! # Layout
//! - `registry`: series keys ↔ ids;
//! - `segments`: one sorted list of points per series, value segments derived on read;
//! - `rollups`: derived rollups of value segments, and those that outlive raw retention;
//! - `buckets`: bucket documents in partitions, slot writes, shells;
//! - `names`: the name store;
//! - `tokens`: API tokens ([`MemoryTokens`]).
//!
//! All state is plain `BTreeMap`s behind one `std::sync::Mutex` (never held across an
//! `.await`), so every call is atomic. [`ReferenceBackend::reopen`] hands out another
//! backend on the same state: what the conformance suite's "drop and open again" sees,
//! as a store on disk would be seen after a restart.

mod buckets;
mod names;
mod registry;
mod rollups;
mod segments;
mod tokens;

pub use tokens::MemoryTokens;

use async_trait::async_trait;
use std::sync::{Arc, Mutex, MutexGuard};
use tickertape_backend::{
    Backend, BackendError, BucketRange, BucketRead, BucketWrite, BucketWriteOutcome, DeleteRange,
    DeriveRollups, DocumentStart, NameKind, NameQuery, Partition, RawBatch, RawOutcome, Result,
    RollupPlan, SegmentRollupPlan, SeriesAppend, SeriesCount, SeriesHead, SeriesInfo,
    SnapshotReport, SnapshotTarget, StorageStats, StoredBucket,
};
use tickertape_backend::{BucketStore, DatabaseCatalog, NameStore, SeriesCatalog, ValueStore};
use tickertape_core::database::DatabaseName;
use tickertape_core::partition::{Partitioning, DEFAULT_PARTITION_NS};
use tickertape_core::query::Summary;
use tickertape_core::retention_policy::RetentionPolicies;
use tickertape_core::rollup::Resolution;
use tickertape_core::segment::{Segment, DEFAULT_SEGMENT_CAPACITY};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

/// Everything a reference store holds.
#[derive(Clone, Debug)]
struct State {
    /// Points per value segment.
    segment_capacity: usize,
    /// The time partitions of value segments: what raw retention drops whole.
    partitioning: Partitioning,
    series: registry::Registry,
    points: segments::Points,
    /// Rollup slots of partitions whose raw points retention dropped.
    kept: rollups::Kept,
    buckets: buckets::Buckets,
    names: names::Names,
    /// `DatabaseCatalog`: the databases created and not dropped.
    databases: std::collections::BTreeSet<DatabaseName>,
    /// `DatabaseCatalog`: each database's retention policies, as last set.
    retention_policies: std::collections::BTreeMap<DatabaseName, RetentionPolicies>,
}

impl State {
    /// `Backend::append`: "an unknown id fails the call with `UnknownSeries` (… the
    /// embedded and reference backends check before storing any)"; then each append in
    /// order ("Several appends to the same series in one call are applied in order").
    fn append(&mut self, appends: &[SeriesAppend]) -> Result<()> {
        if let Some(unknown) = appends
            .iter()
            .map(SeriesAppend::series)
            .find(|&s| !self.series.is_registered(s))
        {
            return Err(BackendError::UnknownSeries(unknown));
        }
        for a in appends {
            self.points.append(a);
        }
        Ok(())
    }

    /// `Backend::write_buckets`: "one outcome per write, in order".
    fn write_buckets(&mut self, writes: &[BucketWrite]) -> Result<Vec<BucketWriteOutcome>> {
        writes.iter().map(|w| self.buckets.write(w)).collect()
    }
}

/// The reference backend. Cheap to clone; clones and [`reopen`](Self::reopen)ed handles
/// share one store.
#[derive(Clone)]
pub struct ReferenceBackend {
    state: Arc<Mutex<State>>,
    /// The derived rollups kept (`Backend::derive_segment_rollups`).
    plan: Arc<RollupPlan>,
}

impl Default for ReferenceBackend {
    /// An empty store with the default segment capacity (160 points, 4 KiB of BSON).
    fn default() -> Self {
        Self::from_state(DEFAULT_SEGMENT_CAPACITY)
    }
}

impl ReferenceBackend {
    /// An empty store whose value segments hold `segment_capacity` points; `Invalid` for 0,
    /// as the other backends refuse it.
    pub fn new(segment_capacity: usize) -> Result<Self> {
        if segment_capacity == 0 {
            return Err(BackendError::Invalid(
                "segment capacity must be at least 1".into(),
            ));
        }
        Ok(Self::from_state(segment_capacity))
    }

    /// The same store with value partitions `partition_ns` wide (a day by default): what
    /// raw retention drops whole. `Invalid` unless positive.
    pub fn with_partition_ns(self, partition_ns: i64) -> Result<Self> {
        let by = Partitioning::new(partition_ns).ok_or_else(|| {
            BackendError::Invalid(format!(
                "partition width must be positive, not {partition_ns}"
            ))
        })?;
        self.state().partitioning = by;
        Ok(self)
    }

    fn from_state(segment_capacity: usize) -> Self {
        let partitioning = Partitioning::new(DEFAULT_PARTITION_NS).expect("a positive width");
        Self {
            state: Arc::new(Mutex::new(State {
                segment_capacity,
                partitioning,
                series: Default::default(),
                points: Default::default(),
                kept: Default::default(),
                buckets: Default::default(),
                names: Default::default(),
                databases: Default::default(),
                retention_policies: Default::default(),
            })),
            plan: Arc::new(RollupPlan::default()),
        }
    }

    /// Another backend on the same store, as opening a store again after a restart: it
    /// sees everything acknowledged before.
    pub fn reopen(&self) -> Self {
        self.clone()
    }

    /// The state, locked. A panic while the lock was held cannot have left a change half
    /// made — every change is built before it is stored, and `write_with_rollups` works on
    /// a copy — so a poisoned lock is taken over rather than passed on.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Backend for ReferenceBackend {
    fn kind(&self) -> &'static str {
        "reference"
    }

    /// `bytes` is an estimate of the payload (16 bytes a point, what documents hold).
    async fn stats(&self) -> Result<StorageStats> {
        let state = self.state();
        Ok(StorageStats {
            bytes: state.points.point_count() * 16 + state.buckets.payload_bytes(),
            segments: state.points.segment_count(state.segment_capacity),
            series: state.series.len() as u64,
            memory_points: 0,
            index_memory_bytes: 0,
            rollup_lag_points: 0,
        })
    }

    /// Atomic, as "a backend that can" makes it: the batch and its rollups are applied to
    /// a copy of the state, which replaces the state only when every step succeeded, so an
    /// `Err` (an unknown series, a failing `derive`) leaves nothing stored.
    async fn write_with_rollups(
        &self,
        batch: RawBatch,
        derive: DeriveRollups,
    ) -> Result<RawOutcome> {
        let mut state = self.state();
        let mut next = state.clone();
        next.append(&batch.appends)?;
        let outcome = RawOutcome {
            buckets: next.write_buckets(&batch.buckets)?,
        };
        let rollups = derive(&outcome)?;
        next.write_buckets(&rollups)?;
        *state = next;
        Ok(outcome)
    }

    /// Nothing is kept in pieces.
    async fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// The reference keeps its state in memory only: there are no files to copy.
    async fn snapshot(&self, _target: SnapshotTarget) -> Result<SnapshotReport> {
        Err(BackendError::Unsupported(
            "snapshots: the in-memory reference backend has no files to copy; \
             `tickertape admin export` writes its points as line protocol"
                .into(),
        ))
    }
}

#[async_trait]
impl SeriesCatalog for ReferenceBackend {
    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>> {
        Ok(self.state().series.resolve(keys))
    }

    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>> {
        Ok(self.state().series.lookup(keys))
    }

    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount> {
        Ok(self.state().series.count(measurements))
    }

    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>> {
        let state = self.state();
        Ok(state
            .series
            .matching(selector)
            .into_iter()
            .map(|(id, key)| SeriesInfo { id, key })
            .collect())
    }

    async fn list_fields(&self) -> Result<Vec<(String, String)>> {
        Ok(self.state().series.fields())
    }

    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        Ok(self.state().series.tag_keys(measurement, query))
    }

    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        Ok(self.state().series.tag_values(measurement, key, query))
    }

    /// "Removes `series` from the catalog … registers it anew under a new id".
    async fn remove_series(&self, series: &[SeriesId]) -> Result<u64> {
        Ok(self.state().series.remove(series))
    }
}

#[async_trait]
impl ValueStore for ReferenceBackend {
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<()> {
        self.state().append(&appends)
    }

    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>> {
        let state = self.state();
        Ok(state
            .points
            .read(series, state.segment_capacity, start, end))
    }

    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        let state = self.state();
        Ok(series.iter().map(|&s| state.points.head(s)).collect())
    }

    fn derive_segment_rollups(&self, plan: SegmentRollupPlan) {
        self.plan.set(plan);
    }

    /// "Each slot is exactly what `core::rollup::summarize_slots` gives over the series'
    /// stored points": computed on every read, with the slots raw retention set aside.
    async fn read_segment_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>> {
        let state = self.state();
        let by = state.partitioning;
        let raw = state.points.between(series, start, end);
        let holds_raw = |p: i64| {
            !state
                .points
                .between(series, p, by.clamped_end_of(p))
                .is_empty()
        };
        Ok(rollups::read(
            raw,
            &state.kept,
            series,
            resolution,
            (start, end),
            by,
            holds_raw,
        ))
    }

    async fn drop_segment_rollup_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let mut state = self.state();
        let by = state.partitioning;
        let mut spans = Vec::new();
        for s in state.series.ids_of(measurement) {
            for start in state.kept.partitions(s, resolution, by) {
                let end = by.clamped_end_of(start);
                if end <= cutoff {
                    spans.push((start, end));
                    if !dry_run {
                        state.kept.forget(s, resolution, (start, end));
                    }
                }
            }
        }
        spans.sort_unstable();
        spans.dedup();
        Ok(spans)
    }

    /// "Drops the raw points … in whole time partitions that end at or before `cutoff`";
    /// the slots of the kept rollups that fit in a partition are set aside first.
    async fn drop_raw_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>> {
        let mut state = self.state();
        let spans = Self::raw_partitions_before(&state, measurement, cutoff);
        if dry_run {
            return Ok(spans);
        }
        let kept = self.plan.kept(measurement, state.partitioning);
        let state = &mut *state;
        for s in state.series.ids_of(measurement) {
            for &span in &spans {
                let points = state.points.between(s, span.0, span.1).to_vec();
                if !points.is_empty() {
                    state.kept.keep(s, &points, span, &kept);
                    state.points.remove_between(s, span.0, span.1);
                }
            }
        }
        Ok(spans)
    }

    /// "Deletes every stored point of each of `series` whose time is in `range`": the
    /// points leave the one list, so reads, heads and rollups (computed on each read)
    /// answer from what remains; the slots kept past raw retention stay.
    async fn delete_points(&self, series: &[SeriesId], range: DeleteRange) -> Result<()> {
        let mut state = self.state();
        for &s in series {
            state.points.delete(s, range);
        }
        Ok(())
    }
}

#[async_trait]
impl BucketStore for ReferenceBackend {
    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        self.state().write_buckets(&writes)
    }

    async fn read_buckets(
        &self,
        range: BucketRange,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        Ok(self.state().buckets.read(range, part))
    }

    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64> {
        Ok(self.state().buckets.preallocate(document, series))
    }

    async fn list_partitions(&self) -> Result<Vec<Partition>> {
        Ok(self.state().buckets.list_partitions())
    }

    async fn drop_partition(&self, partition: Partition) -> Result<()> {
        self.state().buckets.drop_partition(partition);
        Ok(())
    }
}

#[async_trait]
impl DatabaseCatalog for ReferenceBackend {
    /// "Every database created and not dropped, sorted by name."
    async fn databases(&self) -> Result<Vec<DatabaseName>> {
        Ok(self.state().databases.iter().cloned().collect())
    }

    /// "Answers whether it was new."
    async fn create_database(&self, name: &DatabaseName) -> Result<bool> {
        Ok(self.state().databases.insert(name.clone()))
    }

    /// "Removes `name` from the list … and answers whether it was there."
    async fn drop_database(&self, name: &DatabaseName) -> Result<bool> {
        let mut state = self.state();
        state.retention_policies.remove(name);
        Ok(state.databases.remove(name))
    }

    /// "The retention policies last set for database `name` …, `None` if none were set."
    async fn retention_policies(&self, name: &DatabaseName) -> Result<Option<RetentionPolicies>> {
        Ok(self.state().retention_policies.get(name).cloned())
    }

    /// "Replaces the retention policies of `name` (`None` removes them)."
    async fn set_retention_policies(
        &self,
        name: &DatabaseName,
        policies: Option<&RetentionPolicies>,
    ) -> Result<()> {
        let mut state = self.state();
        match policies {
            Some(policies) => state
                .retention_policies
                .insert(name.clone(), policies.clone()),
            None => state.retention_policies.remove(name),
        };
        Ok(())
    }
}

#[async_trait]
impl NameStore for ReferenceBackend {
    async fn tokenize(&self, namespace: NameKind, names: &[String]) -> Result<Vec<u64>> {
        Ok(self.state().names.tokenize(namespace, names))
    }

    async fn names_of(&self, namespace: NameKind, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        Ok(self.state().names.names_of(namespace, tokens))
    }
}

impl ReferenceBackend {
    /// The partitions of `measurement`'s raw points that end at or before `cutoff`.
    fn raw_partitions_before(state: &State, measurement: &str, cutoff: i64) -> Vec<(i64, i64)> {
        let by = state.partitioning;
        let mut spans: Vec<(i64, i64)> = state
            .series
            .ids_of(measurement)
            .into_iter()
            .flat_map(|s| state.points.between(s, i64::MIN, cutoff).to_vec())
            .map(|p| (by.start_of(p.time), by.clamped_end_of(by.start_of(p.time))))
            .filter(|&(_, end)| end <= cutoff)
            .collect();
        spans.sort_unstable();
        spans.dedup();
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::Point;

    fn key(host: &str) -> SeriesKey {
        SeriesKey::new("cpu", vec![("host".into(), host.into())], "u")
    }

    #[tokio::test]
    async fn unknown_series_store_nothing_and_reopen_sees_everything() {
        let backend = ReferenceBackend::new(2).unwrap();
        let ids = backend.resolve_series(&[key("a")]).await.unwrap();
        let points = vec![Point::new(1, 1.0)];
        let appends = vec![
            SeriesAppend::new(ids[0], points.clone()).unwrap(),
            SeriesAppend::new(SeriesId(99), points).unwrap(),
        ];
        match backend.append(appends).await {
            Err(BackendError::UnknownSeries(SeriesId(99))) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(backend.heads(&ids).await.unwrap(), vec![None]);

        let again = backend.reopen();
        drop(backend);
        assert_eq!(again.resolve_series(&[key("a")]).await.unwrap(), ids);
    }

    #[tokio::test]
    async fn a_failing_derive_stores_nothing() {
        let backend = ReferenceBackend::new(2).unwrap();
        let ids = backend.resolve_series(&[key("a")]).await.unwrap();
        let batch = RawBatch {
            appends: vec![SeriesAppend::new(ids[0], vec![Point::new(1, 1.0)]).unwrap()],
            buckets: Vec::new(),
        };
        let derive: DeriveRollups = Box::new(|_| Err(BackendError::Invalid("no rollups".into())));
        assert!(backend.write_with_rollups(batch, derive).await.is_err());
        assert_eq!(backend.heads(&ids).await.unwrap(), vec![None]);
    }
}
