//! One scrape's HTTP request, as Prometheus sends it: `GET` of the target's URL with its
//! `Accept`, `User-Agent` and `X-Prometheus-Scrape-Timeout-Seconds` headers, the job's
//! credentials, within the target's timeout; gzip answers decoded (reqwest's `gzip`),
//! the decoded body bounded by `body_size_limit`.

use super::ScrapeError;
use std::time::Duration;
use tickertape_scrape::config::{Credentials, ScrapeJob, Secret};
use tickertape_scrape::exposition::{Format, ACCEPT_HEADER};

const USER_AGENT: &str = concat!("tickertape/", env!("CARGO_PKG_VERSION"));

/// The HTTP client of one job: its TLS settings (`tls.rs`), shared by its targets'
/// scrapes.
pub(crate) fn client(job: &ScrapeJob) -> Result<reqwest::Client, ScrapeError> {
    let error = |message: String| ScrapeError::Tls {
        job: job.name.clone(),
        message,
    };
    let builder = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        // Prometheus 2.x reaches targets directly unless a job names a proxy (`proxy_url`,
        // not taken): a proxy from the environment would send loopback scrapes away.
        .no_proxy()
        .use_preconfigured_tls(super::tls::client_config(&job.tls).map_err(error)?);
    builder.build().map_err(|e| error(e.to_string()))
}

/// A scrape's answer: the body and its format.
pub(crate) struct Body {
    pub text: String,
    pub format: Format,
}

/// Fetches `url`; every failure is a message for the target's `lastError`.
pub(crate) async fn fetch(
    client: &reqwest::Client,
    job: &ScrapeJob,
    url: &str,
    timeout: Duration,
) -> Result<Body, String> {
    let mut request = client
        .get(url)
        .timeout(timeout)
        .header(reqwest::header::ACCEPT, ACCEPT_HEADER)
        .header(
            "X-Prometheus-Scrape-Timeout-Seconds",
            timeout.as_secs_f64().to_string(),
        );
    match &job.credentials {
        None => {}
        Some(Credentials::Basic { username, password }) => {
            let password = match password {
                Some(secret) => Some(read_secret(secret).await?),
                None => None,
            };
            request = request.basic_auth(username, password);
        }
        Some(Credentials::Authorization { kind, credentials }) => {
            let credentials = read_secret(credentials).await?;
            request = request.header(
                reqwest::header::AUTHORIZATION,
                format!("{kind} {credentials}"),
            );
        }
    }
    let mut response = request.send().await.map_err(describe)?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(format!("server returned HTTP status {status}"));
    }
    let format = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or(Format::Text, Format::of_content_type);
    let limit = job.limits.body_size_limit;
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        if limit > 0 && (bytes.len() + chunk.len()) as u64 > limit {
            return Err(format!("body size limit exceeded ({limit} bytes)"));
        }
        bytes.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "the body is not UTF-8 (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(Body { text, format })
}

/// A secret's text; a file is read at each scrape (trimmed, as Prometheus trims it) so
/// that a rotated secret is picked up without a reload.
async fn read_secret(secret: &Secret) -> Result<String, String> {
    match secret {
        Secret::Inline(text) => Ok(text.clone()),
        Secret::File(path) => tokio::fs::read_to_string(path)
            .await
            .map(|text| text.trim().to_string())
            .map_err(|e| format!("unable to read {}: {e}", path.display())),
    }
}

/// A request error with its causes, as one line (reqwest's own message hides them).
fn describe(error: reqwest::Error) -> String {
    if error.is_timeout() {
        return "context deadline exceeded (the scrape timed out)".into();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
