//! Queries: which series, which range, and raw points or aggregates over windows.

use crate::query::{CounterDisplay, Query, WindowPlan};
use crate::{Engine, EngineError};
use futures::stream::{self, StreamExt, TryStreamExt};
use tickertape_backend::{
    BackendError, BucketFamily, BucketRead, SeriesHead, SeriesInfo, SlotValue, StoredBucket,
};
use tickertape_core::hold::{hold_range, hold_windows, holds};
use tickertape_core::query::{
    aggregate_windows, answer_windows, select_range, summarize_range, Aggregate, Summary,
};
use tickertape_core::rollup::{
    aligned_span, choose_range_resolution, raw_window_summaries, rollup_window_summaries,
    summarize_slots, BucketGeometry, Resolution, ResolutionOrRaw,
};
use tickertape_core::schema::{Kind, Layout, MeasurementSchema};
use tickertape_core::segment::collect_points;
use tickertape_core::time::{window_start, NANOS_PER_SECOND};
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
        let closed = self.close_chart_range(query)?;
        let query = closed.as_ref().unwrap_or(query);
        self.check_against_schema(query)?;
        let mut series = self.backend.find_series(&query.selector).await?;
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let heads = if query.effective_agg() == Some(Aggregate::Last)
            && query.step.is_none()
            && query.max_points.is_none()
        {
            let ids: Vec<_> = series.iter().map(|s| s.id).collect();
            self.backend.heads(&ids).await?
        } else {
            vec![None; series.len()]
        };
        let latest = self.latest_partitions(query).await?;
        let answers: Vec<Option<SeriesPoints>> = stream::iter(series.into_iter().zip(heads))
            .map(|(info, head)| self.query_series(query, info, head, latest.as_deref()))
            .buffered(CONCURRENT_SERIES_READS)
            .try_collect()
            .await?;
        Ok(answers.into_iter().flatten().collect())
    }

    /// For `agg=last` (no step) on a bucket measurement, which has no series head: the
    /// spans of its raw partitions that overlap the range, latest first, so that each
    /// series reads back from the end one partition at a time instead of the whole range.
    async fn latest_partitions(
        &self,
        query: &Query,
    ) -> Result<Option<Vec<(i64, i64)>>, EngineError> {
        let schema = self.schema.for_measurement(&query.selector.measurement);
        let Layout::Buckets { interval_ns } = schema.layout else {
            return Ok(None);
        };
        if query.effective_agg() != Some(Aggregate::Last)
            || query.step.is_some()
            || query.max_points.is_some()
        {
            return Ok(None);
        }
        let family = BucketFamily::raw(
            self.measurement_token(&query.selector.measurement).await?,
            interval_ns,
        )?;
        let mut spans: Vec<(i64, i64)> = self
            .backend
            .list_partitions()
            .await?
            .into_iter()
            .filter(|p| p.family() == family && p.start() < query.end && p.end() > query.start)
            .map(|p| (p.start().max(query.start), p.end().min(query.end)))
            .collect();
        spans.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Some(spans))
    }

    /// The latest point of a bucket series in the spans (latest first), reading one
    /// partition's span at a time.
    async fn last_in_spans(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        spans: &[(i64, i64)],
    ) -> Result<Vec<Point>, EngineError> {
        for &(from, to) in spans {
            let all = self.raw_points(info, schema, from, to).await?;
            if let Some(last) = all.last() {
                return Ok(vec![*last]);
            }
        }
        Ok(Vec::new())
    }

    /// Refuses what the queried measurement's schema cannot answer, before any read.
    fn check_against_schema(&self, query: &Query) -> Result<(), EngineError> {
        let measurement = &query.selector.measurement;
        let schema = self.schema.for_measurement(measurement);
        if query.neighbors && schema.layout != Layout::Segments {
            return Err(EngineError::BadQuery(format!(
                "neighbors needs value segments; measurement {measurement:?} is stored in buckets"
            )));
        }
        if query.display.is_some() && schema.kind != Kind::Counter {
            return Err(EngineError::BadQuery(format!(
                "display applies to counters; measurement {measurement:?} is a gauge"
            )));
        }
        Ok(())
    }

    async fn query_series(
        &self,
        query: &Query,
        info: SeriesInfo,
        head: Option<SeriesHead>,
        latest: Option<&[(i64, i64)]>,
    ) -> Result<Option<SeriesPoints>, EngineError> {
        let schema = self.schema.for_measurement(&info.key.measurement);
        if let Some(head) = head {
            // "Latest value" over a range that holds the series' last point: the head has it.
            if head.last.time >= query.start && head.last.time < query.end {
                return Ok(Some(SeriesPoints {
                    key: info.key,
                    points: vec![head.last],
                }));
            }
            if head.last.time < query.start {
                // A change-only series' last change still holds (core::hold).
                let held = (schema.change_only && query.start < self.hold_until(query))
                    .then(|| Point::new(query.start, head.last.value));
                return Ok(held.map(|point| SeriesPoints {
                    key: info.key,
                    points: vec![point],
                }));
            }
        }
        let plan = query.window_plan(schema)?;
        let points = match (plan, query.effective_agg(), latest) {
            (Some(plan), _, _) => self.windows(query, &info, schema, plan).await?,
            (None, Some(Aggregate::Last), Some(spans)) => {
                self.last_in_spans(&info, schema, spans).await?
            }
            (None, None, _) => {
                let all = self
                    .raw_points(&info, schema, query.start, query.end)
                    .await?;
                select_range(&all, query.start, query.end, query.neighbors)
            }
            (None, Some(agg), _) => {
                let mut summary = self.range_summary(query, &info, schema, agg).await?;
                if schema.change_only && holds(agg) {
                    let before = self
                        .raw_points(&info, schema, query.start, query.start)
                        .await?;
                    let held = value_before(&before, query.start);
                    summary = hold_range(summary, held, query.start, self.hold_until(query));
                }
                summary
                    .map(|s| s.answer(agg, query.start))
                    .into_iter()
                    .collect()
            }
        };
        let points = match query.display {
            Some(CounterDisplay::AvgPerSec) => per_second(points, query, plan.map(|p| p.step)),
            _ => points,
        };
        Ok((!points.is_empty()).then_some(SeriesPoints {
            key: info.key,
            points,
        }))
    }

    /// A windowed answer: from the plan's rollup when the measurement keeps it (whole
    /// slots from the rollup, the ragged edges from raw points), else from raw points
    /// summed in the same slot order — the two give the same bits (see `core::rollup`).
    /// A change-only measurement's windows then hold its value (`core::hold`).
    async fn windows(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        plan: WindowPlan,
    ) -> Result<Vec<Point>, EngineError> {
        if !only_raw_slots_answer(schema, plan.agg) {
            if let Some(points) = self.windows_from_totals(query, info, schema, plan).await? {
                return Ok(points);
            }
        }
        let mut windows = self.window_summaries(query, info, schema, plan).await?;
        if schema.change_only && holds(plan.agg) {
            let before = self
                .raw_points(info, schema, query.start, query.start)
                .await?;
            windows = hold_windows(
                windows,
                value_before(&before, query.start),
                query.start,
                self.hold_until(query),
                plan.step,
            )
            .map_err(|e| EngineError::BadQuery(e.to_string()))?;
        }
        Ok(answer_windows(&windows, plan.agg))
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

    /// The summary of a series over the whole range, for `agg` without `step`: like one
    /// window, read from the coarsest rollup with a whole slot in the range (the ragged
    /// edges from raw points) and merged slot by slot, so that `resolution=raw`, which
    /// sums raw points in the same slot order, gives the same bits. Besides reading fewer
    /// values, this answers from rollups that outlive the raw points' retention.
    async fn range_summary(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        agg: Aggregate,
    ) -> Result<Option<Summary>, EngineError> {
        let (start, end) = (query.start, query.end);
        let resolution = match query.resolution {
            Some(ResolutionOrRaw::Rollup(r)) => Some(r),
            _ if only_raw_slots_answer(schema, agg) => None,
            _ => choose_range_resolution(start, end, &schema.rollups),
        };
        let Some(r) = resolution else {
            let all = self.raw_points(info, schema, start, end).await?;
            return Ok(summarize_range(&all, start, end));
        };
        let slots =
            if query.resolution == Some(ResolutionOrRaw::Raw) || !schema.rollups.contains(&r) {
                let all = self.raw_points(info, schema, start, end).await?;
                summarize_slots(&all, start, end, r)
            } else {
                let (inner_start, inner_end) = aligned_span(start, end, r);
                let mut slots = self.edge_slots(info, schema, start, inner_start, r).await?;
                slots.extend(self.rollup_slots(info, r, inner_start, inner_end).await?);
                slots.extend(self.edge_slots(info, schema, inner_end, end, r).await?);
                slots
            };
        Ok(slots.into_iter().fold(None, |acc, (_, slot)| match acc {
            None => Some(slot),
            Some(mut merged) => {
                merged.merge(&slot);
                Some(merged)
            }
        }))
    }

    /// The end of what a change-only series' value may be held to: the query's end, or
    /// just after the engine clock's "now" when that is earlier.
    fn hold_until(&self, query: &Query) -> i64 {
        query.end.min(self.clock.now_nanos().saturating_add(1))
    }

    /// The summaries of the non-empty windows of a windowed query, by the rules of
    /// [`Engine::windows`].
    async fn window_summaries(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        plan: WindowPlan,
    ) -> Result<Vec<(i64, Summary)>, EngineError> {
        let stored = plan
            .resolution
            .filter(|r| schema.rollups.contains(r))
            .filter(|_| query.resolution != Some(ResolutionOrRaw::Raw))
            .filter(|_| !only_raw_slots_answer(schema, plan.agg));
        let Some(r) = stored else {
            let all = self
                .raw_points(info, schema, query.start, query.end)
                .await?;
            return Ok(raw_window_summaries(
                &all,
                query.start,
                query.end,
                plan.step,
                plan.resolution,
            ));
        };
        let (inner_start, inner_end) = aligned_span(query.start, query.end, r);
        let mut slots = self
            .edge_slots(info, schema, query.start, inner_start, r)
            .await?;
        slots.extend(self.rollup_slots(info, r, inner_start, inner_end).await?);
        slots.extend(
            self.edge_slots(info, schema, inner_end, query.end, r)
                .await?,
        );
        Ok(rollup_window_summaries(
            &slots,
            query.start,
            query.end,
            plan.step,
        ))
    }

    /// Windows of exactly one raw bucket document each (`step` = the document's period, no
    /// rollup in play) for `avg`, `sum`, `count`, `min` and `max`: whole documents are
    /// answered from their `n`/`sum`/`min`/`max` without shipping their slots (seed 001);
    /// the documents the range cuts are read as raw points. Equal to the raw answer when
    /// the slots were written in time order (a document's `sum` adds values in write
    /// order). `None` when the query is not of that shape, or `resolution=raw` forces raw.
    async fn windows_from_totals(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        plan: WindowPlan,
    ) -> Result<Option<Vec<Point>>, EngineError> {
        let Layout::Buckets { interval_ns } = schema.layout else {
            return Ok(None);
        };
        let Some(geometry) = BucketGeometry::for_slot(interval_ns) else {
            return Ok(None);
        };
        let period = geometry.period_ns();
        let totals_answer = matches!(
            plan.agg,
            Aggregate::Avg | Aggregate::Sum | Aggregate::Count | Aggregate::Min | Aggregate::Max
        );
        if plan.resolution.is_some()
            || plan.step != period
            || !totals_answer
            || query.resolution == Some(ResolutionOrRaw::Raw)
        {
            return Ok(None);
        }
        let first_whole = match window_start(query.start, period) {
            s if s == query.start => s,
            s => s.saturating_add(period),
        };
        let end_whole = window_start(query.end, period).max(first_whole);
        let family = BucketFamily::raw(
            self.measurement_token(&info.key.measurement).await?,
            interval_ns,
        )?;
        let mut out = Vec::new();
        let edge =
            |all: &[Point], from: i64, to: i64| aggregate_windows(all, from, to, period, plan.agg);
        if query.start < first_whole {
            let to = first_whole.min(query.end);
            let all = self.raw_points(info, schema, query.start, to).await?;
            out.extend(edge(&all, query.start, to));
        }
        if first_whole < end_whole {
            let docs = self
                .backend
                .read_buckets(
                    family,
                    info.id,
                    first_whole,
                    end_whole,
                    BucketRead::TotalsOnly,
                )
                .await?;
            for doc in docs {
                let Some(t) = doc.totals.filter(|t| t.count > 0) else {
                    continue;
                };
                let value = match plan.agg {
                    Aggregate::Avg => t.sum / t.count as f64,
                    Aggregate::Sum => t.sum,
                    Aggregate::Count => t.count as f64,
                    Aggregate::Min => t.min,
                    _ => t.max,
                };
                out.push(Point::new(doc.bucket_start, value));
            }
        }
        // end_whole >= first_whole >= start, so the tail never overlaps the head.
        if end_whole < query.end {
            let all = self.raw_points(info, schema, end_whole, query.end).await?;
            out.extend(edge(&all, end_whole, query.end));
        }
        Ok(Some(out))
    }

    /// The slot summaries of raw points in `[start, end)`, a ragged edge of a rollup read.
    async fn edge_slots(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        start: i64,
        end: i64,
        r: Resolution,
    ) -> Result<Vec<(i64, Summary)>, EngineError> {
        if start >= end {
            return Ok(Vec::new());
        }
        let all = self.raw_points(info, schema, start, end).await?;
        Ok(summarize_slots(&all, start, end, r))
    }

    /// The stored slots of rollup `r` in `[start, end)` (whole slots), by time.
    async fn rollup_slots(
        &self,
        info: &SeriesInfo,
        r: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>, EngineError> {
        if start >= end {
            return Ok(Vec::new());
        }
        let family = BucketFamily::rollup(self.measurement_token(&info.key.measurement).await?, r);
        let docs = self
            .backend
            .read_buckets(family, info.id, start, end, BucketRead::Full)
            .await?;
        slots_in_range(docs, r.geometry(), start, end, info)?
            .into_iter()
            .map(|(time, value)| match value {
                SlotValue::Summary(summary) => Ok((time, summary)),
                SlotValue::Value(_) => Err(corrupt(info, "a rollup slot holds a raw value")),
            })
            .collect()
    }

    /// The raw points of a series covering `[start, end)`, in time order. For segments,
    /// also the points of the segments around the range (callers select); for buckets,
    /// the written slots in the range, each at its slot's start time.
    pub(crate) async fn raw_points(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        start: i64,
        end: i64,
    ) -> Result<Vec<Point>, EngineError> {
        let Layout::Buckets { interval_ns } = schema.layout else {
            let segments = self.backend.read_segments(info.id, start, end).await?;
            return collect_points(&segments)
                .map_err(|e| BackendError::Corrupt(format!("series {}: {e}", info.key)).into());
        };
        let geometry = BucketGeometry::for_slot(interval_ns)
            .ok_or_else(|| corrupt(info, "the configured interval has no bucket geometry"))?;
        let family = BucketFamily::raw(
            self.measurement_token(&info.key.measurement).await?,
            interval_ns,
        )?;
        let docs = self
            .backend
            .read_buckets(family, info.id, start, end, BucketRead::Full)
            .await?;
        slots_in_range(docs, geometry, start, end, info)?
            .into_iter()
            .map(|(time, value)| match value {
                SlotValue::Value(v) => Ok(Point::new(time, v)),
                SlotValue::Summary(_) => Err(corrupt(info, "a raw bucket slot holds a summary")),
            })
            .collect()
    }
}

/// Whether `agg` over this measurement must be computed from raw slots, whatever rollups
/// and document totals it keeps. A counter's rollup slots and raw-document `n`/`min`/`max`
/// summarise the increments written (`mode=inc`), not the per-slot totals a query answers
/// over: their sum is the totals' sum, but three increments of 1 into one second are a
/// total of 3, not a count of 3 with a max of 1. So a counter reads `sum` (and `display`)
/// from rollups and every other aggregate from its raw slots.
fn only_raw_slots_answer(schema: &MeasurementSchema, agg: Aggregate) -> bool {
    schema.kind == Kind::Counter && agg != Aggregate::Sum
}

/// The value of the last of `sorted` before `start`: what a change-only series holds at
/// `start`. `sorted` must reach back that far (segment reads do: they include the
/// segment before the range).
fn value_before(sorted: &[Point], start: i64) -> Option<f64> {
    let before = sorted.partition_point(|p| p.time < start);
    before.checked_sub(1).map(|i| sorted[i].value)
}

fn corrupt(info: &SeriesInfo, what: &str) -> EngineError {
    BackendError::Corrupt(format!("series {}: {what}", info.key)).into()
}

/// The written slots of `docs` whose start time is in `[start, end)`, in time order, each
/// at its start time.
fn slots_in_range(
    docs: Vec<StoredBucket>,
    geometry: BucketGeometry,
    start: i64,
    end: i64,
    info: &SeriesInfo,
) -> Result<Vec<(i64, SlotValue)>, EngineError> {
    let mut out = Vec::new();
    for doc in docs {
        for (slot, value) in doc.slots {
            let time = slot_time(geometry, doc.bucket_start, slot, info)?;
            if time >= start && time < end {
                out.push((time, value));
            }
        }
    }
    Ok(out)
}

/// The start time of a stored slot, refusing a slot index past the document's end.
fn slot_time(
    geometry: BucketGeometry,
    bucket_start: i64,
    slot: u32,
    info: &SeriesInfo,
) -> Result<i64, EngineError> {
    if slot >= geometry.slots() {
        return Err(corrupt(
            info,
            &format!("slot {slot} of a document of {} slots", geometry.slots()),
        ));
    }
    Ok(geometry.slot_time(bucket_start, slot))
}

/// Divides each window's count by the seconds of the window inside the query range.
fn per_second(points: Vec<Point>, query: &Query, step: Option<i64>) -> Vec<Point> {
    points
        .into_iter()
        .map(|p| {
            let (from, to) = match step {
                Some(step) => {
                    let w = window_start(p.time, step);
                    (w.max(query.start), w.saturating_add(step).min(query.end))
                }
                None => (query.start, query.end),
            };
            let seconds = (to as f64 - from as f64) / NANOS_PER_SECOND as f64;
            Point::new(p.time, p.value / seconds)
        })
        .collect()
}
