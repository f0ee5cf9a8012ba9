//! The client side of `--url` (`src/remote.rs`), through the real binary: `import` and
//! `query` against a `tickertape serve --tls-cert …` trusting the test CA with
//! `--ca-cert`, and `--token`/`TICKERTAPE_TOKEN` as a bearer token on the wire.

mod support;

// Shared with the server's TLS tests; this binary uses a part of it.
#[allow(dead_code)]
#[path = "../../server/tests/support/certs.rs"]
mod certs;

use certs::Certificates;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command};
use support::{serve_with, text, tickertape};

/// The server process, killed (by its PID, through its handle) when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn import_and_query_over_https_with_the_ca_cert() {
    let certs = Certificates::make();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (cert, key, ca) = (certs.cert(), certs.key(), certs.ca());
    let (child, url) = serve_with(
        &store,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let _server = Server(child);
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let ca = ca.to_str().unwrap();

    let file = dir.path().join("data.lp");
    std::fs::write(
        &file,
        "temp,room=hall celsius=19.5 1700000000\ntemp,room=hall celsius=20 1700000060\n",
    )
    .unwrap();
    let out = tickertape(&[
        "import",
        file.to_str().unwrap(),
        "--url",
        &url,
        "--ca-cert",
        ca,
        "--precision",
        "s",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = tickertape(&[
        "query",
        "--url",
        &url,
        "--ca-cert",
        ca,
        "-m",
        "temp",
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "series,time,value\n\
         temp{room=hall}#celsius,2023-11-14T22:13:20Z,19.5\n\
         temp{room=hall}#celsius,2023-11-14T22:14:20Z,20\n"
    );

    // Without the CA the server's certificate is not trusted: an error, not an answer.
    let out = tickertape(&["query", "--url", &url, "-m", "temp"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("cannot reach"),
        "{}",
        text(&out.stderr)
    );
    // A --ca-cert that is not PEM is named.
    let out = tickertape(&[
        "query",
        "--url",
        &url,
        "--ca-cert",
        file.to_str().unwrap(),
        "-m",
        "temp",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--ca-cert") && err.contains("data.lp"),
        "{err}"
    );
}

/// The request head a `tickertape query --url` sends to a one-shot listener that answers
/// with no series.
fn head_sent(flags: &[&str], token_env: Option<&str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut command = Command::new(env!("CARGO_BIN_EXE_tickertape"));
    command
        .args(["query", "--url", &url, "-m", "m"])
        .args(flags)
        .env_remove("TICKERTAPE_TOKEN")
        .env("TICKERTAPE_LOG", "warn");
    if let Some(token) = token_env {
        command.env("TICKERTAPE_TOKEN", token);
    }
    let mut child = Server(command.spawn().expect("run tickertape query"));
    listener.set_nonblocking(false).unwrap();
    let (stream, _) = listener.accept().expect("the query connects");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let body = r#"{"series":[]}"#;
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let status = child.0.wait().expect("query ends");
    assert!(status.success(), "query against the stub failed");
    head.to_ascii_lowercase()
}

#[test]
fn the_token_is_sent_as_a_bearer_token() {
    let head = head_sent(&["--token", "s3cret"], None);
    assert!(head.contains("authorization: bearer s3cret\r\n"), "{head}");
    let head = head_sent(&[], Some("from-env"));
    assert!(
        head.contains("authorization: bearer from-env\r\n"),
        "{head}"
    );
    let head = head_sent(&[], None);
    assert!(!head.contains("authorization"), "{head}");
}
