//! Reads: the segments around a range, the series heads, and space used.

use std::collections::HashMap;

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{Result, SeriesHead, StorageStats};
use tickertape_core::segment::Segment;
use tickertape_core::{Point, SeriesId};

use crate::error::map_err;
use crate::find::find_all;
use crate::layout::{self, segment_id, sid, SEGMENTS, SERIES};
use crate::{MongoBackend, SegmentProtocol};

impl MongoBackend {
    /// One query: the segments that may hold points of `[start, end)` or its neighbours
    /// (`pe < end && ns >= start`, [`Segment::may_overlap`]), served by the index
    /// `{s: 1, ns: 1, pe: 1}`. Seed 000 prints the query with `$lte`/`$gte` on the wrong
    /// bounds (`prevEnd <= tmin && nextStart >= tmax`), which only finds segments that
    /// span the whole range.
    pub(crate) async fn read(
        &self,
        series: SeriesId,
        start: i64,
        end: i64,
    ) -> Result<Vec<Segment>> {
        if start > end {
            return Ok(Vec::new());
        }
        let docs = find_all(
            self.read_db
                .collection::<Document>(SEGMENTS)
                .find(doc! {
                    "s": sid(series)?,
                    "pe": { "$lt": end },
                    "ns": { "$gte": start },
                })
                .sort(doc! { "ns": 1, "pe": 1 }),
            "read segments",
        )
        .await?;
        let mut segments = docs
            .iter()
            .map(layout::parse_segment)
            .collect::<Result<Vec<_>>>()?;
        // The chain order is the generation order. `pe` follows it once tidied; a writer
        // may have tightened one segment's `pe` before the next one's, so each reported
        // `pe` is raised to its predecessor's: still at most the last point before the
        // segment (the predecessor's is), and sorted as `read_segments` promises.
        segments.sort_by_key(|s| s.gen);
        let mut floor = i64::MIN;
        Ok(segments
            .into_iter()
            .map(|s| {
                let mut segment = s.segment;
                segment.prev_end = segment.prev_end.max(floor);
                floor = segment.prev_end;
                segment
            })
            .collect())
    }

    pub(crate) async fn read_heads(&self, series: &[SeriesId]) -> Result<Vec<Option<SeriesHead>>> {
        let ids: Vec<i64> = series.iter().map(|&s| sid(s)).collect::<Result<_>>()?;
        let heads = self
            .read_by_id(SERIES, ids.iter().map(|&s| Bson::Int64(s)).collect())
            .await?;
        let mut found: HashMap<i64, SeriesHead> = HashMap::new();
        match self.protocol {
            // The head holds the last reserved point and the count of reserved points.
            SegmentProtocol::Reserve => {
                for head in &heads {
                    let (Some(time), Some(value)) =
                        (layout::get_i64(head, "ld")?, layout::get_f64(head, "lv")?)
                    else {
                        continue;
                    };
                    let count = layout::get_i64(head, "n")?.unwrap_or(0).max(0) as u64;
                    found.insert(
                        layout::need_i64(head, "_id")?,
                        SeriesHead {
                            last: Point::new(time, value),
                            count,
                        },
                    );
                }
            }
            // The active segment holds the last point and the count before it.
            SegmentProtocol::Conditional => {
                let mut active = Vec::new();
                for head in &heads {
                    let s = layout::need_i64(head, "_id")?;
                    active.push(Bson::Document(segment_id(s, layout::need_i64(head, "sg")?)));
                }
                for segment in self.read_by_id(SEGMENTS, active).await? {
                    let (Some(time), Some(value)) = (
                        layout::get_i64(&segment, "l")?,
                        layout::get_f64(&segment, "lv")?,
                    ) else {
                        continue;
                    };
                    let count = layout::get_i64(&segment, "b")?.unwrap_or(0)
                        + layout::get_i64(&segment, "c")?.unwrap_or(0);
                    found.insert(
                        layout::need_i64(&segment, "s")?,
                        SeriesHead {
                            last: Point::new(time, value),
                            count: count.max(0) as u64,
                        },
                    );
                }
            }
        }
        Ok(ids.iter().map(|s| found.get(s).copied()).collect())
    }

    async fn read_by_id(&self, collection: &str, ids: Vec<Bson>) -> Result<Vec<Document>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(1000) {
            let docs = find_all(
                self.read_db
                    .collection::<Document>(collection)
                    .find(doc! { "_id": { "$in": chunk.to_vec() } })
                    .projection(doc! { "t": 0, "v": 0, "z": 0, "k": 0 }),
                "read heads",
            )
            .await?;
            out.extend(docs);
        }
        Ok(out)
    }

    /// Data plus index bytes from `dbStats`, and document counts.
    pub(crate) async fn read_stats(&self) -> Result<StorageStats> {
        let reply = self
            .db
            .run_command(doc! { "dbStats": 1, "scale": 1 })
            .await
            .map_err(|e| map_err("dbStats", e))?;
        let number = |field: &str| match reply.get(field) {
            Some(Bson::Int32(v)) => (*v).max(0) as u64,
            Some(Bson::Int64(v)) => (*v).max(0) as u64,
            Some(Bson::Double(v)) if *v > 0.0 => *v as u64,
            _ => 0,
        };
        let count = |collection: &'static str| async move {
            self.collection(collection)
                .count_documents(doc! {})
                .await
                .map_err(|e| map_err("count documents", e))
        };
        Ok(StorageStats {
            bytes: number("dataSize") + number("indexSize"),
            segments: count(SEGMENTS).await?,
            series: count(SERIES).await?,
            memory_points: 0,
            index_memory_bytes: 0,
        })
    }
}
