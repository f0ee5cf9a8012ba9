//! What bounds a connection's hold on the server: a slot among `--max-connections`, and
//! the body-read timeout (`--body-read-timeout`) on each request body. The head-read
//! timeout is hyper's own (`header_read_timeout`, set in [`super::connection`]).

use super::stats::ConnectionStats;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most one warning about refused connections per this interval: a flood of refusals
/// must not become a flood of log lines.
const REFUSAL_WARNING_EVERY: Duration = Duration::from_secs(10);

/// The connection slots: a connection holds one from accept to close; past
/// `--max-connections` a new connection is closed at once and counted.
pub(crate) struct ConnectionSlots {
    slots: Arc<Semaphore>,
    max: usize,
    stats: Arc<ConnectionStats>,
    /// When the last warning was logged, and the refusals counted at that time.
    last_warning: Mutex<Option<(Instant, u64)>>,
}

/// A connection's place among `--max-connections`, given back when dropped.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    stats: Arc<ConnectionStats>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnectionSlots {
    pub(crate) fn new(max: usize, stats: Arc<ConnectionStats>) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
            stats,
            last_warning: Mutex::new(None),
        }
    }

    /// A slot for a new connection, or `None` (counted, and warned about now and then)
    /// when all are taken. Never waits.
    pub(crate) fn take(&self, peer: SocketAddr) -> Option<Slot> {
        match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => {
                self.stats.open.fetch_add(1, Ordering::Relaxed);
                Some(Slot {
                    _permit: permit,
                    stats: Arc::clone(&self.stats),
                })
            }
            Err(_) => {
                let refused = self.stats.refused.fetch_add(1, Ordering::Relaxed) + 1;
                self.warn(peer, refused);
                None
            }
        }
    }

    fn warn(&self, peer: SocketAddr, refused: u64) {
        let mut last = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let since = match *last {
            Some((at, _)) if now.duration_since(at) < REFUSAL_WARNING_EVERY => return,
            Some((_, counted)) => refused - counted,
            None => refused,
        };
        *last = Some((now, refused));
        tracing::warn!(
            %peer,
            refused_since_last_warning = since,
            refused_total = refused,
            "{} connections open, the most --max-connections allows: new connections are closed at once",
            self.max
        );
    }
}

/// Set by a request's body when it stalled: the request is answered 408 and its
/// connection is not kept.
#[derive(Clone, Default)]
pub(crate) struct Stalled(Arc<AtomicBool>);

impl Stalled {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// The error a stalled body ends with; the handler reading it fails, and the request is
/// answered 408.
#[derive(Debug, thiserror::Error)]
#[error("no body bytes for {0:?} (--body-read-timeout)")]
pub(crate) struct BodyStalled(Duration);

/// A request body that fails with [`BodyStalled`] when the client sends no bytes for
/// `timeout` while the handler waits for them. The clock runs only while the handler
/// waits: a handler that reads slowly does not make the client late.
pub(crate) struct TimedBody<B> {
    inner: B,
    timeout: Duration,
    peer: SocketAddr,
    stalled: Stalled,
    /// The deadline of the current wait (made at the first wait, moved for each later one).
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Whether a wait is under way: the last poll found no frame.
    waiting: bool,
}

impl<B> TimedBody<B> {
    pub(crate) fn new(inner: B, timeout: Duration, peer: SocketAddr, stalled: Stalled) -> Self {
        Self {
            inner,
            timeout,
            peer,
            stalled,
            deadline: None,
            waiting: false,
        }
    }
}

impl<B> Body for TimedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.stalled.is_set() {
            return Poll::Ready(Some(Err(BodyStalled(this.timeout).into())));
        }
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.waiting = false;
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let timeout = this.timeout;
        let deadline = this
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if !this.waiting {
            this.waiting = true;
            deadline
                .as_mut()
                .reset(tokio::time::Instant::now() + timeout);
        }
        if deadline.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.stalled.set();
        tracing::warn!(
            peer = %this.peer,
            "request body stalled: no bytes for {timeout:?}; answered 408 and closed the \
             connection (--body-read-timeout)"
        );
        Poll::Ready(Some(Err(BodyStalled(timeout).into())))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
