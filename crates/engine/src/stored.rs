//! Reading what one series has stored: raw points (value segments or raw bucket slots),
//! rollup slots, raw bucket documents' totals, and the raw partitions that overlap a
//! range. The read plan (`plan.rs`) decides which of these a query reads.

use crate::{Engine, EngineError};
use tickertape_backend::BucketRange;
use tickertape_backend::{
    BackendError, BucketFamily, BucketRead, SeriesInfo, SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{BucketGeometry, Resolution};
use tickertape_core::schema::{Layout, MeasurementSchema};
use tickertape_core::segment::collect_points;
use tickertape_core::Point;

/// The `n`/`sum`/`min`/`max` of one raw bucket document, at the document's start.
pub(crate) struct DocumentTotals {
    pub(crate) bucket_start: i64,
    pub(crate) count: u64,
    pub(crate) sum: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Engine {
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
        let token = self.measurement_token(&info.key.measurement).await?;
        let raw = BucketFamily::raw(token, interval_ns)?;
        self.slots(info, raw, start, end)
            .await?
            .into_iter()
            .map(|(time, value)| match value {
                SlotValue::Value(v) => Ok(Point::new(time, v)),
                SlotValue::Summary(_) => Err(corrupt(info, "a raw bucket slot holds a summary")),
            })
            .collect()
    }

    /// The stored slots of rollup `r` in `[start, end)` (whole slots), by time.
    pub(crate) async fn rollup_slots(
        &self,
        info: &SeriesInfo,
        r: Resolution,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, Summary)>, EngineError> {
        // An empty range costs nothing: the backend answers it without a read.
        if !self.writes_rollups_of(self.schema.for_measurement(&info.key.measurement)) {
            return Ok(self
                .backend
                .read_segment_rollup(info.id, r, start, end)
                .await?);
        }
        let token = self.measurement_token(&info.key.measurement).await?;
        self.slots(info, BucketFamily::rollup(token, r), start, end)
            .await?
            .into_iter()
            .map(|(time, value)| match value {
                SlotValue::Summary(summary) => Ok((time, summary)),
                SlotValue::Value(_) => Err(corrupt(info, "a rollup slot holds a raw value")),
            })
            .collect()
    }

    /// The written slots of the series in `family` whose start lies in `[start, end)`, in
    /// time order, each at its start time.
    async fn slots(
        &self,
        info: &SeriesInfo,
        family: BucketFamily,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, SlotValue)>, EngineError> {
        let range = BucketRange {
            family,
            series: info.id,
            start,
            end,
        };
        let docs = self.backend.read_buckets(range, BucketRead::Full).await?;
        slots_in_range(docs, family.geometry(), start, end, info)
    }

    /// The totals of the raw bucket documents of a series that start in `[start, end)`
    /// and hold at least one point, by time; slots are not shipped.
    pub(crate) async fn document_totals(
        &self,
        info: &SeriesInfo,
        interval_ns: i64,
        start: i64,
        end: i64,
    ) -> Result<Vec<DocumentTotals>, EngineError> {
        let token = self.measurement_token(&info.key.measurement).await?;
        let docs = self
            .backend
            .read_buckets(
                BucketRange {
                    family: BucketFamily::raw(token, interval_ns)?,
                    series: info.id,
                    start,
                    end,
                },
                BucketRead::TotalsOnly,
            )
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|doc| {
                let t = doc.totals.filter(|t| t.count > 0)?;
                Some(DocumentTotals {
                    bucket_start: doc.bucket_start,
                    count: t.count,
                    sum: t.sum,
                    min: t.min,
                    max: t.max,
                })
            })
            .collect())
    }

    /// The spans of a bucket measurement's raw partitions that overlap `[start, end)`,
    /// clipped to it, latest first.
    pub(crate) async fn raw_partition_spans(
        &self,
        measurement: &str,
        interval_ns: i64,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, i64)>, EngineError> {
        let token = self.measurement_token(measurement).await?;
        let raw = BucketFamily::raw(token, interval_ns)?;
        let mut spans: Vec<(i64, i64)> = self
            .backend
            .list_partitions()
            .await?
            .into_iter()
            .filter(|p| p.family() == raw && p.start() < end && p.end() > start)
            .map(|p| (p.start().max(start), p.end().min(end)))
            .collect();
        spans.sort_unstable_by(|a, b| b.cmp(a));
        Ok(spans)
    }
}

pub(crate) fn corrupt(info: &SeriesInfo, what: &str) -> EngineError {
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
