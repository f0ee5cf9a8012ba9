//! Collection names, stored short field names and the (de)serialisation of the documents.
//! `docs/format/mongodb.md` is the reference for every shape here.
//!
//! | collection | field | meaning |
//! |---|---|---|
//! | `series` | `_id` | series id (int64, from the `counters` document `series`) |
//! | | `ck` | canonical key string, unique index: one id per key |
//! | | `k` | the key: `{m: measurement, t: [[tag, value], …] sorted, f: field, p: pairs}` |
//! | | `k.p` | the tags again as `"tag\0value"` strings, for the multikey index (`tag_pair`) |
//! | `counters` | `_id`, `n` | `"series"`: the last series id issued; `"writes"`: the last write sequence number |
//! | `meta` | `_id`, `v`, `pw`, `cs`, `rs`, `bp` | `"layout"`: layout version 3, slice width, slices per value and per rollup collection, block points |
//! | `names` | `_id` | `{ns: namespace code, lv: least value}` |
//! | | `ns`, `lv` | namespace code (`m`, `tk`, `tv`, `f`), least value: token of `l[0]` |
//! | | `l` | the names, at most `NAMES_PER_DOCUMENT`; token = `lv` + index |
//!
//! The value collections (`sv.…`) and their rollups (`sr.…`) have their table in
//! `values`, their names in `naming`, the bucket partition collections (`bk.…`) theirs
//! in `bucket_layout`.

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{doc, Binary, Bson, Document};
use tickertape_backend::{BackendError, Result};
use tickertape_core::{SeriesId, SeriesKey};

use crate::error::corrupt;

pub(crate) const SERIES: &str = "series";
pub(crate) const COUNTERS: &str = "counters";
pub(crate) const META: &str = "meta";
/// The name store (docs/design.md#the-name-store); see `names`.
pub(crate) const NAMES: &str = "names";
/// The pickers' tag keys and values; see `tag_values`.
pub(crate) const TAG_VALUES: &str = "tag_values";

/// Version of the document shapes, stored in `meta`. Version 1 kept value segments in one
/// chain per series (the `segments` collection, two append protocols); version 2 in one
/// collection per measurement and day; version 3 in collections by time alone, shared by
/// every measurement (`naming`). Older databases are refused with the way to migrate.
pub(crate) const LAYOUT_VERSION: i64 = 3;

/// A series id as stored: BSON has no unsigned integers.
pub(crate) fn sid(series: SeriesId) -> Result<i64> {
    i64::try_from(series.0)
        .map_err(|_| BackendError::Invalid(format!("series id {series} is out of range")))
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

/// Bytes as a BSON binary of the generic subtype (`BinData(0, …)`).
pub(crate) fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

/// The bytes of a binary field.
pub(crate) fn get_binary<'a>(doc: &'a Document, field: &str) -> Result<&'a [u8]> {
    match doc.get(field) {
        Some(Bson::Binary(b)) => Ok(&b.bytes),
        other => Err(corrupt(format!("field `{field}` is {other:?}, not binary"))),
    }
}
