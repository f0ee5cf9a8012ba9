//! Value segments (docs/design.md#value-segments): the points of each series, under one rule (the last write of
//! a time wins), with the rollups the store derives from them and raw retention.

use async_trait::async_trait;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{Resolution, ResolutionOrRaw};
use tickertape_core::segment::{collect_points, Segment};
use tickertape_core::SeriesId;

#[allow(unused_imports)] // named in the docs
use crate::{BackendError, StorageStats};
use crate::{
    DeleteRange, PointsRange, RangePoints, Result, SegmentRollupPlan, SeriesAppend, SeriesHead,
};

/// What a retention pass drops of one measurement: its raw points, or its derived rollup at
/// one resolution, in the whole time partitions that end at or before `cutoff`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expiry {
    pub measurement: String,
    pub level: ResolutionOrRaw,
    pub cutoff: i64,
}

/// The time partitions `[start, end)` a retention drop removed (or would remove).
pub type DroppedPartitions = Vec<(i64, i64)>;

#[async_trait]
/// The points of value-segment series and their derived rollups.
pub trait ValueStore: Send + Sync {
    /// Stores each series' points in its value segments, wherever they fall in time: a
    /// point at a time the series already holds replaces that value (the last write wins,
    /// InfluxDB's rule), and an exact duplicate changes nothing, so a retried call is
    /// harmless. Several appends to the same series in one call are applied in order (the
    /// later one wins at equal times).
    ///
    /// Every series must be registered: an unknown id fails the call with
    /// [`BackendError::UnknownSeries`] (as on any `Err`, appends to other series of the call
    /// may have been stored; the embedded and reference backends check before storing any).
    ///
    /// When this returns `Ok`, every point is durable (survives a crash of the process or
    /// the machine) and readable by every handle. On `Err`, some points may have been
    /// stored; storing them again is harmless.
    async fn append(&self, appends: Vec<SeriesAppend>) -> Result<()>;

    /// The segments of `series` that may hold points in `[start, end)`, the nearest point
    /// before `start` or the nearest at or after `end` — see [`Segment::may_overlap`] —
    /// sorted by `prev_end`. `start == end` reads just the two neighbours of `start`.
    async fn read_segments(&self, series: SeriesId, start: i64, end: i64) -> Result<Vec<Segment>>;

    /// The points of each of `series` in `range` (and its neighbours when it asks for
    /// them): one answer per series, in the order given; a series that holds no point
    /// there, or is not registered, answers an empty [`RangePoints`]. The points are what
    /// [`read_segments`](Self::read_segments) gives for each series, without the segments:
    /// this is the read of a query, which names all its series at once so that a store
    /// can read many series with one request per partition instead of one per series.
    ///
    /// This default reads one series at a time, which is as fast as it gets on a store
    /// whose reads are local (the embedded store, the reference); a remote store
    /// overrides it.
    async fn read_points(
        &self,
        series: &[SeriesId],
        range: PointsRange,
    ) -> Result<Vec<RangePoints>> {
        let mut out = Vec::with_capacity(series.len());
        // An empty or reversed range reads the neighbours of `start`.
        let end = range.end.max(range.start);
        for &s in series {
            let segments = self.read_segments(s, range.start, end).await?;
            let all = collect_points(&segments)
                .map_err(|e| BackendError::Corrupt(format!("series {s}: {e}")))?;
            out.push(RangePoints::from_sorted_vec(all, range));
        }
        Ok(out)
    }

    /// The latest stored point of each series (`None` for a series with no point yet).
    async fn heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>>;

    /// Sets the rollup resolutions the store keeps of each value-segment measurement
    /// (`plan` names them by measurement); a later call replaces the plan. Every backend
    /// derives these rollups itself, from the points it holds, off the write path, and a
    /// crash never leaves a rollup that disagrees with the points: the engine writes no
    /// rollup of value segments and reads them with
    /// [`read_segment_rollup`](Self::read_segment_rollup).
    fn derive_segment_rollups(&self, plan: SegmentRollupPlan);

    /// The rollup slots of a value-segment series at `resolution` whose start lies in
    /// `[start, end)` (both multiples of the resolution), by time; slots without a point
    /// are absent. Each slot is exactly what `core::rollup::summarize_slots` gives over
    /// the series' stored points, late and replaced points included, so an answer from
    /// it is the raw answer bit for bit: where the derived rollup does not yet cover a
    /// range (the store has not caught up, see [`StorageStats::rollup_lag_points`]), the
    /// backend summarises the raw points of that range instead. A resolution the plan
    /// does not keep is summarised from raw points too.
    async fn read_segment_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>>;

    /// [`read_segment_rollup`](Self::read_segment_rollup) of each of `series` over the same
    /// range, in the order given: the rollup read of a query, all its series at once.
    /// This default reads one series at a time (see [`read_points`](Self::read_points)).
    async fn read_segment_rollups(
        &self,
        series: &[SeriesId],
        resolution: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<Vec<(i64, Summary)>>> {
        let mut out = Vec::with_capacity(series.len());
        for &s in series {
            out.push(self.read_segment_rollup(s, resolution, start, end).await?);
        }
        Ok(out)
    }

    /// Drops the derived rollup slots at `resolution` of `measurement` (see
    /// [`derive_segment_rollups`](Self::derive_segment_rollups)) in whole time partitions
    /// that end at or before `cutoff`, or with `dry_run` only lists them; returns the
    /// partitions' `[start, end)`. [`drop_raw_before`](Self::drop_raw_before) keeps
    /// them, so rollups can outlive raw points.
    async fn drop_segment_rollup_before(
        &self,
        measurement: &str,
        resolution: Resolution,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>>;

    /// Drops the raw points of `measurement`'s value segments in whole time partitions
    /// that end at or before `cutoff` (never a point at or after `cutoff`; points of a
    /// partition that `cutoff` cuts are kept), or with `dry_run` only lists them. Returns
    /// the partitions' `[start, end)`. Points that arrive for a dropped partition later, or
    /// that the store still holds in memory, are kept until a later call drops them.
    async fn drop_raw_before(
        &self,
        measurement: &str,
        cutoff: i64,
        dry_run: bool,
    ) -> Result<Vec<(i64, i64)>>;

    /// Drops (or with `dry_run` only lists) what each of `expiries` names, as
    /// [`drop_raw_before`](Self::drop_raw_before) and
    /// [`drop_segment_rollup_before`](Self::drop_segment_rollup_before) would one after
    /// the other; returns each one's partitions, in the order given. A whole retention
    /// pass is one call, so that a store whose partitions hold many measurements rewrites
    /// each partition once for all of them rather than once per measurement.
    async fn drop_expired(
        &self,
        expiries: &[Expiry],
        dry_run: bool,
    ) -> Result<Vec<DroppedPartitions>> {
        let mut out = Vec::with_capacity(expiries.len());
        for e in expiries {
            out.push(match e.level {
                ResolutionOrRaw::Raw => {
                    self.drop_raw_before(&e.measurement, e.cutoff, dry_run)
                        .await?
                }
                ResolutionOrRaw::Rollup(r) => {
                    self.drop_segment_rollup_before(&e.measurement, r, e.cutoff, dry_run)
                        .await?
                }
            });
        }
        Ok(out)
    }

    // --- Deleting points -------------------------------------------------------------

    /// Deletes every stored point of each of `series` whose time is in `range`. When this
    /// returns `Ok`, the delete is durable, like an append: the deleted points never come
    /// back — not after a restart or a crash, a merge, compaction or fold, a write of other
    /// points into the same partitions, or a rebuild of rollups — and every read answers
    /// from the points that remain: [`read_segments`](Self::read_segments) and
    /// [`read_points`](Self::read_points) with their neighbours, [`heads`](Self::heads), and
    /// [`read_segment_rollup`](Self::read_segment_rollup), whose slots over the range are
    /// those of the remaining points, bit for bit. A point appended at a deleted time after
    /// `Ok` is stored as any other (a delete is not a filter on later writes); an append
    /// racing the delete is kept or deleted whole, never half.
    ///
    /// Rollup slots that outlived raw retention (see
    /// [`drop_raw_before`](Self::drop_raw_before)) have no points left to answer from
    /// and are left as they are. An id that is not registered or holds no point in the
    /// range is no error. On `Err`, some of the points may be deleted; deleting again is
    /// harmless.
    async fn delete_points(&self, series: &[SeriesId], range: DeleteRange) -> Result<()>;
}
