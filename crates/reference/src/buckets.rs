//! Time buckets: documents in partitions, slot writes, reads,
//! shells and partition drops, each as the backend crate's docs state it.

use std::collections::{btree_map, BTreeMap};
use tickertape_backend::{
    BackendError, BucketRange, BucketRead, BucketTotals, BucketWrite, BucketWriteOutcome,
    DocumentStart, Partition, Result, SlotChange, SlotValue, StoredBucket,
};
use tickertape_core::query::{keep_max, keep_min, Summary};
use tickertape_core::SeriesId;

/// One bucket document.
#[derive(Clone, Debug, Default)]
struct Document {
    /// The written slots. A pre-allocated slot never written is absent ([`StoredBucket`]:
    /// "never reported as 0").
    slots: BTreeMap<u32, SlotValue>,
    /// A raw document's `n`, `sum`, `min`, `max`; `None` while nothing was written (a
    /// shell) and always for rollups.
    totals: Option<BucketTotals>,
}

/// Every bucket document: partition → (series, bucket start) → document. A partition is
/// present exactly while it holds at least one document.
#[derive(Clone, Debug, Default)]
pub struct Buckets {
    partitions: BTreeMap<Partition, BTreeMap<(SeriesId, i64), Document>>,
}

impl Buckets {
    /// One write, "creating documents as needed, each in its family's partition of its
    /// start" (`Backend::write_buckets`). The write was checked when it was built
    /// ([`BucketWrite::new`]): its slot is inside the document and its change fits the
    /// family.
    pub fn write(&mut self, write: &BucketWrite) -> Result<BucketWriteOutcome> {
        let document = self
            .partitions
            .entry(write.partition())
            .or_default()
            .entry((write.series(), write.bucket_start()))
            .or_default();
        let slot = write.slot();
        match write.change() {
            SlotChange::Set(value) => {
                // "A slot that already holds a value is left as it is and the write
                // reported refused."
                if document.slots.contains_key(&slot) {
                    return Ok(BucketWriteOutcome::SlotTaken);
                }
                document.slots.insert(slot, SlotValue::Value(*value));
                add_to_totals(&mut document.totals, *value);
            }
            SlotChange::Add(increment) => {
                // "Add `value` to the slot (an absent slot counts as 0)". An absent slot
                // takes the increment as it is (`$inc` on a missing field), so a first
                // increment of -0.0 keeps its sign, where 0.0 + -0.0 would not.
                let total = match document.slots.get(&slot) {
                    None => *increment,
                    Some(SlotValue::Value(stored)) => stored + increment,
                    Some(SlotValue::Summary(_)) => return Err(kind_mismatch(write)),
                };
                document.slots.insert(slot, SlotValue::Value(total));
                // "`n` counts increments, `min`/`max` are of the increments."
                add_to_totals(&mut document.totals, *increment);
            }
            SlotChange::Merge { summary, values } => {
                let stored = match document.slots.get(&slot) {
                    None => None,
                    Some(SlotValue::Summary(s)) => Some(*s),
                    Some(SlotValue::Value(_)) => return Err(kind_mismatch(write)),
                };
                let merged = merge(stored, summary, values);
                document.slots.insert(slot, SlotValue::Summary(merged));
            }
        }
        Ok(BucketWriteOutcome::Applied)
    }

    /// "The documents of `series` in `family` whose period overlaps `[start, end)`, by
    /// start ascending. Documents never written are absent." (`Backend::read_buckets`).
    /// Computed from the definition — a document `[s, s + period)` overlaps `[start, end)`
    /// when the range is not empty, `s < end` and `s + period > start` — over every
    /// document of the family, not
    /// through [`tickertape_backend::DocumentSpan`], so that the conformance suite checks
    /// the backends' shared partition enumeration against it.
    pub fn read(&self, range: BucketRange, part: BucketRead) -> Vec<StoredBucket> {
        let BucketRange {
            family,
            series,
            start,
            end,
        } = range;
        let period = i128::from(family.geometry().period_ns());
        let overlaps = |s: i64| {
            let s = i128::from(s);
            start < end && s < i128::from(end) && s + period > i128::from(start)
        };
        let mut out: Vec<StoredBucket> = self
            .partitions
            .iter()
            .filter(|(partition, _)| partition.family() == family)
            .flat_map(|(_, documents)| documents.iter())
            .filter(|((s, bucket_start), _)| *s == series && overlaps(*bucket_start))
            .map(|(&(series, bucket_start), document)| StoredBucket {
                series,
                bucket_start,
                totals: document.totals,
                // `TotalsOnly`: "Only `StoredBucket::totals` (… slots are not shipped)".
                slots: match part {
                    BucketRead::Full => document.slots.iter().map(|(k, v)| (*k, *v)).collect(),
                    BucketRead::TotalsOnly => Vec::new(),
                },
            })
            .collect();
        out.sort_by_key(|b| b.bucket_start);
        out
    }

    /// Empty shells for `series` at `bucket_start`; "A document that exists already is
    /// left as it is. Returns how many shells were created" (`Backend::preallocate`).
    pub fn preallocate(&mut self, document: DocumentStart, series: &[SeriesId]) -> u64 {
        let (partition, bucket_start) = (document.partition(), document.start());
        let mut created = 0;
        for &s in series {
            let documents = self.partitions.entry(partition).or_default();
            if let btree_map::Entry::Vacant(absent) = documents.entry((s, bucket_start)) {
                absent.insert(Document::default());
                created += 1;
            }
        }
        created
    }

    /// "Every partition holding at least one document (pre-allocated ones included), by
    /// family, then start" — the order `Partition` sorts in.
    pub fn list_partitions(&self) -> Vec<Partition> {
        self.partitions
            .iter()
            .filter(|(_, documents)| !documents.is_empty())
            .map(|(partition, _)| *partition)
            .collect()
    }

    /// "Drops a whole partition … Dropping a missing partition is not an error."
    pub fn drop_partition(&mut self, partition: Partition) {
        self.partitions.remove(&partition);
    }

    /// The bytes of what the documents hold: 8 per raw value, 64 per summary (its eight
    /// 8-byte fields), 32 per set of totals. An estimate for `stats`, nothing more.
    pub fn payload_bytes(&self) -> u64 {
        let slot_bytes = |v: &SlotValue| match v {
            SlotValue::Value(_) => 8,
            SlotValue::Summary(_) => 64,
        };
        self.partitions
            .values()
            .flat_map(BTreeMap::values)
            .map(|d| d.slots.values().map(slot_bytes).sum::<u64>() + d.totals.map_or(0, |_| 32))
            .sum()
    }
}

/// [`SlotChange::Merge`]: "the slot becomes `RollupUpdate::apply_to` of what it held: a
/// never-written slot takes `summary`; otherwise count, min, max, first and last merge as
/// `Summary::merge` and the sum continues the stored sum with `values` added one at a time,
/// left to right".
fn merge(stored: Option<Summary>, summary: &Summary, values: &[f64]) -> Summary {
    let Some(stored) = stored else {
        return *summary;
    };
    let mut out = stored;
    out.merge(summary);
    out.sum = values.iter().fold(stored.sum, |sum, v| sum + v);
    out
}

/// Adds one written value (or increment) to a raw document's totals: `n` counts it, `sum`
/// continues as `stored + value` ("`sum` is the values added in the order they were
/// written", [`BucketTotals`]), `min`/`max` as the query operators keep them. The first
/// value is taken as it is, like the first value of a slot.
fn add_to_totals(totals: &mut Option<BucketTotals>, value: f64) {
    *totals = Some(match *totals {
        None => BucketTotals {
            count: 1,
            sum: value,
            min: value,
            max: value,
        },
        Some(t) => BucketTotals {
            count: t.count + 1,
            sum: t.sum + value,
            min: keep_min(t.min, value),
            max: keep_max(t.max, value),
        },
    });
}

/// A raw change to a rollup slot or the reverse: [`BucketWrite::new`] refuses such a write,
/// so this is unreachable; it is an error rather than a panic all the same.
fn kind_mismatch(write: &BucketWrite) -> BackendError {
    BackendError::Invalid(format!(
        "change: a {} change does not apply to the slot's family",
        write.change().name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_backend::BucketFamily;
    use tickertape_core::rollup::Resolution;
    use tickertape_core::Point;

    const SECOND: i64 = 1_000_000_000;
    const HOUR: i64 = 3_600 * SECOND;

    fn raw() -> BucketFamily {
        BucketFamily::raw(1, SECOND).unwrap()
    }

    fn write(slot: u32, change: SlotChange) -> BucketWrite {
        BucketWrite::new(raw(), SeriesId(1), 0, slot, change).unwrap()
    }

    #[test]
    fn set_once_add_accumulates_and_totals_follow() {
        let mut buckets = Buckets::default();
        let outcomes: Vec<_> = [
            write(0, SlotChange::Set(1.0)),
            write(0, SlotChange::Set(2.0)),
            write(1, SlotChange::Add(-0.0)),
            write(1, SlotChange::Add(4.0)),
        ]
        .iter()
        .map(|w| buckets.write(w).unwrap())
        .collect();
        use BucketWriteOutcome::{Applied, SlotTaken};
        assert_eq!(outcomes, vec![Applied, SlotTaken, Applied, Applied]);
        let docs = buckets.read(
            BucketRange {
                family: raw(),
                series: SeriesId(1),
                start: 0,
                end: 1,
            },
            BucketRead::Full,
        );
        assert_eq!(
            docs[0].slots,
            vec![(0, SlotValue::Value(1.0)), (1, SlotValue::Value(4.0))]
        );
        let t = docs[0].totals.unwrap();
        assert_eq!((t.count, t.sum, t.min, t.max), (3, 5.0, -0.0, 4.0));
        assert!(buckets
            .read(
                BucketRange {
                    family: raw(),
                    series: SeriesId(1),
                    start: HOUR,
                    end: 2 * HOUR
                },
                BucketRead::Full
            )
            .is_empty());
        // An empty range overlaps no document, not even the one holding its start.
        assert!(buckets
            .read(
                BucketRange {
                    family: raw(),
                    series: SeriesId(1),
                    start: 5,
                    end: 5
                },
                BucketRead::Full
            )
            .is_empty());
    }

    #[test]
    fn shells_have_no_slots_and_no_totals_and_partitions_list_them() {
        let mut buckets = Buckets::default();
        let minute = BucketFamily::rollup(1, Resolution::MINUTE);
        assert_eq!(
            buckets.preallocate(
                DocumentStart::new(minute, 0).unwrap(),
                &[SeriesId(1), SeriesId(1)]
            ),
            1
        );
        let shell = buckets.read(
            BucketRange {
                family: minute,
                series: SeriesId(1),
                start: 0,
                end: HOUR,
            },
            BucketRead::Full,
        );
        assert_eq!((shell[0].slots.len(), shell[0].totals), (0, None));
        let summary = Summary::of(Point::new(0, 2.0));
        let merge = SlotChange::Merge {
            summary,
            values: vec![2.0],
        };
        let w = BucketWrite::new(minute, SeriesId(1), 0, 0, merge).unwrap();
        buckets.write(&w).unwrap();
        buckets.write(&w).unwrap();
        let slots = &buckets.read(
            BucketRange {
                family: minute,
                series: SeriesId(1),
                start: 0,
                end: 1,
            },
            BucketRead::Full,
        )[0]
        .slots;
        let SlotValue::Summary(s) = slots[0].1 else {
            panic!("{slots:?}")
        };
        assert_eq!((s.count, s.sum), (2, 4.0));
        let listed = buckets.list_partitions();
        assert_eq!(listed, vec![Partition::new(minute, 0).unwrap()]);
        buckets.drop_partition(listed[0]);
        assert!(buckets.list_partitions().is_empty());
    }
}
