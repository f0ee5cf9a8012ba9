//! Bucket reads and the partition list, in read transactions (no writer involved).

use super::rows::{self, row_definition, SHELL_SLOT};
use super::{definition, parse_table_name, Bucket, Target};
use crate::writer::storage;
use redb::{Database, ReadOnlyTable, ReadTransaction, ReadableTableMetadata, TableError};
use tickertape_backend::{
    BackendError, BucketRange, BucketRead, DocumentSpan, Partition, Result, SlotValue, StoredBucket,
};
use tickertape_core::SeriesId;

/// The documents of the range, by start.
pub fn read_buckets(
    db: &Database,
    range: BucketRange,
    part: BucketRead,
) -> Result<Vec<StoredBucket>> {
    let BucketRange { family, series, .. } = range;
    let Some(span) = DocumentSpan::of(range) else {
        return Ok(Vec::new());
    };
    let txn = db.begin_read().map_err(storage)?;
    let partitions = match span.named_partitions() {
        Some(named) => named,
        None => span.select(all_partitions(&txn)?),
    };
    let mut out = Vec::new();
    for partition in partitions {
        let read = PartitionRead {
            partition,
            series,
            first: span.first(),
            end: span.end(),
            part,
        };
        let name = partition.name();
        if family.is_rollup() {
            if let Some(table) = open_existing(&txn, row_definition(&name))? {
                read_rows(&table, &read, &mut out)?;
            }
        } else if let Some(table) = open_existing(&txn, definition(&name))? {
            read_documents(&table, &read, &mut out)?;
        }
    }
    Ok(out)
}

/// One partition's share of a read: the documents of `series` starting in `[first, end)`.
struct PartitionRead {
    partition: Partition,
    series: SeriesId,
    first: i64,
    end: i64,
    part: BucketRead,
}

/// The partition's table, or `None` when it was never created.
fn open_existing<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    definition: redb::TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
    match txn.open_table(definition) {
        Ok(table) => Ok(Some(table)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(storage(e)),
    }
}

/// The raw documents of `series` starting in `[first, end)` in `partition`'s table,
/// appended to `out`.
fn read_documents(
    table: &ReadOnlyTable<(u64, i64), &'static [u8]>,
    read: &PartitionRead,
    out: &mut Vec<StoredBucket>,
) -> Result<()> {
    let series = read.series;
    for entry in table
        .range((series.0, read.first)..(series.0, read.end))
        .map_err(storage)?
    {
        let (key, value) = entry.map_err(storage)?;
        let target = stored_target(read.partition, series, key.value().1)?;
        out.push(stored(&target, value.value(), read.part)?);
    }
    Ok(())
}

/// The target of a document found under `bucket_start` in `partition`'s table; `Corrupt`
/// when that is not a document start of the partition.
fn stored_target(partition: Partition, series: SeriesId, bucket_start: i64) -> Result<Target> {
    match Partition::of_document(partition.family(), bucket_start) {
        Ok(p) if p == partition => Ok(Target::new(partition, series, bucket_start)),
        _ => Err(BackendError::Corrupt(format!(
            "key {bucket_start} in table {} is not a document start of that partition",
            partition.name()
        ))),
    }
}

/// The rollup documents of `series` starting in `[first, end)` in the partition table
/// `name`, regrouped from their slot rows and appended to `out`.
fn read_rows(
    table: &ReadOnlyTable<(u64, i64, u32), &'static [u8]>,
    read: &PartitionRead,
    out: &mut Vec<StoredBucket>,
) -> Result<()> {
    let name = read.partition.name();
    let (partition, series, part) = (read.partition, read.series, read.part);
    let mut current: Option<Target> = None;
    for entry in table
        .range((series.0, read.first, 0)..(series.0, read.end, 0))
        .map_err(storage)?
    {
        let (key, value) = entry.map_err(storage)?;
        let (_, bucket_start, slot) = key.value();
        if current.as_ref().is_none_or(|t| t.key.1 != bucket_start) {
            let t = stored_target(partition, series, bucket_start)?;
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
        let name = partition.name();
        let opened = |e| BackendError::Corrupt(format!("table {name}: {e}"));
        let empty = match partition.family().is_rollup() {
            false => txn
                .open_table(definition(&name))
                .map_err(opened)?
                .is_empty(),
            true => txn
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
