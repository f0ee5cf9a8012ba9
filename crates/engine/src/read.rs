//! Queries: which series, which range, and raw points or aggregates over windows.

use crate::{Engine, EngineError};
use futures::stream::{self, StreamExt, TryStreamExt};
use tickertape_backend::{SeriesHead, SeriesInfo};
use tickertape_core::query::{aggregate_all, select_range, Aggregate};
use tickertape_core::rollup::{
    aggregate_by_slots, choose_resolution, plan_max_points, Resolution, ResolutionOrRaw,
};
use tickertape_core::segment::collect_points;
use tickertape_core::time::format_duration;
use tickertape_core::{Point, SeriesKey, SeriesSelector};

/// Series read at once by one query; enough to hide a backend's latency without letting
/// one query monopolise it.
const CONCURRENT_SERIES_READS: usize = 16;

/// A query, as `GET /api/v1/query` and `tickertape query` take it.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub selector: SeriesSelector,
    /// Inclusive, nanoseconds.
    pub start: i64,
    /// Exclusive, nanoseconds.
    pub end: i64,
    /// Window width in nanoseconds; needs `agg`.
    pub step: Option<i64>,
    pub agg: Option<Aggregate>,
    /// Also return the last point before `start` and the first at or after `end`.
    pub neighbors: bool,
    /// Force the resolution windows are summed by (`raw`, or a rollup that divides `step`).
    pub resolution: Option<ResolutionOrRaw>,
    /// Let the engine pick `step` (and the resolution) so that each series gets at most
    /// this many points; excludes `step`.
    pub max_points: Option<usize>,
}

impl Query {
    /// A raw query over `[start, end)`.
    pub fn raw(selector: SeriesSelector, start: i64, end: i64) -> Self {
        Self {
            selector,
            start,
            end,
            step: None,
            agg: None,
            neighbors: false,
            resolution: None,
            max_points: None,
        }
    }
}

/// How the windows of a query are computed, decided once per query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WindowPlan {
    step: i64,
    agg: Aggregate,
    /// The resolution whose slots tile each window; sums follow its slot order.
    resolution: Option<Resolution>,
}

/// One series' answer.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoints {
    pub key: SeriesKey,
    pub points: Vec<Point>,
}

impl Query {
    fn validate(&self) -> Result<(), EngineError> {
        if self.start >= self.end {
            return Err(EngineError::BadQuery(format!(
                "start ({}) must be before end ({})",
                self.start, self.end
            )));
        }
        if self.step.is_some() && self.agg.is_none() {
            return Err(EngineError::BadQuery(
                "step needs agg (avg, min, max, sum, count, first or last)".into(),
            ));
        }
        if self.neighbors && (self.agg.is_some() || self.max_points.is_some()) {
            return Err(EngineError::BadQuery(
                "neighbors applies to raw points, not to agg or max_points".into(),
            ));
        }
        match self.max_points {
            Some(_) if self.step.is_some() => Err(EngineError::BadQuery(
                "max_points picks the step itself: give step or max_points, not both".into(),
            )),
            Some(n) if n < 2 => Err(EngineError::BadQuery(format!(
                "max_points must be at least 2, not {n}"
            ))),
            _ => Ok(()),
        }
    }

    /// The window plan for a measurement with these rollups, or `None` for raw points or
    /// a single reduction.
    fn window_plan(&self, rollups: &[Resolution]) -> Result<Option<WindowPlan>, EngineError> {
        let (step, chosen) = match (self.step, self.max_points) {
            (Some(step), _) => (step, choose_resolution(step, rollups)),
            (None, Some(max_points)) => plan_max_points(self.start, self.end, max_points, rollups),
            (None, None) => return Ok(None),
        };
        let resolution = match self.resolution {
            None | Some(ResolutionOrRaw::Raw) => chosen,
            Some(ResolutionOrRaw::Rollup(r)) if r.divides(step) => Some(r),
            Some(ResolutionOrRaw::Rollup(r)) => {
                return Err(EngineError::BadQuery(format!(
                    "resolution {r} does not divide the step of {}",
                    format_duration(step)
                )))
            }
        };
        Ok(Some(WindowPlan {
            step,
            agg: self.agg.unwrap_or(Aggregate::Avg),
            resolution,
        }))
    }
}

impl Engine {
    /// Every registered series the selector matches, sorted by key.
    pub async fn list_series(
        &self,
        selector: &SeriesSelector,
    ) -> Result<Vec<SeriesInfo>, EngineError> {
        let mut series = self.backend.find_series(selector).await?;
        series.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(series)
    }

    /// Answers a query: one entry per matching series, sorted by series key (measurement,
    /// tags, field); series without a point to report are left out.
    pub async fn query(&self, query: &Query) -> Result<Vec<SeriesPoints>, EngineError> {
        query.validate()?;
        let mut series = self.backend.find_series(&query.selector).await?;
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let heads = if query.agg == Some(Aggregate::Last)
            && query.step.is_none()
            && query.max_points.is_none()
        {
            let ids: Vec<_> = series.iter().map(|s| s.id).collect();
            self.backend.heads(&ids).await?
        } else {
            vec![None; series.len()]
        };
        let answers: Vec<Option<SeriesPoints>> = stream::iter(series.into_iter().zip(heads))
            .map(|(info, head)| self.query_series(query, info, head))
            .buffered(CONCURRENT_SERIES_READS)
            .try_collect()
            .await?;
        Ok(answers.into_iter().flatten().collect())
    }

    async fn query_series(
        &self,
        query: &Query,
        info: SeriesInfo,
        head: Option<SeriesHead>,
    ) -> Result<Option<SeriesPoints>, EngineError> {
        if let Some(head) = head {
            // "Latest value" over a range that holds the series' last point: the head has it.
            if head.last.time >= query.start && head.last.time < query.end {
                return Ok(Some(SeriesPoints {
                    key: info.key,
                    points: vec![head.last],
                }));
            }
            if head.last.time < query.start {
                return Ok(None);
            }
        }
        let segments = self
            .backend
            .read_segments(info.id, query.start, query.end)
            .await?;
        let all = collect_points(&segments).map_err(|e| {
            tickertape_backend::BackendError::Corrupt(format!("series {}: {e}", info.key))
        })?;
        let rollups = &self.schema.for_measurement(&info.key.measurement).rollups;
        let points = match (query.window_plan(rollups)?, query.agg) {
            (Some(plan), _) => aggregate_by_slots(
                &all,
                query.start,
                query.end,
                plan.step,
                plan.agg,
                plan.resolution,
            ),
            (None, None) => select_range(&all, query.start, query.end, query.neighbors),
            (None, Some(agg)) => aggregate_all(&all, query.start, query.end, agg)
                .into_iter()
                .collect(),
        };
        Ok((!points.is_empty()).then_some(SeriesPoints {
            key: info.key,
            points,
        }))
    }
}
