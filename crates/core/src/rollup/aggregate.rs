//! Answering a windowed query from rollup slots, and the raw path that gives the same
//! answer bit for bit.

use super::resolution::Resolution;
use crate::model::{is_stale_marker, Point};
use crate::query::{answer_windows, point_window_summaries, window_summaries, Aggregate, Summary};
use crate::time::window_start;

/// Splits the query range `[start, end)` (ns) at the slot boundaries of `resolution`:
/// `[inner_start, inner_end)` is the longest part made of whole slots, read from the
/// rollup; `[start, inner_start)` and `[inner_end, end)` are the ragged edges, each shorter
/// than one slot, read as raw points (a rollup slot that the range cuts through holds
/// points on both sides of the bound, which its summary cannot separate).
///
/// Always `start <= inner_start <= inner_end <= end` when `start <= end`. When no whole
/// slot fits, `inner_start == inner_end` and the two edges cover the range between them.
/// An empty range (`end <= start`) gives `(start, start)`.
pub fn aligned_span(start: i64, end: i64, resolution: Resolution) -> (i64, i64) {
    if end <= start {
        return (start, start);
    }
    let r = resolution.nanos();
    // The first slot boundary at or after `start`, counted up from `start`: the boundary
    // below it may lie before i64::MIN, where `window_start` saturates.
    let rem = start.rem_euclid(r);
    let up = match rem {
        0 => start,
        _ => start.checked_add(r - rem).unwrap_or(i64::MAX),
    };
    let inner_end = window_start(end, r);
    if up < inner_end {
        (up, inner_end)
    } else {
        let cut = up.min(end);
        (cut, cut)
    }
}

/// The per-slot summaries of the points of `sorted` in `[start, end)` at `resolution`, each
/// keyed by its slot's start time, in time order: what the rollup's slots would hold if
/// the range covered them whole, and the summaries of the ragged edges when it does not.
/// Each slot's `sum` adds its values left to right, as a stored slot's does. Stale
/// markers are left out, as [`rollup_updates`](super::rollup_updates) leaves them out.
pub fn summarize_slots(
    sorted: &[Point],
    start: i64,
    end: i64,
    resolution: Resolution,
) -> Vec<(i64, Summary)> {
    let lo = sorted.partition_point(|p| p.time < start);
    let hi = sorted.partition_point(|p| p.time < end).max(lo);
    let mut out: Vec<(i64, Summary)> = Vec::new();
    for &p in sorted[lo..hi].iter().filter(|p| !is_stale_marker(p.value)) {
        let slot = window_start(p.time, resolution.nanos());
        match out.last_mut() {
            Some((t, s)) if *t == slot => s.merge(&Summary::of(p)),
            _ => out.push((slot, Summary::of(p))),
        }
    }
    out
}

/// Summarises slot summaries per window of `step` ns aligned to multiples of `step` since
/// the epoch, with the conventions of [`aggregate_windows`](crate::query::aggregate_windows):
/// each window keyed by its start, empty windows left out; the caller answers
/// them ([`answer_windows`](crate::query::answer_windows)), after a change-only series'
/// holds ([`crate::hold`]) where they apply.
///
/// `slots` are `(slot start, summary)` in time order, from the rollup of a resolution that
/// divides `step` (so no slot straddles two windows), with ragged edges as
/// [`summarize_slots`] gives them. A slot takes part when all its points lie in
/// `[start, end)` (`first.time >= start && last.time < end`); one with points on both
/// sides of a bound is a caller's error — see [`aligned_span`] — and is left out
/// (debug builds panic).
///
/// A window's summary is its slots' merged left to right, so its sum is the left-to-right
/// sum of the slot sums; see the module docs for why that equals the raw answer.
pub fn rollup_window_summaries(
    slots: &[(i64, Summary)],
    start: i64,
    end: i64,
    step: i64,
) -> Vec<(i64, Summary)> {
    let mut previous_slot = i64::MIN;
    let inside = slots.iter().filter(|(slot_time, summary)| {
        debug_assert!(*slot_time >= previous_slot, "slots out of order");
        previous_slot = *slot_time;
        if summary.last.time < start || summary.first.time >= end {
            return false;
        }
        let straddles = summary.first.time < start || summary.last.time >= end;
        debug_assert!(!straddles, "slot at {slot_time} straddles [{start}, {end})");
        !straddles
    });
    window_summaries(inside.copied(), step)
}

/// The raw answer to a windowed query, summed in the order tickertape defines for
/// `resolution` (module docs): with `Some(r)`, the points are summarised per slot of `r`
/// and the slots merged per window, exactly as [`rollup_window_summaries`] does with stored
/// slots, so both give identical bits; with `None`, it is [`aggregate_windows`](crate::query::aggregate_windows).
///
/// `resolution`, when given, must divide `step`.
pub fn aggregate_by_slots(
    sorted: &[Point],
    start: i64,
    end: i64,
    step: i64,
    agg: Aggregate,
    resolution: Option<Resolution>,
) -> Vec<Point> {
    answer_windows(
        &raw_window_summaries(sorted, start, end, step, resolution),
        agg,
    )
}

/// The window summaries [`aggregate_by_slots`] answers from; equal, field for field and
/// bit for bit, to [`rollup_window_summaries`] over the stored slots of `resolution`.
pub fn raw_window_summaries(
    sorted: &[Point],
    start: i64,
    end: i64,
    step: i64,
    resolution: Option<Resolution>,
) -> Vec<(i64, Summary)> {
    match resolution {
        None => point_window_summaries(sorted, start, end, step),
        Some(r) => {
            debug_assert!(r.divides(step), "{r} does not divide a step of {step} ns");
            let slots = summarize_slots(sorted, start, end, r);
            rollup_window_summaries(&slots, start, end, step)
        }
    }
}
