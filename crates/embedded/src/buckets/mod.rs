//! Time buckets (`docs/design.md#bucket-documents-and-in-place-updates`) in the embedded
//! store.
//!
//! Each partition of each family is one redb table, named after what it holds —
//! `bk.<measurement token>.<raw|roll>.<slot ns>.<partition start ns>` — so that the table
//! list is the partition list ([`list_partitions`]) and retention is one `delete_table`
//! ([`drop_partition`]), the embedded form of dropping a time-partitioned collection.
//! A raw partition's keys are `(series, bucket start)` and its values a [`Bucket`] document
//! (see [`codec`]); a rollup partition holds rows of 32 slots, `(series, bucket start,
//! row)` → the row's summaries (see [`rows`]).
//!
//! Writes arrive checked ([`BucketWrite::new`] in the backend crate), so the writer only
//! maps each to its [`Target`]: a bad write never reaches the group commit.

mod codec;
mod read;
mod rows;
mod write;

pub use codec::{Bucket, Peek};
pub use read::{list_partitions, read_buckets};
pub use write::{apply_writes, drop_partition, preallocate};

use redb::TableDefinition;
use tickertape_backend::{BackendError, BucketWrite, Partition, Result, SlotChange};
use tickertape_core::SeriesId;

/// The type of every raw bucket table: `(series id, bucket start ns)` → encoded [`Bucket`].
/// Rollup partitions are [`rows::RowTable`]s.
pub type BucketTable<'n> = TableDefinition<'n, (u64, i64), &'static [u8]>;

/// The table of a raw partition, by name.
pub fn definition(name: &str) -> BucketTable<'_> {
    TableDefinition::new(name)
}

/// The partition a table holds: `None` for a table that is not a bucket table, an error
/// for one that starts like a bucket table but names no partition this version writes.
pub fn parse_table_name(name: &str) -> Option<Result<Partition>> {
    name.starts_with(Partition::NAME_PREFIX).then(|| {
        Partition::from_name(name).ok_or_else(|| {
            BackendError::Corrupt(format!("table {name:?} is not a bucket partition's table"))
        })
    })
}

/// Where one document lives: its partition's table and its key there. Built only from
/// checked values ([`Partition::of_document`], a [`BucketWrite`]), so the table, key and
/// slots are consistent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Name of the partition's table.
    pub table: String,
    /// `(series, bucket start)`.
    pub key: (u64, i64),
    /// Slots per document of the family.
    pub slots: u32,
    /// Width of a slot in ns.
    pub slot_ns: i64,
    /// Whether the family holds rollup summaries, in rows of slots (else raw documents).
    pub rollup: bool,
}

impl Target {
    /// The document of `series` starting at `bucket_start` in `partition`.
    pub fn new(partition: Partition, series: SeriesId, bucket_start: i64) -> Self {
        let g = partition.family().geometry();
        Self {
            table: partition.name(),
            key: (series.0, bucket_start),
            slots: g.slots(),
            slot_ns: g.slot_ns(),
            rollup: partition.family().is_rollup(),
        }
    }

    /// The document a write goes to.
    pub fn of_write(write: &BucketWrite) -> Self {
        Self::new(write.partition(), write.series(), write.bucket_start())
    }

    /// `Corrupt` unless `stored` is a raw document of this target's family.
    pub fn check(&self, stored: &Peek) -> Result<()> {
        if !self.rollup && stored.slots == self.slots {
            return Ok(());
        }
        Err(BackendError::Corrupt(format!(
            "bucket {:?} in table {}: a raw document of {} slots where its family has {} \
             documents of {} slots",
            self.key,
            self.table,
            stored.slots,
            if self.rollup { "rollup" } else { "raw" },
            self.slots
        )))
    }

    /// The key of the row holding `slot` of a rollup document.
    pub fn row_key(&self, slot: u32) -> (u64, i64, u32) {
        (self.key.0, self.key.1, slot / rows::CHUNK_SLOTS)
    }

    /// The time `slot` starts at; wraps rather than overflows, since it is only the base
    /// that [`rows`] offsets times from.
    pub fn slot_start(&self, slot: u32) -> i64 {
        self.key
            .1
            .wrapping_add(i64::from(slot).wrapping_mul(self.slot_ns))
    }
}

/// A [`BucketWrite`] with the table and key of its document.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidWrite {
    pub target: Target,
    pub slot: u32,
    pub change: SlotChange,
}

impl From<BucketWrite> for ValidWrite {
    fn from(write: BucketWrite) -> Self {
        Self {
            target: Target::of_write(&write),
            slot: write.slot(),
            change: write.change().clone(),
        }
    }
}

/// The writes with their targets.
pub fn targets(writes: Vec<BucketWrite>) -> Vec<ValidWrite> {
    writes.into_iter().map(ValidWrite::from).collect()
}

#[cfg(test)]
/// Proptest strategies shared by the encodings' tests.
#[cfg(test)]
pub(crate) mod strategies {
    use proptest::prelude::*;

    /// Any f64 bit pattern, with the values that encodings get wrong most often (NaN
    /// payloads, both zeros, both infinities) drawn often.
    pub fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            Just(f64::NAN),
            Just(-0.0),
            Just(0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
        ]
    }
}
