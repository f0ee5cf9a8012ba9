//! Time buckets (`docs/design.md#bucket-documents-and-in-place-updates`): what the backend
//! stores for a measurement with `layout = "buckets"` and for every rollup, and the time
//! partitions those documents live in.
//!
//! A bucket is one document per (series, family, period); its geometry — period, slot
//! width, which slot holds a time — is [`BucketGeometry`], computed in core, so both
//! backends address the same slots. Every family's documents are split into time
//! partitions ([`BucketGeometry::partition_ns`]) per measurement, and retention drops
//! whole partitions.

use crate::BackendError;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{BucketGeometry, Resolution, ResolutionOrRaw, RollupUpdate};
use tickertape_core::{Point, SeriesId};

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
///
/// Invariant: the slot width has a [`BucketGeometry`]. The fields are private and the
/// constructors check it, so every holder of a family can ask for its geometry without a
/// fallback: a raw interval outside `0 < interval <= 364d` is refused where the family is
/// built, not wherever it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketFamily {
    /// The measurement's token from the name store ([`crate::NameKind::Measurement`]).
    /// A token, not the name, so that it can go into collection and table names.
    measurement: u64,
    slots: SlotKind,
    /// Derived from `slots`; kept so that [`geometry`](Self::geometry) cannot fail.
    geometry: BucketGeometry,
}

impl BucketFamily {
    /// The raw documents of a `layout = "buckets"` measurement sampled every
    /// `interval_ns`; `Invalid` naming the interval when no geometry holds it.
    pub fn raw(measurement: u64, interval_ns: i64) -> Result<Self, BackendError> {
        let geometry = BucketGeometry::for_slot(interval_ns).ok_or_else(|| {
            BackendError::Invalid(format!(
                "family: raw bucket interval {interval_ns} ns is not a valid slot width \
                 (0 < interval <= 364d)"
            ))
        })?;
        Ok(Self {
            measurement,
            slots: SlotKind::Raw { interval_ns },
            geometry,
        })
    }

    /// The documents of a measurement's rollup at `resolution`.
    pub fn rollup(measurement: u64, resolution: Resolution) -> Self {
        Self {
            measurement,
            slots: SlotKind::Rollup(resolution),
            geometry: resolution.geometry(),
        }
    }

    /// The measurement's name-store token.
    pub fn measurement(self) -> u64 {
        self.measurement
    }

    /// What the family's slots hold.
    pub fn slots(self) -> SlotKind {
        self.slots
    }

    /// Whether the slots hold rollup summaries (else raw values).
    pub fn is_rollup(self) -> bool {
        matches!(self.slots, SlotKind::Rollup(_))
    }

    /// The family's document geometry.
    pub fn geometry(self) -> BucketGeometry {
        self.geometry
    }

    /// The width of one slot, ns (the raw interval or the rollup resolution).
    pub fn slot_ns(self) -> i64 {
        self.geometry.slot_ns()
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
///
/// Invariant: `start` is a partition boundary of the family ([`Partition::new`] checks it),
/// so a partition has exactly one name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    family: BucketFamily,
    start: i64,
}

impl Partition {
    /// What every partition's name starts with.
    pub const NAME_PREFIX: &'static str = "bk.";

    /// The partition of `family` starting at `start`; `Invalid` unless `start` is one of
    /// the family's partition boundaries.
    pub fn new(family: BucketFamily, start: i64) -> Result<Self, BackendError> {
        let width = family.geometry().partition_ns();
        if start.rem_euclid(width) != 0 {
            return Err(BackendError::Invalid(format!(
                "partition start {start} is not a partition boundary of its family (every {width} ns)"
            )));
        }
        Ok(Self { family, start })
    }

    /// The partition holding the document of `family` that starts at `bucket_start`;
    /// `Invalid` when `bucket_start` is not a document start of the family, or lies so
    /// close to `i64::MIN` that its partition's start is not an `i64`.
    pub fn of_document(family: BucketFamily, bucket_start: i64) -> Result<Self, BackendError> {
        let g = family.geometry();
        if bucket_start.rem_euclid(g.period_ns()) != 0 {
            return Err(BackendError::Invalid(format!(
                "bucket_start {bucket_start} is not a multiple of the family's period ({} ns)",
                g.period_ns()
            )));
        }
        // Not `partition_of`: it saturates at i64::MIN, which would name a partition that
        // does not hold the document.
        let start = bucket_start
            .checked_sub(bucket_start.rem_euclid(g.partition_ns()))
            .ok_or_else(|| {
                BackendError::Invalid(format!(
                    "bucket_start {bucket_start} is before the earliest partition"
                ))
            })?;
        Ok(Self { family, start })
    }

    pub fn family(self) -> BucketFamily {
        self.family
    }

    /// The partition's first time, ns.
    pub fn start(self) -> i64 {
        self.start
    }

    /// The first time after this partition (saturating at `i64::MAX`).
    pub fn end(self) -> i64 {
        self.start
            .saturating_add(self.family.geometry().partition_ns())
    }

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
        let family = match kind {
            "raw" => BucketFamily::raw(measurement, slot_ns).ok()?,
            "roll" => BucketFamily::rollup(measurement, Resolution::new(slot_ns)?),
            _ => return None,
        };
        let partition = Partition::new(family, start).ok()?;
        (partition.name() == name).then_some(partition)
    }
}

/// Where one document of a family starts: a multiple of the family's period that has a
/// partition ([`Partition::of_document`]), checked once by [`DocumentStart::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentStart {
    partition: Partition,
    start: i64,
}

impl DocumentStart {
    /// The document of `family` starting at `bucket_start`; `Invalid` unless that is a
    /// document start with a partition.
    pub fn new(family: BucketFamily, bucket_start: i64) -> Result<Self, BackendError> {
        Ok(Self {
            partition: Partition::of_document(family, bucket_start)?,
            start: bucket_start,
        })
    }

    pub fn family(self) -> BucketFamily {
        self.partition.family
    }

    /// The partition holding the document.
    pub fn partition(self) -> Partition {
        self.partition
    }

    /// The document's first time, ns.
    pub fn start(self) -> i64 {
        self.start
    }
}

/// A change to one slot of one bucket document. The document is created when missing
/// (upsert); documents of a family live in the partition of their start.
///
/// Invariant, checked once by [`BucketWrite::new`]: `bucket_start` is a document start of
/// the family with a partition ([`Partition::of_document`]), `slot` is inside the
/// document, and the change is of the family's kind (`Set`/`Add` raw, `Merge` rollup).
/// Backends rely on it and check nothing again.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketWrite {
    partition: Partition,
    series: SeriesId,
    bucket_start: i64,
    slot: u32,
    change: SlotChange,
}

impl BucketWrite {
    /// A checked write; `Invalid` naming the argument that does not fit the family.
    pub fn new(
        family: BucketFamily,
        series: SeriesId,
        bucket_start: i64,
        slot: u32,
        change: SlotChange,
    ) -> Result<Self, BackendError> {
        let partition = Partition::of_document(family, bucket_start)?;
        let slots = family.geometry().slots();
        if slot >= slots {
            return Err(BackendError::Invalid(format!(
                "slot {slot} is out of range: documents of this family have {slots} slots"
            )));
        }
        let fits = match change {
            SlotChange::Set(_) | SlotChange::Add(_) => !family.is_rollup(),
            SlotChange::Merge { .. } => family.is_rollup(),
        };
        if !fits {
            let kind = if family.is_rollup() {
                "a rollup"
            } else {
                "a raw"
            };
            return Err(BackendError::Invalid(format!(
                "change: a {} change does not apply to {kind} family",
                change.name()
            )));
        }
        Ok(Self {
            partition,
            series,
            bucket_start,
            slot,
            change,
        })
    }

    /// The rollup write of one [`RollupUpdate`] of `batch` (the points the update was
    /// made from, in time order) for `series` of the measurement with token
    /// `measurement`: the one way the engine and the tools turn updates into writes.
    pub fn rollup(
        measurement: u64,
        series: SeriesId,
        update: &RollupUpdate,
        batch: &[Point],
    ) -> Result<Self, BackendError> {
        let values = batch
            .get(update.points.clone())
            .ok_or_else(|| {
                BackendError::Invalid(format!(
                    "rollup update of points {:?} outside a batch of {}",
                    update.points,
                    batch.len()
                ))
            })?
            .iter()
            .map(|p| p.value)
            .collect();
        Self::new(
            BucketFamily::rollup(measurement, update.resolution),
            series,
            update.bucket_start,
            update.slot,
            SlotChange::Merge {
                summary: update.summary,
                values,
            },
        )
    }

    pub fn family(&self) -> BucketFamily {
        self.partition.family
    }

    /// The partition holding the written document.
    pub fn partition(&self) -> Partition {
        self.partition
    }

    pub fn series(&self) -> SeriesId {
        self.series
    }

    /// Start of the document (a multiple of the family's period).
    pub fn bucket_start(&self) -> i64 {
        self.bucket_start
    }

    /// Index of the slot in the document (`< geometry.slots()`).
    pub fn slot(&self) -> u32 {
        self.slot
    }

    pub fn change(&self) -> &SlotChange {
        &self.change
    }
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
    /// Rollup: the slot becomes
    /// [`RollupUpdate::apply_to`](tickertape_core::rollup::RollupUpdate::apply_to) of what
    /// it held: a never-written slot takes `summary`; otherwise count, min, max, first and
    /// last merge as [`Summary::merge`] and the sum continues the stored sum with `values`
    /// added one at a time, left to right (`(stored + v₁) + v₂ …`). `values` are the
    /// points' values that `summary` summarises, in time order.
    Merge { summary: Summary, values: Vec<f64> },
}

impl SlotChange {
    /// `Set`, `Add` or `Merge`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Set(_) => "Set",
            Self::Add(_) => "Add",
            Self::Merge { .. } => "Merge",
        }
    }
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

/// The bucket documents a read asks for: those of `series` in `family` whose period
/// overlaps the half-open `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketRange {
    pub family: BucketFamily,
    pub series: SeriesId,
    pub start: i64,
    pub end: i64,
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
    use tickertape_core::rollup::MIN_BUCKET_TIME;

    const SECOND: i64 = 1_000_000_000;

    fn raw_seconds() -> BucketFamily {
        BucketFamily::raw(7, SECOND).unwrap()
    }

    #[test]
    fn partition_names_round_trip_and_refuse_near_misses() {
        let day = 86_400 * SECOND;
        for family in [raw_seconds(), BucketFamily::rollup(0, Resolution::MINUTE)] {
            for start in [-3 * day, 0, 5 * day] {
                let p = Partition::new(family, start).unwrap();
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
            "bk.-1.raw.1000000000.0",
            "segments",
        ] {
            assert_eq!(Partition::from_name(name), None, "{name}");
        }
    }

    #[test]
    fn families_without_a_geometry_are_refused_where_built() {
        for interval in [0, -1, 365 * 86_400 * SECOND] {
            match BucketFamily::raw(1, interval) {
                Err(BackendError::Invalid(msg)) => assert!(msg.contains("interval"), "{msg}"),
                other => panic!("{interval}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_write_arguments_are_named() {
        let hour = 3_600 * SECOND;
        let write = |bucket_start, slot, change| {
            BucketWrite::new(raw_seconds(), SeriesId(1), bucket_start, slot, change)
        };
        assert!(write(hour, 3599, SlotChange::Set(1.0)).is_ok());
        let merge = SlotChange::Merge {
            summary: tickertape_core::query::Summary::of(Point::new(0, 1.0)),
            values: vec![1.0],
        };
        for (result, word) in [
            (write(hour, 3600, SlotChange::Set(1.0)), "slot"),
            (write(1, 0, SlotChange::Set(1.0)), "bucket_start"),
            (write(hour, 0, merge.clone()), "change"),
            (
                BucketWrite::new(
                    BucketFamily::rollup(7, Resolution::MINUTE),
                    SeriesId(1),
                    0,
                    0,
                    SlotChange::Add(1.0),
                ),
                "change",
            ),
        ] {
            match result {
                Err(BackendError::Invalid(msg)) => {
                    assert!(msg.contains(word), "{msg} names {word}")
                }
                other => panic!("{word}: {other:?}"),
            }
        }
    }

    #[test]
    fn document_starts_off_the_period_are_refused() {
        let hour = 3_600 * SECOND;
        let minute = BucketFamily::rollup(7, Resolution::MINUTE);
        for (family, start) in [
            (raw_seconds(), 5),
            (raw_seconds(), hour + SECOND),
            (minute, 60 * SECOND),
        ] {
            match DocumentStart::new(family, start) {
                Err(BackendError::Invalid(msg)) => assert!(msg.contains("bucket_start"), "{msg}"),
                other => panic!("{start}: {other:?}"),
            }
        }
        let document = DocumentStart::new(minute, -hour).unwrap();
        assert_eq!((document.family(), document.start()), (minute, -hour));
        assert!(document.partition().start() <= -hour && -hour < document.partition().end());
    }

    #[test]
    fn the_earliest_documents_have_a_partition_and_earlier_ones_are_refused() {
        for family in [raw_seconds(), BucketFamily::rollup(7, Resolution::DAY)] {
            let (start, _) = family.geometry().slot_of(MIN_BUCKET_TIME).unwrap();
            let p = Partition::of_document(family, start).unwrap();
            assert!(p.start() <= start && start < p.end());
            assert_eq!(Partition::from_name(&p.name()), Some(p));
        }
        // The first hour document after i64::MIN lies in a day that starts before it.
        let hour = 3_600 * SECOND;
        let first_hour = i64::MIN + (hour - i64::MIN.rem_euclid(hour)) % hour;
        match Partition::of_document(raw_seconds(), first_hour) {
            Err(BackendError::Invalid(msg)) => assert!(msg.contains("earliest"), "{msg}"),
            other => panic!("{other:?}"),
        }
    }
}
