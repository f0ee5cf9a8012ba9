//! The time-partitioned collections of layout version 3, as names and index lists: pure,
//! so that `tickertape-bench` counts collections, indexes and chunks from this very code.
//!
//! Time is cut three ways, each a multiple of the one before (`Periods`):
//! - a **slice** (`pw`, a day by default): the unit a document never spans, a fold merges,
//!   a rollup document summarises and retention drops;
//! - a **value collection** (`cs` slices, 14 by default): `sv.<start>` holds the points
//!   of every measurement in its period;
//! - a **rollup collection** (`rs` slices, 56 by default): `sr.<resolution ns>.<start>`
//!   holds every measurement's rollup documents at one resolution in its period.
//!
//! So collections grow with time only, never with the number of measurements: a year of
//! the defaults is 27 value collections and 7 rollup collections per kept resolution.

use mongodb::bson::{doc, Document};
use tickertape_core::partition::Partitioning;

/// Slices per value collection by default: two weeks (see `docs/format/mongodb.md`,
/// "Why two weeks": a 30-day read touches 3 or 4 collections, a year makes 27).
pub const DEFAULT_VALUE_SLICES: u32 = 14;

/// Slices per rollup collection by default: 8 weeks (a rollup document per series and
/// slice is small; fewer, longer collections keep a year's rollups at 7 per resolution).
pub const DEFAULT_ROLLUP_SLICES: u32 = 56;

/// Reads name the collections of their range directly up to this many; past it (a read
/// of all time) one `listCollections` picks the ones that exist.
pub const MAX_NAMED_COLLECTIONS: usize = 16;

/// How a store cuts time: slices, value collections, rollup collections (all in ns,
/// each a multiple of the slice). Fixed per database (`meta` `{_id: "layout"}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Periods {
    slice_ns: i64,
    value_ns: i64,
    rollup_ns: i64,
    slices: Partitioning,
    values: Partitioning,
    rollups: Partitioning,
}

impl Periods {
    /// `None` unless every width is positive and fits an `i64`.
    pub fn new(slice_ns: i64, value_slices: u32, rollup_slices: u32) -> Option<Self> {
        let value_ns = slice_ns.checked_mul(i64::from(value_slices))?;
        let rollup_ns = slice_ns.checked_mul(i64::from(rollup_slices))?;
        Some(Self {
            slice_ns,
            value_ns,
            rollup_ns,
            slices: Partitioning::new(slice_ns)?,
            values: Partitioning::new(value_ns)?,
            rollups: Partitioning::new(rollup_ns)?,
        })
    }

    /// Slices: what a document never spans.
    pub fn slices(&self) -> Partitioning {
        self.slices
    }

    /// Value collections' periods.
    pub fn values(&self) -> Partitioning {
        self.values
    }

    /// Rollup collections' periods.
    pub fn rollups(&self) -> Partitioning {
        self.rollups
    }

    pub fn slice_ns(&self) -> i64 {
        self.slice_ns
    }

    pub fn value_slices(&self) -> i64 {
        self.value_ns / self.slice_ns
    }

    pub fn rollup_slices(&self) -> i64 {
        self.rollup_ns / self.slice_ns
    }
}

/// The value collection of the period starting at `start`: `sv.<start>`.
pub fn value_collection(start: i64) -> String {
    format!("sv.{start}")
}

/// The rollup collection of one resolution and the period starting at `start`:
/// `sr.<resolution ns>.<start>`.
pub fn rollup_collection(resolution_ns: i64, start: i64) -> String {
    format!("sr.{resolution_ns}.{start}")
}

/// A value collection (`resolution: None`) or a rollup collection, as named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionName {
    pub resolution: Option<i64>,
    pub start: i64,
}

impl PartitionName {
    pub fn values(start: i64) -> Self {
        Self {
            resolution: None,
            start,
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        let mut parts = name.split('.');
        let kind = parts.next()?;
        let (resolution, start) = match kind {
            "sv" => (None, parts.next()?.parse().ok()?),
            "sr" => (
                Some(parts.next()?.parse().ok()?),
                parts.next()?.parse().ok()?,
            ),
            _ => return None,
        };
        match parts.next() {
            Some(_) => None,
            None => Some(Self { resolution, start }),
        }
    }

    pub fn collection(&self) -> String {
        match self.resolution {
            None => value_collection(self.start),
            Some(r) => rollup_collection(r, self.start),
        }
    }
}

/// The collections every store has beside its partitions, with how many secondary
/// indexes each gets (`connect`'s `create_indexes`; `_id` comes with every one):
/// `series` the unique key, the measurement/field and the tag index; `names` and
/// `measurements` one lookup index each.
pub const FIXED_COLLECTIONS: &[(&str, usize)] = &[
    ("series", 3),
    ("names", 1),
    ("measurements", 1),
    ("tag_values", 0),
    ("meta", 0),
    ("counters", 0),
    ("pending", 0),
    ("api_tokens", 0),
    ("databases", 0),
];

/// One secondary index of a partition collection.
pub struct IndexSpec {
    pub name: &'static str,
    pub keys: Document,
    pub sparse: bool,
}

/// The secondary indexes of a value collection (`_id` comes with every collection):
/// - `series_last` `{s, hi, hw}`: range reads, heads, both neighbours;
/// - `pending` `{d}` sparse: the fold's work list, only documents waiting hold `d`;
/// - `measurement_last` `{m, hi}`: one measurement's documents of the slices retention
///   drops, a range of this index.
pub fn value_indexes() -> Vec<IndexSpec> {
    vec![
        IndexSpec {
            name: "series_last",
            keys: doc! { "s": 1, "hi": 1, "hw": 1 },
            sparse: false,
        },
        IndexSpec {
            name: "pending",
            keys: doc! { "d": 1 },
            sparse: true,
        },
        IndexSpec {
            name: "measurement_last",
            keys: doc! { "m": 1, "hi": 1 },
            sparse: false,
        },
    ]
}

/// The secondary indexes of a rollup collection: `measurement_slice` `{m, p}`, what
/// rollup retention deletes by. Reads and fold writes use `_id` (`{s, p}`).
pub fn rollup_indexes() -> Vec<IndexSpec> {
    vec![IndexSpec {
        name: "measurement_slice",
        keys: doc! { "m": 1, "p": 1 },
        sparse: false,
    }]
}

/// The starts of the periods of `by` that meet `[first, last]` (both inclusive), in
/// order; `None` when there are more than `max` (the caller lists what exists instead).
pub fn periods_between(by: Partitioning, first: i64, last: i64, max: usize) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    if last < first {
        return Some(out);
    }
    let mut start = by.start_of(first);
    loop {
        if out.len() == max {
            return None;
        }
        out.push(start);
        let next = by.end_of(start);
        if next > i128::from(last) {
            return Some(out);
        }
        start = next as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        for name in [
            PartitionName::values(-86_400),
            PartitionName {
                resolution: Some(3_600),
                start: 1_700_000_000,
            },
        ] {
            assert_eq!(PartitionName::parse(&name.collection()), Some(name));
        }
        for stranger in [
            "sv.x", "sv", "sv.1.2", "bk.1.2", "sr.1", "sr.1.2.3", "series",
        ] {
            assert_eq!(PartitionName::parse(stranger), None, "{stranger}");
        }
    }

    #[test]
    fn periods_between_covers_the_range_or_gives_up() {
        let by = Partitioning::new(10).unwrap();
        assert_eq!(periods_between(by, 5, 25, 16), Some(vec![0, 10, 20]));
        assert_eq!(periods_between(by, 10, 10, 16), Some(vec![10]));
        assert_eq!(periods_between(by, 11, 10, 16), Some(vec![]));
        assert_eq!(periods_between(by, 0, 1_000, 16), None);
        let near_max = periods_between(by, i64::MAX - 3, i64::MAX, 16).unwrap();
        assert_eq!(near_max.len(), 1);
        let near_min = periods_between(by, i64::MIN, i64::MIN + 12, 16).unwrap();
        assert_eq!(near_min.len(), 2);
        assert!(Periods::new(i64::MAX / 2, 3, 1).is_none());
    }
}
