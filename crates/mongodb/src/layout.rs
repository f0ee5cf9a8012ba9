//! Collection names, stored short field names and the (de)serialisation of the documents.
//! `docs/format/mongodb.md` is the reference for every shape here.
//!
//! | collection | field | meaning |
//! |---|---|---|
//! | `series` | `_id` | series id (int64, from the `counters` document `series`) |
//! | | `ck` | canonical key string, unique index: one id per key |
//! | | `k` | the key: `{m: measurement, t: [[tag, value], …] sorted, f: field, p: pairs}` |
//! | | `k.p` | the tags again as `"tag\0value"` strings, for the multikey index (`tag_pair`) |
//! | | `sg` | generation of the active segment |
//! | | `sp` | reserve: slots left in the active segment (below 0: full) |
//! | | `ld`, `lv` | reserve: time and value of the last reserved point (absent: none) |
//! | | `n` | reserve: points reserved so far |
//! | `segments` | `_id` | `{s: series, g: generation}`; generations count 0, 1, 2 … per series |
//! | | `s` | series id |
//! | | `pe`, `ns` | prevEnd, nextStart (DESIGN §3) |
//! | | `t`, `v` | times (int64) and values (double) of an open segment; `null` = hole |
//! | | `c` | reserve: slots filled; conditional: points pushed |
//! | | `z` | sealed block (BinData, `tickertape_core::codec`); `t`/`v` are then gone |
//! | | `l`, `lv`, `b` | conditional: last time, last value, points in earlier segments |
//! | | `x` | conditional: closed (`true`): takes no more points, the next segment follows |
//! | | `r` | conditional: carry-over `{t, v}` of a closed segment, the start of the next one |
//! | `counters` | `_id`, `n` | `"series"`: the last series id issued |
//! | `meta` | `_id`, `v`, `p`, `cap` | `"layout"`: layout version, protocol, capacity |
//! | `names` | `_id` | `{ns: namespace code, lv: least value}` |
//! | | `ns`, `lv` | namespace code (`m`, `tk`, `tv`, `f`), least value: token of `l[0]` |
//! | | `l` | the names, at most `NAMES_PER_DOCUMENT`; token = `lv` + index |
//!
//! The bucket partition collections (`bk.…`) have their table in `bucket_layout`.

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{doc, Binary, Bson, Document};
use tickertape_backend::{BackendError, Result};
use tickertape_core::segment::{Segment, SegmentBody};
use tickertape_core::{Point, SeriesId, SeriesKey};

use crate::error::corrupt;

pub(crate) const SERIES: &str = "series";
pub(crate) const SEGMENTS: &str = "segments";
pub(crate) const COUNTERS: &str = "counters";
pub(crate) const META: &str = "meta";
/// The name store (seed 002); see `names`.
pub(crate) const NAMES: &str = "names";
/// The pickers' tag keys and values; see `tag_values`.
pub(crate) const TAG_VALUES: &str = "tag_values";

/// Version of the document shapes below, stored in `meta`.
pub(crate) const LAYOUT_VERSION: i64 = 1;

/// A series id as stored: BSON has no unsigned integers.
pub(crate) fn sid(series: SeriesId) -> Result<i64> {
    i64::try_from(series.0)
        .map_err(|_| BackendError::Invalid(format!("series id {series} is out of range")))
}

/// The `_id` of generation `gen` of `series`. Field order matters: `_id` equality compares
/// the whole embedded document.
pub(crate) fn segment_id(series: i64, gen: i64) -> Document {
    doc! { "s": series, "g": gen }
}

/// The canonical string a series key is unique on. JSON of `[measurement, tags, field]`
/// is injective (every string is quoted and escaped), so two keys share it only if equal.
pub(crate) fn canonical_key(key: &SeriesKey) -> String {
    // Serialising strings and vectors of string pairs cannot fail.
    serde_json::to_string(&(&key.measurement, &key.tags, &key.field)).unwrap_or_default()
}

/// `k` of a series document: user strings only as values, never as field names.
pub(crate) fn key_doc(key: &SeriesKey) -> Document {
    let tags: Vec<Bson> = key
        .tags
        .iter()
        .map(|(k, v)| Bson::Array(vec![Bson::String(k.clone()), Bson::String(v.clone())]))
        .collect();
    doc! { "m": &key.measurement, "t": tags, "f": &key.field, "p": tag_pairs(&key.tags) }
}

/// `k.p`: one string per tag, what the index `measurement_tags_field` keys a series by.
pub(crate) fn tag_pairs(tags: &[(String, String)]) -> Vec<Bson> {
    tags.iter()
        .map(|(k, v)| Bson::String(tag_pair(k, v)))
        .collect()
}

/// A tag as one indexable string: `key`, NUL, `value`. NUL sorts before every other
/// character, so the pairs of one tag key are the contiguous range `[key\0, key\x01)`, and
/// those whose value starts with `p` are `[key\0p, key\0p′)`. A key holding NUL could make
/// two pairs' strings equal; that only ever adds a candidate, which `SeriesSelector::matches`
/// then drops, never loses one.
pub(crate) fn tag_pair(key: &str, value: &str) -> String {
    format!("{key}\0{value}")
}

pub(crate) fn parse_key(doc: &Document) -> Result<SeriesKey> {
    let k = doc
        .get_document("k")
        .map_err(|_| corrupt("series document without key `k`"))?;
    let text = |field: &str| {
        k.get_str(field)
            .map(str::to_owned)
            .map_err(|_| corrupt(format!("series key without `{field}`")))
    };
    let mut tags = Vec::new();
    for tag in k
        .get_array("t")
        .map_err(|_| corrupt("series key without tags `t`"))?
    {
        match tag {
            Bson::Array(pair) => match pair.as_slice() {
                [Bson::String(k), Bson::String(v)] => tags.push((k.clone(), v.clone())),
                _ => return Err(corrupt("series tag is not a [key, value] pair")),
            },
            _ => return Err(corrupt("series tag is not a [key, value] pair")),
        }
    }
    Ok(SeriesKey::new(text("m")?, tags, text("f")?))
}

/// An integer field, whichever integer width the server returned it in.
pub(crate) fn get_i64(doc: &Document, field: &str) -> Result<Option<i64>> {
    match doc.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Int64(v)) => Ok(Some(*v)),
        Some(Bson::Int32(v)) => Ok(Some(i64::from(*v))),
        Some(other) => Err(corrupt(format!(
            "field `{field}` is {other:?}, not an integer"
        ))),
    }
}

pub(crate) fn need_i64(doc: &Document, field: &str) -> Result<i64> {
    get_i64(doc, field)?.ok_or_else(|| corrupt(format!("document without `{field}`")))
}

pub(crate) fn get_f64(doc: &Document, field: &str) -> Result<Option<f64>> {
    match doc.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Double(v)) => Ok(Some(*v)),
        Some(other) => Err(corrupt(format!(
            "field `{field}` is {other:?}, not a double"
        ))),
    }
}

/// A new open segment. `preallocate` fills `t`/`v` with `capacity` nulls (reserve protocol:
/// slots are `$set` in place); otherwise they start empty (conditional: `$push`).
pub(crate) fn new_segment(
    series: i64,
    gen: i64,
    prev_end: i64,
    capacity: usize,
    preallocate: bool,
) -> Document {
    let slots = if preallocate {
        vec![Bson::Null; capacity]
    } else {
        Vec::new()
    };
    doc! {
        "_id": segment_id(series, gen),
        "s": series,
        "pe": prev_end,
        "ns": tickertape_core::segment::NO_NEXT,
        "t": slots.clone(),
        "v": slots,
        "c": 0_i64,
    }
}

pub(crate) fn block(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

/// A segment document as read back.
#[derive(Clone, Debug)]
pub(crate) struct StoredSegment {
    pub gen: i64,
    /// Slots filled (reserve) or points pushed (conditional).
    pub count: i64,
    /// Conditional protocol: closed to appends (`x`).
    pub closed: bool,
    pub segment: Segment,
}

impl StoredSegment {
    pub fn sealed(&self) -> bool {
        matches!(self.segment.body, SegmentBody::Sealed(_))
    }

    /// The segment's points, holes skipped.
    pub fn points(&self) -> Result<Vec<Point>> {
        self.segment
            .points()
            .map_err(|e| corrupt(format!("segment {}/{}: {e}", self.segment.series, self.gen)))
    }
}

pub(crate) fn parse_segment(doc: &Document) -> Result<StoredSegment> {
    let id = doc
        .get_document("_id")
        .map_err(|_| corrupt("segment `_id` is not {s, g}"))?;
    let gen = need_i64(id, "g")?;
    let series = need_i64(doc, "s")?;
    let series = SeriesId(
        u64::try_from(series).map_err(|_| corrupt(format!("negative series id {series}")))?,
    );
    let body = match doc.get("z") {
        Some(Bson::Binary(b)) => SegmentBody::Sealed(b.bytes.clone()),
        Some(other) => return Err(corrupt(format!("segment block `z` is {other:?}"))),
        None => {
            let times = doc
                .get_array("t")
                .map_err(|_| corrupt("open segment without `t`"))?;
            let values = doc
                .get_array("v")
                .map_err(|_| corrupt("open segment without `v`"))?;
            if times.len() != values.len() {
                return Err(corrupt("segment `t` and `v` differ in length"));
            }
            let slots = times
                .iter()
                .zip(values)
                .map(|(t, v)| match (t, v) {
                    // A slot is a point only when both halves were written.
                    (Bson::Int64(t), Bson::Double(v)) => Ok(Some(Point::new(*t, *v))),
                    (Bson::Null, _) | (_, Bson::Null) => Ok(None),
                    _ => Err(corrupt(format!("segment slot holds {t:?}, {v:?}"))),
                })
                .collect::<Result<Vec<_>>>()?;
            SegmentBody::Open(slots)
        }
    };
    Ok(StoredSegment {
        gen,
        count: get_i64(doc, "c")?.unwrap_or(0),
        closed: matches!(doc.get("x"), Some(Bson::Boolean(true))),
        segment: Segment {
            series,
            prev_end: need_i64(doc, "pe")?,
            next_start: need_i64(doc, "ns")?,
            body,
        },
    })
}
