//! A read plan executed over many value-segment series at once: each kind of read the
//! plan makes (the range's points, a rollup's slots, its ragged edges, the value a
//! change-only series holds) is one backend call for the whole batch
//! (`ValueStore::read_points`, `read_segment_rollups`), so a store that answers many
//! series with one request per partition (MongoDB) sends a few requests a query instead
//! of a few a series. What is read is then reduced series by series without I/O, exactly
//! as the one-series path does (`windows.rs`), so both give the same answers.
//!
//! Bucket measurements keep the one-series path (`read.rs`): their reads are by document
//! range of one series.

use crate::plan::{ReadPlan, Reduction, Source};
use crate::query::Query;
use crate::read::SeriesPoints;
use crate::windows::Summaries;
use crate::{Engine, EngineError};
use tickertape_backend::{PointsRange, RangePoints, SeriesHead, SeriesInfo};
use tickertape_core::model::is_stale_marker;
use tickertape_core::query::{select_range, without_stale_markers, Summary};
use tickertape_core::rollup::{aligned_span, summarize_slots};
use tickertape_core::schema::{Layout, MeasurementSchema};
use tickertape_core::{Point, SeriesId};

/// Series one batch names: what the backend is asked for at once (it splits its own
/// requests further), and so the most series whose points are held before the query's
/// budget is charged for them.
pub(crate) const SERIES_PER_BATCH: usize = 256;

impl ReadPlan {
    /// Whether this plan over a measurement of `schema` is read in batches of series.
    pub(crate) fn batches(&self, schema: &MeasurementSchema) -> bool {
        schema.layout == Layout::Segments
            && matches!(
                self,
                Self::Points { .. }
                    | Self::LatestFromHead(_)
                    | Self::Range(_)
                    | Self::Windows { .. }
            )
    }
}

impl Engine {
    /// The answers of `plan` (one that [`ReadPlan::batches`]) for `series`, all of the
    /// query's measurement, in order; `None` where a series has nothing to report.
    /// `heads`: each series' head, for `LatestFromHead`.
    pub(crate) async fn query_batch(
        &self,
        query: &Query,
        schema: &MeasurementSchema,
        plan: ReadPlan,
        series: &[SeriesInfo],
        heads: &[Option<SeriesHead>],
    ) -> Result<Vec<Option<SeriesPoints>>, EngineError> {
        let answers: Vec<Vec<Point>> = match plan {
            ReadPlan::Points { neighbors } => {
                self.points_batch(query, schema, series, neighbors).await?
            }
            ReadPlan::LatestFromHead(reduction) => {
                let mut answers: Vec<Option<Vec<Point>>> = series
                    .iter()
                    .zip(heads)
                    .map(|(_, head)| head.and_then(|h| self.head_answer(query, h, reduction)))
                    .collect();
                // The series whose head does not answer: their range, reduced.
                let (rest, infos): (Vec<usize>, Vec<SeriesInfo>) = answers
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.is_none())
                    .map(|(i, _)| (i, series[i].clone()))
                    .unzip();
                let reduced = self
                    .reduce_batch(query, schema, &infos, None, reduction)
                    .await?;
                for (i, points) in rest.into_iter().zip(reduced) {
                    answers[i] = Some(points);
                }
                answers.into_iter().map(Option::unwrap_or_default).collect()
            }
            ReadPlan::Range(reduction) => {
                self.reduce_batch(query, schema, series, None, reduction)
                    .await?
            }
            ReadPlan::Windows { step, reduction } => {
                self.reduce_batch(query, schema, series, Some(step), reduction)
                    .await?
            }
            ReadPlan::LatestFromPartitions { .. } | ReadPlan::WindowsFromTotals(_) => {
                return Err(EngineError::BadQuery(
                    "a bucket plan is read series by series".into(),
                ))
            }
        };
        Ok(series
            .iter()
            .zip(answers)
            .map(|(info, points)| {
                (!points.is_empty()).then(|| SeriesPoints {
                    key: info.key.clone(),
                    points,
                })
            })
            .collect())
    }

    /// `ReadPlan::Points`: the range's points, stale markers left out, and with
    /// `neighbors` the nearest value on each side (read past markers series by series,
    /// the rare case).
    async fn points_batch(
        &self,
        query: &Query,
        schema: &MeasurementSchema,
        series: &[SeriesInfo],
        neighbors: bool,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        let (start, end) = (query.start, query.end);
        let range = PointsRange {
            start,
            end,
            neighbors,
        };
        let read = self.backend.read_points(&ids(series), range).await?;
        let mut out = Vec::with_capacity(series.len());
        for (info, answer) in series.iter().zip(read) {
            out.push(match neighbors {
                true => {
                    let values = self
                        .values_with_neighbors(info, schema, answer.into_all(), start, end)
                        .await?;
                    select_range(&values, start, end, true)
                }
                false => without_stale_markers(answer.points),
            });
        }
        Ok(out)
    }

    /// [`Engine::reduce`] of every series of `series`, each kind of read once for all.
    async fn reduce_batch(
        &self,
        query: &Query,
        schema: &MeasurementSchema,
        series: &[SeriesInfo],
        step: Option<i64>,
        reduction: Reduction,
    ) -> Result<Vec<Vec<Point>>, EngineError> {
        if series.is_empty() {
            return Ok(Vec::new());
        }
        let summaries = self
            .summaries_batch(series, reduction.source, query.start, query.end)
            .await?;
        let held: Vec<Option<Option<f64>>> = match reduction.hold {
            true => self
                .held_batch(schema, series, query.start)
                .await?
                .into_iter()
                .map(Some)
                .collect(),
            false => vec![None; series.len()],
        };
        summaries
            .into_iter()
            .zip(held)
            .map(|(summaries, held)| self.reduced(query, step, reduction, summaries, held))
            .collect()
    }

    /// What `source` gives over `[start, end)` for each series (as `Engine::summaries`):
    /// a rollup's whole slots in one call, its ragged edges from raw points in one call
    /// each.
    async fn summaries_batch(
        &self,
        series: &[SeriesInfo],
        source: Source,
        start: i64,
        end: i64,
    ) -> Result<Vec<Summaries>, EngineError> {
        let ids = ids(series);
        match source {
            Source::Raw { slot_order } => {
                let read = self
                    .backend
                    .read_points(&ids, PointsRange::new(start, end))
                    .await?;
                Ok(read
                    .into_iter()
                    .map(|r| match slot_order {
                        None => Summaries::Points(r.points),
                        Some(res) => Summaries::Slots(summarize_slots(&r.points, start, end, res)),
                    })
                    .collect())
            }
            Source::Rollup(r) => {
                let (inner_start, inner_end) = aligned_span(start, end, r);
                let head = self.edge_batch(&ids, start, inner_start, r).await?;
                let inner = match inner_start < inner_end {
                    true => {
                        self.backend
                            .read_segment_rollups(&ids, r, inner_start, inner_end)
                            .await?
                    }
                    false => vec![Vec::new(); ids.len()],
                };
                let tail = self.edge_batch(&ids, inner_end, end, r).await?;
                Ok(head
                    .into_iter()
                    .zip(inner)
                    .zip(tail)
                    .map(|((mut slots, inner), tail)| {
                        slots.extend(inner);
                        slots.extend(tail);
                        Summaries::Slots(slots)
                    })
                    .collect())
            }
        }
    }

    /// The slot summaries of each series' raw points in `[start, end)`, a ragged edge of a
    /// rollup read; no read for an empty edge.
    async fn edge_batch(
        &self,
        ids: &[SeriesId],
        start: i64,
        end: i64,
        r: tickertape_core::rollup::Resolution,
    ) -> Result<Vec<Vec<(i64, Summary)>>, EngineError> {
        if start >= end {
            return Ok(vec![Vec::new(); ids.len()]);
        }
        let read = self
            .backend
            .read_points(ids, PointsRange::new(start, end))
            .await?;
        Ok(read
            .into_iter()
            .map(|p| summarize_slots(&p.points, start, end, r))
            .collect())
    }

    /// The value each change-only series holds at `start` (as `Engine::held_at`): the
    /// neighbour before `start` for all at once; past a stale marker, series by series.
    async fn held_batch(
        &self,
        schema: &MeasurementSchema,
        series: &[SeriesInfo],
        start: i64,
    ) -> Result<Vec<Option<f64>>, EngineError> {
        let read = self
            .backend
            .read_points(&ids(series), PointsRange::with_neighbors(start, start))
            .await?;
        let mut out = Vec::with_capacity(series.len());
        for (info, RangePoints { before, .. }) in series.iter().zip(read) {
            out.push(match before {
                Some(p) if is_stale_marker(p.value) => self
                    .value_before(info, schema, p.time)
                    .await?
                    .map(|p| p.value),
                Some(p) => Some(p.value),
                None => None,
            });
        }
        Ok(out)
    }
}

fn ids(series: &[SeriesInfo]) -> Vec<SeriesId> {
    series.iter().map(|s| s.id).collect()
}
