//! The batches of one read run side by side: one task each, as many at once as the
//! machine has cores, so a long read over many series (a 30-day PromQL range over a
//! thousand series) decodes on every core instead of one. The answers come back in batch
//! order, so the caller charges its budget and builds its answer exactly as when it read
//! the batches one after another; it holds at most that many batches ahead.

use crate::EngineError;
use futures::stream::{self, Stream, StreamExt};
use std::future::Future;
use tokio::task::JoinHandle;

/// Batches read at once: the cores the process may use.
fn width() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `read(batch)` of each batch, each spawned on the runtime, at most [`width`] at once,
/// the answers in batch order. Dropping the stream (an error, a client gone) aborts the
/// reads still running. A read that panicked panics the caller, as it would have inline.
pub(crate) fn side_by_side<B, T, F, Fut>(
    batches: impl IntoIterator<Item = B>,
    read: F,
) -> impl Stream<Item = Result<T, EngineError>>
where
    F: FnMut(B) -> Fut,
    Fut: Future<Output = Result<T, EngineError>> + Send + 'static,
    T: Send + 'static,
{
    stream::iter(batches)
        .map(read)
        .map(|read| async move {
            let mut task = AbortOnDrop(tokio::spawn(read));
            match (&mut task.0).await {
                Ok(answer) => answer,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => Err(EngineError::Cancelled),
            }
        })
        .buffered(width())
}

/// A spawned read that stops when nobody waits for its answer any more.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_come_in_batch_order_whatever_finishes_first() {
        let batches = (0..8u64).collect::<Vec<_>>();
        let answers: Vec<u64> = side_by_side(batches, |b| async move {
            // Later batches finish first.
            tokio::time::sleep(std::time::Duration::from_millis(8 - b)).await;
            Ok(b * 10)
        })
        .try_collect()
        .await
        .unwrap();
        assert_eq!(answers, [0, 10, 20, 30, 40, 50, 60, 70]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_error_is_the_callers() {
        let answers: Result<Vec<u64>, _> = side_by_side([1u64, 2, 3], |b| async move {
            match b {
                2 => Err(EngineError::BadQuery(format!("batch {b}"))),
                _ => Ok(b),
            }
        })
        .try_collect()
        .await;
        assert!(matches!(answers, Err(EngineError::BadQuery(m)) if m == "batch 2"));
    }
}
