//! One query's budget: how many points (and rows) it may produce and how many bytes its
//! answer may take, counted as they are produced, and whether its client is still there.
//!
//! Every query language (the own API, InfluxQL, PromQL, remote read) and every output
//! format takes one [`QueryBudget`] per request and charges it where the work is done:
//! points read and computed (a window that `fill()` fills is a point too) with
//! [`QueryBudget::charge_points`], the answer's text with [`QueryBudget::charge_bytes`].
//! A charge past a limit fails with [`Exhausted`] before the memory is spent on the rest,
//! so one request cannot build an answer that exhausts the server.
//!
//! Cancellation rides on the same calls: a request's handler holds a [`CancelOnDrop`],
//! which marks the budget cancelled when the handler is dropped (its client has gone),
//! and the next charge of work still running elsewhere (a blocking thread) fails with
//! [`Exhausted::Cancelled`]. Work running inside the handler's own future stops at its
//! next `.await`; [`QueryBudget::yield_due`] says when to give it one.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// Which limit a query went past, or that its client went away.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum Exhausted {
    /// It produced more than `limit` points or rows.
    #[error("the query produces more than {limit} points")]
    Points { limit: usize },
    /// Its answer takes more than `limit` bytes.
    #[error("the answer takes more than {limit} bytes")]
    Bytes { limit: usize },
    /// Its client went away; nobody waits for the answer.
    #[error("the client went away before the answer was ready")]
    Cancelled,
}

/// Work (points, or bytes / [`BYTES_PER_UNIT`]) between two yields
/// ([`QueryBudget::yield_due`]): small enough that a query whose client has gone stops
/// within milliseconds, large enough that the yields cost nothing beside the work.
const YIELD_EVERY: usize = 1 << 16;
/// Checkpoints between two yields when little is charged (series without points still
/// cost a read each).
const YIELD_EVERY_CHECKPOINTS: usize = 256;
/// Bytes of text that count as one unit of work for [`YIELD_EVERY`].
const BYTES_PER_UNIT: usize = 16;

/// The budget of one request. Shared by reference (or in an `Arc` with a blocking
/// thread); the counters are atomics so that concurrent reads of one query charge the
/// same budget.
#[derive(Debug)]
pub struct QueryBudget {
    max_points: usize,
    max_bytes: usize,
    points: AtomicUsize,
    bytes: AtomicUsize,
    /// Work charged since a yield was last due.
    since_yield: AtomicUsize,
    checkpoints: AtomicUsize,
    cancelled: Arc<AtomicBool>,
    /// The first [`Exhausted`] a charge answered (0: none yet), so that a caller whose
    /// error type cannot carry it (a statement's text) still learns why.
    exhausted: AtomicU8,
}

impl QueryBudget {
    /// A budget of `max_points` points and `max_bytes` bytes of answer.
    pub fn new(max_points: usize, max_bytes: usize) -> Self {
        Self {
            max_points,
            max_bytes,
            points: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            since_yield: AtomicUsize::new(0),
            checkpoints: AtomicUsize::new(0),
            cancelled: Arc::new(AtomicBool::new(false)),
            exhausted: AtomicU8::new(0),
        }
    }

    /// No limit and never cancelled: for callers that read everything by design (an
    /// export) or bound what they read themselves.
    pub fn unlimited() -> Self {
        Self::new(usize::MAX, usize::MAX)
    }

    pub fn max_points(&self) -> usize {
        self.max_points
    }

    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Points charged so far.
    pub fn points(&self) -> usize {
        self.points.load(Ordering::Relaxed)
    }

    /// Bytes charged so far.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Counts `n` more points (or rows) produced; `Err` once the total passes the limit
    /// (and every later charge too), or when the client has gone.
    pub fn charge_points(&self, n: usize) -> Result<(), Exhausted> {
        self.charge(
            &self.points,
            n,
            self.max_points,
            Exhausted::Points {
                limit: self.max_points,
            },
        )?;
        self.since_yield.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// Counts `n` more bytes of the answer; `Err` once the total passes the limit, or
    /// when the client has gone.
    pub fn charge_bytes(&self, n: usize) -> Result<(), Exhausted> {
        self.charge(
            &self.bytes,
            n,
            self.max_bytes,
            Exhausted::Bytes {
                limit: self.max_bytes,
            },
        )?;
        self.since_yield
            .fetch_add(n / BYTES_PER_UNIT, Ordering::Relaxed);
        Ok(())
    }

    /// `Err` when the client has gone (or a limit was passed): for loops that produce
    /// nothing countable but take time.
    pub fn check(&self) -> Result<(), Exhausted> {
        self.charge(
            &self.points,
            0,
            self.max_points,
            Exhausted::Points {
                limit: self.max_points,
            },
        )
    }

    fn charge(
        &self,
        counter: &AtomicUsize,
        n: usize,
        limit: usize,
        over: Exhausted,
    ) -> Result<(), Exhausted> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Err(self.record(Exhausted::Cancelled));
        }
        if let Some(first) = self.exhausted() {
            return Err(first);
        }
        let total = counter.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        match total > limit {
            true => Err(self.record(over)),
            false => Ok(()),
        }
    }

    /// Keeps the first reason, answers it.
    fn record(&self, e: Exhausted) -> Exhausted {
        let code = match e {
            Exhausted::Points { .. } => 1,
            Exhausted::Bytes { .. } => 2,
            Exhausted::Cancelled => 3,
        };
        match self
            .exhausted
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => e,
            Err(_) => self.exhausted().unwrap_or(e),
        }
    }

    /// Why the budget refused a charge, if one was refused.
    pub fn exhausted(&self) -> Option<Exhausted> {
        match self.exhausted.load(Ordering::Relaxed) {
            1 => Some(Exhausted::Points {
                limit: self.max_points,
            }),
            2 => Some(Exhausted::Bytes {
                limit: self.max_bytes,
            }),
            3 => Some(Exhausted::Cancelled),
            _ => None,
        }
    }

    /// Marks the query cancelled: every later charge fails with [`Exhausted::Cancelled`].
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// A guard that cancels this budget when dropped: a handler holds it, so that work it
    /// handed to a blocking thread stops when the handler's future is dropped.
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(Arc::clone(&self.cancelled))
    }

    /// Counts `n` points of work done that were charged before it began (a plan charged
    /// whole, then computed piece by piece): towards [`QueryBudget::yield_due`] only.
    pub fn progress(&self, n: usize) {
        self.since_yield.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether enough work was charged since the last time this answered `true` (or
    /// enough calls passed) for synchronous work inside a request's future to yield to
    /// the runtime now: its connection then sees a client that has gone, and the future
    /// is dropped with the work. The yield itself is the runtime's (the engine's
    /// `checkpoint`), this crate has none.
    pub fn yield_due(&self) -> bool {
        let calls = self.checkpoints.fetch_add(1, Ordering::Relaxed) + 1;
        let work = self.since_yield.load(Ordering::Relaxed);
        let due = work >= YIELD_EVERY || calls >= YIELD_EVERY_CHECKPOINTS;
        if due {
            self.since_yield.store(0, Ordering::Relaxed);
            self.checkpoints.store(0, Ordering::Relaxed);
        }
        due
    }
}

/// Cancels its budget when dropped ([`QueryBudget::cancel_on_drop`]).
#[derive(Debug)]
pub struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Bytes of an answer written between two charges ([`Growth`], and the server's
/// writers): a charge is an atomic operation, a token of JSON a few bytes, so an answer
/// stops within this many bytes of `--max-response-bytes` at no measurable cost.
pub const CHARGE_EVERY: usize = 64 * 1024;

/// An answer written into a buffer by hand, charged by its growth: [`Growth::charge`]
/// after each row charges what was written since the last charge once it reaches
/// [`CHARGE_EVERY`] bytes, [`Growth::finish`] the rest.
pub struct Growth<'b> {
    charged: usize,
    budget: &'b QueryBudget,
}

impl<'b> Growth<'b> {
    /// Charging from `len`, the length of the buffer so far (already charged).
    pub fn from(len: usize, budget: &'b QueryBudget) -> Self {
        Self {
            charged: len,
            budget,
        }
    }

    /// `len` is the buffer's length now; charged only once it grew by [`CHARGE_EVERY`].
    pub fn charge(&mut self, len: usize) -> Result<(), Exhausted> {
        match len.saturating_sub(self.charged) >= CHARGE_EVERY {
            true => self.finish(len),
            false => Ok(()),
        }
    }

    /// Charges everything written up to `len`, the buffer's final length.
    pub fn finish(&mut self, len: usize) -> Result<(), Exhausted> {
        let grown = len.saturating_sub(self.charged);
        self.charged = len;
        self.budget.charge_bytes(grown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_counted_up_to_the_limit_and_refused_past_it() {
        let budget = QueryBudget::new(10, 100);
        assert_eq!(budget.charge_points(4), Ok(()));
        assert_eq!(budget.charge_points(6), Ok(()));
        assert_eq!(budget.points(), 10);
        assert_eq!(budget.exhausted(), None);
        assert_eq!(
            budget.charge_points(1),
            Err(Exhausted::Points { limit: 10 })
        );
        // Refused once, refused for good, whatever is charged next.
        assert_eq!(budget.charge_bytes(1), Err(Exhausted::Points { limit: 10 }));
        assert_eq!(budget.check(), Err(Exhausted::Points { limit: 10 }));
        assert_eq!(budget.exhausted(), Some(Exhausted::Points { limit: 10 }));
    }

    #[test]
    fn bytes_have_their_own_limit() {
        let budget = QueryBudget::new(10, 100);
        assert_eq!(budget.charge_bytes(100), Ok(()));
        assert_eq!(budget.charge_points(10), Ok(()));
        assert_eq!(budget.charge_bytes(1), Err(Exhausted::Bytes { limit: 100 }));
        assert_eq!(budget.exhausted(), Some(Exhausted::Bytes { limit: 100 }));
    }

    #[test]
    fn a_huge_charge_does_not_wrap_around() {
        let budget = QueryBudget::new(usize::MAX - 1, 1);
        assert_eq!(budget.charge_points(usize::MAX - 1), Ok(()));
        assert!(budget.charge_points(usize::MAX).is_err());
        let unlimited = QueryBudget::unlimited();
        assert_eq!(unlimited.charge_points(usize::MAX), Ok(()));
        assert_eq!(unlimited.charge_points(usize::MAX), Ok(()));
    }

    #[test]
    fn dropping_the_guard_cancels_every_later_charge() {
        let budget = QueryBudget::new(10, 10);
        let guard = budget.cancel_on_drop();
        assert_eq!(budget.check(), Ok(()));
        drop(guard);
        assert!(budget.is_cancelled());
        assert_eq!(budget.charge_points(0), Err(Exhausted::Cancelled));
        assert_eq!(budget.charge_bytes(0), Err(Exhausted::Cancelled));
        assert_eq!(budget.exhausted(), Some(Exhausted::Cancelled));
    }

    #[test]
    fn a_budget_is_shared_across_threads() {
        let budget = Arc::new(QueryBudget::new(1_000, 0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let budget = Arc::clone(&budget);
                std::thread::spawn(move || {
                    (0..300).filter(|_| budget.charge_points(1).is_ok()).count()
                })
            })
            .collect();
        let accepted: usize = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
        assert_eq!(accepted, 1_000);
    }

    /// A yield is due only after enough work, or enough calls.
    #[test]
    fn yields_are_due_after_enough_work() {
        let budget = QueryBudget::unlimited();
        assert!(!budget.yield_due());
        let _ = budget.charge_points(YIELD_EVERY);
        assert!(budget.yield_due());
        assert!(!budget.yield_due());
        let _ = budget.charge_bytes(YIELD_EVERY * BYTES_PER_UNIT);
        assert!(budget.yield_due());
        let calls = (0..YIELD_EVERY_CHECKPOINTS)
            .filter(|_| budget.yield_due())
            .count();
        assert_eq!(calls, 1);
        // Work charged beforehand counts when it is done.
        budget.progress(YIELD_EVERY);
        assert!(budget.yield_due());
        assert_eq!(budget.points(), YIELD_EVERY, "progress is no charge");
    }
}
