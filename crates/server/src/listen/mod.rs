//! The accept loop: plain HTTP or TLS on one listener, the connection limit, and graceful
//! shutdown; each connection is then served by [`connection`] on hyper.
//!
//! # Layout
//! - `mod.rs`: accepting, the connection slots, shutdown.
//! - `tls.rs`: the rustls configuration from PEM files; plain HTTP on the TLS port.
//! - `slots.rs`: the connection slots, and shedding a connection that waits on its
//!   client when they are all taken.
//! - `body.rs`: the bounds on a request body (the gap between bytes, the minimum rate).
//! - `connection.rs`: one connection on hyper, its timers and its requests.
//! - `stats.rs`: the counters `/metrics` shows.

mod body;
mod connection;
mod slots;
mod stats;
mod tls;

pub use stats::ConnectionStats;
pub use tls::{Tls, TlsError};

use axum::Router;
use connection::Protocol;
use hyper_util::rt::TokioIo;
use slots::{Admission, ConnectionSlots, Slot};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// After an accept error other than a client's (out of descriptors, mostly), wait this
/// long before the next: retrying at once would spin while nothing can change.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// The time bounds of a connection (see [`connection`] for where each applies); `None`
/// turns one off.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub header_read_timeout: Option<Duration>,
    pub body_read_timeout: Option<Duration>,
    /// Bytes per second a body must average, counted after `body_read_timeout`;
    /// applies only with `body_read_timeout`.
    pub min_body_rate: Option<u64>,
    /// An HTTP/2 connection with no request in flight is closed after this (HTTP/1.1's
    /// idle keep-alive is bounded by `header_read_timeout`).
    pub idle_timeout: Option<Duration>,
}

/// How the listener treats connections, from [`crate::ServerConfig`].
pub(crate) struct Settings {
    pub limits: Limits,
    /// At least 1.
    pub max_connections: usize,
    pub tls: Option<Tls>,
    pub stats: Arc<ConnectionStats>,
}

/// What every connection's task gets.
#[derive(Clone)]
pub(crate) struct Shared {
    pub router: Router,
    pub limits: Limits,
    pub stats: Arc<ConnectionStats>,
    /// Closed when the shutdown comes: stop taking requests, answer those in flight.
    pub stop: watch::Sender<()>,
}

/// Accepts on `listener` and serves `router` on each connection (through TLS when
/// `settings` has it) until `shutdown` completes; then stops accepting, lets the requests
/// in flight finish and returns when every connection is closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Connections watch `stop` (closed when the signal comes); `closed` lives until the
    // last connection task ends, which is what the end of `serve` waits for.
    let (stop, stop_receiver) = watch::channel(());
    tokio::spawn(async move {
        shutdown.await;
        drop(stop_receiver);
    });
    let (done, closed) = watch::channel(());
    let slots = Arc::new(ConnectionSlots::new(
        settings.max_connections,
        Arc::clone(&settings.stats),
    ));
    let shared = Shared {
        router,
        limits: settings.limits,
        stats: settings.stats,
        stop,
    };
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    on_accept_error(e).await;
                    continue;
                }
            },
            _ = shared.stop.closed() => break,
        };
        let _ = stream.set_nodelay(true);
        let admission = slots.take(peer);
        if matches!(admission, Admission::Refused) {
            // Closed at once: the client sees its connection end rather than wait.
            drop(stream);
            continue;
        }
        let accepted = Accepted {
            stream,
            peer,
            shared: shared.clone(),
            tls: settings.tls.clone(),
            _open: closed.clone(),
        };
        let slots = Arc::clone(&slots);
        tokio::spawn(async move {
            let slot = match admission {
                Admission::Now(slot) => slot,
                _ => match slots.after_shedding().await {
                    Some(slot) => slot,
                    None => return,
                },
            };
            accepted.serve(slot).await;
        });
    }
    drop(closed);
    drop(listener);
    done.closed().await;
    Ok(())
}

async fn on_accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    // A client that gave up before its connection was accepted: nothing to wait for.
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!("accepting a connection failed: {e}");
    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
}

/// An accepted connection and what it holds until it closes.
struct Accepted {
    stream: TcpStream,
    peer: SocketAddr,
    shared: Shared,
    tls: Option<Tls>,
    /// Keeps `serve` waiting until this connection is closed.
    _open: watch::Receiver<()>,
}

impl Accepted {
    /// Serves the connection while it holds `slot`, its place among `--max-connections`.
    async fn serve(self, slot: Slot) {
        let holder = Arc::clone(&slot.holder);
        let Some(tls) = self.tls else {
            let io = TokioIo::new(self.stream);
            connection::serve(io, Protocol::Http1, self.peer, self.shared, holder).await;
            return;
        };
        // Before hyper serves it, the connection is not told of a shutdown: waiting for
        // the handshake must not hold the shutdown up.
        let handshake = tls_handshake(self.stream, self.peer, &tls, &self.shared);
        let stop = self.shared.stop.clone();
        let stream = tokio::select! {
            stream = handshake => stream,
            _ = stop.closed() => None,
        };
        let Some(stream) = stream else { return };
        let protocol = match stream.get_ref().1.alpn_protocol() {
            Some(b"h2") => Protocol::Http2,
            _ => Protocol::Http1,
        };
        connection::serve(
            TokioIo::new(stream),
            protocol,
            self.peer,
            self.shared,
            holder,
        )
        .await;
    }
}

/// The TLS connection of a client that starts a handshake and completes it within the
/// header-read timeout (the handshake counts as reading the request's head); a plain-HTTP
/// client is answered 400 instead. `None`: nothing to serve.
async fn tls_handshake(
    stream: TcpStream,
    peer: SocketAddr,
    tls: &Tls,
    shared: &Shared,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let wait = shared.limits.header_read_timeout.unwrap_or(Duration::MAX);
    if !tls::starts_tls(&stream, wait).await? {
        tracing::debug!(%peer, "plain HTTP on the TLS port: answered 400");
        ConnectionStats::count(&shared.stats.plaintext_on_tls);
        tls::refuse_plaintext(stream).await;
        return None;
    }
    match tokio::time::timeout(wait, tls.acceptor().accept(stream)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}
