//! A request's [`QueryBudget`] on the server: the handlers of every query language make
//! one per request (`Engine::budget`), hand it to the engine's reads and to their own
//! computation, and write their answer through it.
//!
//! Cancellation: a handler holds the budget's [`CancelOnDrop`](tickertape_core::budget::CancelOnDrop)
//! while it works. Hyper drops a handler's future when its client closes the connection,
//! but only when the future yields: the engine's reads yield at the budget's checkpoints,
//! and the long synchronous work (evaluation, rendering the answer) runs on a blocking
//! thread ([`on_blocking_thread`]) while the handler waits, so the connection is watched
//! meanwhile; once the handler is dropped, that thread's next charge fails with
//! `Cancelled` and it stops.

use std::io;
use std::sync::Arc;
use tickertape_core::budget::CHARGE_EVERY;
use tickertape_core::{Exhausted, QueryBudget};

/// Runs `work` on a blocking thread under `budget`, the handler's task free to notice a
/// client that has gone meanwhile. A panic in `work` is the handler's panic.
pub(crate) async fn on_blocking_thread<T, F>(
    budget: &Arc<QueryBudget>,
    work: F,
) -> Result<T, Exhausted>
where
    T: Send + 'static,
    F: FnOnce(&QueryBudget) -> T + Send + 'static,
{
    let budget = Arc::clone(budget);
    match tokio::task::spawn_blocking(move || work(&budget)).await {
        Ok(answer) => Ok(answer),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down: nobody will read the answer.
        Err(_) => Err(Exhausted::Cancelled),
    }
}

/// An answer's bytes, charged to the budget as they are written (every [`CHARGE_EVERY`]
/// bytes and at the end): a write past `--max-response-bytes` fails, so an answer stops
/// within 64 KiB of the limit instead of growing to its full size.
pub(crate) struct BudgetedWriter<'b> {
    out: Vec<u8>,
    uncharged: usize,
    budget: &'b QueryBudget,
}

impl<'b> BudgetedWriter<'b> {
    pub(crate) fn new(budget: &'b QueryBudget) -> Self {
        Self {
            out: Vec::new(),
            uncharged: 0,
            budget,
        }
    }

    /// The bytes written, the last of them charged; `Err` past the budget.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, Exhausted> {
        self.budget
            .charge_bytes(std::mem::take(&mut self.uncharged))?;
        Ok(self.out)
    }
}

impl io::Write for BudgetedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.extend_from_slice(buf);
        self.uncharged += buf.len();
        if self.uncharged >= CHARGE_EVERY {
            self.budget
                .charge_bytes(std::mem::take(&mut self.uncharged))
                .map_err(io::Error::other)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a write through [`BudgetedWriter`] failed for: the budget's reason when it
/// refused (writing to memory fails for nothing else).
pub(crate) fn write_failure(budget: &QueryBudget) -> Exhausted {
    budget.exhausted().unwrap_or(Exhausted::Bytes {
        limit: budget.max_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_writer_stops_past_the_byte_budget() {
        let budget = QueryBudget::new(usize::MAX, 100_000);
        let mut w = BudgetedWriter::new(&budget);
        let chunk = vec![b'x'; 1000];
        let mut written = 0;
        while w.write_all(&chunk).is_ok() {
            written += chunk.len();
            assert!(written < 200_000, "never refused");
        }
        // Refused within a charge's worth of the limit.
        assert!(written <= 100_000 + CHARGE_EVERY, "{written}");
        assert_eq!(write_failure(&budget), Exhausted::Bytes { limit: 100_000 });
        let budget = QueryBudget::new(usize::MAX, 10);
        let mut w = BudgetedWriter::new(&budget);
        let _ = w.write_all(b"0123456789");
        assert_eq!(w.finish().map(|b| b.len()), Ok(10));
        let mut w = BudgetedWriter::new(&budget);
        let _ = w.write_all(b"x");
        assert_eq!(w.finish(), Err(Exhausted::Bytes { limit: 10 }));
    }
}
