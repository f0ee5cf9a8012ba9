//! Raw reads for Prometheus' API: the points of many series over a closed range, stale
//! markers kept (PromQL's lookback needs them; tickertape's own API hides them).

use crate::{Engine, EngineError, QueryBudget};
use futures::stream::{self, StreamExt, TryStreamExt};
use tickertape_backend::SeriesInfo;
use tickertape_core::{Point, SeriesSelector};

/// Series read at once, as for the engine's own queries.
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

    /// [`Engine::read_raw`], its points charged to `budget` as each series comes.
    pub async fn read_raw_with(
        &self,
        series: &[SeriesInfo],
        start: i64,
        end: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        self.check_series_limit(series.len())?;
        // Owned infos: a stream of futures over borrowed ones does not satisfy the
        // handlers' `Send` bounds (a higher-ranked lifetime the compiler cannot prove).
        let mut reads = stream::iter(series.to_vec())
            .map(|info| self.read_one(info, start, end))
            .buffered(CONCURRENT_SERIES_READS);
        let mut out = Vec::with_capacity(series.len());
        while let Some(points) = reads.try_next().await? {
            budget.charge_points(points.len())?;
            out.push(points);
            crate::checkpoint(budget).await;
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
