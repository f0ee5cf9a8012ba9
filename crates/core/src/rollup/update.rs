//! What a write adds to each rollup: one summary delta per touched slot.

use super::geometry::MIN_BUCKET_TIME;
use super::resolution::Resolution;
use crate::model::{is_stale_marker, Point};
use crate::query::Summary;
use std::ops::Range;
use thiserror::Error;

/// Why a batch cannot be rolled up.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RollupError {
    /// The point's document would start before `i64::MIN` at some resolution.
    #[error(
        "timestamp {time} is before the earliest time rollups can hold ({MIN_BUCKET_TIME} ns, \
         1737-07-09T00:12:43Z)"
    )]
    TooEarly { time: i64 },
}

/// The change one write batch makes to one slot of one rollup.
///
/// `summary` summarises the batch's points in the slot, `points[range]` of the batch given
/// to [`rollup_updates`]; its `sum` is their values added left to right. How a backend
/// must combine it with what the slot already holds is [`apply_to`](Self::apply_to).
#[derive(Clone, Debug, PartialEq)]
pub struct RollupUpdate {
    pub resolution: Resolution,
    /// Start of the slot's document, ns since the epoch.
    pub bucket_start: i64,
    /// Index of the slot in its document (`0..geometry.slots()`).
    pub slot: u32,
    pub summary: Summary,
    /// Which points of the batch fall in this slot.
    pub points: Range<usize>,
}

impl RollupUpdate {
    /// The slot's summary after this update, given what it held (`None`: never written,
    /// including a pre-allocated slot) and the batch the update was made from.
    ///
    /// This is the reference every backend must reproduce. Count, min, max, first and last
    /// combine as [`Summary::merge`]. The sum does not: it continues the stored sum one
    /// point at a time (`(stored + v₁) + v₂`, never `stored + (v₁ + v₂)`), so a slot's sum
    /// is the same left-to-right sum of its values however the points were split into
    /// batches — the invariant that makes rollup answers equal raw ones (see the module
    /// docs). On MongoDB that is a pipeline update with nested `$add` (or one `$inc` per
    /// point in an ordered bulk write); `$inc` of `summary.sum` is right only for a slot
    /// that held nothing, or an update of a single point.
    ///
    /// A never-written slot takes `summary` as it is, so a first value of `-0.0` is kept
    /// rather than turned into `0.0 + -0.0 = 0.0`.
    pub fn apply_to(&self, stored: Option<&Summary>, batch: &[Point]) -> Summary {
        let Some(stored) = stored else {
            return self.summary;
        };
        let sum = batch[self.points.clone()]
            .iter()
            .fold(stored.sum, |sum, p| sum + p.value);
        let mut out = *stored;
        out.merge(&self.summary);
        out.sum = sum;
        out
    }

    /// Whether the update adds one point, so that a plain `$inc` of `summary.sum`
    /// continues the stored sum exactly as [`apply_to`](Self::apply_to) does.
    pub fn is_single_point(&self) -> bool {
        self.points.len() == 1
    }
}

/// The rollup updates of one series' write batch: for every resolution in `resolutions`
/// (in that order) and every run of consecutive points of `points` in the same slot, one
/// [`RollupUpdate`], in the order of the points.
///
/// `points` are one series' batch, in time order (the engine refuses late points, so
/// every slot appears once per resolution; out-of-order input still gives correct
/// updates, one per run, to be applied in the order returned). Stale markers (Prometheus'
/// end-of-series NaN) are no values: they are in no update, and one ends a run (an
/// update's `points` are contiguous), so callers that want one update per slot leave
/// them out first. Nothing is returned and the whole batch is refused when a point is
/// before [`MIN_BUCKET_TIME`].
pub fn rollup_updates(
    points: &[Point],
    resolutions: &[Resolution],
) -> Result<Vec<RollupUpdate>, RollupError> {
    if let Some(p) = points.iter().find(|p| p.time < MIN_BUCKET_TIME) {
        return Err(RollupError::TooEarly { time: p.time });
    }
    let mut out = Vec::new();
    for &resolution in resolutions {
        let geometry = resolution.geometry();
        let mut current: Option<RollupUpdate> = None;
        for (i, &p) in points.iter().enumerate() {
            if is_stale_marker(p.value) {
                out.extend(current.take());
                continue;
            }
            let (bucket_start, slot) = geometry.slot_of(p.time).expect("checked above");
            match &mut current {
                Some(u) if u.bucket_start == bucket_start && u.slot == slot => {
                    // merge, not push: keeps first/last right for out-of-order input.
                    u.summary.merge(&Summary::of(p));
                    u.points.end = i + 1;
                }
                _ => {
                    out.extend(current.take());
                    current = Some(RollupUpdate {
                        resolution,
                        bucket_start,
                        slot,
                        summary: Summary::of(p),
                        points: i..i + 1,
                    });
                }
            }
        }
        out.extend(current);
    }
    Ok(out)
}
