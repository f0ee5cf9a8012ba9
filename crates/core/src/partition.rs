//! Time partitions: how a store cuts time into the ranges it keeps (and drops) as whole
//! units — part files on the embedded store, collections on MongoDB.

use crate::rollup::Resolution;

/// The default width of a time partition: a day, as VictoriaMetrics' and InfluxDB's.
pub const DEFAULT_PARTITION_NS: i64 = 86_400_000_000_000;

/// How times map to partitions: `[k·width, (k+1)·width)`, clamped to the `i64` range at
/// both ends (the first and last partitions are shorter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitioning {
    width: i64,
}

impl Partitioning {
    /// `None` unless `width` is positive.
    pub fn new(width: i64) -> Option<Self> {
        (width > 0).then_some(Self { width })
    }

    /// The width of a partition, in ns.
    pub fn width(&self) -> i64 {
        self.width
    }

    /// The start of the partition holding `time`.
    pub fn start_of(&self, time: i64) -> i64 {
        let start = i128::from(time) - i128::from(time.rem_euclid(self.width));
        start.max(i128::from(i64::MIN)) as i64
    }

    /// The (exclusive) end of the partition holding `time` (its start, or any time in
    /// it), as `i128` so that the last partition can end after `i64::MAX`. The first
    /// partition starts at `i64::MIN` but ends where the next multiple of the width
    /// begins, not a whole width later, so that consecutive partitions tile time.
    pub fn end_of(&self, time: i64) -> i128 {
        i128::from(time) - i128::from(time.rem_euclid(self.width)) + i128::from(self.width)
    }

    /// [`end_of`](Self::end_of) clamped to `i64::MAX` (the last partition's end).
    pub fn clamped_end_of(&self, start: i64) -> i64 {
        self.end_of(start).min(i128::from(i64::MAX)) as i64
    }

    /// Whether every slot of `resolution` lies inside one partition: only those rollups
    /// are kept in part files, the others are summarised from raw points when read.
    pub fn holds_slots_of(&self, resolution: Resolution) -> bool {
        self.width % resolution.nanos() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_the_whole_time_range() {
        let by = Partitioning::new(10).unwrap();
        assert_eq!(by.start_of(0), 0);
        assert_eq!(by.start_of(9), 0);
        assert_eq!(by.start_of(-1), -10);
        assert_eq!(by.start_of(i64::MIN), i64::MIN);
        assert_eq!(by.start_of(i64::MIN + 1), i64::MIN);
        assert!(by.end_of(by.start_of(i64::MAX)) > i128::from(i64::MAX));
        for t in [i64::MIN, -11, -10, -1, 0, 5, i64::MAX] {
            let s = by.start_of(t);
            assert!(s <= t && i128::from(t) < by.end_of(s), "{t}");
        }
    }

    /// Walking from one partition's end to the next visits every partition once, the
    /// first (cut short by `i64::MIN`) included, whatever the width.
    #[test]
    fn the_first_partition_ends_where_the_second_begins() {
        for width in [10, 16, 224, 86_400_000_000_000] {
            let by = Partitioning::new(width).unwrap();
            let first_end = by.end_of(i64::MIN);
            assert!(first_end - i128::from(i64::MIN) <= i128::from(width));
            let second = by.start_of(first_end as i64);
            assert_eq!(i128::from(second), first_end, "width {width}");
            assert_eq!(by.start_of(second - 1), i64::MIN, "width {width}");
            assert_eq!(by.end_of(second - 1), first_end, "width {width}");
        }
    }
}
