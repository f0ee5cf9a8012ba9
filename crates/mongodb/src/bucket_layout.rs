//! Time buckets on MongoDB (docs/design.md#bucket-documents-and-in-place-updates): partition collection names, document
//! `_id`s, slot paths, shell documents, and the parsing of stored buckets.
//! `docs/format/mongodb.md`, "Time buckets", is the reference for every shape here.
//!
//! | where | field | meaning |
//! |---|---|---|
//! | collection | `bk.<m>.<raw\|roll>.<slot ns>.<start ns>` | one partition of a family: measurement token `m`, slot width, partition start |
//! | both | `_id` | `{s: series, b: bucket start ns}` (field order fixed: `_id` ranges compare field by field) |
//! | both | `s` | the series id again: the shard key (`{s: "hashed"}`), named by every read and write filter |
//! | raw | `v` | `{"<minute>": {"<second>": value \| null}}`: slot `i` is `v.<i / 60>.<i % 60>` |
//! | raw | `n`, `sum` | values (or increments) written, their sum in write order |
//! | raw | `mn`, `mx` | smallest and largest value written (`+inf`/`-inf` in a shell) |
//! | rollup | `r` | `{"<minute>": {"<second>": summary \| null}}`, same slot paths as `v` |
//! | rollup slot | `c`, `s` | count, sum (continued one value at a time) |
//! | rollup slot | `mn`, `mx` | min, max |
//! | rollup slot | `ft`, `fv`, `lt`, `lv` | first point's time and value, last point's |

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{
    BackendError, BucketFamily, BucketTotals, Partition, Result, SlotKind, SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::BucketGeometry;
use tickertape_core::{Point, SeriesId};

use crate::error::corrupt;
use crate::layout::{get_f64, get_i64, need_i64};

/// Prefix of every bucket partition collection; nothing else starts with it.
pub(crate) const BUCKET_PREFIX: &str = Partition::NAME_PREFIX;

/// Slots per "minute" level of the slot path: slot `i` is `<i / 60>.<i % 60>`, the minute-and-second nesting of the bucket documents
/// `values.M.S`. Two levels keep every sub-document at 60 fields or fewer, so an update
/// of one slot walks two short field lists instead of one of up to 3600.
const SLOTS_PER_MINUTE: u32 = 60;

/// The name of a partition's collection ([`Partition::name`]): only integers and fixed
/// words, a valid collection name whatever the user's names are.
pub(crate) fn collection_name(partition: Partition) -> String {
    partition.name()
}

/// The partition a collection name stands for; `None` for any other name.
pub(crate) fn parse_collection_name(name: &str) -> Option<Partition> {
    Partition::from_name(name)
}

/// The `_id` of a bucket document.
pub(crate) fn bucket_id(series: i64, bucket_start: i64) -> Document {
    doc! { "s": series, "b": bucket_start }
}

/// `<minute>.<second>` of a slot, the path under `v` or `r`.
pub(crate) fn slot_path(slot: u32) -> String {
    format!("{}.{}", slot / SLOTS_PER_MINUTE, slot % SLOTS_PER_MINUTE)
}

/// A shell document: every slot present as `null`, so later writes fill it in place
/// (docs/design.md#pre-allocation). Raw shells also carry totals of nothing — `n: 0`, `sum: -0.0` (the additive
/// identity, so the first value's `$inc` leaves exactly that value, as on a fresh
/// document), `mn: +inf`, `mx: -inf` (so `$min`/`$max` take the first value; a `null`
/// would sort below every number and never be replaced).
pub(crate) fn shell(family: BucketFamily, geometry: BucketGeometry, id: Document) -> Document {
    let mut minutes = Document::new();
    for slot in 0..geometry.slots() {
        let minute = (slot / SLOTS_PER_MINUTE).to_string();
        let second = (slot % SLOTS_PER_MINUTE).to_string();
        if !minutes.contains_key(&minute) {
            minutes.insert(minute.clone(), Document::new());
        }
        if let Some(Bson::Document(m)) = minutes.get_mut(&minute) {
            m.insert(second, Bson::Null);
        }
    }
    match family.slots() {
        SlotKind::Raw { .. } => doc! {
            "_id": id,
            "n": 0_i64,
            "sum": -0.0_f64,
            "mn": f64::INFINITY,
            "mx": f64::NEG_INFINITY,
            "v": minutes,
        },
        SlotKind::Rollup(_) => doc! { "_id": id, "r": minutes },
    }
}

/// A stored bucket document as [`StoredBucket`]. `with_slots`: false for a totals-only
/// read, whose projection left the slots out.
pub(crate) fn parse_bucket(
    family: BucketFamily,
    doc: &Document,
    with_slots: bool,
) -> Result<StoredBucket> {
    let id = doc
        .get_document("_id")
        .map_err(|_| corrupt("bucket `_id` is not {s, b}"))?;
    let series = need_i64(id, "s")?;
    let series = SeriesId(
        u64::try_from(series).map_err(|_| corrupt(format!("negative series id {series}")))?,
    );
    let bucket_start = need_i64(id, "b")?;
    let (totals, slots) = match family.slots() {
        SlotKind::Raw { .. } => {
            let slots = if with_slots {
                parse_slots(doc, "v", |v| number(v).map(SlotValue::Value))?
            } else {
                Vec::new()
            };
            (parse_totals(doc)?, slots)
        }
        SlotKind::Rollup(_) => {
            let slots = if with_slots {
                parse_slots(doc, "r", |v| match v {
                    Bson::Document(d) => parse_summary(d).map(SlotValue::Summary),
                    other => Err(corrupt(format!("rollup slot holds {other:?}"))),
                })?
            } else {
                Vec::new()
            };
            (None, slots)
        }
    };
    Ok(StoredBucket {
        series,
        bucket_start,
        totals,
        slots,
    })
}

/// `n`, `sum`, `mn`, `mx`; `None` when nothing was written (a shell: `n` is 0).
fn parse_totals(doc: &Document) -> Result<Option<BucketTotals>> {
    let count = get_i64(doc, "n")?.unwrap_or(0);
    if count <= 0 {
        return Ok(None);
    }
    let field = |name: &str| {
        doc.get(name)
            .ok_or_else(|| corrupt(format!("raw bucket without `{name}`")))
            .and_then(number)
    };
    Ok(Some(BucketTotals {
        count: count as u64,
        sum: field("sum")?,
        min: field("mn")?,
        max: field("mx")?,
    }))
}

/// The written slots under `field` (`v` or `r`), by slot ascending; `null` slots (shells)
/// are left out, so a pre-allocated slot never reads as a value.
fn parse_slots(
    doc: &Document,
    field: &str,
    parse: impl Fn(&Bson) -> Result<SlotValue>,
) -> Result<Vec<(u32, SlotValue)>> {
    let Some(minutes) = doc.get(field) else {
        return Ok(Vec::new());
    };
    let Bson::Document(minutes) = minutes else {
        return Err(corrupt(format!("bucket `{field}` is not a document")));
    };
    let mut out = Vec::new();
    for (minute, seconds) in minutes {
        let Bson::Document(seconds) = seconds else {
            return Err(corrupt(format!(
                "bucket `{field}.{minute}` is not a document"
            )));
        };
        let minute = path_number(minute)?;
        for (second, value) in seconds {
            if matches!(value, Bson::Null) {
                continue;
            }
            let second = path_number(second)?;
            let slot = minute
                .checked_mul(SLOTS_PER_MINUTE)
                .and_then(|m| m.checked_add(second))
                .filter(|_| second < SLOTS_PER_MINUTE)
                .ok_or_else(|| corrupt(format!("slot path {field}.{minute}.{second}")))?;
            out.push((slot, parse(value)?));
        }
    }
    out.sort_by_key(|(slot, _)| *slot);
    Ok(out)
}

fn path_number(text: &str) -> Result<u32> {
    text.parse()
        .map_err(|_| corrupt(format!("slot path component {text:?} is not a number")))
}

/// A stored number as f64. Values are written as doubles; an integer is accepted in case
/// a server returns a whole-number result of `$add` as one.
fn number(value: &Bson) -> Result<f64> {
    match value {
        Bson::Double(v) => Ok(*v),
        Bson::Int32(v) => Ok(f64::from(*v)),
        Bson::Int64(v) => Ok(*v as f64),
        other => Err(corrupt(format!("bucket value is {other:?}, not a number"))),
    }
}

/// A rollup slot `{c, s, mn, mx, ft, fv, lt, lv}`.
fn parse_summary(doc: &Document) -> Result<Summary> {
    let double = |name: &str| {
        get_f64(doc, name)?.ok_or_else(|| corrupt(format!("rollup slot without `{name}`")))
    };
    let count = need_i64(doc, "c")?;
    Ok(Summary {
        count: u64::try_from(count).map_err(|_| corrupt(format!("rollup count {count}")))?,
        sum: double("s")?,
        min: double("mn")?,
        max: double("mx")?,
        first: Point::new(need_i64(doc, "ft")?, double("fv")?),
        last: Point::new(need_i64(doc, "lt")?, double("lv")?),
    })
}

/// A rollup slot as stored: the inverse of [`parse_summary`].
pub(crate) fn summary_doc(s: &Summary) -> Result<Document> {
    Ok(doc! {
        "c": i64::try_from(s.count)
            .map_err(|_| BackendError::Invalid(format!("rollup count {} is too large", s.count)))?,
        "s": s.sum,
        "mn": s.min,
        "mx": s.max,
        "ft": s.first.time,
        "fv": s.first.value,
        "lt": s.last.time,
        "lv": s.last.value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::rollup::Resolution;

    #[test]
    fn collection_names_round_trip_and_reject_others() {
        let raw = BucketFamily::raw(7, 1_000_000_000).unwrap();
        let day = 86_400_000_000_000;
        for family in [raw, BucketFamily::rollup(u64::MAX, Resolution::MINUTE)] {
            for start in [-day, 0, day] {
                let partition = Partition::new(family, start).unwrap();
                let name = collection_name(partition);
                assert_eq!(parse_collection_name(&name), Some(partition), "{name}");
            }
        }
        assert_eq!(
            collection_name(Partition::new(raw, -day).unwrap()),
            "bk.7.raw.1000000000.-86400000000000"
        );
        for other in [
            "segments",
            "bk.7.raw.1000000000",
            "bk.7.raw.1000000000.5",
            "bk.7.raw.0.0",
            "bk.x.raw.1000000000.0",
            "bk.7.roll.7.0.1",
            "bk.7.cooked.1000000000.0",
        ] {
            assert_eq!(parse_collection_name(other), None, "{other}");
        }
    }

    #[test]
    fn slot_paths_are_minute_and_second() {
        assert_eq!(slot_path(0), "0.0");
        assert_eq!(slot_path(61), "1.1");
        assert_eq!(slot_path(3_599), "59.59");
    }

    #[test]
    fn shells_read_as_nothing_written() {
        let family = BucketFamily::raw(1, 10_000_000_000).unwrap();
        let geometry = family.geometry();
        let shell = shell(family, geometry, bucket_id(3, 0));
        let read = parse_bucket(family, &shell, true).unwrap();
        assert_eq!(read.totals, None);
        assert!(read.slots.is_empty());
        let minutes = shell.get_document("v").unwrap();
        let slots: usize = minutes
            .values()
            .map(|m| m.as_document().map_or(0, |d| d.len()))
            .sum();
        assert_eq!(slots as u32, geometry.slots());
    }
}
