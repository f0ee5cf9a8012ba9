//! Bucket writes inside the writer's transaction: slot changes, shells, partition drops.

use super::rows::{self, row_definition, SHELL_SLOT};
use super::{definition, Bucket, Peek, Target, ValidWrite};
use crate::writer::storage;
use redb::{ReadableTable, Table, WriteTransaction};
use std::collections::hash_map::Entry;
use std::collections::{btree_map, BTreeMap, HashMap};
use tickertape_backend::{BackendError, BucketTotals, BucketWriteOutcome, Result, SlotChange};
use tickertape_core::query::{keep_max, keep_min, Summary};

/// A loaded raw document and whether a write changed it.
struct Doc {
    bucket: Bucket,
    dirty: bool,
}

/// A loaded rollup row (up to [`rows::CHUNK_SLOTS`] slots of one document).
struct Row<'w> {
    /// The document: what gives each slot its start time.
    target: &'w Target,
    /// The written slots; empty for a row that does not exist yet.
    chunk: rows::Chunk,
    dirty: bool,
}

/// The raw documents a call touches: table name → (series, bucket start) → document.
type Docs<'w> = BTreeMap<&'w str, HashMap<(u64, i64), Doc>>;
/// The rollup rows a call touches: table name → (series, bucket start, row) → row.
type Rows<'w> = BTreeMap<&'w str, HashMap<(u64, i64, u32), Row<'w>>>;

/// Applies `writes` in order and stores every changed document or rollup slot once.
///
/// Everything is loaded before anything is changed, so a corrupt document or slot refuses
/// the whole call with nothing written; and a raw document many writes touch (a minute of
/// per-second values) is decoded and encoded once, not once per slot. A rollup `Merge`
/// reads and writes its slot's row only (see [`super::rows`]).
pub fn apply_writes(
    txn: &WriteTransaction,
    writes: &[ValidWrite],
) -> Result<Vec<BucketWriteOutcome>> {
    let mut docs = load_docs(txn, writes)?;
    let mut rows = load_rows(txn, writes)?;
    let not_loaded =
        |w: &ValidWrite| BackendError::Storage(format!("bucket {:?} not loaded", w.target));
    let mut outcomes = Vec::with_capacity(writes.len());
    for w in writes {
        let table = w.target.table.as_str();
        let outcome = if w.target.rollup {
            let row = rows
                .get_mut(table)
                .and_then(|t| t.get_mut(&w.target.row_key(w.slot)))
                .ok_or_else(|| not_loaded(w))?;
            let mut slot = row.chunk.get(&w.slot).copied();
            merge_into(&mut slot, &w.change)?;
            if let Some(s) = slot {
                row.chunk.insert(w.slot, s);
            }
            row.dirty = true;
            BucketWriteOutcome::Applied
        } else {
            let doc = docs
                .get_mut(table)
                .and_then(|t| t.get_mut(&w.target.key))
                .ok_or_else(|| not_loaded(w))?;
            let outcome = apply_change(&mut doc.bucket, w.slot, &w.change)?;
            doc.dirty |= outcome == BucketWriteOutcome::Applied;
            outcome
        };
        outcomes.push(outcome);
    }
    for (name, docs) in docs {
        if !docs.values().any(|d| d.dirty) {
            continue;
        }
        let mut table = txn.open_table(definition(name)).map_err(storage)?;
        for (key, doc) in docs.into_iter().filter(|(_, d)| d.dirty) {
            table
                .insert(key, doc.bucket.encode().as_slice())
                .map_err(storage)?;
        }
    }
    for (name, loaded) in rows {
        let mut table = txn.open_table(row_definition(name)).map_err(storage)?;
        for (key, row) in loaded {
            if !row.dirty || row.chunk.is_empty() {
                continue;
            }
            let bytes = rows::encode_chunk(&row.chunk, |slot| row.target.slot_start(slot));
            table.insert(key, bytes.as_slice()).map_err(storage)?;
        }
    }
    Ok(outcomes)
}

/// Every raw document the writes touch, by table then key: the stored one, or a new
/// empty one.
fn load_docs<'w>(txn: &WriteTransaction, writes: &'w [ValidWrite]) -> Result<Docs<'w>> {
    let mut by_table: BTreeMap<&str, Vec<&Target>> = BTreeMap::new();
    for w in writes.iter().filter(|w| !w.target.rollup) {
        by_table.entry(&w.target.table).or_default().push(&w.target);
    }
    let mut docs = BTreeMap::new();
    for (name, targets) in by_table {
        let table = txn.open_table(definition(name)).map_err(storage)?;
        let mut loaded = HashMap::new();
        for target in targets {
            if let Entry::Vacant(e) = loaded.entry(target.key) {
                let bucket = fetch(&table, target)?.unwrap_or_else(|| Bucket::empty(target.slots));
                e.insert(Doc {
                    bucket,
                    dirty: false,
                });
            }
        }
        docs.insert(name, loaded);
    }
    Ok(docs)
}

/// Every rollup row the writes touch, by table then row key: its stored slots, if any.
fn load_rows<'w>(txn: &WriteTransaction, writes: &'w [ValidWrite]) -> Result<Rows<'w>> {
    let mut by_table: BTreeMap<&str, Vec<&ValidWrite>> = BTreeMap::new();
    for w in writes.iter().filter(|w| w.target.rollup) {
        by_table.entry(&w.target.table).or_default().push(w);
    }
    let mut out = BTreeMap::new();
    for (name, writes) in by_table {
        let table = txn.open_table(row_definition(name)).map_err(storage)?;
        let mut loaded = HashMap::new();
        for w in writes {
            let key = w.target.row_key(w.slot);
            if let Entry::Vacant(e) = loaded.entry(key) {
                let target = &w.target;
                let chunk = match table.get(key).map_err(storage)? {
                    Some(bytes) => rows::decode_chunk(bytes.value(), key.2, target.slots, |s| {
                        target.slot_start(s)
                    })
                    .map_err(|e| {
                        BackendError::Corrupt(format!("rollup row {key:?} in table {name}: {e}"))
                    })?,
                    None => rows::Chunk::new(),
                };
                e.insert(Row {
                    target,
                    chunk,
                    dirty: false,
                });
            }
        }
        out.insert(name, loaded);
    }
    Ok(out)
}

/// The stored document of `target`, checked against its family.
fn fetch(table: &Table<(u64, i64), &[u8]>, target: &Target) -> Result<Option<Bucket>> {
    let Some(raw) = table.get(target.key).map_err(storage)? else {
        return Ok(None);
    };
    let corrupt = |e| {
        BackendError::Corrupt(format!(
            "bucket {:?} in table {}: {e}",
            target.key, target.table
        ))
    };
    let bucket = Bucket::decode(raw.value()).map_err(corrupt)?;
    target.check(&Peek {
        slots: bucket.slots,
        totals: None,
    })?;
    Ok(Some(bucket))
}

/// A rollup slot after `change`: a never-written slot takes the summary as it is, a
/// written one [`merge_slot`]s it.
fn merge_into(slot: &mut Option<Summary>, change: &SlotChange) -> Result<()> {
    let SlotChange::Merge { summary, values } = change else {
        // BucketWrite::new makes this unreachable; refuse rather than guess if it is reached.
        return Err(BackendError::Invalid(format!(
            "change: {change:?} does not apply to a rollup slot"
        )));
    };
    *slot = Some(match slot {
        Some(stored) => merge_slot(stored, summary, values),
        None => *summary,
    });
    Ok(())
}

/// One raw slot change, with the semantics written on [`SlotChange`].
fn apply_change(bucket: &mut Bucket, slot: u32, change: &SlotChange) -> Result<BucketWriteOutcome> {
    let Bucket { totals, values, .. } = bucket;
    match change {
        SlotChange::Set(v) => {
            let btree_map::Entry::Vacant(e) = values.entry(slot) else {
                return Ok(BucketWriteOutcome::SlotTaken);
            };
            e.insert(*v);
            add_to_totals(totals, *v);
        }
        SlotChange::Add(v) => {
            // An absent slot takes the increment as it is, as `$inc` on a missing field
            // does: 0.0 + -0.0 would lose the sign of a first increment of -0.0.
            values
                .entry(slot)
                .and_modify(|stored| *stored += *v)
                .or_insert(*v);
            add_to_totals(totals, *v);
        }
        SlotChange::Merge { .. } => {
            // BucketWrite::new makes this unreachable; refuse rather than guess if it is.
            return Err(BackendError::Invalid(
                "change: Merge does not apply to a raw document".into(),
            ));
        }
    }
    Ok(BucketWriteOutcome::Applied)
}

/// Adds one written value (or increment) to a raw document's `n`, `sum`, `min`, `max`.
/// The first value is taken as it is, like the first value of a slot.
fn add_to_totals(totals: &mut Option<BucketTotals>, v: f64) {
    *totals = Some(match *totals {
        None => BucketTotals {
            count: 1,
            sum: v,
            min: v,
            max: v,
        },
        Some(t) => BucketTotals {
            count: t.count.saturating_add(1),
            sum: t.sum + v,
            min: keep_min(t.min, v),
            max: keep_max(t.max, v),
        },
    });
}

/// [`RollupUpdate::apply_to`](tickertape_core::rollup::RollupUpdate::apply_to) for a slot
/// that holds `stored`: count, min, max, first and last as [`Summary::merge`], the sum
/// continued one value at a time. Written out rather than calling `merge` so that a count
/// read from a damaged file saturates instead of overflowing.
pub(crate) fn merge_slot(stored: &Summary, summary: &Summary, values: &[f64]) -> Summary {
    Summary {
        count: stored.count.saturating_add(summary.count),
        sum: values.iter().fold(stored.sum, |sum, v| sum + v),
        min: keep_min(stored.min, summary.min),
        max: keep_max(stored.max, summary.max),
        first: if summary.first.time < stored.first.time {
            summary.first
        } else {
            stored.first
        },
        last: if summary.last.time >= stored.last.time {
            summary.last
        } else {
            stored.last
        },
    }
}

/// Writes a shell for each target that has no document yet; returns how many it wrote.
/// A raw shell is an empty document; a rollup shell is the [`SHELL_SLOT`] row, written
/// only when the document has no row at all.
pub fn preallocate(txn: &WriteTransaction, targets: &[Target]) -> Result<u64> {
    let mut by_table: BTreeMap<&str, Vec<&Target>> = BTreeMap::new();
    for t in targets {
        by_table.entry(&t.table).or_default().push(t);
    }
    let mut created = 0;
    for (name, targets) in by_table {
        if targets.first().is_some_and(|t| t.rollup) {
            let mut table = txn.open_table(row_definition(name)).map_err(storage)?;
            for target in targets {
                let (series, start) = target.key;
                let exists = table
                    .range((series, start, 0)..=(series, start, SHELL_SLOT))
                    .map_err(storage)?
                    .next()
                    .transpose()
                    .map_err(storage)?
                    .is_some();
                if !exists {
                    table
                        .insert((series, start, SHELL_SLOT), [].as_slice())
                        .map_err(storage)?;
                    created += 1;
                }
            }
            continue;
        }
        let mut table = txn.open_table(definition(name)).map_err(storage)?;
        for target in targets {
            if table.get(target.key).map_err(storage)?.is_some() {
                continue;
            }
            table
                .insert(target.key, Bucket::empty(target.slots).encode().as_slice())
                .map_err(storage)?;
            created += 1;
        }
    }
    Ok(created)
}

/// Deletes a partition's table; a missing one is not an error.
pub fn drop_partition(txn: &WriteTransaction, table: &str) -> Result<()> {
    let existed = txn.delete_table(definition(table)).map_err(storage)?;
    tracing::info!(table, existed, "dropped bucket partition");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tickertape_core::rollup::RollupUpdate;
    use tickertape_core::rollup::{rollup_updates, Resolution};
    use tickertape_core::Point;

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -1e6f64..1e6,
            1 => any::<u64>().prop_map(f64::from_bits),
            1 => Just(-0.0),
            1 => Just(0.1),
        ]
    }

    fn bits(s: &Summary) -> [u64; 8] {
        s.to_bits()
    }

    proptest! {
        /// A slot merged batch after batch ends bit-identical to core's reference.
        #[test]
        fn merge_equals_apply_to(
            values in proptest::collection::vec(value(), 1..60),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..5),
        ) {
            let points: Vec<Point> =
                values.iter().enumerate().map(|(i, &v)| Point::new(i as i64 * 1_000, v)).collect();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(points.len())).collect();
            cuts.push(0);
            cuts.push(points.len());
            cuts.sort_unstable();
            cuts.dedup();
            let mut reference: Option<Summary> = None;
            let mut ours = None;
            for batch in cuts.windows(2).map(|w| &points[w[0]..w[1]]) {
                for u in rollup_updates(batch, &[Resolution::MINUTE]).unwrap() {
                    reference = Some(apply(&u, reference.as_ref(), batch));
                    let change = SlotChange::Merge {
                        summary: u.summary,
                        values: batch[u.points.clone()].iter().map(|p| p.value).collect(),
                    };
                    prop_assert_eq!(u.slot, 0);
                    merge_into(&mut ours, &change).unwrap();
                }
            }
            prop_assert_eq!(bits(&ours.unwrap()), bits(&reference.unwrap()));
        }
    }

    fn apply(u: &RollupUpdate, stored: Option<&Summary>, batch: &[Point]) -> Summary {
        u.apply_to(stored, batch)
    }

    #[test]
    fn set_refuses_a_taken_slot_and_keeps_totals() {
        let mut b = Bucket::empty(10);
        let set = |b: &mut Bucket, v| apply_change(b, 3, &SlotChange::Set(v)).unwrap();
        assert_eq!(set(&mut b, 0.0), BucketWriteOutcome::Applied);
        assert_eq!(set(&mut b, 5.0), BucketWriteOutcome::SlotTaken);
        let Bucket { totals, values, .. } = &b;
        assert_eq!(values[&3], 0.0);
        assert_eq!(
            *totals,
            Some(BucketTotals {
                count: 1,
                sum: 0.0,
                min: 0.0,
                max: 0.0
            })
        );
    }

    #[test]
    fn add_accumulates_slot_and_totals() {
        let mut b = Bucket::empty(10);
        for v in [1.0, 2.5, -0.5] {
            apply_change(&mut b, 4, &SlotChange::Add(v)).unwrap();
        }
        apply_change(&mut b, 5, &SlotChange::Add(10.0)).unwrap();
        let Bucket { totals, values, .. } = &b;
        assert_eq!(values[&4], 3.0);
        assert_eq!(values[&5], 10.0);
        assert_eq!(
            *totals,
            Some(BucketTotals {
                count: 4,
                sum: 13.0,
                min: -0.5,
                max: 10.0
            })
        );
    }

    #[test]
    fn first_values_keep_negative_zero() {
        let mut b = Bucket::empty(10);
        apply_change(&mut b, 0, &SlotChange::Add(-0.0)).unwrap();
        apply_change(&mut b, 1, &SlotChange::Set(-0.0)).unwrap();
        let Bucket { totals, values, .. } = &b;
        assert!(values[&0].is_sign_negative() && values[&1].is_sign_negative());
        assert!(totals.unwrap().sum.is_sign_negative());
    }

    #[test]
    fn a_damaged_count_saturates() {
        let mut stored = Summary::of(Point::new(0, 1.0));
        stored.count = u64::MAX;
        let merged = merge_slot(&stored, &Summary::of(Point::new(1, 2.0)), &[2.0]);
        assert_eq!(merged.count, u64::MAX);
    }
}
