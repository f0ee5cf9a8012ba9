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
//! - `buckets`: bucket documents in partitions, slot writes, shells;
//! - `names`: the name store.
//!
//! All state is plain `BTreeMap`s behind one `std::sync::Mutex` (never held across an
//! `.await`), so every call is atomic. [`ReferenceBackend::reopen`] hands out another
//! backend on the same state: what the conformance suite's "drop and open again" sees,
//! as a store on disk would be seen after a restart.

mod buckets;
mod names;
mod registry;
mod segments;

use async_trait::async_trait;
use std::sync::{Arc, Mutex, MutexGuard};
use tickertape_backend::{
    AppendOutcome, AppendRule, Backend, BackendError, BucketRange, BucketRead, BucketWrite,
    BucketWriteOutcome, DeriveRollups, DocumentStart, NameQuery, NameSpace, Partition, RawBatch,
    RawOutcome, Result, SeriesAppend, SeriesCount, SeriesHead, SeriesInfo, StorageStats,
    StoredBucket,
};
use tickertape_core::segment::{Segment, DEFAULT_SEGMENT_CAPACITY};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

/// Everything a reference store holds.
#[derive(Clone, Debug)]
struct State {
    /// Points per value segment.
    segment_capacity: usize,
    /// What an append does with a point at or before its series' last time.
    rule: AppendRule,
    series: registry::Registry,
    points: segments::Points,
    buckets: buckets::Buckets,
    names: names::Names,
}

impl State {
    /// `Backend::append`: "an unknown id fails the call with `UnknownSeries` (… the
    /// embedded and reference backends check before storing any)"; then each append in
    /// order ("Several appends to the same series in one call are applied in order").
    fn append(&mut self, appends: &[SeriesAppend]) -> Result<Vec<AppendOutcome>> {
        if let Some(unknown) = appends
            .iter()
            .map(SeriesAppend::series)
            .find(|&s| !self.series.is_registered(s))
        {
            return Err(BackendError::UnknownSeries(unknown));
        }
        let rule = self.rule;
        Ok(appends
            .iter()
            .map(|a| self.points.append(a, rule))
            .collect())
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
}

impl Default for ReferenceBackend {
    /// An empty store with seed 000's segment capacity.
    fn default() -> Self {
        Self::from_state(DEFAULT_SEGMENT_CAPACITY, AppendRule::RefuseOlder)
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
        Ok(Self::from_state(segment_capacity, AppendRule::RefuseOlder))
    }

    /// An empty store that follows `rule` for points at or before a series' last time
    /// (the model of a backend with that [`Backend::append_rule`]).
    pub fn with_rule(segment_capacity: usize, rule: AppendRule) -> Result<Self> {
        let backend = Self::new(segment_capacity)?;
        backend.state().rule = rule;
        Ok(backend)
    }

    fn from_state(segment_capacity: usize, rule: AppendRule) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                segment_capacity,
                rule,
                series: Default::default(),
                points: Default::default(),
                buckets: Default::default(),
                names: Default::default(),
            })),
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

    fn append_rule(&self) -> AppendRule {
        self.state().rule
    }

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

    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<Vec<AppendOutcome>> {
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

    /// `bytes` is an estimate of the payload (16 bytes a point, what documents hold).
    async fn stats(&self) -> Result<StorageStats> {
        let state = self.state();
        Ok(StorageStats {
            bytes: state.points.point_count() * 16 + state.buckets.payload_bytes(),
            segments: state.points.segment_count(state.segment_capacity),
            series: state.series.len() as u64,
            memory_points: 0,
            index_memory_bytes: 0,
        })
    }

    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>> {
        self.state().write_buckets(&writes)
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
        let outcome = RawOutcome {
            appends: next.append(&batch.appends)?,
            buckets: next.write_buckets(&batch.buckets)?,
        };
        let rollups = derive(&outcome)?;
        next.write_buckets(&rollups)?;
        *state = next;
        Ok(outcome)
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

    async fn tokenize(&self, namespace: NameSpace, names: &[String]) -> Result<Vec<u64>> {
        Ok(self.state().names.tokenize(namespace, names))
    }

    async fn names_of(&self, namespace: NameSpace, tokens: &[u64]) -> Result<Vec<Option<String>>> {
        Ok(self.state().names.names_of(namespace, tokens))
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
