//! Time buckets (DESIGN §3, seeds 001, 003, 004): what the backend stores for a
//! measurement with `layout = "buckets"` and for every rollup, and the time partitions
//! those documents live in.
//!
//! A bucket is one document per (series, family, period); its geometry — period, slot
//! width, which slot holds a time — is [`BucketGeometry`], computed in core, so both
//! backends address the same slots. Every family's documents are split into time
//! partitions ([`BucketGeometry::partition_ns`]) per measurement, and retention drops
//! whole partitions.

use crate::BackendError;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{BucketGeometry, Resolution, ResolutionOrRaw};
use tickertape_core::SeriesId;

/// What a family's slots hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SlotKind {
    /// Raw periodic data of a `layout = "buckets"` measurement: one value per slot of
    /// `interval_ns` (`v.M.S`), plus the document's `n`, `sum`, `min`, `max`.
    Raw { interval_ns: i64 },
    /// A rollup: a [`Summary`] (count, sum, min, max, first, last) per slot.
    Rollup(Resolution),
}

/// The bucket documents of one measurement at one resolution: the unit of partitioning
/// and retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketFamily {
    /// The measurement's token from the name store ([`crate::NameSpace::Measurement`]).
    /// A token, not the name, so that it can go into collection and table names.
    pub measurement: u64,
    pub slots: SlotKind,
}

impl BucketFamily {
    /// The family's document geometry; `None` for a raw interval outside
    /// `0 < interval <= 364d` (the schema never configures one; backends refuse it).
    pub fn try_geometry(self) -> Option<BucketGeometry> {
        match self.slots {
            SlotKind::Raw { interval_ns } => BucketGeometry::for_slot(interval_ns),
            SlotKind::Rollup(r) => Some(r.geometry()),
        }
    }

    /// [`try_geometry`](Self::try_geometry), or `Invalid` naming the interval: what a
    /// backend calls on a family it was handed.
    pub fn checked_geometry(self) -> Result<BucketGeometry, BackendError> {
        self.try_geometry().ok_or_else(|| {
            BackendError::Invalid(format!(
                "family: raw bucket interval {} ns is not a valid slot width (0 < interval <= 364d)",
                self.slot_ns()
            ))
        })
    }

    /// The width of one slot, ns (the raw interval or the rollup resolution).
    pub fn slot_ns(self) -> i64 {
        match self.slots {
            SlotKind::Raw { interval_ns } => interval_ns,
            SlotKind::Rollup(r) => r.nanos(),
        }
    }

    /// [`try_geometry`](Self::try_geometry) for a family known to be valid (one built from
    /// a validated schema, or checked by the backend). An invalid raw interval gets the
    /// geometry of the 1m rollup rather than a panic.
    pub fn geometry(self) -> BucketGeometry {
        self.try_geometry()
            .unwrap_or_else(|| Resolution::MINUTE.geometry())
    }

    /// `raw` or the rollup's resolution (`1m`): the retention key of this family.
    pub fn resolution(self) -> ResolutionOrRaw {
        match self.slots {
            SlotKind::Raw { .. } => ResolutionOrRaw::Raw,
            SlotKind::Rollup(r) => ResolutionOrRaw::Rollup(r),
        }
    }
}

/// One time partition of a family: the documents whose period starts in
/// `[start, start + family.geometry().partition_ns())`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    pub family: BucketFamily,
    pub start: i64,
}

impl Partition {
    /// What every partition's name starts with.
    pub const NAME_PREFIX: &'static str = "bk.";

    /// The name of the partition's table (embedded) or collection (MongoDB):
    /// `bk.<measurement token>.<raw|roll>.<slot ns>.<start ns>`. Integers and fixed words
    /// only, so it is a valid name whatever the user's names are, and one family's
    /// partitions list together.
    pub fn name(self) -> String {
        let kind = match self.family.slots {
            SlotKind::Raw { .. } => "raw",
            SlotKind::Rollup(_) => "roll",
        };
        format!(
            "{}{}.{kind}.{}.{}",
            Self::NAME_PREFIX,
            self.family.measurement,
            self.family.slot_ns(),
            self.start
        )
    }

    /// The partition a name stands for: `None` unless the name is exactly what
    /// [`name`](Self::name) writes for a valid family and a start on a partition boundary
    /// (no `+1`, no leading zeros), so that a partition maps back to one name only.
    pub fn from_name(name: &str) -> Option<Self> {
        let rest = name.strip_prefix(Self::NAME_PREFIX)?;
        let mut parts = rest.split('.');
        let measurement = parts.next()?.parse().ok()?;
        let kind = parts.next()?;
        let slot_ns: i64 = parts.next()?.parse().ok()?;
        let start: i64 = parts.next()?.parse().ok()?;
        if parts.next().is_some() {
            return None;
        }
        let slots = match kind {
            "raw" => SlotKind::Raw {
                interval_ns: slot_ns,
            },
            "roll" => SlotKind::Rollup(Resolution::new(slot_ns)?),
            _ => return None,
        };
        let family = BucketFamily { measurement, slots };
        let geometry = family.try_geometry()?;
        let partition = Partition { family, start };
        let canonical = geometry.partition_of(start) == start && partition.name() == name;
        canonical.then_some(partition)
    }

    /// The first time after this partition (saturating at `i64::MAX`).
    pub fn end(self) -> i64 {
        self.start
            .saturating_add(self.family.geometry().partition_ns())
    }
}

/// A change to one slot of one bucket document. The document is created when missing
/// (upsert); documents of a family live in the partition of their start.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketWrite {
    pub family: BucketFamily,
    pub series: SeriesId,
    /// Start of the document (a multiple of the family's period).
    pub bucket_start: i64,
    /// Index of the slot in the document (`< geometry.slots()`).
    pub slot: u32,
    pub change: SlotChange,
}

/// What a [`BucketWrite`] does to its slot.
#[derive(Clone, Debug, PartialEq)]
pub enum SlotChange {
    /// Raw gauge: store `value` in a slot that holds none (never written, or only
    /// pre-allocated), and add it to the document's `n`, `sum`, `min`, `max` (`sum` as
    /// `stored + value`). A slot that already holds a value is left as it is and the write
    /// reported refused ([`BucketWriteOutcome::SlotTaken`]) — the bucket form of refusing
    /// a late point.
    Set(f64),
    /// Raw counter (`mode=inc`): add `value` to the slot (an absent slot counts as 0) and
    /// to the document's `sum`; `n` counts increments, `min`/`max` are of the increments.
    Add(f64),
    /// Rollup: the slot becomes [`RollupUpdate::apply_to`](tickertape_core::rollup::RollupUpdate::apply_to)
    /// of what it held: a never-written slot takes `summary`; otherwise count, min, max,
    /// first and last merge as [`Summary::merge`] and the sum continues the stored sum
    /// with `values` added one at a time, left to right (`(stored + v₁) + v₂ …`).
    /// `values` are the points' values that `summary` summarises, in time order.
    Merge { summary: Summary, values: Vec<f64> },
}

/// What became of one [`BucketWrite`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketWriteOutcome {
    Applied,
    /// A [`SlotChange::Set`] to a slot that already held a value; nothing changed.
    SlotTaken,
}

/// The content of one stored slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SlotValue {
    /// A raw slot's value (a counter's total).
    Value(f64),
    /// A rollup slot's summary.
    Summary(Summary),
}

/// The document-level summary fields of a raw bucket (`n`, `sum`, `min`, `max`): what
/// `agg=avg` over a whole document reads instead of its slots. `sum` is the values added
/// in the order they were written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketTotals {
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
}

/// One stored bucket document as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredBucket {
    pub series: SeriesId,
    pub bucket_start: i64,
    /// Raw documents' `n`/`sum`/`min`/`max`; `None` for rollups and for a pre-allocated
    /// document nothing was written to.
    pub totals: Option<BucketTotals>,
    /// The written slots, by slot index ascending. A slot that was pre-allocated but never
    /// written is absent here — never reported as 0 — and a written 0 is `Value(0.0)`.
    /// Empty when the read asked for totals only.
    pub slots: Vec<(u32, SlotValue)>,
}

/// Which part of bucket documents a read wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketRead {
    /// Slots and totals.
    Full,
    /// Only [`StoredBucket::totals`] (a projection: slots are not shipped).
    TotalsOnly,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_round_trip_and_refuse_near_misses() {
        let day = 86_400_000_000_000;
        for family in [
            BucketFamily {
                measurement: 7,
                slots: SlotKind::Raw {
                    interval_ns: 1_000_000_000,
                },
            },
            BucketFamily {
                measurement: 0,
                slots: SlotKind::Rollup(Resolution::MINUTE),
            },
        ] {
            for start in [-3 * day, 0, 5 * day] {
                let p = Partition { family, start };
                assert_eq!(Partition::from_name(&p.name()), Some(p), "{}", p.name());
            }
        }
        for name in [
            "bk.7.raw.1000000000.86400000000001",
            "bk.7.raw.1000000000.+0",
            "bk.07.raw.1000000000.0",
            "bk.7.raw.0.0",
            "bk.7.roll.-5.0",
            "bk.7.rows.1000000000.0",
            "bk.7.raw.1000000000.0.x",
            "segments",
        ] {
            assert_eq!(Partition::from_name(name), None, "{name}");
        }
    }
}
