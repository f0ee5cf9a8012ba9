//! `serve --tls-cert/--tls-key` (`crates/server/src/listen/tls.rs`): HTTPS with a
//! certificate the test makes with the `openssl` CLI; plain HTTP to the TLS port; HTTP/2
//! through ALPN; certificate files that are not what they should be; and promtool (Go's
//! TLS and HTTP/2) querying over HTTPS.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::certs::Certificates;
use support::TestServer;
use tickertape_server::listen::Tls;
use tickertape_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// Debian's prometheus package puts promtool here (scripts/prometheus-test-deps).
const PROMTOOL: &str = "/usr/bin/promtool";
/// The longest a read here waits before the test calls the server stuck.
const GIVE_UP: Duration = Duration::from_secs(20);

fn trusting(certs: &Certificates) -> reqwest::Client {
    let pem = std::fs::read(certs.ca()).expect("read ca.pem");
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("CA PEM"))
        .build()
        .expect("an HTTPS client")
}

async fn tls_server(certs: &Certificates) -> TestServer {
    let tls = Tls::from_pem_files(&certs.cert(), &certs.key()).expect("TLS configuration");
    let config = ServerConfig {
        tls: Some(tls),
        ..ServerConfig::default()
    };
    TestServer::start_with_config(config, trusting(certs)).await
}

#[tokio::test]
async fn writes_and_queries_over_https_with_the_test_ca() {
    let certs = Certificates::make();
    let server = tls_server(&certs).await;
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let written = server
        .client
        .post(format!("{}/write?precision=s", server.url))
        .body("cpu,host=a usage=1.5 1700000000\ncpu,host=a usage=2.5 1700000010\n")
        .send()
        .await
        .expect("POST /write over HTTPS");
    assert_eq!(written.status().as_u16(), 204);
    let (status, body) = server
        .get(
            "/api/v1/query",
            &[("measurement", "cpu"), ("field", "usage")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["series"][0]["points"],
        serde_json::json!([
            [1_700_000_000_000_000_000i64, 1.5],
            [1_700_000_010_000_000_000i64, 2.5]
        ])
    );
    // A client that does not trust the test CA is refused by its own TLS.
    let untrusting = support::client();
    let refused = untrusting
        .get(format!("{}/health", server.url))
        .send()
        .await;
    assert!(
        refused.is_err(),
        "a certificate of an unknown CA was accepted"
    );
    server.stop().await;
}

#[tokio::test]
async fn plain_http_to_the_tls_port_gets_a_400_that_says_https() {
    let certs = Certificates::make();
    let server = tls_server(&certs).await;
    let mut plain = TcpStream::connect(server.addr).await.expect("connect");
    plain
        .write_all(b"GET /health HTTP/1.1\r\nHost: tt\r\n\r\n")
        .await
        .expect("send");
    let sent_at = Instant::now();
    let mut answer = Vec::new();
    tokio::time::timeout(GIVE_UP, plain.read_to_end(&mut answer))
        .await
        .expect("answered and closed, not kept")
        .expect("read");
    let took = sent_at.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    assert!(answer.contains("use https://"), "{answer:?}");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // An HTTP client sees the same.
    let http_url = server.url.replacen("https://", "http://", 1);
    let response = support::client()
        .get(format!("{http_url}/health"))
        .send()
        .await
        .expect("a plain-HTTP answer");
    assert_eq!(response.status().as_u16(), 400);
    let text = response.text().await.expect("body");
    assert!(text.contains("speaks HTTPS"), "{text}");
    let (status, metrics) = server.get("/metrics", &[]).await;
    assert_eq!(status, 200);
    let metrics = metrics.as_str().expect("text");
    assert!(
        metrics
            .lines()
            .any(|l| l == "tickertape_plaintext_on_tls_total 2"),
        "{metrics}"
    );
    server.stop().await;
}

/// A TLS connection to `server` that asked for `h2` by ALPN, trusting the test CA.
async fn h2_connection(
    server: &TestServer,
    certs: &Certificates,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(certs.ca()).expect("read ca.pem");
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).expect("CA PEM"))
        .expect("add the CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    tls
}

/// The HTTP/2 preface and an empty SETTINGS frame (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;

/// The next HTTP/2 frame's type, flags and payload; `None` at the end of the connection.
async fn read_frame<S: AsyncReadExt + Unpin>(stream: &mut S) -> Option<(u8, u8, Vec<u8>)> {
    let mut head = [0u8; 9];
    stream.read_exact(&mut head).await.ok()?;
    let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).await.ok()?;
    Some((head[3], head[4], payload))
}

#[tokio::test]
async fn alpn_h2_gets_http2() {
    let certs = Certificates::make();
    let server = tls_server(&certs).await;
    let mut tls = h2_connection(&server, &certs).await;
    tls.write_all(H2_PREFACE).await.expect("preface");
    // The server's first frame is its SETTINGS.
    let (kind, _, _) = tokio::time::timeout(GIVE_UP, read_frame(&mut tls))
        .await
        .expect("an answer in time")
        .expect("a frame");
    assert_eq!(kind, SETTINGS);
    drop(tls);
    server.stop().await;
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed() {
    let certs = Certificates::make();
    let idle = Duration::from_secs(1);
    let tls = Tls::from_pem_files(&certs.cert(), &certs.key()).expect("TLS configuration");
    let config = ServerConfig {
        tls: Some(tls),
        header_read_timeout: Some(idle),
        ..ServerConfig::default()
    };
    let server = TestServer::start_with_config(config, trusting(&certs)).await;
    let mut tls = h2_connection(&server, &certs).await;
    tls.write_all(H2_PREFACE).await.expect("preface");
    let opened_at = Instant::now();
    // A well-behaved idle client: it acknowledges SETTINGS and PINGs, and sends nothing
    // else; the server says GOAWAY and closes.
    let mut saw_goaway = false;
    let closed = tokio::time::timeout(GIVE_UP, async {
        while let Some((kind, flags, payload)) = read_frame(&mut tls).await {
            let ack = flags & 0x1 != 0;
            match kind {
                SETTINGS if !ack => tls.write_all(b"\0\0\0\x04\x01\0\0\0\0").await?,
                PING if !ack => {
                    tls.write_all(b"\0\0\x08\x06\x01\0\0\0\0").await?;
                    tls.write_all(&payload).await?;
                }
                GOAWAY => saw_goaway = true,
                _ => {}
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    let after = opened_at.elapsed();
    assert!(closed.is_ok(), "an idle HTTP/2 connection was kept");
    assert!(saw_goaway, "closed without GOAWAY");
    // The idle watch looks every `idle`: closed after one to two of them.
    assert!(
        after >= idle && after <= 2 * idle + Duration::from_secs(4),
        "closed after {after:?}"
    );
    server.stop().await;
}

#[test]
fn unreadable_or_non_pem_files_are_named() {
    let certs = Certificates::make();
    let missing = certs.dir().join("missing.pem");
    let error = |cert: &Path, key: &Path| {
        Tls::from_pem_files(cert, key)
            .expect_err("a bad TLS file is refused")
            .to_string()
    };
    let message = error(&missing, &certs.key());
    assert!(
        message.contains("cannot read TLS file") && message.contains("missing.pem"),
        "{message}"
    );
    let not_pem = certs.dir().join("not.pem");
    std::fs::write(&not_pem, "hello\n").expect("write");
    let message = error(&not_pem, &certs.key());
    assert!(
        message.contains("not.pem") && message.contains("not a PEM certificate"),
        "{message}"
    );
    // The certificate given as the key: PEM, but no key in it.
    let message = error(&certs.cert(), &certs.cert());
    assert!(
        message.contains("cert.pem") && message.contains("not a PEM private key"),
        "{message}"
    );
    // A key that is not the certificate's.
    let message = error(&certs.cert(), &certs.dir().join("ca.key"));
    assert!(
        message.contains("do not make a TLS configuration"),
        "{message}"
    );
}

#[tokio::test]
async fn promtool_queries_over_https() {
    if !Path::new(PROMTOOL).exists() {
        eprintln!(
            "SKIPPED: promtool not found — install Debian's prometheus package \
             (scripts/prometheus-test-deps does)"
        );
        return;
    }
    let certs = Certificates::make();
    let server = tls_server(&certs).await;
    let written = server
        .client
        .post(format!("{}/write?precision=s", server.url))
        .body("up,job=tt value=1 1700000000\n")
        .send()
        .await
        .expect("POST /write");
    assert_eq!(written.status().as_u16(), 204);
    // promtool 2.42 has no --http.config.file; Go's TLS reads extra roots from
    // SSL_CERT_FILE. Go negotiates HTTP/2 through ALPN, so this is the HTTP/2 path too.
    let run = tokio::process::Command::new(PROMTOOL)
        .args([
            "query",
            "instant",
            "--time=1700000001",
            &format!("{}/prometheus", server.url),
            "up",
        ])
        .env("SSL_CERT_FILE", certs.ca())
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(GIVE_UP, run)
        .await
        .expect("promtool finished in time")
        .expect("run promtool");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "promtool: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(r#"up{job="tt"} => 1 @[1700000001"#),
        "{stdout}"
    );
    server.stop().await;
}
