//! Time buckets (DESIGN §3, seeds 001, 003, 004) in the embedded store.
//!
//! Each partition of each family is one redb table, named after what it holds —
//! `bk.<measurement token>.<raw|roll>.<slot ns>.<partition start ns>` — so that the table
//! list is the partition list ([`list_partitions`]) and retention is one `delete_table`
//! ([`drop_partition`]), the embedded form of dropping a time-partitioned collection.
//! A raw partition's keys are `(series, bucket start)` and its values a [`Bucket`] document
//! (see [`codec`]); a rollup partition holds rows of 32 slots, `(series, bucket start,
//! row)` → the row's summaries (see [`rows`]).
//!
//! Arguments are checked before a job reaches the writer thread ([`validate_writes`],
//! [`target`]): a bad write never costs the group commit anything, and the writer works
//! only with [`Target`]s whose table, key and slot are known to be consistent.

mod codec;
mod read;
mod rows;
mod write;

pub use codec::{Bucket, Peek};
pub use read::{list_partitions, read_buckets};
pub use write::{apply_writes, drop_partition, preallocate};

use redb::TableDefinition;
use tickertape_backend::{
    BackendError, BucketFamily, BucketWrite, Partition, Result, SlotChange, SlotKind,
};
use tickertape_core::rollup::BucketGeometry;
use tickertape_core::SeriesId;

/// The type of every raw bucket table: `(series id, bucket start ns)` → encoded [`Bucket`].
/// Rollup partitions are [`rows::RowTable`]s.
pub type BucketTable<'n> = TableDefinition<'n, (u64, i64), &'static [u8]>;

/// The table of a raw partition, by name.
pub fn definition(name: &str) -> BucketTable<'_> {
    TableDefinition::new(name)
}

/// The geometry of a family's documents; `Invalid` for a raw interval no geometry holds.
pub fn geometry(family: BucketFamily) -> Result<BucketGeometry> {
    family.checked_geometry()
}

/// The name of a partition's table ([`Partition::name`]).
pub fn table_name(partition: Partition) -> String {
    partition.name()
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

/// Where one document lives, checked against its family's geometry.
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

/// The document of `series` starting at `bucket_start` in `family`.
pub fn target(family: BucketFamily, series: SeriesId, bucket_start: i64) -> Result<Target> {
    let g = geometry(family)?;
    if bucket_start.rem_euclid(g.period_ns()) != 0 {
        return Err(BackendError::Invalid(format!(
            "bucket_start {bucket_start} is not a multiple of the family's period ({} ns)",
            g.period_ns()
        )));
    }
    // Not `partition_of`: its start saturates at i64::MIN, which would name a partition
    // that does not hold the document.
    let start = bucket_start
        .checked_sub(bucket_start.rem_euclid(g.partition_ns()))
        .ok_or_else(|| {
            BackendError::Invalid(format!(
                "bucket_start {bucket_start} is before the earliest partition"
            ))
        })?;
    Ok(Target {
        table: table_name(Partition { family, start }),
        key: (series.0, bucket_start),
        slots: g.slots(),
        slot_ns: g.slot_ns(),
        rollup: matches!(family.slots, SlotKind::Rollup(_)),
    })
}

/// A [`BucketWrite`] whose slot, start and change fit its family.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidWrite {
    pub target: Target,
    pub slot: u32,
    pub change: SlotChange,
}

/// Checks every write; the first bad one refuses the whole call, naming the argument.
pub fn validate_writes(writes: Vec<BucketWrite>) -> Result<Vec<ValidWrite>> {
    writes
        .into_iter()
        .enumerate()
        .map(|(i, w)| validate_write(w).map_err(|e| in_write(i, e)))
        .collect()
}

fn validate_write(w: BucketWrite) -> Result<ValidWrite> {
    let target = target(w.family, w.series, w.bucket_start)?;
    if w.slot >= target.slots {
        return Err(BackendError::Invalid(format!(
            "slot {} is out of range: documents of this family have {} slots",
            w.slot, target.slots
        )));
    }
    let fits = match w.change {
        SlotChange::Set(_) | SlotChange::Add(_) => !target.rollup,
        SlotChange::Merge { .. } => target.rollup,
    };
    if !fits {
        let (change, family) = if target.rollup {
            ("Set/Add", "a rollup")
        } else {
            ("Merge", "a raw")
        };
        return Err(BackendError::Invalid(format!(
            "change: {change} does not apply to {family} family"
        )));
    }
    Ok(ValidWrite {
        target,
        slot: w.slot,
        change: w.change,
    })
}

fn in_write(index: usize, e: BackendError) -> BackendError {
    match e {
        BackendError::Invalid(msg) => BackendError::Invalid(format!("write {index}: {msg}")),
        other => other,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::rollup::Resolution;

    fn raw(interval_ns: i64) -> BucketFamily {
        BucketFamily {
            measurement: 7,
            slots: SlotKind::Raw { interval_ns },
        }
    }

    #[test]
    fn table_names_round_trip() {
        for family in [
            raw(1_000_000_000),
            raw(7_000_000_000),
            raw(1),
            BucketFamily {
                measurement: u64::MAX,
                slots: SlotKind::Rollup(Resolution::DAY),
            },
        ] {
            let g = geometry(family).unwrap();
            for start in [0, g.partition_ns() * 3, -g.partition_ns() * 10] {
                let p = Partition { family, start };
                let name = table_name(p);
                assert_eq!(parse_table_name(&name).unwrap().unwrap(), p, "{name}");
            }
        }
    }

    #[test]
    fn other_tables_are_not_partitions() {
        for name in ["segments", "meta", "bkx", "bk"] {
            assert!(parse_table_name(name).is_none(), "{name}");
        }
        for name in [
            "bk.1.raw.1000000000",
            "bk.1.raw.1000000000.1.2",
            "bk.1.cooked.1000000000.0",
            "bk.1.raw.0.0",
            "bk.1.raw.1000000000.+0",
            "bk.1.raw.1000000000.00",
            "bk.1.raw.1000000000.5",
            "bk.-1.raw.1000000000.0",
        ] {
            assert!(
                matches!(parse_table_name(name), Some(Err(BackendError::Corrupt(_)))),
                "{name}"
            );
        }
    }

    #[test]
    fn bad_arguments_are_named() {
        let ok = BucketWrite {
            family: raw(1_000_000_000),
            series: SeriesId(1),
            bucket_start: 3_600_000_000_000,
            slot: 3599,
            change: SlotChange::Set(1.0),
        };
        assert!(validate_writes(vec![ok.clone()]).is_ok());
        let cases = [
            (
                BucketWrite {
                    slot: 3600,
                    ..ok.clone()
                },
                "slot",
            ),
            (
                BucketWrite {
                    bucket_start: 1,
                    ..ok.clone()
                },
                "bucket_start",
            ),
            (
                BucketWrite {
                    family: raw(0),
                    ..ok.clone()
                },
                "family",
            ),
            (
                BucketWrite {
                    change: SlotChange::Merge {
                        summary: tickertape_core::query::Summary::of(tickertape_core::Point::new(
                            0, 1.0,
                        )),
                        values: vec![1.0],
                    },
                    ..ok.clone()
                },
                "change",
            ),
        ];
        for (w, word) in cases {
            match validate_writes(vec![ok.clone(), w]) {
                Err(BackendError::Invalid(msg)) => {
                    assert!(msg.starts_with("write 1: "), "{msg}");
                    assert!(msg.contains(word), "{msg} should name {word}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn earliest_documents_have_a_partition() {
        let family = raw(1_000_000_000);
        let g = geometry(family).unwrap();
        let (start, _) = g.slot_of(tickertape_core::rollup::MIN_BUCKET_TIME).unwrap();
        let t = target(family, SeriesId(1), start).unwrap();
        let p = parse_table_name(&t.table).unwrap().unwrap();
        assert!(p.start <= start && start < p.end());
    }
}
