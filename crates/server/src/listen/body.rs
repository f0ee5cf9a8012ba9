//! The bounds on a request body: no gap of `--body-read-timeout` without a byte, and a
//! whole body no slower than `--min-body-rate` on average (after the same time as
//! grace). The gap alone cannot bound a client that sends one byte just before each
//! timeout: with the rate, such a body ends within the timeout plus its length at the
//! minimum rate, whatever its pace.

use super::slots::Holder;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use std::time::Instant;

/// The bounds of every request body; `None` turns one off.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyBounds {
    /// `--body-read-timeout`: the longest wait for a byte, and the grace before the
    /// rate counts.
    pub timeout: Duration,
    /// `--min-body-rate`, in bytes per second.
    pub min_rate: Option<u64>,
}

/// Why a body was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// No byte for `--body-read-timeout`.
    Stalled,
    /// Slower than `--min-body-rate` on average.
    TooSlow,
}

/// Set by a request's body when it was cut: the request is answered 408 and its
/// connection is not kept.
#[derive(Clone, Default)]
pub(crate) struct Stalled(Arc<AtomicU8>);

impl Stalled {
    pub(crate) fn cut(&self) -> Option<Cut> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(Cut::Stalled),
            2 => Some(Cut::TooSlow),
            _ => None,
        }
    }

    fn set(&self, cut: Cut) {
        let code = match cut {
            Cut::Stalled => 1,
            Cut::TooSlow => 2,
        };
        self.0.store(code, Ordering::Release);
    }
}

/// The error a cut body ends with; the handler reading it fails, and the request is
/// answered 408.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyCut {
    #[error("no body bytes for {0:?} (--body-read-timeout)")]
    Stalled(Duration),
    #[error("request body slower than --min-body-rate ({0} bytes/s)")]
    TooSlow(u64),
}

/// A request body cut with [`BodyCut`] when the client sends no bytes for the timeout
/// while the handler waits for them, or when, past the timeout, the body has come
/// slower than the minimum rate. The gap's clock runs only while the handler waits: a
/// handler that reads slowly does not make the client late. While the handler waits,
/// the connection tells its [`Holder`] that it waits on its client.
pub(crate) struct TimedBody<B> {
    inner: B,
    bounds: BodyBounds,
    peer: SocketAddr,
    stalled: Stalled,
    holder: Arc<Holder>,
    /// When the handler first asked for a frame.
    started: Option<Instant>,
    /// Bytes received so far.
    received: u64,
    /// The deadline of the current wait (made at the first wait, moved for each later one).
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// When the current wait began; `None`: the last poll found a frame.
    waiting_since: Option<Instant>,
}

impl<B> TimedBody<B> {
    pub(crate) fn new(
        inner: B,
        bounds: BodyBounds,
        peer: SocketAddr,
        stalled: Stalled,
        holder: Arc<Holder>,
    ) -> Self {
        Self {
            inner,
            bounds,
            peer,
            stalled,
            holder,
            started: None,
            received: 0,
            deadline: None,
            waiting_since: None,
        }
    }

    /// When the body, with no more bytes, falls under the minimum rate: the timeout
    /// after its start, plus the time its bytes so far buy at that rate.
    fn rate_deadline(&self, started: Instant) -> Option<Instant> {
        let rate = self.bounds.min_rate.filter(|r| *r > 0)?;
        let bought = Duration::from_secs_f64(self.received as f64 / rate as f64);
        Some(started + self.bounds.timeout + bought)
    }

    fn cut(&self, cut: Cut) -> axum::BoxError {
        self.stalled.set(cut);
        let timeout = self.bounds.timeout;
        match cut {
            Cut::Stalled => {
                tracing::warn!(
                    peer = %self.peer,
                    "request body stalled: no bytes for {timeout:?}; answered 408 and closed \
                     the connection (--body-read-timeout)"
                );
                BodyCut::Stalled(timeout).into()
            }
            Cut::TooSlow => {
                let rate = self.bounds.min_rate.unwrap_or_default();
                let elapsed = self.started.map(|s| s.elapsed()).unwrap_or_default();
                tracing::warn!(
                    peer = %self.peer,
                    "request body too slow: {} bytes in {elapsed:?}, under {rate} bytes/s; \
                     answered 408 and closed the connection (--min-body-rate)",
                    self.received
                );
                BodyCut::TooSlow(rate).into()
            }
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
        if let Some(cut) = this.stalled.cut() {
            return Poll::Ready(Some(Err(this.cut(cut))));
        }
        let now = Instant::now();
        let started = *this.started.get_or_insert(now);
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.waiting_since = None;
            this.holder.busy();
            if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
                this.received += data.map_or(0, |d| d.len() as u64);
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let waiting_since = *this.waiting_since.get_or_insert(now);
        let gap_deadline = waiting_since + this.bounds.timeout;
        let rate_deadline = this.rate_deadline(started);
        this.holder.waiting(
            rate_deadline.map_or(waiting_since, |_| started),
            rate_deadline.map(|d| d - this.bounds.timeout),
        );
        let (deadline, cut) = match rate_deadline {
            Some(rate) if rate < gap_deadline => (rate, Cut::TooSlow),
            _ => (gap_deadline, Cut::Stalled),
        };
        let sleep = this
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        if sleep.deadline() != deadline.into() {
            sleep.as_mut().reset(deadline.into());
        }
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(Some(Err(this.cut(cut))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
