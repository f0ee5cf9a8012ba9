//! The read plan: how a query is answered for one measurement's schema, decided once per
//! query, before any read, as a value the read paths execute (`read.rs`, `windows.rs`).
//!
//! Every choice of where to read from is made here and nowhere else: the series head or
//! the latest partitions for `agg=last`, raw points, a rollup's whole slots with raw
//! ragged edges, or whole raw bucket documents' totals; the counter rule; whether a
//! change-only measurement's value is held. Planning does no I/O.

use crate::query::{CounterDisplay, Query};
use crate::EngineError;
use tickertape_core::hold::holds;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::{
    choose_range_resolution, choose_resolution, plan_max_points, BucketGeometry, Resolution,
    ResolutionOrRaw,
};
use tickertape_core::schema::{Kind, Layout, MeasurementSchema};
use tickertape_core::time::format_duration;

/// How a query is read and answered, for every series it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadPlan {
    /// The stored points in the range; with `neighbors`, also the nearest one on each
    /// side (value segments only).
    Points { neighbors: bool },
    /// `agg=last` without a step over value segments: a series' head (its last point)
    /// answers when it lies in the range, and a change-only series' head before the range
    /// still holds; otherwise the range is reduced as the `Reduction` says.
    LatestFromHead(Reduction),
    /// `agg=last` without a step over buckets, which keep no head: the raw partitions that
    /// overlap the range, read one at a time from the latest.
    LatestFromPartitions { interval_ns: i64 },
    /// `agg` without a step: the whole range reduced to one point, read like one window.
    Range(Reduction),
    /// `step` (or the step `max_points` picks): one point per non-empty window, each
    /// reported at its window's start.
    Windows { step: i64, reduction: Reduction },
    /// Windows of exactly one raw bucket document each, answered from the documents'
    /// totals.
    WindowsFromTotals(Totals),
}

/// Windows of one raw bucket document each (`step` = the document's period) for `avg`,
/// `sum`, `count`, `min` and `max`: whole documents answer from their `n`/`sum`/`min`/
/// `max` without shipping their slots (docs/design.md#summaries); the documents the range cuts are read
/// as raw points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Totals {
    /// The raw slot interval of the measurement's buckets.
    pub(crate) interval_ns: i64,
    /// The period of one raw document: the step.
    pub(crate) period: i64,
    pub(crate) agg: Aggregate,
    /// `display=avg_per_sec`, as in [`Reduction`].
    pub(crate) per_second: bool,
}

/// How a range, or each window of it, is reduced to one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reduction {
    pub(crate) agg: Aggregate,
    pub(crate) source: Source,
    /// A change-only measurement answers with the value that holds (`core::hold`),
    /// applied to the summaries after the rollup-or-raw choice so both agree.
    pub(crate) hold: bool,
    /// `display=avg_per_sec`: each value divided by the seconds it covers.
    pub(crate) per_second: bool,
}

/// Where the summaries of a range (or its windows) come from. Both give the same bits:
/// the raw path sums in the slot order of the rollup it stands in for (`core::rollup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Raw points; with `slot_order`, summarised per slot of that resolution first and
    /// the slots merged left to right, as its rollup's stored slots would be.
    Raw { slot_order: Option<Resolution> },
    /// The rollup's whole slots, the ragged edges of the range from raw points
    /// (`core::rollup::aligned_span`).
    Rollup(Resolution),
}

impl ReadPlan {
    /// The plan for `query` (validated, its chart range closed) over a measurement of
    /// `schema`; refuses what that schema cannot answer.
    pub(crate) fn new(query: &Query, schema: &MeasurementSchema) -> Result<Self, EngineError> {
        check_against_schema(query, schema)?;
        if let Some((step, slot_order)) = window_step(query, schema)? {
            return Ok(windows_plan(query, schema, step, slot_order));
        }
        Ok(match query.effective_agg() {
            None => Self::Points {
                neighbors: query.neighbors,
            },
            Some(agg) => whole_range_plan(query, schema, agg),
        })
    }
}

/// A windowed query's plan: windows of one raw document from the documents' totals where
/// they answer, else from the rollup of `slot_order` or raw points.
fn windows_plan(
    query: &Query,
    schema: &MeasurementSchema,
    step: i64,
    slot_order: Option<Resolution>,
) -> ReadPlan {
    // `max_points` without `agg` charts averages, or a counter's totals.
    let agg = query.effective_agg().unwrap_or(match schema.kind {
        Kind::Counter => Aggregate::Sum,
        Kind::Gauge => Aggregate::Avg,
    });
    match totals_period(query, schema, step, agg, slot_order) {
        Some((interval_ns, period)) => ReadPlan::WindowsFromTotals(Totals {
            interval_ns,
            period,
            agg,
            per_second: per_second(query),
        }),
        None => ReadPlan::Windows {
            step,
            reduction: reduction(query, schema, agg, slot_order),
        },
    }
}

/// The plan of `agg` without a step: the range read like one window of the coarsest
/// rollup with a whole slot in it; `last` from the series' heads or latest partitions.
fn whole_range_plan(query: &Query, schema: &MeasurementSchema, agg: Aggregate) -> ReadPlan {
    let slot_order = match query.resolution {
        Some(ResolutionOrRaw::Rollup(r)) => Some(r),
        // Also the order `resolution=raw` sums in: that of the rollup it stands in for.
        _ if !only_raw_slots_answer(schema, agg) => {
            choose_range_resolution(query.start, query.end, &schema.rollups)
        }
        _ => None,
    };
    let reduction = reduction(query, schema, agg, slot_order);
    match (agg, schema.layout) {
        (Aggregate::Last, Layout::Segments) => ReadPlan::LatestFromHead(reduction),
        (Aggregate::Last, Layout::Buckets { interval_ns }) => {
            ReadPlan::LatestFromPartitions { interval_ns }
        }
        _ => ReadPlan::Range(reduction),
    }
}

fn reduction(
    query: &Query,
    schema: &MeasurementSchema,
    agg: Aggregate,
    slot_order: Option<Resolution>,
) -> Reduction {
    Reduction {
        agg,
        source: source(query, schema, agg, slot_order),
        hold: schema.change_only && holds(agg),
        per_second: per_second(query),
    }
}

fn per_second(query: &Query) -> bool {
    query.display == Some(CounterDisplay::AvgPerSec)
}

/// Refuses what a measurement of `schema` cannot answer.
fn check_against_schema(query: &Query, schema: &MeasurementSchema) -> Result<(), EngineError> {
    let measurement = &query.selector.measurement;
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

/// The step of a windowed query and the resolution whose slots tile its windows (forced
/// by `resolution=`, else the coarsest kept rollup that divides the step); `None` for a
/// query without windows.
fn window_step(
    query: &Query,
    schema: &MeasurementSchema,
) -> Result<Option<(i64, Option<Resolution>)>, EngineError> {
    let rollups = &schema.rollups;
    let (step, chosen) = match (query.step, query.max_points) {
        (Some(step), _) => (step, choose_resolution(step, rollups)),
        (None, Some(max_points)) => plan_max_points(query.start, query.end, max_points, rollups),
        (None, None) => return Ok(None),
    };
    let slot_order = match query.resolution {
        None | Some(ResolutionOrRaw::Raw) => chosen,
        Some(ResolutionOrRaw::Rollup(r)) if r.divides(step) => Some(r),
        Some(ResolutionOrRaw::Rollup(r)) => {
            return Err(EngineError::BadQuery(format!(
                "resolution {r} does not divide the step of {}",
                format_duration(step)
            )))
        }
    };
    Ok(Some((step, slot_order)))
}

/// The rollup-or-raw choice: the rollup of `slot_order` when the measurement keeps it,
/// `resolution=raw` does not force raw points and the counter rule allows it; raw points
/// summed in the same slot order otherwise.
fn source(
    query: &Query,
    schema: &MeasurementSchema,
    agg: Aggregate,
    slot_order: Option<Resolution>,
) -> Source {
    let stored = slot_order
        .filter(|r| schema.rollups.contains(r))
        .filter(|_| query.resolution != Some(ResolutionOrRaw::Raw))
        .filter(|_| !only_raw_slots_answer(schema, agg));
    match stored {
        Some(r) => Source::Rollup(r),
        None => Source::Raw { slot_order },
    }
}

/// The raw slot interval and document period when windows of `step` are answered from
/// whole documents' totals: windows of exactly one document, no rollup in play, an aggregate
/// the totals give, and `resolution=raw` not forcing raw points. Equal to the raw answer
/// when the slots were written in time order (a document's `sum` adds in write order).
fn totals_period(
    query: &Query,
    schema: &MeasurementSchema,
    step: i64,
    agg: Aggregate,
    slot_order: Option<Resolution>,
) -> Option<(i64, i64)> {
    let Layout::Buckets { interval_ns } = schema.layout else {
        return None;
    };
    let period = BucketGeometry::for_slot(interval_ns)?.period_ns();
    let from_totals = matches!(
        agg,
        Aggregate::Avg | Aggregate::Sum | Aggregate::Count | Aggregate::Min | Aggregate::Max
    );
    let applies = from_totals
        && step == period
        && slot_order.is_none()
        && query.resolution != Some(ResolutionOrRaw::Raw)
        && !only_raw_slots_answer(schema, agg);
    applies.then_some((interval_ns, period))
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

#[cfg(test)]
mod tests;
