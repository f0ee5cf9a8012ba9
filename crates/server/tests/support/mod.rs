//! What the Prometheus tests share: a tickertape server in this process, on the embedded
//! store in a temporary directory, listening on a loopback port; and remote-write bodies
//! built by hand (protobuf and snappy), independently of the server's own decoder.

// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

pub mod certs;

use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, QueryLimits};
use tickertape_server::ServerConfig;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestServer {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    /// The address the server listens on (for raw TCP clients).
    pub addr: std::net::SocketAddr,
    pub client: reqwest::Client,
    /// The engine the server runs (sharing its store), for what no route does: the
    /// retention pass `serve` runs on its own schedule.
    pub engine: Engine,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
    // Dropped last: the store lives in it (`None`: a directory the test keeps).
    _dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// A server on a fresh embedded store.
    pub async fn start() -> Self {
        Self::start_with_schema("").await
    }

    /// A server on a fresh embedded store whose engine uses the TOML schema `schema` (as
    /// `--config` gives it).
    pub async fn start_with_schema(schema: &str) -> Self {
        Self::launch(schema, ServerConfig::default(), client()).await
    }

    /// A server on a fresh embedded store with the schema `schema` and `config`.
    pub async fn start_with(schema: &str, config: ServerConfig) -> Self {
        Self::launch(schema, config, client()).await
    }

    /// A server on a fresh embedded store with `config` (timeouts, limits, TLS), spoken
    /// to with `client`; `url` is `https://…` when `config` has TLS.
    pub async fn start_with_config(config: ServerConfig, client: reqwest::Client) -> Self {
        Self::launch("", config, client).await
    }

    /// A server on a fresh embedded store whose engine refuses queries past `limits`.
    pub async fn start_with_limits(limits: QueryLimits) -> Self {
        Self::launch_with("", ServerConfig::default(), client(), limits).await
    }

    async fn launch(schema: &str, config: ServerConfig, client: reqwest::Client) -> Self {
        Self::launch_with(schema, config, client, QueryLimits::default()).await
    }

    /// A server on the embedded store in `store` (kept after [`stop`](Self::stop), so a
    /// second server can open it again) whose engine uses the TOML schema `schema`.
    pub async fn start_on(store: &std::path::Path, schema: &str) -> Self {
        let schema = tickertape_core::schema::Schema::from_toml(schema).expect("schema");
        Self::launch_on(
            store,
            None,
            schema,
            ServerConfig::default(),
            client(),
            QueryLimits::default(),
        )
        .await
    }

    /// A server on a fresh embedded store that scrapes as `options` say (the
    /// configuration file must exist); panics when the configuration is refused.
    pub async fn start_scraping(options: tickertape_server::scrape::ScrapeOptions) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_path_buf();
        Self::launch_scraping(
            &path,
            Some(dir),
            Default::default(),
            ServerConfig::default(),
            client(),
            QueryLimits::default(),
            Some(options),
        )
        .await
    }

    async fn launch_with(
        schema: &str,
        config: ServerConfig,
        client: reqwest::Client,
        limits: QueryLimits,
    ) -> Self {
        let schema = tickertape_core::schema::Schema::from_toml(schema).expect("schema");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_path_buf();
        Self::launch_on(&path, Some(dir), schema, config, client, limits).await
    }

    async fn launch_on(
        store: &std::path::Path,
        dir: Option<tempfile::TempDir>,
        schema: tickertape_core::schema::Schema,
        config: ServerConfig,
        client: reqwest::Client,
        limits: QueryLimits,
    ) -> Self {
        Self::launch_scraping(store, dir, schema, config, client, limits, None).await
    }

    async fn launch_scraping(
        store: &std::path::Path,
        dir: Option<tempfile::TempDir>,
        schema: tickertape_core::schema::Schema,
        mut config: ServerConfig,
        client: reqwest::Client,
        limits: QueryLimits,
        scrape: Option<tickertape_server::scrape::ScrapeOptions>,
    ) -> Self {
        let backend = EmbeddedBackend::open(EmbeddedOptions::new(store)).expect("open the store");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("addr");
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{addr}");
        let (stop, stopped) = oneshot::channel::<()>();
        let engine = Engine::new(Arc::new(backend))
            .with_schema(schema)
            .with_query_limits(limits);
        if let Some(options) = scrape {
            let scraping = tickertape_server::scrape::Scraping::start(engine.clone(), options)
                .await
                .expect("the scrape configuration");
            config.scrape = Some(scraping);
        }
        let task = tokio::spawn(tickertape_server::serve(
            listener,
            engine.clone(),
            config,
            async {
                let _ = stopped.await;
            },
        ));
        Self {
            url,
            addr,
            client,
            engine,
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        }
    }

    /// Stops the server and waits until it has let go of the store.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // A keep-alive connection holds the engine: close the client's first.
        self.client = client();
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server");
        }
    }

    /// `GET {url}{path}` with `params` (URL-encoded here); the status and the body as
    /// JSON (a body that is not JSON comes back as a JSON string).
    pub async fn get(&self, path: &str, params: &[(&str, &str)]) -> (u16, serde_json::Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .query(params)
            .send()
            .await
            .expect("GET");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, json)
    }

    /// `POST /write?precision=s` of a line-protocol `body`, which must be stored whole.
    pub async fn write_seconds(&self, body: String) {
        let (status, answer) = self.post("/write?precision=s", body).await;
        assert_eq!(status, 204, "write: {answer}");
    }

    /// `POST {url}{path}` of a raw `body`; the status and the body as JSON (or a string).
    pub async fn post(&self, path: &str, body: impl Into<String>) -> (u16, serde_json::Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .body(body.into())
            .send()
            .await
            .expect("POST");
        json_answer(response).await
    }

    /// `POST {url}{path}` of `form`, URL-encoded and typed as a form, as clients send
    /// long queries; the status and the body as JSON (or a string).
    pub async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> (u16, serde_json::Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .form(form)
            .send()
            .await
            .expect("POST");
        json_answer(response).await
    }

    /// `POST /prometheus/api/v1/write` of `series`, as Prometheus 2.x sends it; the status
    /// and the body's text.
    pub async fn remote_write(&self, series: &[(&Labels, &[(i64, f64)])]) -> (u16, String) {
        let body = snappy_block(&write_request(series));
        let response = self
            .client
            .post(format!("{}/prometheus/api/v1/write", self.url))
            .header("Content-Encoding", "snappy")
            .header("Content-Type", "application/x-protobuf")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body)
            .send()
            .await
            .expect("POST remote write");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

/// An HTTP client for loopback servers: no proxy from the environment, and a bound on
/// every request so that a stuck server fails the test instead of hanging it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("an HTTP client")
}

/// A series' labels, `__name__` included; a `BTreeMap` keeps them in the byte order that
/// remote write asks for.
pub type Labels = BTreeMap<String, String>;

/// A `prometheus.WriteRequest` (protobuf) of `series`: samples as (ms since the epoch,
/// value). Written out by hand from the message definitions, so that the test does not
/// share the server's code:
/// `WriteRequest { repeated TimeSeries timeseries = 1; }`,
/// `TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }`,
/// `Label { string name = 1; string value = 2; }`,
/// `Sample { double value = 1; int64 timestamp = 2; }`.
pub fn write_request(series: &[(&Labels, &[(i64, f64)])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (labels, samples) in series {
        let mut ts = Vec::new();
        for (name, value) in labels.iter() {
            let mut label = Vec::new();
            field_bytes(&mut label, 1, name.as_bytes());
            field_bytes(&mut label, 2, value.as_bytes());
            field_bytes(&mut ts, 1, &label);
        }
        for &(t, v) in samples.iter() {
            let mut sample = Vec::new();
            // Field 1, wire type 1 (64-bit): the value's bits as they are, so a stale
            // marker's NaN payload arrives intact.
            sample.push(1 << 3 | 1);
            sample.extend_from_slice(&v.to_bits().to_le_bytes());
            // Field 2, wire type 0 (varint); an int64 is encoded as its two's complement.
            sample.push(2 << 3);
            varint(&mut sample, t as u64);
            field_bytes(&mut ts, 2, &sample);
        }
        field_bytes(&mut out, 1, &ts);
    }
    out
}

/// A length-delimited field (wire type 2).
fn field_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, u64::from(field << 3 | 2));
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Snappy's block format (not the framed one), which remote write uses.
pub fn snappy_block(raw: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(raw)
        .expect("snappy compresses any input")
}

#[test]
fn write_request_bytes() {
    let labels: Labels = [("__name__".to_string(), "a".to_string())].into();
    let got = write_request(&[(&labels, &[(1, 2.0)])]);
    #[rustfmt::skip]
    let want = [
        0x0a, 0x1c, // timeseries, 28 bytes
        0x0a, 0x0d, // labels, 13 bytes
        0x0a, 0x08, b'_', b'_', b'n', b'a', b'm', b'e', b'_', b'_',
        0x12, 0x01, b'a',
        0x12, 0x0b, // samples, 11 bytes
        0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, // value 2.0
        0x10, 0x01, // timestamp 1
    ];
    assert_eq!(got, want);
    let back = snap::raw::Decoder::new()
        .decompress_vec(&snappy_block(&got))
        .unwrap();
    assert_eq!(back, got);
}

/// Runs `program` with `args`, killed after `limit`: whether it exited 0, and its stdout
/// and stderr together. (A client such as the `influx` CLI, run to its end.)
pub fn run_bounded(program: &str, args: &[&str], limit: std::time::Duration) -> (bool, String) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the program") {
            let output = child.wait_with_output().expect("the program's output");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            return (status.success(), text);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A response's status, and its body as JSON (a body that is not JSON as a JSON string).
pub async fn json_answer(response: reqwest::Response) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, json)
}
