//! Which partitions a read of a time range opens: the one algorithm both backends use, so
//! that they read the same documents for the same range.

use crate::buckets::{BucketFamily, BucketRange, Partition};
use tickertape_core::rollup::MIN_BUCKET_TIME;
use tickertape_core::time::window_start;

/// Up to this many partitions in a read's range are addressed by name (a table or
/// collection that does not exist is cheap to miss). Beyond, the backend lists the
/// partitions that exist and keeps those in range, so that a read over centuries does not
/// try millions of names: an open range (`start=i64::MIN`) is the common case.
pub const MAX_NAMED_PARTITIONS: i128 = 32;

/// The documents of one family that overlap a half-open range `[start, end)`: those whose
/// start lies in `[first, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentSpan {
    family: BucketFamily,
    /// Start of the first document that can overlap the range (its period may begin
    /// before `start`); never before the document of [`MIN_BUCKET_TIME`].
    first: i64,
    end: i64,
}

impl DocumentSpan {
    /// The documents a bucket read covers; `None` when none can.
    pub fn of(range: BucketRange) -> Option<Self> {
        Self::new(range.family, range.start, range.end)
    }

    /// The documents of `family` overlapping `[start, end)`; `None` when none can.
    pub fn new(family: BucketFamily, start: i64, end: i64) -> Option<Self> {
        if end <= start {
            return None;
        }
        // The document of MIN_BUCKET_TIME starts before it, so a range ending at or just
        // before MIN_BUCKET_TIME can still overlap that document's period.
        let first = window_start(start.max(MIN_BUCKET_TIME), family.geometry().period_ns());
        (first < end).then_some(Self { family, first, end })
    }

    /// Start of the first document in the span.
    pub fn first(&self) -> i64 {
        self.first
    }

    /// The end of the range: documents start before it.
    pub fn end(&self) -> i64 {
        self.end
    }

    /// The starts of the first and the last partition holding documents of the span.
    fn partition_bounds(&self) -> (i64, i64) {
        let width = self.family.geometry().partition_ns();
        // `first` is a document start at or after MIN_BUCKET_TIME's, whose partition start
        // is an i64 (see `Partition::of_document`); `end - 1 >= first` by construction.
        (
            window_start(self.first, width),
            window_start(self.end - 1, width),
        )
    }

    /// Every partition of the span by name, in time order, when there are at most
    /// [`MAX_NAMED_PARTITIONS`]; `None` when the caller should list what exists and keep
    /// it through [`select`](Self::select).
    pub fn named_partitions(&self) -> Option<Vec<Partition>> {
        let width = self.family.geometry().partition_ns();
        let (low, high) = self.partition_bounds();
        let count = (i128::from(high) - i128::from(low)) / i128::from(width) + 1;
        if count > MAX_NAMED_PARTITIONS {
            return None;
        }
        let starts = std::iter::successors(Some(low), |s| s.checked_add(width));
        starts
            .take_while(|&s| s <= high)
            .map(|start| Partition::new(self.family, start).ok())
            .collect()
    }

    /// The partitions among `listed` (every partition that exists) that hold documents of
    /// the span, in time order.
    pub fn select(&self, listed: impl IntoIterator<Item = Partition>) -> Vec<Partition> {
        let (low, high) = self.partition_bounds();
        let mut found: Vec<Partition> = listed
            .into_iter()
            .filter(|p| p.family() == self.family && (low..=high).contains(&p.start()))
            .collect();
        found.sort_unstable();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::rollup::Resolution;

    const HOUR: i64 = 3_600_000_000_000;
    const DAY: i64 = 24 * HOUR;

    #[test]
    fn named_and_listed_partitions_agree() {
        let family = BucketFamily::raw(1, 1_000_000_000).unwrap();
        let other = BucketFamily::rollup(1, Resolution::MINUTE);
        let existing: Vec<Partition> = (-40..40)
            .flat_map(|d| {
                [
                    Partition::new(family, d * DAY),
                    Partition::new(other, d * DAY),
                ]
            })
            .map(|p| p.unwrap())
            .collect();
        for (start, end) in [
            (0, 1),
            (-HOUR / 2, HOUR / 2),
            (-3 * DAY - 1, 5 * DAY),
            (5, DAY),
        ] {
            let span = DocumentSpan::new(family, start, end).unwrap();
            let named = span.named_partitions().expect("few partitions are named");
            let named_existing: Vec<Partition> =
                named.into_iter().filter(|p| existing.contains(p)).collect();
            assert_eq!(
                named_existing,
                span.select(existing.clone()),
                "[{start}, {end})"
            );
        }
    }

    #[test]
    fn long_ranges_are_listed_not_named() {
        let family = BucketFamily::raw(1, 1_000_000_000).unwrap();
        let span = DocumentSpan::new(family, i64::MIN, i64::MAX).unwrap();
        assert_eq!(span.named_partitions(), None);
        assert!(span.first() >= window_start(MIN_BUCKET_TIME, HOUR));
        let listed = [Partition::new(family, 0).unwrap()];
        assert_eq!(span.select(listed), listed.to_vec());
    }

    #[test]
    fn empty_ranges_have_no_span() {
        let family = BucketFamily::rollup(1, Resolution::HOUR);
        assert_eq!(DocumentSpan::new(family, 5, 5), None);
        assert_eq!(DocumentSpan::new(family, 5, 4), None);
        let first = window_start(MIN_BUCKET_TIME, family.geometry().period_ns());
        assert_eq!(DocumentSpan::new(family, i64::MIN, first), None);
    }

    /// The document holding MIN_BUCKET_TIME starts before it: a range that ends at
    /// MIN_BUCKET_TIME overlaps that document's period, so it is in the span.
    #[test]
    fn the_earliest_document_overlaps_ranges_ending_before_its_points() {
        let family = BucketFamily::rollup(1, Resolution::HOUR);
        let first = window_start(MIN_BUCKET_TIME, family.geometry().period_ns());
        assert!(first < MIN_BUCKET_TIME);
        let span = DocumentSpan::new(family, i64::MIN, MIN_BUCKET_TIME).expect("a span");
        assert_eq!((span.first(), span.end()), (first, MIN_BUCKET_TIME));
    }
}
