//! Picking the resolution a query reads, and the step a chart of at most N points gets
//! (zoom levels, as MMS picks a granularity per chart range).

use super::resolution::Resolution;
use crate::time::NANOS_PER_SECOND;

const MS: i64 = 1_000_000;
const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;
const H: i64 = 60 * M;
const D: i64 = 24 * H;
const YEAR: i64 = 365 * D;

/// The steps [`plan_max_points`] chooses from, finest first. Round numbers a reader
/// recognises on a time axis; most are a whole multiple of the one before, so a coarser
/// step's windows are unions of a finer one's. Every standard rollup width is one of them.
/// Beyond the last come 2, 5, 10, 20, 50, … years.
pub const NICE_STEPS: [i64; 23] = [
    MS,
    5 * MS,
    10 * MS,
    50 * MS,
    100 * MS,
    500 * MS,
    S,
    5 * S,
    10 * S,
    30 * S,
    M,
    5 * M,
    10 * M,
    30 * M,
    H,
    3 * H,
    6 * H,
    12 * H,
    D,
    7 * D,
    30 * D,
    90 * D,
    YEAR,
];

/// The coarsest resolution of `available` whose slots tile windows of `step_ns` exactly
/// (`step_ns` is a whole multiple of it), or `None` when none does and the query must be
/// answered from raw points. Coarsest, because it reads the fewest slots.
pub fn choose_resolution(step_ns: i64, available: &[Resolution]) -> Option<Resolution> {
    available
        .iter()
        .copied()
        .filter(|r| r.divides(step_ns))
        .max()
}

/// The resolution an aggregate over the whole of `[start, end)` (`agg` without `step`)
/// reads: the coarsest of `available` with at least one whole slot inside the range, or
/// `None` when none fits one and raw points answer. Whole slots come from the rollup,
/// the ragged edges from raw points ([`aligned_span`](super::aligned_span)).
pub fn choose_range_resolution(
    start: i64,
    end: i64,
    available: &[Resolution],
) -> Option<Resolution> {
    available
        .iter()
        .copied()
        .filter(|&r| {
            let (inner_start, inner_end) = super::aligned_span(start, end, r);
            inner_start < inner_end
        })
        .max()
}

/// How many windows of `step_ns`, aligned to multiples of it since the epoch, `[start,
/// end)` (ns) touches: the most points a windowed query over it returns per series.
pub fn window_count(start: i64, end: i64, step_ns: i64) -> u64 {
    if end <= start || step_ns <= 0 {
        return 0;
    }
    let step = step_ns as i128;
    let first = (start as i128).div_euclid(step);
    let last = (end as i128 - 1).div_euclid(step);
    (last - first + 1) as u64
}

/// The step and resolution for a chart of `[start, end)` (ns) with at most `max_points`
/// points per series (`max_points=` without `step=`): the finest of [`NICE_STEPS`] (then 2,
/// 5, 10, 20, 50 … years) whose aligned windows over the range number at most
/// `max_points`, and [`choose_resolution`] for it among `available` (`None`: raw points).
///
/// A range that crosses a window boundary touches two windows whatever the step, so
/// `max_points` below 2 is taken as 2 (the server should refuse it with a message); for a
/// range longer than `i64::MAX` ns (292 years), which even the longest step cannot cover
/// in two, below 3. An empty range gets the finest step.
pub fn plan_max_points(
    start: i64,
    end: i64,
    max_points: usize,
    available: &[Resolution],
) -> (i64, Option<Resolution>) {
    let longest = (end as i128 - start as i128) > i64::MAX as i128;
    let max_points = max_points.max(if longest { 3 } else { 2 }) as u64;
    let step = candidate_steps()
        .find(|&step| window_count(start, end, step) <= max_points)
        .unwrap_or(i64::MAX);
    (step, choose_resolution(step, available))
}

/// [`NICE_STEPS`], then years in a 1-2-5 series, then `i64::MAX`: a step at least as
/// long as any range up to `i64::MAX` ns, which then touches at most two windows.
fn candidate_steps() -> impl Iterator<Item = i64> {
    let years = (0u32..)
        .map_while(|decade| 10i64.checked_pow(decade))
        .flat_map(|scale| [2i64, 5, 10].map(|k| k.checked_mul(scale)))
        .map_while(|years| years.and_then(|n| YEAR.checked_mul(n)));
    NICE_STEPS.into_iter().chain(years).chain([i64::MAX])
}
