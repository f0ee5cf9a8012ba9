//! The write clients every ingest benchmark shares: one keep-alive client per stream of
//! bodies, concurrently, over HTTP or HTTPS, with or without a token; only this is timed.

use crate::ingest::IngestOutcome;
use anyhow::{Context, Result};
use bytes::Bytes;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;
use std::time::Instant;

use crate::dataset::Stream;

/// Refused bodies whose answer is printed in full; the rest are only counted.
const MAX_PRINTED_FAILURES: usize = 5;

/// How the write clients reach the server: a CA to trust for `https://`, a token to send.
#[derive(Clone, Default)]
pub(crate) struct Connect {
    pub(crate) ca: Option<reqwest::Certificate>,
    pub(crate) token: Option<String>,
}

impl Connect {
    fn client(&self) -> Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1);
        if let Some(ca) = &self.ca {
            builder = builder.add_root_certificate(ca.clone());
        }
        builder.build().context("building an HTTP client")
    }
}

/// What the bodies hold, for the request's headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// `POST /write`: line protocol text.
    LineProtocol,
    /// `POST /prometheus/api/v1/write`: a snappy-compressed protobuf `WriteRequest`, with
    /// the headers Prometheus 2.x sends.
    RemoteWrite,
}

/// Sends every stream of bodies (`points` points in all) to `url`, one keep-alive client
/// per stream, concurrently; only this is timed.
pub(crate) async fn send_streams(
    url: &str,
    streams: Arc<Vec<Stream>>,
    points: u64,
    kind: BodyKind,
    connect: &Connect,
) -> Result<IngestOutcome> {
    let bar = ProgressBar::new(points);
    bar.set_style(
        ProgressStyle::with_template(
            "ingest [{bar:30}] {human_pos}/{human_len} points {per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(streams.len());
    for stream in 0..streams.len() {
        let client = connect.client()?;
        let token = connect.token.clone();
        let (streams, bar, url) = (streams.clone(), bar.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            let mut failures: Vec<String> = Vec::new();
            let mut failed = 0usize;
            let stream = &streams[stream];
            for (i, (body, &points)) in stream.bodies.iter().zip(&stream.points).enumerate() {
                let sent = post(&client, &url, body.clone(), kind, token.as_deref()).await;
                if let Err(message) = sent {
                    failed += 1;
                    if failures.len() < MAX_PRINTED_FAILURES {
                        failures.push(format!("body {i}: {message}"));
                    }
                }
                bar.inc(points);
            }
            (failed, failures)
        }));
    }
    let mut outcome = IngestOutcome {
        seconds: 0.0,
        points_per_second: 0.0,
        bodies: streams.iter().map(|s| s.bodies.len()).sum(),
        failed: 0,
        failures: Vec::new(),
    };
    for task in tasks {
        let (failed, failures) = task.await.context("client task")?;
        outcome.failed += failed;
        outcome.failures.extend(failures);
    }
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome.points_per_second = points as f64 / outcome.seconds;
    outcome.failures.truncate(MAX_PRINTED_FAILURES);
    bar.finish_and_clear();
    Ok(outcome)
}

/// One body; `Err` with what went wrong unless the answer is 204.
async fn post(
    client: &reqwest::Client,
    url: &str,
    body: Bytes,
    kind: BodyKind,
    token: Option<&str>,
) -> Result<(), String> {
    let mut request = match kind {
        BodyKind::LineProtocol => client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        BodyKind::RemoteWrite => client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .header(reqwest::header::CONTENT_ENCODING, "snappy")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0"),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("{status}, body unreadable: {e}"))?;
    if status == reqwest::StatusCode::NO_CONTENT {
        Ok(())
    } else {
        Err(format!("{status}: {text:.500}"))
    }
}
