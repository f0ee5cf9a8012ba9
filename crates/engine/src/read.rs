//! Queries: which series, which range, and the read plan executed for each series.

use crate::batch_read::SERIES_PER_BATCH;
use crate::plan::{ReadPlan, Reduction};
use crate::query::Query;
use crate::{Engine, EngineError, OverLimit, QueryBudget};
use futures::stream::{self, StreamExt, TryStreamExt};
use tickertape_backend::{SeriesHead, SeriesInfo};
use tickertape_core::model::is_stale_marker;
use tickertape_core::query::{select_range, without_stale_markers};
use tickertape_core::schema::MeasurementSchema;
use tickertape_core::{Point, SeriesKey, SeriesSelector};

/// Series read at once by one query; enough to hide a backend's latency without letting
/// one query monopolise it.
const CONCURRENT_SERIES_READS: usize = 16;

/// One series' answer.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoints {
    pub key: SeriesKey,
    pub points: Vec<Point>,
}

/// What a plan reads once for the whole query, before reading series by series.
struct QueryReads {
    /// Each series' head (`LatestFromHead`), in the order of the series.
    heads: Vec<Option<SeriesHead>>,
    /// The raw partitions overlapping the range, latest first (`LatestFromPartitions`).
    latest_spans: Vec<(i64, i64)>,
}

impl Engine {
    /// Every registered series the selector matches, sorted by key; refused past
    /// `--max-query-series` as a query is (a listing of a million series is no answer).
    pub async fn list_series(
        &self,
        selector: &SeriesSelector,
    ) -> Result<Vec<SeriesInfo>, EngineError> {
        let mut series = self.find_stored(selector).await?;
        self.check_series_limit(series.len())?;
        series.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(series)
    }

    /// Answers a query: one entry per matching series, sorted by series key (measurement,
    /// tags, field); series without a point to report are left out. Under a budget of
    /// its own ([`Engine::budget`]).
    pub async fn query(&self, query: &Query) -> Result<Vec<SeriesPoints>, EngineError> {
        self.query_with(query, &self.budget()).await
    }

    /// [`Engine::query`], its points charged to `budget` (a request's, shared by all
    /// its reads) as each series' answer comes.
    pub async fn query_with(
        &self,
        query: &Query,
        budget: &QueryBudget,
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        query.validate()?;
        let closed = self.close_chart_range(query)?;
        let query = closed.as_ref().unwrap_or(query);
        let schema = self.schema.for_measurement(&query.selector.measurement);
        let plan = ReadPlan::new(query, schema)?;
        let mut series = self.find_stored(&query.selector).await?;
        self.check_series_limit(series.len())?;
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let QueryReads {
            heads,
            latest_spans,
        } = self.query_reads(query, plan, &series).await?;
        if plan.batches(schema) {
            return self
                .query_batches(query, schema, plan, &series, &heads, budget)
                .await;
        }
        let mut answers = stream::iter(series.into_iter().zip(heads))
            .map(|(info, head)| self.query_series(query, schema, plan, info, head, &latest_spans))
            .buffered(CONCURRENT_SERIES_READS);
        // Counted as the answers come, so an over-wide one stops here, not after it is
        // built; the checkpoint lets a request whose client has gone be dropped.
        let mut out = Vec::new();
        while let Some(answer) = answers.try_next().await? {
            budget.check()?;
            if let Some(answer) = answer {
                budget.charge_points(answer.points.len())?;
                out.push(answer);
            }
            crate::checkpoint(budget).await;
        }
        Ok(out)
    }

    /// The answers of a plan read in batches of series ([`ReadPlan::batches`]), charged
    /// to `budget` batch by batch, with a checkpoint between batches.
    async fn query_batches(
        &self,
        query: &Query,
        schema: &MeasurementSchema,
        plan: ReadPlan,
        series: &[SeriesInfo],
        heads: &[Option<SeriesHead>],
        budget: &QueryBudget,
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        let mut out = Vec::new();
        for (infos, heads) in series
            .chunks(SERIES_PER_BATCH)
            .zip(heads.chunks(SERIES_PER_BATCH))
        {
            let answers = self.query_batch(query, schema, plan, infos, heads).await?;
            budget.check()?;
            for answer in answers.into_iter().flatten() {
                budget.charge_points(answer.points.len())?;
                out.push(answer);
            }
            crate::checkpoint(budget).await;
        }
        Ok(out)
    }

    /// Refuses a query selecting more than `--max-query-series` series.
    pub fn check_series_limit(&self, selected: usize) -> Result<(), EngineError> {
        let limit = self.limits.max_series;
        match selected > limit {
            true => Err(EngineError::OverLimit(OverLimit::Series {
                selected,
                limit,
            })),
            false => Ok(()),
        }
    }

    /// The reads `plan` makes once per query: every series' head in one call, or the
    /// partitions to search for the latest point.
    async fn query_reads(
        &self,
        query: &Query,
        plan: ReadPlan,
        series: &[SeriesInfo],
    ) -> Result<QueryReads, EngineError> {
        let mut reads = QueryReads {
            heads: vec![None; series.len()],
            latest_spans: Vec::new(),
        };
        match plan {
            ReadPlan::LatestFromHead(_) => {
                let ids: Vec<_> = series.iter().map(|s| s.id).collect();
                reads.heads = self.backend.heads(&ids).await?;
            }
            ReadPlan::LatestFromPartitions { interval_ns } => {
                reads.latest_spans = self
                    .raw_partition_spans(
                        &query.selector.measurement,
                        interval_ns,
                        query.start,
                        query.end,
                    )
                    .await?;
            }
            _ => {}
        }
        Ok(reads)
    }

    /// One series' answer, by the plan.
    async fn query_series(
        &self,
        query: &Query,
        schema: &MeasurementSchema,
        plan: ReadPlan,
        info: SeriesInfo,
        head: Option<SeriesHead>,
        latest_spans: &[(i64, i64)],
    ) -> Result<Option<SeriesPoints>, EngineError> {
        let points = match plan {
            ReadPlan::Points { neighbors } => {
                let all = self
                    .raw_points(&info, schema, query.start, query.end)
                    .await?;
                // Stale markers go before selecting, so a neighbour is a value too.
                let values = match neighbors {
                    true => {
                        self.values_with_neighbors(&info, schema, all, query.start, query.end)
                            .await?
                    }
                    false => without_stale_markers(all),
                };
                select_range(&values, query.start, query.end, neighbors)
            }
            ReadPlan::LatestFromHead(reduction) => {
                match head.and_then(|head| self.head_answer(query, head, reduction)) {
                    Some(points) => points,
                    None => self.reduce(query, &info, schema, None, reduction).await?,
                }
            }
            ReadPlan::LatestFromPartitions { .. } => {
                self.last_in_spans(&info, schema, latest_spans).await?
            }
            ReadPlan::Range(reduction) => {
                self.reduce(query, &info, schema, None, reduction).await?
            }
            ReadPlan::Windows { step, reduction } => {
                self.reduce(query, &info, schema, Some(step), reduction)
                    .await?
            }
            ReadPlan::WindowsFromTotals(totals) => {
                self.windows_from_totals(query, &info, schema, totals)
                    .await?
            }
        };
        Ok((!points.is_empty()).then_some(SeriesPoints {
            key: info.key,
            points,
        }))
    }

    /// "Latest value" from a series' head, without reading its segments: the head itself
    /// when it lies in the range; before the range, the value a change-only series still
    /// holds at `start` (`core::hold`), else nothing. `None` when the head is past the
    /// range and the range must be read.
    pub(crate) fn head_answer(
        &self,
        query: &Query,
        head: SeriesHead,
        reduction: Reduction,
    ) -> Option<Vec<Point>> {
        let last = head.last;
        // A stale marker is no value: the latest value is before it, read from the range.
        if last.time >= query.end || is_stale_marker(last.value) {
            return None;
        }
        if last.time >= query.start {
            return Some(vec![last]);
        }
        let holds = reduction.hold && query.start < self.hold_until(query);
        Some(
            holds
                .then(|| Point::new(query.start, last.value))
                .into_iter()
                .collect(),
        )
    }

    /// The latest point of a bucket series in the spans (latest first), reading one
    /// partition's span at a time instead of the whole range.
    async fn last_in_spans(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        spans: &[(i64, i64)],
    ) -> Result<Vec<Point>, EngineError> {
        for &(from, to) in spans {
            let all = self.raw_points(info, schema, from, to).await?;
            if let Some(last) = all.iter().rev().find(|p| !is_stale_marker(p.value)) {
                return Ok(vec![*last]);
            }
        }
        Ok(Vec::new())
    }

    /// `max_points` picks the step from the length of the range, so an open range (the
    /// `i64::MIN`/`i64::MAX` the API defaults to) would give one window of centuries. An
    /// open end is closed at the clock's "now"; an open start is refused. `None`: the
    /// query stands as it is.
    fn close_chart_range(&self, query: &Query) -> Result<Option<Query>, EngineError> {
        if query.max_points.is_none() {
            return Ok(None);
        }
        if query.start == i64::MIN {
            return Err(EngineError::BadQuery(
                "max_points needs start: the step is picked from the range's length".into(),
            ));
        }
        if query.end != i64::MAX {
            return Ok(None);
        }
        let mut closed = query.clone();
        closed.end = self
            .clock
            .now_nanos()
            .saturating_add(1)
            .max(query.start.saturating_add(1));
        Ok(Some(closed))
    }

    /// The end of what a change-only series' value may be held to: the query's end, or
    /// just after the engine clock's "now" when that is earlier.
    pub(crate) fn hold_until(&self, query: &Query) -> i64 {
        query.end.min(self.clock.now_nanos().saturating_add(1))
    }
}
