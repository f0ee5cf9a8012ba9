//! A value document, written and read back.
//!
//! | field | meaning |
//! |---|---|
//! | `_id` | `{s: series, w: write number}`: deterministic, so a retried insert is a duplicate key |
//! | `s` | series id |
//! | `m` | measurement id (`measurements`): what per-measurement retention deletes by |
//! | `u` | version: `w` when inserted; a fold's rewrite takes a new write number (absent on fresh documents: `w`) |
//! | `lo`, `lv`, `lw` | first time, its value (the f64's bits as an int64) and write number (`lv`, `lw` absent on a fresh document of one point: `hv`, `hw`) |
//! | `hi`, `hv`, `hw` | last time, its value and write number (heads and neighbours read these, not `z`) |
//! | `n` | points (absent on a fresh document of one point) |
//! | `z` | the points, one `tickertape_core::codec` block (absent on a fresh document of one point: it is `hi`, `hv`, `hw`) |
//! | `ws` | folded documents: each point's write number, a time column of the codec (absent: all `_id.w`) |
//! | `d` | series id, while the document waits for a fold (sparse index: the fold's work list) |
//! | `a` | inserted at (Unix ms), while fresh: for sealing after an idle time |
//! | `x` | superseded by a fold at (Unix ms): its points are in the fold's documents too; deleted after a grace |
//! | `k` | `1`: a delete mark, no points (`n` 0, no `z`): the series' points in `[lo, hi]` whose write number is below `_id.w` are deleted ([`DeleteMark`]) |

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::codec::{
    decode_block, decode_time_column, encode_block, encode_time_column, FORMAT_VERSION,
};
use tickertape_core::Point;

use super::merge::{merge, Written};
use crate::error::corrupt;
use crate::layout::{binary, get_binary, get_i64, need_i64};

/// What a fold or a reader needs to know of a document without its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub series: i64,
    /// Measurement id.
    pub m: i64,
    pub w: i64,
    pub u: i64,
    pub lo: i64,
    pub hi: i64,
    pub n: i64,
    /// Waiting for a fold (`d`).
    pub pending: bool,
    /// Inserted at, Unix ms (fresh documents).
    pub at: Option<i64>,
    /// Superseded at, Unix ms.
    pub superseded: Option<i64>,
    /// A delete mark (`k`), not points.
    pub mark: bool,
}

impl Meta {
    /// The document's identity and version: what a rollup records it covered.
    pub fn version(&self) -> (i64, i64) {
        (self.w, self.u)
    }
}

/// The projection that reads [`Meta`] without the points.
pub(crate) fn meta_projection() -> Document {
    doc! { "z": 0, "ws": 0 }
}

/// A fresh document: `points` (sorted, non-empty) of one series in one slice, all
/// stored by write `w`. Only what a reader and a fold need: the version `u` and the first
/// and last points' write numbers `lw`, `hw` are all `_id.w` (absent), and a document of
/// one point is that point alone (`hi`, `hv`; no `z`, `n`, `lv`): about 125 bytes
/// instead of 215, where the write path sends one such document per series and body.
pub(crate) fn fresh(series: i64, m: i64, w: i64, points: &[Point], now_ms: i64) -> Document {
    let (first, last) = (points[0], points[points.len() - 1]);
    let mut d = doc! {
        "_id": { "s": series, "w": w },
        "s": series,
        "m": m,
        "lo": first.time,
        "hi": last.time, "hv": bits(last.value),
    };
    if points.len() > 1 {
        d.insert("lv", bits(first.value));
        d.insert("n", points.len() as i64);
        d.insert("z", binary(encode_block(points)));
    }
    d.insert("d", series);
    d.insert("a", now_ms);
    d
}

/// A fold's document: `points` (merged: sorted, one per time, non-empty) under the `_id`
/// of write `w`, version `u`.
pub(crate) fn folded(series: i64, m: i64, w: i64, u: i64, points: &[Written]) -> Document {
    let (first, last) = (points[0], points[points.len() - 1]);
    let values: Vec<Point> = points.iter().map(|&(p, _)| p).collect();
    let writes: Vec<i64> = points.iter().map(|&(_, w)| w).collect();
    let mut ws = vec![FORMAT_VERSION];
    ws = encode_time_column(ws, &writes);
    doc! {
        "_id": { "s": series, "w": w },
        "s": series,
        "m": m,
        "u": u,
        "lo": first.0.time, "lv": bits(first.0.value), "lw": first.1,
        "hi": last.0.time, "hv": bits(last.0.value), "hw": last.1,
        "n": points.len() as i64,
        "z": binary(encode_block(&values)),
        "ws": binary(ws),
    }
}

/// A value as stored in `lv`/`hv`: its bits, so that every NaN (stale markers) survives
/// servers that would normalise a double.
fn bits(value: f64) -> i64 {
    value.to_bits() as i64
}

/// The write number of a document's first (`lw`) or last (`hw`) point: absent on a fresh
/// document, whose points all carry its `_id.w`.
pub(crate) fn written_by(d: &Document, field: &str) -> Result<i64> {
    match get_i64(d, field)? {
        Some(w) => Ok(w),
        None => d
            .get_document("_id")
            .map_err(|_| corrupt("value document `_id` is not {s, w}"))
            .and_then(|id| need_i64(id, "w")),
    }
}

/// A value stored by [`bits`].
pub(crate) fn need_value(d: &Document, field: &str) -> Result<f64> {
    Ok(f64::from_bits(need_i64(d, field)? as u64))
}

pub(crate) fn id(series: i64, w: i64) -> Document {
    doc! { "s": series, "w": w }
}

pub(crate) fn parse_meta(d: &Document) -> Result<Meta> {
    let id = d
        .get_document("_id")
        .map_err(|_| corrupt("value document `_id` is not {s, w}"))?;
    Ok(Meta {
        series: need_i64(id, "s")?,
        m: need_i64(d, "m")?,
        w: need_i64(id, "w")?,
        // A fresh document's version is its write number; one without `z` is one point.
        u: get_i64(d, "u")?.unwrap_or(need_i64(id, "w")?),
        lo: need_i64(d, "lo")?,
        hi: need_i64(d, "hi")?,
        n: match (get_i64(d, "n")?, d.contains_key("z") || d.contains_key("k")) {
            (Some(n), _) => n,
            (None, false) => 1,
            (None, true) => return Err(corrupt("value document without `n`")),
        },
        pending: d.contains_key("d"),
        at: get_i64(d, "a")?,
        superseded: get_i64(d, "x")?,
        mark: d.contains_key("k"),
    })
}

/// A delete: the points of a series in `[lo, hi]` stored before write `w` are gone. Kept
/// in the slice as a document of its own (`k`), live for good, so that every merge
/// — a reader's, a fold's, a fold that read its inputs before the delete — applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeleteMark {
    pub w: i64,
    pub lo: i64,
    pub hi: i64,
}

impl DeleteMark {
    /// Whether it deletes `point`, stored by write `w`.
    pub fn deletes(&self, &(point, w): &Written) -> bool {
        w < self.w && self.lo <= point.time && point.time <= self.hi
    }
}

/// The document of a delete mark of `series` (see [`DeleteMark`]).
pub(crate) fn delete_mark(series: i64, m: i64, mark: DeleteMark) -> Document {
    doc! {
        "_id": { "s": series, "w": mark.w },
        "s": series,
        "m": m,
        "u": mark.w,
        "lo": mark.lo,
        "hi": mark.hi,
        "n": 0_i64,
        "k": 1_i64,
    }
}

/// The delete mark a document is, if it is one.
pub(crate) fn mark_of(meta: &Meta) -> Option<DeleteMark> {
    meta.mark.then_some(DeleteMark {
        w: meta.w,
        lo: meta.lo,
        hi: meta.hi,
    })
}

/// The points of `docs` (any of a series' documents, marks included) merged by the one
/// rule, without the points a mark among them deletes.
pub(crate) fn merge_documents(docs: &[Document]) -> Result<Vec<Written>> {
    let mut pieces = Vec::with_capacity(docs.len());
    let mut marks = Vec::new();
    for d in docs {
        let meta = parse_meta(d)?;
        match mark_of(&meta) {
            Some(mark) => marks.push(mark),
            None => pieces.push(parse_points(d)?),
        }
    }
    Ok(without_deleted(merge(pieces), &marks))
}

/// `merged` without the points one of `marks` deletes.
pub(crate) fn without_deleted(mut merged: Vec<Written>, marks: &[DeleteMark]) -> Vec<Written> {
    if !marks.is_empty() {
        merged.retain(|p| !marks.iter().any(|m| m.deletes(p)));
    }
    merged
}

/// The points of a document, each with its write number (none for a delete mark).
pub(crate) fn parse_points(d: &Document) -> Result<Vec<Written>> {
    let meta = parse_meta(d)?;
    if meta.mark {
        return Ok(Vec::new());
    }
    let what = || format!("value document {}/{}", meta.series, meta.w);
    if !d.contains_key("z") {
        // A fresh document of one point: `hi`, `hv` and its write number.
        let point = Point::new(meta.hi, need_value(d, "hv")?);
        return Ok(vec![(point, written_by(d, "hw")?)]);
    }
    let points =
        decode_block(get_binary(d, "z")?).map_err(|e| corrupt(format!("{}: {e}", what())))?;
    if points.len() as i64 != meta.n {
        return Err(corrupt(format!(
            "{}: {} points, `n` says {}",
            what(),
            points.len(),
            meta.n
        )));
    }
    let writes = match d.get("ws") {
        None | Some(Bson::Null) => vec![meta.w; points.len()],
        Some(_) => {
            let bytes = get_binary(d, "ws")?;
            let (&version, column) = bytes
                .split_first()
                .ok_or_else(|| corrupt(format!("{}: empty `ws`", what())))?;
            let (writes, used) = decode_time_column(column, version, points.len())
                .map_err(|e| corrupt(format!("{}: `ws`: {e}", what())))?;
            if used != column.len() {
                return Err(corrupt(format!("{}: bytes after `ws`", what())));
            }
            writes
        }
    };
    Ok(points.into_iter().zip(writes).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_and_folded_documents_read_back() {
        let points = [Point::new(10, 1.5), Point::new(20, -2.0)];
        let d = fresh(7, 3, 42, &points, 1_000);
        let meta = parse_meta(&d).unwrap();
        assert_eq!(
            (meta.series, meta.w, meta.u, meta.lo, meta.hi, meta.n),
            (7, 42, 42, 10, 20, 2)
        );
        assert!(meta.pending);
        assert_eq!(
            parse_points(&d).unwrap(),
            vec![(points[0], 42), (points[1], 42)]
        );

        let merged = vec![(Point::new(5, 0.5), 40), (Point::new(20, 3.0), 44)];
        let d = folded(7, 3, 40, 45, &merged);
        let meta = parse_meta(&d).unwrap();
        assert_eq!((meta.w, meta.u, meta.lo, meta.hi), (40, 45, 5, 20));
        assert!(!meta.pending);
        assert_eq!(parse_points(&d).unwrap(), merged);
    }

    #[test]
    fn a_delete_mark_deletes_older_writes_in_its_range_only() {
        let mark = DeleteMark {
            w: 50,
            lo: 10,
            hi: 20,
        };
        let d = delete_mark(7, 3, mark);
        let meta = parse_meta(&d).unwrap();
        assert_eq!(mark_of(&meta), Some(mark));
        assert!(parse_points(&d).unwrap().is_empty());
        let old = fresh(
            7,
            3,
            40,
            &[Point::new(5, 1.0), Point::new(10, 2.0), Point::new(20, 3.0)],
            0,
        );
        let late = fresh(7, 3, 60, &[Point::new(15, 4.0)], 0);
        let merged = merge_documents(&[old, d, late]).unwrap();
        assert_eq!(
            merged,
            vec![(Point::new(5, 1.0), 40), (Point::new(15, 4.0), 60)]
        );
    }
}
