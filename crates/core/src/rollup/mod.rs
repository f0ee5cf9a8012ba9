//! Rollup arithmetic (`docs/design.md#rollups-at-several-resolutions`): resolutions, the
//! geometry of bucket documents (which document and slot hold a timestamp), the per-slot
//! summaries a write adds to each rollup, the choice of resolution and step for a query,
//! and the answer of a windowed query from rollup slots. No I/O: backends store what
//! [`rollup_updates`] computes, the engine reads with [`aligned_span`] and
//! [`rollup_window_summaries`].
//!
//! All times are `i64` ns since the Unix epoch; ranges are `[start, end)`. Slots,
//! documents and query windows are all aligned to multiples of their width since the
//! epoch, also before it.
//!
//! # Reading a windowed query from a rollup
//!
//! A query with `step` reads resolution `r = choose_resolution(step, rollups)`: the
//! coarsest rollup whose slots tile every window. [`aligned_span`] splits the range into
//! whole slots of `r`, read from the rollup, and two ragged edges shorter than a slot,
//! read as raw points and summarised with [`summarize_slots`]. The three lists of
//! `(slot start, Summary)` are concatenated and handed to [`rollup_window_summaries`].
//!
//! # Why the rollup answer is the raw answer, bit for bit
//!
//! Count, min, max, first and last come out the same however points are grouped: count
//! is an integer, `first`/`last` pick by time, and `f64::min`/`max` select one operand
//! (never round), so a minimum of per-slot minimums is the minimum of the values. Sums are
//! different: float addition is not associative, and `(v₁ + v₂) + (v₃ + v₄)` can differ
//! from `((v₁ + v₂) + v₃) + v₄` in the last bits — so `sum` and `avg` from slot sums could
//! drift from a sum over the raw values. Rather than accept a tolerance, tickertape fixes
//! one order of addition, and every path performs exactly that sequence of operations:
//!
//! 1. **A slot's sum** is its values added left to right in time order. Stored slots keep
//!    this across write batches because an update continues the stored sum point by point
//!    ([`RollupUpdate::apply_to`]), and [`summarize_slots`] computes it from raw points.
//! 2. **A window's sum at resolution `r`** is its slot sums added left to right in time
//!    order ([`rollup_window_summaries`]). The raw path, for a query answered at `r`, must
//!    group the same way: [`aggregate_by_slots`]`(points, …, Some(r))`, which builds the
//!    slots from raw points and calls the same function. So the engine passes the
//!    resolution it would read even when it reads raw points (`resolution=raw`, or a
//!    rollup without the slots yet), and the two answers are identical.
//! 3. **Without a dividing resolution** (`None`), a window's sum is its values left to
//!    right: [`crate::query::aggregate_windows`].
//!
//! When `step` equals `r` — the zoom steps 1m, 5m, 1h and 1d among those
//! [`plan_max_points`] picks — every window is one slot, and the answer also equals
//! `aggregate_windows` for arbitrary values. For `step` a multiple of `r` it equals
//! `aggregate_windows` whenever the sums are exact (integer values, counters, below
//! 2⁵³), and otherwise may differ from it in the last bits only — which is why the raw
//! path uses the slot order. Forcing a finer resolution (`resolution=1m` on a `1h` step)
//! sums by that resolution's slots.
//!
//! Raw bucket documents must keep `n`/`sum` over the whole document by the same rule, so
//! that `agg=avg` over a whole document from `n`/`sum` is its values added left to right.
//!
//! Rule 1 assumes a slot's points arrive in time order, which value segments enforce. A
//! bucket measurement accepts a late point into an older slot; the stored sum then adds
//! it last, and a non-integer sum can differ from the time-ordered one in its last bits
//! (count, min, max, first and last are unaffected). An order-independent sum would need
//! an exact accumulator in the stored slot; not done.
//!
//! # Counters
//!
//! The raw points of a counter (`mode=inc`) are its per-slot totals, while a write sees
//! only increments. Rollup summaries built from the increments as points have the right
//! `sum` (all `display=total` and `avg_per_sec` need), but `count`, `min`, `max`, `first`
//! and `last` of the increments, not of the totals, and so are a raw document's
//! `n`/`min`/`max`. The engine therefore answers a counter's `sum` (and `display`) from
//! rollups and every other aggregate from its raw slots, whose values are the totals.

mod aggregate;
mod geometry;
mod plan;
mod resolution;
mod update;

#[cfg(test)]
mod tests;

pub use aggregate::{
    aggregate_by_slots, aligned_span, raw_window_summaries, rollup_window_summaries,
    summarize_slots,
};
pub use geometry::{BucketGeometry, MAX_PERIOD_NS, MIN_BUCKET_TIME};
pub use plan::{
    choose_range_resolution, choose_resolution, plan_max_points, window_count, NICE_STEPS,
};
pub use resolution::{Resolution, ResolutionError, ResolutionOrRaw, MAX_RESOLUTION_NS};
pub use update::{rollup_updates, RollupError, RollupUpdate};
