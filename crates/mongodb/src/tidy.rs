//! After a segment fills up: seal it and tighten the `pe`/`ns` bounds around it.
//!
//! Correct reads need only two bounds per segment `X` (see `Segment::may_overlap`):
//! - `X.pe <= ` the last stored point before `X` (or `i64::MIN` if none), and
//! - `X.ns >= ` the first stored point after `X` (or `i64::MAX` if none).
//!
//! Writers create segments with safe values (`pe` copied from the previous segment, `ns` =
//! `i64::MAX`); tidying replaces them with the exact ones once the points around them are
//! stored: `$max` of `pe` with the last stored point before the segment (within the window
//! looked at), `$min` of `ns` with the first point of the next one. Both only move towards the exact value and stay safe
//! while more points land (a hole filled later lies on the far side of the bound), so
//! tidying may run any number of times, concurrently, in any order.
//!
//! Sealing replaces `t`/`v` by the codec block in `z`, in one update filtered on the fill
//! count `c` read with the points and on `z` still absent: a fill landing in between makes
//! the seal miss (the next tidy retries), a seal landing first makes a late fill miss (that
//! writer reports an error, nothing it acknowledged is lost). A segment is sealed when all
//! its slots are filled or it is closed (conditional protocol), or — when it still has holes of a writer that stopped — once it is
//! three generations behind the newest one.

use std::collections::HashMap;

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::codec;

use crate::bulk::{self, Update};
use crate::find::find_all;
use crate::layout::{self, block, segment_id, StoredSegment, SEGMENTS};
use crate::MongoBackend;

/// How many generations back from the newest one a tidy looks, and the age at which a
/// segment with holes is sealed anyway.
const WINDOW: i64 = 3;

impl MongoBackend {
    /// [`Self::tidy`], logging instead of failing: the points are stored already, and an
    /// untidy segment is only slower to read.
    pub(crate) async fn tidy_quietly(&self, targets: &[(i64, i64)]) {
        if let Err(e) = self.tidy(targets).await {
            tracing::warn!(error = %e, "could not seal full segments; the next rollover retries");
        }
    }

    /// Tidies generations `newest - WINDOW ..= newest` of each `(series, newest)`.
    pub(crate) async fn tidy(&self, targets: &[(i64, i64)]) -> Result<()> {
        let mut ids = Vec::new();
        for &(series, newest) in targets {
            for gen in (newest - WINDOW).max(0)..=newest {
                ids.push(Bson::Document(segment_id(series, gen)));
            }
        }
        let docs = find_all(
            self.collection(SEGMENTS)
                .find(doc! { "_id": { "$in": ids } }),
            "read segments to seal",
        )
        .await?;
        let mut stored: HashMap<(i64, i64), StoredSegment> = HashMap::new();
        for d in &docs {
            let s = layout::parse_segment(d)?;
            stored.insert((s.segment.series.0 as i64, s.gen), s);
        }

        let mut statements = Vec::new();
        for &(series, newest) in targets {
            // The largest stored time (or `pe`) seen so far along the window: every later
            // segment's `pe` may be raised to it, which keeps `pe` non-decreasing.
            let mut floor = i64::MIN;
            for gen in (newest - WINDOW).max(0)..newest {
                let Some(this) = stored.get(&(series, gen)) else {
                    continue;
                };
                let points = this.points()?;
                floor = floor.max(this.segment.prev_end);
                if let Some(last) = points.last() {
                    floor = floor.max(last.time);
                }
                if let Some(next) = stored.get(&(series, gen + 1)) {
                    let next_points = next.points()?;
                    if let Some(first) = next_points.first() {
                        if this.segment.next_start > first.time {
                            statements.push(plain(
                                segment_id(series, gen),
                                doc! { "$min": { "ns": first.time } },
                            ));
                        }
                    }
                    if next.segment.prev_end < floor {
                        statements.push(plain(
                            segment_id(series, gen + 1),
                            doc! { "$max": { "pe": floor } },
                        ));
                    }
                }
                let complete = this.count >= self.capacity || this.closed;
                if !this.sealed() && (complete || gen <= newest - WINDOW) {
                    statements.push(Update {
                        q: doc! {
                            "_id": segment_id(series, gen),
                            "c": this.count,
                            "z": { "$exists": false },
                        },
                        u: doc! {
                            "$set": { "z": block(codec::encode_block(&points)) },
                            "$unset": { "t": "", "v": "", "r": "" },
                        },
                        conditional: false,
                    });
                }
            }
        }
        if !statements.is_empty() {
            bulk::update(&self.db, &self.write_concern, SEGMENTS, statements).await?;
        }
        Ok(())
    }
}

fn plain(id: Document, u: Document) -> Update {
    Update {
        q: doc! { "_id": id },
        u,
        conditional: false,
    }
}
