//! TLS for `serve --tls-cert FILE --tls-key FILE`: the certificate chain and key read from
//! PEM files into a rustls configuration (ring provider, ALPN `h2` and `http/1.1`), and the
//! answer to a plain-HTTP request sent to the TLS port.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// The first byte of every TLS connection: a handshake record (RFC 8446 §5.1, content type
/// 22). Anything else on the TLS port is not a TLS client.
const TLS_HANDSHAKE: u8 = 0x16;

/// How long answering a plain-HTTP client on the TLS port may take (writing the 400 and
/// reading what the client sent until it closes).
const PLAINTEXT_ANSWER_WRITE: Duration = Duration::from_secs(1);

/// Why the TLS configuration could not be made; each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read TLS file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a PEM certificate file: {reason}")]
    NotCertificatePem { path: PathBuf, reason: String },
    #[error("{path} is not a PEM private key file (PKCS#8, PKCS#1 or SEC1): {reason}")]
    NotKeyPem { path: PathBuf, reason: String },
    #[error("the certificate {cert} and the key {key} do not make a TLS configuration")]
    Config {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// A server's TLS configuration, ready to accept connections.
#[derive(Clone)]
pub struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads the certificate chain (leaf first) from `cert` and the private key from `key`,
    /// both PEM.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let chain = read_certificates(cert)?;
        let private_key = read_key(key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| {
                builder
                    .with_no_client_auth()
                    .with_single_cert(chain, private_key)
            })
            .map_err(|source| TlsError::Config {
                cert: cert.to_owned(),
                key: key.to_owned(),
                source,
            })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        })
    }

    pub(crate) fn acceptor(&self) -> &tokio_rustls::TlsAcceptor {
        &self.acceptor
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let not_pem = |reason: String| TlsError::NotCertificatePem {
        path: path.to_owned(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(&read_file(path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(e.to_string()))?;
    if chain.is_empty() {
        return Err(not_pem("no CERTIFICATE section".into()));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(&read_file(path)?).map_err(|e| TlsError::NotKeyPem {
        path: path.to_owned(),
        reason: match e {
            rustls_pki_types::pem::Error::NoItemsFound => "no PRIVATE KEY section".into(),
            e => e.to_string(),
        },
    })
}

/// Whether the client on `stream` starts a TLS handshake, judged by its first byte, which is
/// left unread for the handshake. `None`: the client closed or sent nothing in time.
pub(crate) async fn starts_tls(stream: &TcpStream, wait: Duration) -> Option<bool> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(wait, stream.peek(&mut first)).await {
        Ok(Ok(1)) => Some(first[0] == TLS_HANDSHAKE),
        _ => None,
    }
}

/// Answers a plain-HTTP client on the TLS port with a 400 that says what to do, then closes.
/// The request is not read: the client sees the answer, whatever it sent.
pub(crate) async fn refuse_plaintext(mut stream: TcpStream) {
    const BODY: &str = "This port speaks HTTPS (TLS): use https:// in the URL.\n";
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        // Half-close, then read what the client sent until it closes (bounded by the
        // timeout): closing with its request unread would send a reset, which can destroy
        // the answer before the client reads it.
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.readable().await.is_ok() {
            match stream.try_read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(PLAINTEXT_ANSWER_WRITE, write).await;
}
