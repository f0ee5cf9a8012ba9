//! Deleting points: the one range a delete takes ([`DeleteRange`]) and the rules every
//! backend keeps ([`ValueStore::delete_points`](crate::ValueStore::delete_points),
//! [`SeriesCatalog::remove_series`](crate::SeriesCatalog::remove_series)).

use thiserror::Error;

/// The times a delete removes: the half-open `[start, end)` of every other range, or every
/// time (`end` unbounded, so that a point at `i64::MAX` goes too).
///
/// Invariant, checked by [`DeleteRange::new`]: the range is not empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteRange {
    start: i64,
    /// Exclusive; `None`: no end (through `i64::MAX` included).
    end: Option<i64>,
}

/// Why a [`DeleteRange`] cannot be built.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("delete range: start {start} is not before end {end}")]
pub struct EmptyDeleteRange {
    pub start: i64,
    pub end: i64,
}

impl DeleteRange {
    /// `[start, end)`, each bound optional (no start: from `i64::MIN`; no end: through
    /// `i64::MAX`). Refused when it holds no time.
    pub fn new(start: Option<i64>, end: Option<i64>) -> Result<Self, EmptyDeleteRange> {
        let start_ns = start.unwrap_or(i64::MIN);
        match end {
            Some(end) if end <= start_ns => Err(EmptyDeleteRange {
                start: start_ns,
                end,
            }),
            _ => Ok(Self {
                start: start_ns,
                end,
            }),
        }
    }

    /// Every time: what deletes a series whole.
    pub fn all() -> Self {
        Self {
            start: i64::MIN,
            end: None,
        }
    }

    /// Whether it holds every time.
    pub fn is_all(&self) -> bool {
        self.start == i64::MIN && self.end.is_none()
    }

    pub fn start(&self) -> i64 {
        self.start
    }

    /// The exclusive end, `None` when the range runs through `i64::MAX`.
    pub fn end(&self) -> Option<i64> {
        self.end
    }

    /// The exclusive end as an `i128` (`i64::MAX + 1` when unbounded).
    pub fn end_exclusive(&self) -> i128 {
        self.end.map_or(i128::from(i64::MAX) + 1, i128::from)
    }

    /// The last time it holds.
    pub fn last(&self) -> i64 {
        self.end.map_or(i64::MAX, |e| e - 1)
    }

    pub fn contains(&self, time: i64) -> bool {
        time >= self.start && self.end.is_none_or(|end| time < end)
    }

    /// Whether it shares a time with the closed `[first, last]`.
    pub fn overlaps(&self, first: i64, last: i64) -> bool {
        first <= self.last() && last >= self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_half_open_and_the_whole_range_holds_every_time() {
        let r = DeleteRange::new(Some(10), Some(20)).unwrap();
        assert!(!r.contains(9) && r.contains(10) && r.contains(19) && !r.contains(20));
        assert!(r.overlaps(19, 30) && !r.overlaps(20, 30) && r.overlaps(0, 10));
        assert_eq!(r.last(), 19);
        let all = DeleteRange::all();
        assert!(all.is_all() && all.contains(i64::MIN) && all.contains(i64::MAX));
        assert_eq!(DeleteRange::new(None, None).unwrap(), all);
        let from = DeleteRange::new(Some(5), None).unwrap();
        assert!(!from.is_all() && from.contains(i64::MAX) && !from.contains(4));
        assert_eq!(
            DeleteRange::new(Some(3), Some(3)),
            Err(EmptyDeleteRange { start: 3, end: 3 })
        );
        assert!(DeleteRange::new(None, Some(i64::MIN)).is_err());
    }
}
