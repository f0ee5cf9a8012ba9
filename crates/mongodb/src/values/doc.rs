//! A value document, written and read back.
//!
//! | field | meaning |
//! |---|---|
//! | `_id` | `{s: series, w: write number}`: deterministic, so a retried insert is a duplicate key |
//! | `s` | series id |
//! | `u` | version: `w` when inserted; a fold's rewrite takes a new write number |
//! | `lo`, `lv`, `lw` | first time, its value (the f64's bits as an int64) and write number |
//! | `hi`, `hv`, `hw` | last time, its value and write number (heads and neighbours read these, not `z`) |
//! | `n` | points |
//! | `z` | the points, one `tickertape_core::codec` block |
//! | `ws` | folded documents: each point's write number, a time column of the codec (absent: all `_id.w`) |
//! | `d` | series id, while the document waits for a fold (sparse index: the fold's work list) |
//! | `a` | inserted at (Unix ms), while fresh: for sealing after an idle time |
//! | `x` | superseded by a fold at (Unix ms): its points are in the fold's documents too; deleted after a grace |

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::codec::{
    decode_block, decode_time_column, encode_block, encode_time_column, FORMAT_VERSION,
};
use tickertape_core::Point;

use super::merge::Written;
use crate::error::corrupt;
use crate::layout::{binary, get_binary, get_i64, need_i64};

/// What a fold or a reader needs to know of a document without its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub series: i64,
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

/// A fresh document: `points` (sorted, non-empty) of one series in one partition, all
/// stored by write `w`.
pub(crate) fn fresh(series: i64, w: i64, points: &[Point], now_ms: i64) -> Document {
    let (first, last) = (points[0], points[points.len() - 1]);
    doc! {
        "_id": { "s": series, "w": w },
        "s": series,
        "u": w,
        "lo": first.time, "lv": bits(first.value), "lw": w,
        "hi": last.time, "hv": bits(last.value), "hw": w,
        "n": points.len() as i64,
        "z": binary(encode_block(points)),
        "d": series,
        "a": now_ms,
    }
}

/// A fold's document: `points` (merged: sorted, one per time, non-empty) under the `_id`
/// of write `w`, version `u`.
pub(crate) fn folded(series: i64, w: i64, u: i64, points: &[Written]) -> Document {
    let (first, last) = (points[0], points[points.len() - 1]);
    let values: Vec<Point> = points.iter().map(|&(p, _)| p).collect();
    let writes: Vec<i64> = points.iter().map(|&(_, w)| w).collect();
    let mut ws = vec![FORMAT_VERSION];
    ws = encode_time_column(ws, &writes);
    doc! {
        "_id": { "s": series, "w": w },
        "s": series,
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
        w: need_i64(id, "w")?,
        u: need_i64(d, "u")?,
        lo: need_i64(d, "lo")?,
        hi: need_i64(d, "hi")?,
        n: need_i64(d, "n")?,
        pending: d.contains_key("d"),
        at: get_i64(d, "a")?,
        superseded: get_i64(d, "x")?,
    })
}

/// The points of a document, each with its write number.
pub(crate) fn parse_points(d: &Document) -> Result<Vec<Written>> {
    let meta = parse_meta(d)?;
    let what = || format!("value document {}/{}", meta.series, meta.w);
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
        let d = fresh(7, 42, &points, 1_000);
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
        let d = folded(7, 40, 45, &merged);
        let meta = parse_meta(&d).unwrap();
        assert_eq!((meta.w, meta.u, meta.lo, meta.hi), (40, 45, 5, 20));
        assert!(!meta.pending);
        assert_eq!(parse_points(&d).unwrap(), merged);
    }
}
