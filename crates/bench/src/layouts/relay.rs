//! A TCP relay between the driver and the server that counts round trips, so layouts
//! written through `MongoBackend` are counted exactly like those written with the driver.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP relay between the driver and the server that counts round trips: client → server
/// wire messages, except the driver's own monitoring (`hello`/`isMaster` heartbeats).
pub(super) struct Relay {
    pub(super) uri: String,
    pub(super) count: Arc<AtomicU64>,
}

impl Relay {
    pub(super) async fn start(uri: &str) -> Result<Self> {
        if uri.starts_with("mongodb+srv://") {
            bail!("bench layouts counts round trips through a relay to one host; give mongodb://HOST:PORT");
        }
        let rest = &uri["mongodb://".len()..];
        let (hosts_end, tail) = match rest.find(['/', '?']) {
            Some(i) => (i, &rest[i..]),
            None => (rest.len(), ""),
        };
        let authority = &rest[..hosts_end];
        let (creds, host) = match authority.rsplit_once('@') {
            Some((c, h)) => (format!("{c}@"), h),
            None => (String::new(), authority),
        };
        if host.contains(',') {
            bail!("bench layouts needs a single host (one mongod or mongos), not {host}");
        }
        let upstream = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:27017")
        };
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local = listener.local_addr()?;
        let count = Arc::new(AtomicU64::new(0));
        let counter = count.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(&upstream).await {
                        relay(inbound, outbound, counter).await;
                    }
                });
            }
        });
        let path = if tail.is_empty() { "/" } else { tail };
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        Ok(Self {
            uri: format!("mongodb://{creds}{local}{path}{sep}directConnection=true"),
            count,
        })
    }
}

async fn relay(inbound: TcpStream, outbound: TcpStream, counter: Arc<AtomicU64>) {
    let (mut client_read, mut client_write) = inbound.into_split();
    let (mut server_read, mut server_write) = outbound.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    });
    // Client → server: forward everything, and parse message boundaries to count them.
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if server_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        while pending.len() >= 4 {
            let len = i32::from_le_bytes([pending[0], pending[1], pending[2], pending[3]]) as usize;
            if len < 16 || pending.len() < len {
                break;
            }
            if !is_monitoring(&pending[..len]) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            pending.drain(..len);
        }
    }
    down.abort();
}

/// An OP_MSG (opcode 2013) whose body section's first key is `hello`/`isMaster`.
fn is_monitoring(message: &[u8]) -> bool {
    let opcode = i32::from_le_bytes([message[12], message[13], message[14], message[15]]);
    if opcode != 2013 || message.len() < 27 {
        return false;
    }
    // header 16, flagBits 4, section kind 1, document length 4, element type 1, then the key.
    let key = &message[26..];
    let end = key.iter().position(|&b| b == 0).unwrap_or(0);
    let name = &key[..end];
    name.eq_ignore_ascii_case(b"hello") || name.eq_ignore_ascii_case(b"ismaster")
}
