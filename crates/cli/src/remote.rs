//! A running server to talk to (`--url`, `--ca-cert`, `--token`): the flags every command
//! that can use a server shares, and the one place its HTTP client is built.

use anyhow::{bail, Context, Result};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct RemoteArgs {
    /// Use a running server instead of opening the store: http://HOST:PORT, or
    /// https://HOST:PORT for one started with --tls-cert.
    #[arg(long)]
    pub url: Option<String>,
    /// A CA certificate (PEM) to trust for an https:// --url, in addition to the built-in
    /// public roots; for a server whose certificate your own CA signed.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub ca_cert: Option<PathBuf>,
    /// Sent to --url as `Authorization: Bearer TOKEN`, for a server that asks for one.
    #[arg(long, env = "TICKERTAPE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// A server, and the client that reaches it.
pub struct Remote {
    /// The base URL, without a trailing slash.
    pub url: String,
    pub client: reqwest::Client,
}

impl Remote {
    /// `{url}{path_and_query}`; `path_and_query` starts with `/`.
    pub fn endpoint(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.url)
    }
}

impl RemoteArgs {
    /// The server of `--url` with its client; `None` without `--url`.
    pub fn remote(&self) -> Result<Option<Remote>> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("--url {url}: expected http://HOST:PORT or https://HOST:PORT");
        }
        let mut builder = reqwest::Client::builder();
        if let Some(path) = &self.ca_cert {
            for certificate in read_ca(path)? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some(token) = &self.token {
            let mut value = HeaderValue::try_from(format!("Bearer {token}"))
                .context("--token: not a valid HTTP header value")?;
            value.set_sensitive(true);
            builder = builder.default_headers(HeaderMap::from_iter([(AUTHORIZATION, value)]));
        }
        let client = builder.build().context("cannot make the HTTP client")?;
        Ok(Some(Remote {
            url: url.trim_end_matches('/').to_string(),
            client,
        }))
    }
}

fn read_ca(path: &PathBuf) -> Result<Vec<reqwest::Certificate>> {
    let name = path.display();
    let pem = std::fs::read(path).with_context(|| format!("--ca-cert: cannot read {name}"))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .with_context(|| format!("--ca-cert: {name} is not a PEM certificate file"))?;
    if certificates.is_empty() {
        bail!("--ca-cert: {name} holds no CERTIFICATE section");
    }
    Ok(certificates)
}
