//! Raw reads for Prometheus' API: the points of many series over a closed range, stale
//! markers kept (PromQL's lookback needs them; tickertape's own API hides them).

use crate::batch_read::SERIES_PER_BATCH;
use crate::side_by_side::side_by_side;
use crate::{Engine, EngineError, QueryBudget};
use futures::stream::{self, StreamExt, TryStreamExt};
use tickertape_backend::{PointsRange, SeriesInfo};
use tickertape_core::schema::Layout;
use tickertape_core::{Point, SeriesId, SeriesSelector};

/// Bucket series read at once, as for the engine's own queries.
const CONCURRENT_SERIES_READS: usize = 16;

impl Engine {
    /// Every (measurement, field) pair a series of this database has, sorted.
    pub async fn list_fields(&self) -> Result<Vec<(String, String)>, EngineError> {
        let all = self.backend.list_fields().await?;
        let namespace = self.namespace();
        Ok(all
            .into_iter()
            .filter_map(|(m, f)| Some((namespace.user(&m)?.to_string(), f)))
            .collect())
    }

    /// Every series of this database the selector selects, in id order, with no limit:
    /// for callers that bound what they read themselves.
    pub async fn find_series(
        &self,
        selector: &SeriesSelector,
    ) -> Result<Vec<SeriesInfo>, EngineError> {
        self.find_stored(selector).await
    }

    /// The series a selector selects, refused past `--max-query-series` as a query is.
    pub async fn find_series_limited(
        &self,
        selector: &SeriesSelector,
    ) -> Result<Vec<SeriesInfo>, EngineError> {
        let series = self.find_stored(selector).await?;
        self.check_series_limit(series.len())?;
        Ok(series)
    }

    /// The stored points of each series with times in `[start, end]` (nanoseconds, both
    /// ends included), in time order; stale markers included. Refused past
    /// `--max-query-series` and `--max-query-points` over all of them (a budget of its
    /// own).
    pub async fn read_raw(
        &self,
        series: &[SeriesInfo],
        start: i64,
        end: i64,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        self.read_raw_with(series, start, end, &self.budget()).await
    }

    /// [`Engine::read_raw`], its points charged to `budget` as each batch of series
    /// comes. Value-segment series are read [`SERIES_PER_BATCH`] at a time with one
    /// backend call (one request per partition on MongoDB, not one per series), the
    /// batches side by side (`side_by_side.rs`); bucket series one by one.
    pub async fn read_raw_with(
        &self,
        series: &[SeriesInfo],
        start: i64,
        end: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        self.check_series_limit(series.len())?;
        let mut out = Vec::with_capacity(series.len());
        // Owned, so that the reads' futures borrow nothing (spawned tasks).
        let batches: Vec<Vec<SeriesInfo>> = series
            .chunks(SERIES_PER_BATCH)
            .map(<[SeriesInfo]>::to_vec)
            .collect();
        let engine = self.clone();
        let mut reads = side_by_side(batches, move |batch| {
            let engine = engine.clone();
            async move { engine.read_raw_batch(&batch, start, end).await }
        });
        while let Some(answers) = reads.next().await {
            for points in answers? {
                budget.charge_points(points.len())?;
                out.push(points);
            }
            crate::checkpoint(budget).await;
        }
        Ok(out)
    }

    /// The points in `[start, end]` of each series of `batch`, in order: the value-segment
    /// series in one `read_points`, the others (buckets) `CONCURRENT_SERIES_READS` at a
    /// time.
    pub(crate) async fn read_raw_batch(
        &self,
        batch: &[SeriesInfo],
        start: i64,
        end: i64,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        let segments = |info: &SeriesInfo| {
            self.schema.for_measurement(&info.key.measurement).layout == Layout::Segments
        };
        let ids: Vec<SeriesId> = batch
            .iter()
            .filter(|info| segments(info))
            .map(|info| info.id)
            .collect();
        // `[start, end]` is `[start, end + 1)`; a point at `i64::MAX` is the neighbour
        // after `[start, i64::MAX)`.
        let range = PointsRange {
            start,
            end: end.saturating_add(1),
            neighbors: end == i64::MAX,
        };
        let mut read = match ids.is_empty() {
            true => Vec::new(),
            false => self.backend.read_points(&ids, range).await?,
        }
        .into_iter();
        // Owned infos: a stream of futures over borrowed ones does not satisfy the
        // handlers' `Send` bounds (a higher-ranked lifetime the compiler cannot prove).
        let others: Vec<SeriesInfo> = batch.iter().filter(|i| !segments(i)).cloned().collect();
        let mut others = stream::iter(others)
            .map(|info| self.read_one(info, start, end))
            .buffered(CONCURRENT_SERIES_READS);
        let mut out = Vec::with_capacity(batch.len());
        for info in batch {
            let points = match segments(info) {
                true => {
                    let mut points = read.next().unwrap_or_default().into_all();
                    points.retain(|p| p.time >= start && p.time <= end);
                    points
                }
                false => others.try_next().await?.unwrap_or_default(),
            };
            out.push(points);
        }
        Ok(out)
    }

    async fn read_one(
        &self,
        info: SeriesInfo,
        start: i64,
        end: i64,
    ) -> Result<Vec<Point>, EngineError> {
        let schema = self.schema.for_measurement(&info.key.measurement);
        let end_exclusive = end.saturating_add(1);
        let mut points = self.raw_points(&info, schema, start, end_exclusive).await?;
        points.retain(|p| p.time >= start && p.time <= end);
        Ok(points)
    }
}
