//! Bucket reads and the partition list, in read transactions (no writer involved).

use super::rows::{self, row_definition, SHELL_SLOT};
use super::{definition, geometry, parse_table_name, table_name, target, Bucket, Target};
use crate::writer::storage;
use redb::{Database, ReadTransaction, ReadableTableMetadata, TableError};
use tickertape_backend::{
    BackendError, BucketFamily, BucketRead, Partition, Result, SlotKind, SlotValue, StoredBucket,
};
use tickertape_core::rollup::{BucketGeometry, MIN_BUCKET_TIME};
use tickertape_core::time::window_start;
use tickertape_core::SeriesId;

/// Up to this many partitions in a read's range are opened by name; beyond, the table
/// list is filtered instead, so a read over centuries does not try billions of names.
const MAX_PROBED_PARTITIONS: i128 = 64;

/// The documents of `series` in `family` whose period overlaps `[start, end)`, by start.
pub fn read_buckets(
    db: &Database,
    family: BucketFamily,
    series: SeriesId,
    start: i64,
    end: i64,
    part: BucketRead,
) -> Result<Vec<StoredBucket>> {
    let g = geometry(family)?;
    if end <= start || end <= MIN_BUCKET_TIME {
        return Ok(Vec::new());
    }
    // The document holding `start` may begin before it; none begins before MIN_BUCKET_TIME's.
    let first = window_start(start.max(MIN_BUCKET_TIME), g.period_ns());
    let txn = db.begin_read().map_err(storage)?;
    let mut out = Vec::new();
    let rollup = matches!(family.slots, SlotKind::Rollup(_));
    for partition in partitions_between(&txn, family, g, first, end)? {
        let name = table_name(partition);
        if rollup {
            read_rows(&txn, &name, family, series, (first, end), part, &mut out)?;
            continue;
        }
        let table = match txn.open_table(definition(&name)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => continue,
            Err(e) => return Err(storage(e)),
        };
        for entry in table
            .range((series.0, first)..(series.0, end))
            .map_err(storage)?
        {
            let (key, value) = entry.map_err(storage)?;
            let bucket_start = key.value().1;
            // Rebuilt for the checks and the error message; cannot fail for a stored key
            // of a well-formed table name, and reports corruption if it does.
            let target = target(family, series, bucket_start).map_err(|e| {
                BackendError::Corrupt(format!("key {bucket_start} in table {name}: {e}"))
            })?;
            out.push(stored(&target, value.value(), part)?);
        }
    }
    Ok(out)
}

/// The rollup documents of `series` starting in `[first, end)` in the partition table
/// `name`, regrouped from their slot rows and appended to `out`.
fn read_rows(
    txn: &ReadTransaction,
    name: &str,
    family: BucketFamily,
    series: SeriesId,
    (first, end): (i64, i64),
    part: BucketRead,
    out: &mut Vec<StoredBucket>,
) -> Result<()> {
    let table = match txn.open_table(row_definition(name)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(storage(e)),
    };
    let mut current: Option<Target> = None;
    for entry in table
        .range((series.0, first, 0)..(series.0, end, 0))
        .map_err(storage)?
    {
        let (key, value) = entry.map_err(storage)?;
        let (_, bucket_start, slot) = key.value();
        if current.as_ref().is_none_or(|t| t.key.1 != bucket_start) {
            // Cannot fail for a stored key of a well-formed table name; reports corruption
            // if it does.
            let t = target(family, series, bucket_start).map_err(|e| {
                BackendError::Corrupt(format!("key {bucket_start} in table {name}: {e}"))
            })?;
            out.push(StoredBucket {
                series,
                bucket_start,
                totals: None,
                slots: Vec::new(),
            });
            current = Some(t);
        }
        let (Some(t), Some(doc)) = (&current, out.last_mut()) else {
            continue;
        };
        let value = value.value();
        let corrupt = |what: String| {
            BackendError::Corrupt(format!(
                "rollup row {:?} in table {name}: {what}",
                (series.0, bucket_start, slot)
            ))
        };
        if slot == SHELL_SLOT {
            if !value.is_empty() {
                return Err(corrupt(format!("a shell row of {} bytes", value.len())));
            }
            continue;
        }
        let chunk = rows::decode_chunk(value, slot, t.slots, |s| t.slot_start(s))
            .map_err(|e| corrupt(e.to_string()))?;
        if part == BucketRead::Full {
            doc.slots
                .extend(chunk.into_iter().map(|(i, s)| (i, SlotValue::Summary(s))));
        }
    }
    Ok(())
}

/// One stored document as the trait returns it.
fn stored(target: &Target, bytes: &[u8], part: BucketRead) -> Result<StoredBucket> {
    let corrupt = |e| {
        BackendError::Corrupt(format!(
            "bucket {:?} in table {}: {e}",
            target.key, target.table
        ))
    };
    let peek = Bucket::peek(bytes).map_err(corrupt)?;
    target.check(&peek)?;
    let slots = match part {
        BucketRead::TotalsOnly => Vec::new(),
        BucketRead::Full => Bucket::decode(bytes)
            .map_err(corrupt)?
            .values
            .into_iter()
            .map(|(i, v)| (i, SlotValue::Value(v)))
            .collect(),
    };
    Ok(StoredBucket {
        series: SeriesId(target.key.0),
        bucket_start: target.key.1,
        totals: peek.totals,
        slots,
    })
}

/// The partitions of `family` that may hold documents starting in `[first, end)`, by start.
fn partitions_between(
    txn: &ReadTransaction,
    family: BucketFamily,
    g: BucketGeometry,
    first: i64,
    end: i64,
) -> Result<Vec<Partition>> {
    let width = g.partition_ns();
    // `first` is the start of a document at or after MIN_BUCKET_TIME's, so its partition
    // start is an i64 (see `super::target`).
    let low = window_start(first, width);
    let high = window_start(end - 1, width);
    let count = (i128::from(high) - i128::from(low)) / i128::from(width) + 1;
    if count <= MAX_PROBED_PARTITIONS {
        let starts = std::iter::successors(Some(low), |s| s.checked_add(width));
        return Ok(starts
            .take_while(|&s| s <= high)
            .map(|start| Partition { family, start })
            .collect());
    }
    let mut found: Vec<Partition> = all_partitions(txn)?
        .into_iter()
        .filter(|p| p.family == family && (low..=high).contains(&p.start))
        .collect();
    found.sort_unstable();
    Ok(found)
}

/// Every bucket table's partition, in table-list order.
fn all_partitions(txn: &ReadTransaction) -> Result<Vec<Partition>> {
    let mut out = Vec::new();
    for handle in txn.list_tables().map_err(storage)? {
        if let Some(partition) = parse_table_name(redb::TableHandle::name(&handle)) {
            out.push(partition?);
        }
    }
    Ok(out)
}

/// Every partition with at least one document, by family then start.
pub fn list_partitions(db: &Database) -> Result<Vec<Partition>> {
    let txn = db.begin_read().map_err(storage)?;
    let mut out = Vec::new();
    for partition in all_partitions(&txn)? {
        // A table can exist empty: the writer opens (and so creates) a partition's table
        // before it knows whether a write will land there.
        let name = table_name(partition);
        let opened = |e| BackendError::Corrupt(format!("table {name}: {e}"));
        let empty = match partition.family.slots {
            SlotKind::Raw { .. } => txn
                .open_table(definition(&name))
                .map_err(opened)?
                .is_empty(),
            SlotKind::Rollup(_) => txn
                .open_table(row_definition(&name))
                .map_err(opened)?
                .is_empty(),
        };
        if !empty.map_err(storage)? {
            out.push(partition);
        }
    }
    out.sort_unstable();
    Ok(out)
}
