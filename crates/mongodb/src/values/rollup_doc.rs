//! A rollup document: one series' slots at one resolution in one slice (in
//! `sr.<resolution>.<period start>`), and the value documents it was derived from.
//!
//! | field | meaning |
//! |---|---|
//! | `_id` | `{s: series id, p: slice start}` |
//! | `s` | series id again: the shard key, named by every read and write |
//! | `m` | measurement id: what rollup retention deletes by |
//! | `p` | slice start again, for retention's `{m, p}` index |
//! | `v` | `[[w, u], …]`: the value documents (id and version) the slots summarise, sorted |
//! | `h` | the last time summarised (what a later fold may extend from) |
//! | `b` | the slots, `tickertape_core::codec::encode_summaries` |
//!
//! A reader uses the slots as they are when `v` is exactly the set of the series' live
//! value documents in the slice (or the slice holds none: retention deleted its points);
//! extended with the points of the live documents `v` does not name when every document
//! of `v` is still live and those others are points all later than `h` (the rule a fold
//! extends by, so the stored document may lag behind fresh writes); otherwise it
//! summarises the points itself. So a crash at any step of a fold, or a write the fold
//! has not seen, can make answers slower but never different.

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::codec::{decode_summaries, encode_summaries};
use tickertape_core::model::is_stale_marker;
use tickertape_core::query::Summary;
use tickertape_core::rollup::Resolution;
use tickertape_core::time::window_start;
use tickertape_core::Point;

use crate::error::corrupt;
use crate::layout::{binary, get_binary, need_i64};

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RollupDoc {
    pub series: i64,
    pub m: i64,
    /// The slice summarised (its start).
    pub slice: i64,
    /// Sorted `(w, u)` of the value documents summarised.
    pub covers: Vec<(i64, i64)>,
    pub high: i64,
    pub slots: Vec<(i64, Summary)>,
}

impl RollupDoc {
    pub fn to_document(&self) -> Document {
        let covers: Vec<Bson> = self
            .covers
            .iter()
            .map(|&(w, u)| Bson::Array(vec![Bson::Int64(w), Bson::Int64(u)]))
            .collect();
        doc! {
            "_id": rollup_id(self.series, self.slice),
            "s": self.series,
            "m": self.m,
            "p": self.slice,
            "v": covers,
            "h": self.high,
            "b": binary(encode_summaries(&self.slots)),
        }
    }

    pub fn parse(d: &Document) -> Result<Self> {
        let series = need_i64(d, "s")?;
        let bad = || corrupt(format!("rollup document of series {series}: bad `v`"));
        let mut covers = Vec::new();
        for pair in d.get_array("v").map_err(|_| bad())? {
            let Bson::Array(pair) = pair else {
                return Err(bad());
            };
            match pair.as_slice() {
                [Bson::Int64(w), Bson::Int64(u)] => covers.push((*w, *u)),
                _ => return Err(bad()),
            }
        }
        let slots = decode_summaries(get_binary(d, "b")?)
            .map_err(|e| corrupt(format!("rollup document of series {series}: {e}")))?;
        Ok(Self {
            series,
            m: need_i64(d, "m")?,
            slice: need_i64(d, "p")?,
            covers,
            high: need_i64(d, "h")?,
            slots,
        })
    }
}

/// The `_id` of the rollup document of `series` in the slice starting at `slice`.
pub(crate) fn rollup_id(series: i64, slice: i64) -> Document {
    doc! { "s": series, "p": slice }
}

/// Extends `slots` (a series' slots at `resolution`, by time) with `points`, sorted and all
/// later than every point already summarised: each point merged into its slot in time
/// order, exactly as `summarize_slots` does over all of them (bit for bit: the same
/// additions in the same order). Stale markers are no values.
pub(crate) fn extend(slots: &mut Vec<(i64, Summary)>, points: &[Point], resolution: Resolution) {
    for &p in points.iter().filter(|p| !is_stale_marker(p.value)) {
        let slot = window_start(p.time, resolution.nanos());
        match slots.last_mut() {
            Some((t, s)) if *t == slot => s.merge(&Summary::of(p)),
            _ => slots.push((slot, Summary::of(p))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tickertape_core::rollup::summarize_slots;

    proptest! {
        /// Extending in any number of steps equals summarising everything at once.
        #[test]
        fn extending_equals_summarising(
            values in prop::collection::vec(-1e6f64..1e6, 1..200),
            cuts in prop::collection::vec(0usize..200, 0..5),
        ) {
            let points: Vec<Point> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| Point::new(i as i64 * 7 - 300, v))
                .collect();
            let resolution = Resolution::new(60).unwrap();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(points.len())).collect();
            cuts.push(0);
            cuts.push(points.len());
            cuts.sort_unstable();
            let mut slots = Vec::new();
            for pair in cuts.windows(2) {
                extend(&mut slots, &points[pair[0]..pair[1]], resolution);
            }
            let want = summarize_slots(&points, -1_000, 10_000, resolution);
            prop_assert_eq!(format!("{slots:?}"), format!("{want:?}"));
        }
    }

    #[test]
    fn documents_read_back() {
        let slots = vec![(0, Summary::of(Point::new(3, 1.5)))];
        let d = RollupDoc {
            series: 9,
            m: 2,
            slice: 0,
            covers: vec![(1, 1), (4, 7)],
            high: 3,
            slots,
        };
        assert_eq!(RollupDoc::parse(&d.to_document()).unwrap(), d);
    }
}
