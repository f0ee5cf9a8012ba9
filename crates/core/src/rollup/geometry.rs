//! Which document, and which slot in it, holds a timestamp: the lookup function of bucket
//! documents (docs/design.md#bucket-documents-and-in-place-updates), for raw periodic buckets
//! and for rollups alike.

use super::resolution::{Resolution, MAX_RESOLUTION_NS};
use crate::time::{window_start, NANOS_PER_SECOND};

const SECOND: i64 = NANOS_PER_SECOND;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// Document spans to choose from, shortest first. Each is a whole multiple of the one
/// before (1h | 1d | 7d | 28d | 364d), so the boundary of a longer document is a boundary
/// of every shorter one: a partition cut at multiples of a longer span never splits a
/// document. 364 days rather than a calendar year: 52 whole weeks keeps the nesting and
/// the math free of leap years; the "year" documents drift against the calendar by a day
/// or two a year, which no one sees, since documents are addressed by start time.
const SPANS: [i64; 5] = [HOUR, DAY, 7 * DAY, 28 * DAY, 364 * DAY];

/// Spans for slots under a second, longest first (see [`BucketGeometry::for_slot`]).
const SHORT_SPANS: [i64; 2] = [MINUTE, SECOND];

/// Fewest slots a document should hold: below this a chart at the document's resolution
/// reads more documents than it gets points from each (one document per minute of
/// readings instead of one per reading is what cuts a read sixty-fold).
const MIN_SLOTS: i64 = 60;

/// Most slots a document should hold: an hour of one-second values (`v.M.S`). More
/// elements than that cost on every write and read, since every in-place update walks
/// the document and every read ships all of it.
const MAX_SLOTS: i64 = 3_600;

/// The longest document any geometry produces: 60 slots of the longest resolution.
pub const MAX_PERIOD_NS: i64 = MIN_SLOTS * MAX_RESOLUTION_NS;

/// The earliest timestamp that has a bucket at every geometry (1737-07-09, UTC).
///
/// Documents start at multiples of their period since the epoch; for times within one
/// period of `i64::MIN` that start is not an `i64`. Such points cannot be bucketed or
/// rolled up, so the engine refuses them ([`RollupError::TooEarly`](super::RollupError)).
/// The bound is the same for every geometry so that a point is either bucketed at every
/// resolution or refused, never rolled up at some and not others.
pub const MIN_BUCKET_TIME: i64 = i64::MIN + MAX_PERIOD_NS;

/// The shape of one series' bucket documents at one resolution: each covers `period_ns`,
/// starts at a multiple of it since the Unix epoch, and holds `period_ns / slot_ns` slots,
/// slot `i` covering `[start + i·slot_ns, start + (i+1)·slot_ns)`.
///
/// Invariant: `0 < slot_ns <= MAX_RESOLUTION_NS` and `period_ns` is a whole multiple of
/// `slot_ns`, so slots are aligned to multiples of `slot_ns` since the epoch too, and the
/// slot of a time is the query window of width `slot_ns` that holds it.
///
/// The periods [`for_slot`](Self::for_slot) picks, for the standard widths:
///
/// | slots of | one document covers | slots per document |
/// |---|---|---|
/// | raw, every 1s | 1 hour | 3600 (`v.M.S`: minute → second) |
/// | raw, every 10s | 1 hour | 360 |
/// | raw every 1m, or the 1m rollup | 1 hour | 60 |
/// | raw every 5m, or the 5m rollup | 1 day | 288 |
/// | the 1h rollup | 7 days | 168 |
/// | the 1d rollup | 364 days | 364 |
///
/// All periods are fixed lengths of time, never calendar months or years: finding the
/// document of a timestamp is one Euclidean division, with no calendar, leap day or time
/// zone to consult, and it works the same before the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketGeometry {
    period_ns: i64,
    slot_ns: i64,
}

impl BucketGeometry {
    /// The geometry of the documents holding slots of `slot_ns` (a raw sampling interval or
    /// a rollup resolution); `None` unless `0 < slot_ns <= MAX_RESOLUTION_NS`.
    ///
    /// The period is the shortest of 1h, 1d, 7d, 28d, 364d that holds at least 60 slots
    /// (beyond that, 60 slots). Slots under a second would make an hour hold more than
    /// 3600; for them it is the longest of 1m, 1s that holds at most 3600 (else 3600 slots).
    /// A period that is not a whole number of slots is rounded up to one (`7s` slots: an
    /// hour and 5 seconds, 515 slots), which keeps slots aligned to the epoch.
    pub fn for_slot(slot_ns: i64) -> Option<Self> {
        if slot_ns <= 0 || slot_ns > MAX_RESOLUTION_NS {
            return None;
        }
        let mut span = SPANS
            .into_iter()
            .find(|&span| span / slot_ns >= MIN_SLOTS)
            .unwrap_or(MIN_SLOTS * slot_ns);
        if span / slot_ns > MAX_SLOTS {
            span = SHORT_SPANS
                .into_iter()
                .find(|&span| span / slot_ns <= MAX_SLOTS)
                .unwrap_or(MAX_SLOTS * slot_ns);
        }
        // Rounding up cannot overflow: span <= 60 · MAX_RESOLUTION_NS, far below i64::MAX.
        let slots = (span + slot_ns - 1) / slot_ns;
        Some(Self {
            period_ns: slots * slot_ns,
            slot_ns,
        })
    }

    /// The geometry of a rollup's documents.
    pub fn for_resolution(resolution: Resolution) -> Self {
        Self::for_slot(resolution.nanos()).expect("a resolution is a valid slot width")
    }

    /// How long one document covers, in nanoseconds.
    pub const fn period_ns(self) -> i64 {
        self.period_ns
    }

    /// How long one slot covers, in nanoseconds.
    pub const fn slot_ns(self) -> i64 {
        self.slot_ns
    }

    /// Slots per document.
    pub const fn slots(self) -> u32 {
        (self.period_ns / self.slot_ns) as u32
    }

    /// The document holding `time` (its start, ns since the epoch) and the slot in it.
    /// `None` for times before [`MIN_BUCKET_TIME`], whose document start is not an `i64`.
    pub fn slot_of(self, time: i64) -> Option<(i64, u32)> {
        if time < MIN_BUCKET_TIME {
            return None;
        }
        // No saturation: time - period_ns >= i64::MIN, so the start fits.
        let start = window_start(time, self.period_ns);
        Some((start, ((time - start) / self.slot_ns) as u32))
    }

    /// The start time of slot `slot` of the document starting at `bucket_start`: the
    /// inverse of [`slot_of`](Self::slot_of), `slot_time(slot_of(t)) == window_start(t,
    /// slot_ns)`. Saturates at `i64::MAX` for a slot past the end of time (the last
    /// document's tail), which holds no point.
    pub fn slot_time(self, bucket_start: i64, slot: u32) -> i64 {
        debug_assert!(slot < self.slots(), "slot {slot} of {}", self.slots());
        (slot as i64)
            .checked_mul(self.slot_ns)
            .and_then(|offset| bucket_start.checked_add(offset))
            .unwrap_or(i64::MAX)
    }

    /// How long one time partition of these documents covers, ns: a whole number of
    /// documents (so no document straddles two partitions), about one step up the span
    /// ladder — an hour of documents of a minute, a day of hourly documents, a week of
    /// daily ones, 28 days of weekly ones, 364 days of 28-day ones; 364-day documents get a
    /// partition each. Retention drops whole partitions, so this is also how finely it cuts.
    pub fn partition_ns(self) -> i64 {
        let next = SPANS
            .into_iter()
            .chain(SHORT_SPANS)
            .filter(|&span| span > self.period_ns)
            .min()
            .unwrap_or(self.period_ns);
        (next / self.period_ns).max(1) * self.period_ns
    }

    /// The start of the partition holding the document that starts at `bucket_start`.
    pub fn partition_of(self, bucket_start: i64) -> i64 {
        window_start(bucket_start, self.partition_ns())
    }

    /// The starts of the documents overlapping `[start, end)` (ns), in order: the
    /// documents a read of that range fetches. Empty when `end <= start`; begins no
    /// earlier than the document of [`MIN_BUCKET_TIME`].
    pub fn bucket_starts(self, start: i64, end: i64) -> impl Iterator<Item = i64> {
        let first = if end > start {
            Some(window_start(start.max(MIN_BUCKET_TIME), self.period_ns))
        } else {
            None
        };
        let period = self.period_ns;
        std::iter::successors(first, move |&b| b.checked_add(period)).take_while(move |&b| b < end)
    }
}

impl Resolution {
    /// The geometry of this rollup's documents.
    pub fn geometry(self) -> BucketGeometry {
        BucketGeometry::for_resolution(self)
    }
}
