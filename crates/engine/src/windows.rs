//! Executing a plan's reductions for one series: the summaries of a [`Source`] over the
//! range, reduced per window (`step`) or over the whole range (`agg` alone), with a
//! change-only measurement's value held and a counter's `display=avg_per_sec` applied;
//! and windows of one raw bucket document each, from the documents' totals.

use crate::plan::{Reduction, Source, Totals};
use crate::query::Query;
use crate::{Engine, EngineError};
use tickertape_backend::SeriesInfo;
use tickertape_core::hold::{hold_range, hold_windows};
use tickertape_core::query::{
    aggregate_windows, answer_windows, point_window_summaries, summarize_range, Aggregate, Summary,
};
use tickertape_core::rollup::{aligned_span, rollup_window_summaries, summarize_slots, Resolution};
use tickertape_core::schema::MeasurementSchema;
use tickertape_core::time::{window_start, NANOS_PER_SECOND};
use tickertape_core::Point;

/// What a [`Source`] gives over a range, in time order: raw points, or slot summaries
/// (a rollup's stored slots with its ragged edges, or raw points summarised per slot).
pub(crate) enum Summaries {
    Points(Vec<Point>),
    Slots(Vec<(i64, Summary)>),
}

impl Summaries {
    /// One summary per non-empty window of `step` in `[start, end)`, keyed by its start.
    fn per_window(&self, start: i64, end: i64, step: i64) -> Vec<(i64, Summary)> {
        match self {
            Self::Points(points) => point_window_summaries(points, start, end, step),
            Self::Slots(slots) => rollup_window_summaries(slots, start, end, step),
        }
    }

    /// The summary of the whole of `[start, end)`; `None` when it holds no point.
    fn whole(&self, start: i64, end: i64) -> Option<Summary> {
        match self {
            Self::Points(points) => summarize_range(points, start, end),
            Self::Slots(slots) => slots.iter().fold(None, |acc, (_, slot)| match acc {
                None => Some(*slot),
                Some(mut merged) => {
                    merged.merge(slot);
                    Some(merged)
                }
            }),
        }
    }
}

impl Engine {
    /// `agg` over the whole range (`step` `None`): one point, at `start` (`first`/`last`
    /// at the chosen point's own time), read like one window, so rollups that outlive the
    /// raw points' retention still answer and `resolution=raw` gives the same bits. Or
    /// `agg` per window of `step`: one point per non-empty window, at the window's start.
    pub(crate) async fn reduce(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        step: Option<i64>,
        reduction: Reduction,
    ) -> Result<Vec<Point>, EngineError> {
        let (start, end) = (query.start, query.end);
        let summaries = self
            .summaries(info, schema, reduction.source, start, end)
            .await?;
        let held = match reduction.hold {
            true => Some(self.held_at(info, schema, start).await?),
            false => None,
        };
        self.reduced(query, step, reduction, summaries, held)
    }

    /// [`Engine::reduce`] of what was read: a series' `summaries` over the query's range
    /// and, for a change-only measurement (`reduction.hold`), the value it holds at
    /// `start` (`Some(None)`: none).
    pub(crate) fn reduced(
        &self,
        query: &Query,
        step: Option<i64>,
        reduction: Reduction,
        summaries: Summaries,
        held: Option<Option<f64>>,
    ) -> Result<Vec<Point>, EngineError> {
        let (start, end) = (query.start, query.end);
        let until = self.hold_until(query);
        let points = match step {
            None => {
                let mut summary = summaries.whole(start, end);
                if let Some(held) = held {
                    summary = hold_range(summary, held, start, until);
                }
                summary
                    .map(|s| s.range_answer(reduction.agg, start))
                    .into_iter()
                    .collect()
            }
            Some(step) => {
                let mut windows = summaries.per_window(start, end, step);
                if let Some(held) = held {
                    windows = hold_windows(windows, held, start, until, step)
                        .map_err(|e| EngineError::BadQuery(e.to_string()))?;
                }
                answer_windows(&windows, reduction.agg)
            }
        };
        Ok(displayed(points, query, step, reduction.per_second))
    }

    /// The summaries `source` gives over `[start, end)`. A rollup is read for its whole
    /// slots only; the ragged edges on either side come from raw points summarised per
    /// slot, which is what the rollup would hold for them (`core::rollup::aligned_span`).
    async fn summaries(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        source: Source,
        start: i64,
        end: i64,
    ) -> Result<Summaries, EngineError> {
        match source {
            Source::Raw { slot_order } => {
                let all = self.raw_points(info, schema, start, end).await?;
                Ok(match slot_order {
                    None => Summaries::Points(all),
                    Some(r) => Summaries::Slots(summarize_slots(&all, start, end, r)),
                })
            }
            Source::Rollup(r) => {
                let (inner_start, inner_end) = aligned_span(start, end, r);
                let mut slots = self.edge_slots(info, schema, start, inner_start, r).await?;
                slots.extend(self.rollup_slots(info, r, inner_start, inner_end).await?);
                slots.extend(self.edge_slots(info, schema, inner_end, end, r).await?);
                Ok(Summaries::Slots(slots))
            }
        }
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

    /// Windows of one raw bucket document each (`period`): whole documents answered from
    /// their totals, the documents the range cuts from raw points. Equal to the raw answer
    /// when the slots were written in time order (a document's `sum` adds in write order).
    pub(crate) async fn windows_from_totals(
        &self,
        query: &Query,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        totals: Totals,
    ) -> Result<Vec<Point>, EngineError> {
        let Totals {
            interval_ns,
            period,
            agg,
            per_second: per_second_asked,
        } = totals;
        let first_whole = match window_start(query.start, period) {
            s if s == query.start => s,
            s => s.saturating_add(period),
        };
        let end_whole = window_start(query.end, period).max(first_whole);
        let mut out = Vec::new();
        let edge =
            |all: &[Point], from: i64, to: i64| aggregate_windows(all, from, to, period, agg);
        if query.start < first_whole {
            let to = first_whole.min(query.end);
            let all = self.raw_points(info, schema, query.start, to).await?;
            out.extend(edge(&all, query.start, to));
        }
        if first_whole < end_whole {
            let docs = self
                .document_totals(info, interval_ns, first_whole, end_whole)
                .await?;
            out.extend(docs.into_iter().map(|t| {
                let value = match agg {
                    Aggregate::Avg => t.sum / t.count as f64,
                    Aggregate::Sum => t.sum,
                    Aggregate::Count => t.count as f64,
                    Aggregate::Min => t.min,
                    _ => t.max,
                };
                Point::new(t.bucket_start, value)
            }));
        }
        // end_whole >= first_whole >= start, so the tail never overlaps the head.
        if end_whole < query.end {
            let all = self.raw_points(info, schema, end_whole, query.end).await?;
            out.extend(edge(&all, end_whole, query.end));
        }
        Ok(displayed(out, query, Some(period), per_second_asked))
    }

    /// The value a change-only series holds at `start`: its last stored point before it.
    async fn held_at(
        &self,
        info: &SeriesInfo,
        schema: &MeasurementSchema,
        start: i64,
    ) -> Result<Option<f64>, EngineError> {
        // A segment read includes the segment before the range, so it reaches back (past
        // stale markers, which hold no value).
        Ok(self
            .value_before(info, schema, start)
            .await?
            .map(|p| p.value))
    }
}

/// The points as the counter display asks: with `per_second`, each window's count divided
/// by the seconds of the window inside the query range (the whole range without a step);
/// else as they are.
fn displayed(points: Vec<Point>, query: &Query, step: Option<i64>, per_second: bool) -> Vec<Point> {
    if !per_second {
        return points;
    }
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
