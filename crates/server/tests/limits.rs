//! The bounds on a connection's hold on the server (`crates/server/src/listen/`), through
//! raw TCP clients on loopback: a stalled body, a head that never completes, an idle
//! keep-alive connection, and the connection limit. Each wait is bounded: a server that
//! keeps a connection fails the test by timing out, not by hanging it.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::TestServer;
use tickertape_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The timeout under test, short so that the test is; the server must close within
/// [`TIMEOUT`] .. [`TIMEOUT`] + [`SLACK`].
const TIMEOUT: Duration = Duration::from_secs(1);
/// Room for the timer and a loaded machine (four developers share two cores).
const SLACK: Duration = Duration::from_secs(4);
/// The longest any read here waits before the test calls the connection kept.
const GIVE_UP: Duration = Duration::from_secs(20);

/// What a raw client read until the server closed the connection, and when it closed
/// (since `since`); `None` when it was still open after [`GIVE_UP`].
async fn read_until_closed(stream: &mut TcpStream, since: Instant) -> Option<(String, Duration)> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GIVE_UP, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Some((String::from_utf8_lossy(&got).into_owned(), since.elapsed()))
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

fn config(change: impl FnOnce(&mut ServerConfig)) -> ServerConfig {
    let mut config = ServerConfig::default();
    change(&mut config);
    config
}

async fn health(server: &TestServer) -> u16 {
    server
        .client
        .get(format!("{}/health", server.url))
        .send()
        .await
        .expect("GET /health")
        .status()
        .as_u16()
}

/// `GET /metrics`' text, retried while the server has no free slot for the request.
async fn metrics(server: &TestServer) -> String {
    let deadline = Instant::now() + GIVE_UP;
    loop {
        let answer = server
            .client
            .get(format!("{}/metrics", server.url))
            .send()
            .await;
        if let Ok(response) = answer {
            return response.text().await.expect("the metrics' text");
        }
        assert!(Instant::now() < deadline, "/metrics never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

fn assert_closed_in_time(closed: Option<(String, Duration)>, what: &str) -> String {
    let (answer, after) = closed.unwrap_or_else(|| panic!("{what}: still open after {GIVE_UP:?}"));
    assert!(
        after >= TIMEOUT && after <= TIMEOUT + SLACK,
        "{what}: closed after {after:?}, expected {TIMEOUT:?} to {:?}",
        TIMEOUT + SLACK
    );
    answer
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_and_closed_while_others_are_served() {
    let server = TestServer::start_with_config(
        config(|c| c.body_read_timeout = Some(TIMEOUT)),
        support::client(),
    )
    .await;
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    slow.write_all(b"POST /write HTTP/1.1\r\nHost: tt\r\nContent-Length: 100000\r\n\r\ncp")
        .await
        .expect("send the head and 2 bytes");
    let stalled_at = Instant::now();
    // While that body stalls, another client is answered.
    assert_eq!(health(&server).await, 200);
    let answer = assert_closed_in_time(
        read_until_closed(&mut slow, stalled_at).await,
        "stalled body",
    );
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "a stalled body is answered 408, got {answer:?}"
    );
    assert!(answer.contains("--body-read-timeout"), "{answer:?}");
    assert_eq!(health(&server).await, 200);
    let text = metrics(&server).await;
    assert!(
        has_line(&text, "tickertape_request_bodies_stalled_total 1"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_body_that_keeps_coming_is_not_cut() {
    let server = TestServer::start_with_config(
        config(|c| {
            c.body_read_timeout = Some(TIMEOUT);
            c.min_body_rate = Some(1_000);
        }),
        support::client(),
    )
    .await;
    let mut client = TcpStream::connect(server.addr).await.expect("connect");
    // 200 lines (about 4 KB), sent in 8 pieces 400 ms apart: the whole body takes over
    // three times the timeout, but no gap is as long as it and its average rate (about
    // 3 KB/s) stays above the minimum.
    let body: String = (0..200).map(|i| format!("m value={i} {i}\n")).collect();
    client
        .write_all(
            format!(
                "POST /write?precision=s HTTP/1.1\r\nHost: tt\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .expect("head");
    for piece in body.as_bytes().chunks(body.len().div_ceil(8)) {
        tokio::time::sleep(Duration::from_millis(400)).await;
        client.write_all(piece).await.expect("piece");
    }
    let (answer, _) = read_until_closed(&mut client, Instant::now())
        .await
        .expect("answered");
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer:?}");
    server.stop().await;
}

/// Sends the head of a 100,000-byte write, then one byte of its body every `every`
/// (never a gap as long as any timeout here) until the server closes the connection or
/// [`GIVE_UP`] passes. What the server answered, and after how long.
async fn trickle(addr: SocketAddr, every: Duration) -> Option<(String, Duration)> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"POST /write HTTP/1.1\r\nHost: tt\r\nContent-Length: 100000\r\n\r\nc")
        .await
        .expect("send the head and a byte");
    let since = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while since.elapsed() < GIVE_UP {
        match tokio::time::timeout(every, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Some((String::from_utf8_lossy(&got).into_owned(), since.elapsed()))
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            // Nothing came back in time: one more byte.
            Err(_) => {
                if stream.write_all(b"p").await.is_err() {
                    return Some((String::from_utf8_lossy(&got).into_owned(), since.elapsed()));
                }
            }
        }
    }
    None
}

#[tokio::test]
async fn a_body_trickled_byte_by_byte_is_cut_by_the_minimum_rate() {
    let server = TestServer::start_with_config(
        config(|c| {
            c.body_read_timeout = Some(TIMEOUT);
            c.min_body_rate = Some(1_000);
        }),
        support::client(),
    )
    .await;
    // A byte every 300 ms: the gap never reaches the timeout, so only the rate cuts it.
    let answer = assert_closed_in_time(
        trickle(server.addr, Duration::from_millis(300)).await,
        "trickled body",
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(answer.contains("--min-body-rate"), "{answer:?}");
    assert_eq!(health(&server).await, 200);
    server.stop().await;
}

#[tokio::test]
async fn clients_trickling_bodies_do_not_lock_out_a_fast_one() {
    const SLOTS: usize = 3;
    let server = TestServer::start_with_config(
        // Timeouts far beyond the test: only shedding frees a slot.
        config(|c| {
            c.max_connections = SLOTS;
            c.body_read_timeout = Some(Duration::from_secs(120));
            c.header_read_timeout = Some(Duration::from_secs(120));
        }),
        support::client(),
    )
    .await;
    let trickling: Vec<_> = (0..SLOTS)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move { trickle(addr, Duration::from_millis(500)).await })
        })
        .collect();
    // Past the grace after which a connection waiting on its client can be shed.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let asked_at = Instant::now();
    assert_eq!(health(&server).await, 200, "a fast client is served");
    let after = asked_at.elapsed();
    assert!(after < SLACK, "the fast client waited {after:?}");
    // The trickling client shed for it saw its connection closed, without an answer.
    let mut closed = 0;
    for client in trickling {
        if let Ok(Ok(Some((answer, _)))) =
            tokio::time::timeout(Duration::from_millis(100), client).await
        {
            assert!(answer.is_empty(), "{answer:?}");
            closed += 1;
        }
    }
    assert!(closed >= 1, "no trickling connection was shed");
    let text = metrics(&server).await;
    assert!(
        text.lines()
            .any(|l| l.starts_with("tickertape_connections_shed_total ")
                && l != "tickertape_connections_shed_total 0"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_head_that_never_completes_is_closed_after_the_header_timeout() {
    let server = TestServer::start_with_config(
        config(|c| c.header_read_timeout = Some(TIMEOUT)),
        support::client(),
    )
    .await;
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: tt\r\n")
        .await
        .expect("half a head");
    let sent_at = Instant::now();
    assert_eq!(health(&server).await, 200);
    assert_closed_in_time(read_until_closed(&mut slow, sent_at).await, "half a head");
    // A connection that sends nothing at all is closed alike.
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let opened_at = Instant::now();
    assert_closed_in_time(
        read_until_closed(&mut silent, opened_at).await,
        "silent connection",
    );
    server.stop().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let server = TestServer::start_with_config(
        config(|c| c.header_read_timeout = Some(TIMEOUT)),
        support::client(),
    )
    .await;
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: tt\r\n\r\n")
        .await
        .expect("request");
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(GIVE_UP, idle.read(&mut buf))
        .await
        .expect("answered in time")
        .expect("read");
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let answered_at = Instant::now();
    let (rest, after) = read_until_closed(&mut idle, answered_at)
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(
        after <= TIMEOUT + SLACK,
        "idle connection closed after {after:?}"
    );
    server.stop().await;
}

/// A raw keep-alive connection that has been answered once (so the server holds it).
async fn served_connection(server: &TestServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    assert!(
        ask_health(&mut stream).await,
        "a connection within the limit"
    );
    stream
}

/// `GET /health` on `stream`; whether a 200 came back before the server closed it.
async fn ask_health(stream: &mut TcpStream) -> bool {
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: tt\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 4096];
    match tokio::time::timeout(GIVE_UP, stream.read(&mut buf)).await {
        Ok(Ok(n)) => buf[..n].starts_with(b"HTTP/1.1 200"),
        _ => false,
    }
}

#[tokio::test]
async fn past_the_connection_limit_a_connection_is_closed_at_once() {
    let server =
        TestServer::start_with_config(config(|c| c.max_connections = 2), support::client()).await;
    let mut first = served_connection(&server).await;
    let _second = served_connection(&server).await;
    let mut third = TcpStream::connect(server.addr).await.expect("connect");
    let opened_at = Instant::now();
    let (answer, after) = read_until_closed(&mut third, opened_at)
        .await
        .expect("the connection past the limit is closed");
    assert!(answer.is_empty(), "{answer:?}");
    assert!(after < SLACK, "closed only after {after:?}");
    // The connections within the limit still work.
    assert!(ask_health(&mut first).await);
    // Once one closes, its slot serves a new connection.
    drop(first);
    let deadline = Instant::now() + GIVE_UP;
    loop {
        let mut fourth = TcpStream::connect(server.addr).await.expect("connect");
        if ask_health(&mut fourth).await {
            break;
        }
        assert!(Instant::now() < deadline, "the freed slot was never reused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = metrics(&server).await;
    assert!(
        has_line(&text, "tickertape_connections_refused_total 1"),
        "{text}"
    );
    // `_second` and the one asking.
    assert!(has_line(&text, "tickertape_connections_open 2"), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight() {
    let server = TestServer::start_with_config(ServerConfig::default(), support::client()).await;
    let addr = server.addr;
    let mut writer = TcpStream::connect(addr).await.expect("connect");
    let body = "m value=1 1\n";
    writer
        .write_all(
            format!(
                "POST /write?precision=s HTTP/1.1\r\nHost: tt\r\nContent-Length: {}\r\n\r\nm va",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .expect("head and part of the body");
    // The handler is reading the body when the shutdown comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!stopping.is_finished(), "stopped with a request in flight");
    writer
        .write_all(&body.as_bytes()[4..])
        .await
        .expect("the rest of the body");
    let (answer, _) = read_until_closed(&mut writer, Instant::now())
        .await
        .expect("answered, then closed");
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer:?}");
    tokio::time::timeout(GIVE_UP, stopping)
        .await
        .expect("stopped once the request was answered")
        .expect("stop task");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "a stopped server accepts no connection"
    );
}
