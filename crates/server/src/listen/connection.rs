//! One connection, from its first byte to its close: HTTP/1.1 or HTTP/2 on hyper, each
//! request's body under the body-read timeout, and the bounds that close a connection that
//! holds the server without using it.
//!
//! What closes a connection that is not answered a request:
//! - HTTP/1.1: no complete request head within `header_read_timeout` of the connection's
//!   start or of its previous answer (hyper's timer, which also runs between keep-alive
//!   requests); a body that stalls for `body_read_timeout` or comes slower than
//!   `min_body_rate` (408, then close).
//! - HTTP/2: no request in flight for `idle_timeout` to `2 × idle_timeout` (the idle
//!   watch below; hyper has no such bound for HTTP/2); a peer that does not answer
//!   pings for [`H2_KEEP_ALIVE`].
//! - Either: the shutdown signal, after the requests in flight are answered; being shed
//!   (`super::slots`) while every slot is taken and it waits on its client: closed at
//!   once.

use super::body::{BodyBounds, Cut, Stalled, TimedBody};
use super::slots::Holder;
use super::stats::ConnectionStats;
use super::Shared;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, Response, StatusCode, Version};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// HTTP/2 pings every this often, and the connection closes when one is not answered
/// within it: a peer that vanished without a FIN does not hold its connection forever.
const H2_KEEP_ALIVE: Duration = Duration::from_secs(20);

/// Which protocol the connection speaks, known before the first request: HTTP/2 only when
/// TLS negotiated `h2` through ALPN. Deciding here (rather than sniffing the HTTP/2
/// preface) means no unbounded wait for the first bytes before hyper's timers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Http1,
    Http2,
}

/// What the connection's requests and its task share.
struct Activity {
    /// Requests whose answer has not been sent in full.
    in_flight: AtomicUsize,
    /// Requests started so far, so that the idle watch sees one that came and went.
    started: AtomicU64,
    /// Notified when a request's body stalled: the connection is not kept.
    close: Notify,
    /// Told whether the connection uses its slot.
    holder: Arc<Holder>,
}

/// Serves `io` until the client closes, a bound closes it, or `shutdown` is closed (then
/// the requests in flight are answered first).
pub(crate) async fn serve<I>(
    io: I,
    protocol: Protocol,
    peer: SocketAddr,
    shared: Shared,
    holder: Arc<Holder>,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let Shared {
        router,
        limits,
        stats,
        stop,
    } = shared;
    let activity = Arc::new(Activity {
        in_flight: AtomicUsize::new(0),
        started: AtomicU64::new(0),
        close: Notify::new(),
        holder: Arc::clone(&holder),
    });
    let service = {
        let activity = Arc::clone(&activity);
        hyper::service::service_fn(move |request| {
            answer(
                request,
                router.clone(),
                peer,
                limits.body_read_timeout.map(|timeout| BodyBounds {
                    timeout,
                    min_rate: limits.min_body_rate,
                }),
                Arc::clone(&activity),
                Arc::clone(&stats),
            )
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE)
        .keep_alive_timeout(H2_KEEP_ALIVE);
    let builder = match protocol {
        Protocol::Http1 => builder.http1_only(),
        Protocol::Http2 => builder.http2_only(),
    };
    let mut connection = pin!(builder.serve_connection(io, service));
    let mut shutdown = pin!(stop.closed());
    // Off (`None`), the watch ticks once a century and never finds the connection idle.
    let idle_timeout = limits
        .idle_timeout
        .unwrap_or(Duration::from_secs(100 * 365 * 86_400));
    let mut idle =
        tokio::time::interval_at(tokio::time::Instant::now() + idle_timeout, idle_timeout);
    let mut started_at_last_tick = 0;
    let mut closing = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                return;
            }
            _ = &mut shutdown, if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = holder.shed.notified() => {
                tracing::debug!(%peer, "shed: every slot taken and this one waits on its client");
                return;
            }
            _ = activity.close.notified(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = idle.tick(), if !closing && protocol == Protocol::Http2 => {
                let started = activity.started.load(Ordering::Acquire);
                if started == started_at_last_tick && activity.in_flight.load(Ordering::Acquire) == 0 {
                    tracing::debug!(%peer, "closing an idle HTTP/2 connection");
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
                started_at_last_tick = started;
            }
        }
    }
}

/// One request through the router, its body under the body-read timeout; a stalled body's
/// request is answered 408 whatever the handler made of the failed read.
async fn answer(
    request: Request<Incoming>,
    mut router: Router,
    peer: SocketAddr,
    body_bounds: Option<BodyBounds>,
    activity: Arc<Activity>,
    stats: Arc<ConnectionStats>,
) -> Result<Response<Body>, Infallible> {
    let in_flight = InFlight::start(Arc::clone(&activity));
    let version = request.version();
    let stalled = Stalled::default();
    let holder = Arc::clone(&activity.holder);
    let mut request = request.map(|body| match body_bounds {
        Some(bounds) => Body::new(TimedBody::new(body, bounds, peer, stalled.clone(), holder)),
        None => Body::new(body),
    });
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = tower_service::Service::call(&mut router, request).await?;
    let Some(cut) = stalled.cut() else {
        return Ok(response.map(|body| {
            Body::new(Tracked {
                body,
                _in_flight: in_flight,
            })
        }));
    };
    ConnectionStats::count(&stats.stalled_bodies);
    activity.close.notify_one();
    Ok(stalled_answer(version, cut))
}

fn stalled_answer(version: Version, cut: Cut) -> Response<Body> {
    let mut response = Response::new(Body::from(match cut {
        Cut::Stalled => "request body stalled: no bytes within --body-read-timeout\n",
        Cut::TooSlow => "request body too slow: under --min-body-rate on average\n",
    }));
    *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    // HTTP/2 forbids the header; there the connection's graceful shutdown says it.
    if version < Version::HTTP_2 {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request counted in flight until its answer's body is sent in full (or dropped).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: Arc<Activity>) -> Self {
        activity.started.fetch_add(1, Ordering::AcqRel);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        activity.holder.busy();
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Nothing in flight: the connection waits for its client's next head.
            self.0.holder.waiting(std::time::Instant::now(), None);
        }
    }
}

/// An answer's body that keeps its request in flight while it is sent.
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
