//! End-to-end tests through the real interface: a server on 127.0.0.1:0 spoken to over
//! HTTP. The tests of the API run over the in-memory reference backend; the tests of what
//! a real store adds — the first end-to-end test, a restart — over a fresh embedded store.

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::Engine;
use tickertape_reference::ReferenceBackend;
use tickertape_server::ServerConfig;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

struct TestServer {
    url: String,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// Small segments, so that a few points already span several.
const SEGMENT_CAPACITY: usize = 4;

/// The embedded store in `dir`, with a small head so that a few points already reach part
/// files.
fn embedded(dir: &Path) -> Arc<dyn Backend> {
    let mut options = EmbeddedOptions::new(dir);
    options.head_points = SEGMENT_CAPACITY;
    Arc::new(EmbeddedBackend::open(options).expect("open store"))
}

/// The embedded store in `dir` again, once the server before it has let go of it: the
/// last connection task of a stopped server may still be dropping the store (bounded wait).
async fn reopen(dir: &Path) -> Arc<dyn Backend> {
    for _ in 0..100 {
        let mut options = EmbeddedOptions::new(dir);
        options.head_points = SEGMENT_CAPACITY;
        match EmbeddedBackend::open(options) {
            Ok(b) => return Arc::new(b),
            Err(tickertape_backend::BackendError::Unavailable(_)) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => panic!("open store: {e}"),
        }
    }
    panic!(
        "the store in {} stayed open for 5 s after its server stopped",
        dir.display()
    )
}

/// A fresh in-memory reference store.
fn reference() -> Arc<dyn Backend> {
    Arc::new(ReferenceBackend::new(SEGMENT_CAPACITY).expect("a valid capacity"))
}

impl TestServer {
    async fn start(backend: Arc<dyn Backend>, config: ServerConfig) -> Self {
        Self::start_with_schema(backend, config, "").await
    }

    /// A server whose engine uses the TOML schema `schema` (as `--config` gives it).
    async fn start_with_schema(
        backend: Arc<dyn Backend>,
        config: ServerConfig,
        schema: &str,
    ) -> Self {
        let schema = tickertape_core::schema::Schema::from_toml(schema).expect("schema");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(tickertape_server::serve(
            listener,
            Engine::new(backend).with_schema(schema),
            config,
            async {
                let _ = stopped.await;
            },
        ));
        Self {
            url,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server and waits until the store is closed.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Close the client's keep-alive connections first: a connection task still open
        // holds the engine, and the store closes only when the last one ends.
        self.client = reqwest::Client::new();
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server");
        }
    }

    async fn write(&self, query: &str, body: &str) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}/write{query}", self.url))
            .body(body.to_string())
            .send()
            .await
            .expect("write request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `POST /api/v1/admin/compact`; its status.
    async fn compact(&self) -> u16 {
        let url = format!("{}/api/v1/admin/compact", self.url);
        let response = self.client.post(url).send().await.unwrap();
        response.status().as_u16()
    }

    async fn get(&self, path_and_query: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path_and_query}", self.url))
            .send()
            .await
            .expect("get");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn points(&self, query: &str) -> Vec<(i64, f64)> {
        let (status, body) = self.get(&format!("/api/v1/query?{query}")).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_value(body["series"][0]["points"].clone()).unwrap_or_default()
    }
}

const BODY: &str = "\
cpu,host=a,dc=eu usage=1.5,idle=90i 10
cpu,host=b,dc=us usage=2.5,idle=80i 10
cpu,host=a,dc=eu usage=3.5,idle=70i 20
cpu,dc=eu,host=a usage=4.5 30
";

#[tokio::test]
async fn write_then_query_raw_aggregates_and_neighbors() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(embedded(dir.path()), ServerConfig::default()).await;
    let (status, _) = server.write("", BODY).await;
    assert_eq!(status, 204);

    let raw = server
        .points("measurement=cpu&field=usage&tag=host:a")
        .await;
    assert_eq!(
        raw,
        vec![(10, 1.5), (20, 3.5), (30, 4.5)],
        "tag order in the line does not matter"
    );
    let window = server
        .points("measurement=cpu&field=usage&tag=host:a&start=15&end=30")
        .await;
    assert_eq!(window, vec![(20, 3.5)], "start inclusive, end exclusive");
    let with_neighbors = server
        .points("measurement=cpu&field=usage&tag=host:a&start=15&end=25&neighbors=true")
        .await;
    assert_eq!(with_neighbors, vec![(10, 1.5), (20, 3.5), (30, 4.5)]);
    let sums = server
        .points("measurement=cpu&field=usage&tag=host:a&step=20ns&agg=sum")
        .await;
    assert_eq!(sums, vec![(0, 1.5), (20, 8.0)]);
    let last = server
        .points("measurement=cpu&field=usage&tag=host:a&start=0&end=100&agg=last")
        .await;
    assert_eq!(last, vec![(30, 4.5)]);

    let (status, all) = server
        .get("/api/v1/query?measurement=cpu&field=idle&agg=max")
        .await;
    assert_eq!(status, 200);
    let series = all["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!(series[0]["tags"]["host"], "a");
    assert_eq!(series[0]["field"], "idle");

    let (status, listed) = server.get("/api/v1/series?measurement=cpu").await;
    assert_eq!(status, 200);
    assert_eq!(listed["series"].as_array().unwrap().len(), 4);
    server.stop().await;
}

#[tokio::test]
async fn partial_failure_names_lines_and_keeps_the_rest() {
    let server = TestServer::start(reference(), ServerConfig::default()).await;
    assert_eq!(server.write("", "m,h=a v=1 100\n").await.0, 204);
    let body = "\
m,h=a v=2 200
this line is broken
m,h=a v=3 150
m,h=a v=9007199254740993i 300

m,h=a v=5 400
m,h=a v=4 400
";
    let (status, report) = server.write("", body).await;
    assert_eq!(status, 400, "{report}");
    // A late line (150) is stored, and of two lines at one time the last wins: only the
    // broken line and the integer a float64 cannot hold are refused.
    assert_eq!(report["accepted"], 4);
    assert_eq!(report["rejected"], 2);
    let lines: Vec<u64> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![2, 4]);
    let message = |i: usize| report["errors"][i]["message"].as_str().unwrap().to_string();
    assert!(message(1).contains("no exact float64"), "{}", message(1));
    assert!(report["error"].as_str().unwrap().contains("2 of 6"));
    assert_eq!(
        server.points("measurement=m&field=v").await,
        vec![(100, 1.0), (150, 3.0), (200, 2.0), (400, 4.0)]
    );

    let (_, metrics) = server.get("/metrics").await;
    let metrics = metrics.as_str().unwrap().to_string();
    assert!(
        // Every accepted point, the one its own body replaced at 400 included.
        metrics.contains("tickertape_points_written_total 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tickertape_lines_rejected_total 2"),
        "{metrics}"
    );
    assert!(metrics.contains(
        "tickertape_http_request_duration_seconds_count{route=\"/write\",status=\"400\"} 1"
    ));
    assert!(metrics.contains("\ntickertape_series 1\n"), "{metrics}");
    assert!(
        metrics.contains("\n# TYPE tickertape_rollup_lag_points gauge\n"),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn gzip_precision_and_body_limit() {
    let server = TestServer::start(
        reference(),
        ServerConfig {
            max_body_bytes: 1_000,
            ..ServerConfig::default()
        },
    )
    .await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"g v=1 5\ng v=2 6\n").unwrap();
    let response = server
        .client
        .post(format!("{}/api/v2/write?precision=s", server.url))
        .header("Content-Encoding", "gzip")
        .body(gz.finish().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert_eq!(
        server.points("measurement=g").await,
        vec![(5_000_000_000, 1.0), (6_000_000_000, 2.0)]
    );

    let big = "g v=1 1\n".repeat(200);
    assert_eq!(server.write("", &big).await.0, 413);
    let (status, body) = server.write("?precision=minutes", "g v=1 1").await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("precision"));
    server.stop().await;
}

#[tokio::test]
async fn bad_query_parameters_are_named() {
    let server = TestServer::start(reference(), ServerConfig::default()).await;
    for (query, name) in [
        ("field=v", "measurement"),
        ("measurement=m&step=10s", "agg"),
        ("measurement=m&start=10&end=5", "start"),
        ("measurement=m&agg=mean", "agg"),
    ] {
        let (status, body) = server.get(&format!("/api/v1/query?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(
            body["error"].as_str().unwrap().contains(name),
            "{query}: {body}"
        );
    }
    // /health names the backend the server runs on.
    let (status, health) = server.get("/health").await;
    assert_eq!(
        (status, health["backend"].as_str()),
        (200, Some("reference"))
    );
    server.stop().await;
}

#[tokio::test]
async fn restart_keeps_acknowledged_points() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(embedded(dir.path()), ServerConfig::default()).await;
    let body: String = (1..=10).map(|t| format!("r,k=v x={t} {t}\n")).collect();
    assert_eq!(server.write("", &body).await.0, 204);
    server.stop().await;

    let server = TestServer::start(embedded(dir.path()), ServerConfig::default()).await;
    let want: Vec<(i64, f64)> = (1..=10).map(|t| (t, t as f64)).collect();
    assert_eq!(server.points("measurement=r").await, want);
    // A point at a stored time replaces it (the last write wins), also after a restart.
    let (status, _) = server.write("", "r,k=v x=0 10\nr,k=v x=11 11\n").await;
    assert_eq!(status, 204);
    let mut want: Vec<(i64, f64)> = (1..=9).map(|t| (t, t as f64)).collect();
    want.extend([(10, 0.0), (11, 11.0)]);
    assert_eq!(server.points("measurement=r").await, want);
    server.stop().await;
}

#[tokio::test]
async fn merge_puts_series_on_one_time_axis() {
    let server = TestServer::start(reference(), ServerConfig::default()).await;
    let body = "t,room=a c=1 10\nt,room=b c=2 20\nt,room=a c=3 30\nt,room=b c=4 30\n";
    assert_eq!(server.write("", body).await.0, 204);
    let (status, merged) = server.get("/api/v1/query?measurement=t&merge=true").await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["times"], serde_json::json!([10, 20, 30]));
    assert_eq!(merged["series"][0]["tags"]["room"], "a");
    assert_eq!(
        merged["series"][0]["values"],
        serde_json::json!([1.0, null, 3.0])
    );
    assert_eq!(
        merged["series"][1]["values"],
        serde_json::json!([null, 2.0, 4.0])
    );
    let (status, _) = server
        .get("/api/v1/query?measurement=t&merge=perhaps")
        .await;
    assert_eq!(status, 400);
    server.stop().await;
}

/// Windows are reported at their start for every aggregate, `first` and `last`
/// included (the API's rule, as InfluxDB's `GROUP BY time()`), so series merged on one time
/// axis share the rows of the windows they have points in.
#[tokio::test]
async fn merged_first_and_last_windows_share_the_window_start_rows() {
    let server = TestServer::start(reference(), ServerConfig::default()).await;
    let body = "t,room=a c=1 5\nt,room=b c=2 12\nt,room=a c=3 25\nt,room=b c=4 38\n\
                t,room=a c=5 39\n";
    assert_eq!(server.write("", body).await.0, 204);
    for (agg, a, b) in [
        ("first", [1.0, 3.0], [2.0, 4.0]),
        ("last", [1.0, 5.0], [2.0, 4.0]),
    ] {
        let (status, merged) = server
            .get(&format!(
                "/api/v1/query?measurement=t&start=0&end=40&step=20ns&agg={agg}&merge=true"
            ))
            .await;
        assert_eq!(status, 200, "{merged}");
        assert_eq!(merged["times"], serde_json::json!([0, 20]), "{agg}");
        assert_eq!(merged["series"][0]["values"], serde_json::json!(a), "{agg}");
        assert_eq!(merged["series"][1]["values"], serde_json::json!(b), "{agg}");
    }
    // Without a step, first and last stay at the chosen point's own time.
    let first = server
        .points("measurement=t&tag=room:b&start=0&end=40&agg=first")
        .await;
    assert_eq!(first, vec![(12, 2.0)]);
    server.stop().await;
}

#[tokio::test]
async fn counters_increment_over_http_and_display_totals() {
    let schema =
        "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"1s\"\nkind = \"counter\"\n";
    let server = TestServer::start_with_schema(reference(), ServerConfig::default(), schema).await;
    let (status, _) = server
        .write(
            "?mode=inc&precision=s",
            "pageviews,page=home n=1 0\npageviews,page=home n=2 0\npageviews,page=home n=4 90",
        )
        .await;
    assert_eq!(status, 204);
    let (status, body) = server
        .write("?precision=s", "pageviews,page=home n=1 0\ncpu v=1 0")
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["accepted"], 1);
    assert_eq!(body["errors"][0]["line"], 1);
    assert!(body["error"]
        .as_str()
        .unwrap_or("")
        .contains("1 of 2 lines rejected"));
    let (status, body) = server
        .write(
            "?mode=inc&precision=s",
            "cpu v=1 0
cpu v=2 1",
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "all 2 lines rejected; nothing was stored");
    let (status, body) = server.write("?mode=add", "cpu v=1 0").await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap_or("").contains("mode"),
        "{body}"
    );

    let (status, body) = server
        .get("/api/v1/query?measurement=pageviews&start=0&end=120000000000&step=1m&display=total")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["series"][0]["points"],
        serde_json::json!([[0, 3.0], [60_000_000_000i64, 4.0]])
    );
    let (status, body) = server
        .get("/api/v1/query?measurement=pageviews&start=0&end=120000000000&display=avg_per_sec")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["series"][0]["points"],
        serde_json::json!([[0, 7.0 / 120.0]])
    );
    let (_, body) = server.get("/api/v1/schema").await;
    assert_eq!(body["measurements"]["pageviews"]["kind"], "counter");
    server.stop().await;
}

/// Two clients loading the same series at once, their bodies interleaved in time, on the
/// embedded store: every body is stored (no 400 for "older" points), a compaction answers
/// 204 once merged, and every point reads back, also after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_interleaved_in_time_store_every_point_and_compaction_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(TestServer::start(embedded(dir.path()), ServerConfig::default()).await);
    // Client 0 writes the even bodies of [0, 400), client 1 the odd ones, in reverse.
    let body = |k: i64| -> String {
        (k * 10..k * 10 + 10)
            .map(|t| format!("m,h=a v={t} {t}\n"))
            .collect()
    };
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let server = server.clone();
            tokio::spawn(async move {
                let mut bodies: Vec<i64> = (0..40).filter(|k| k % 2 == c).collect();
                if c == 1 {
                    bodies.reverse();
                }
                let mut statuses = Vec::new();
                for k in bodies {
                    statuses.push(server.write("", &body(k)).await.0);
                }
                statuses
            })
        })
        .collect();
    for client in clients {
        let statuses = client.await.unwrap();
        assert!(statuses.iter().all(|&s| s == 204), "{statuses:?}");
    }
    let want: Vec<(i64, f64)> = (0..400).map(|t| (t, t as f64)).collect();
    assert_eq!(server.points("measurement=m").await, want);
    let memory_points = || async {
        let (_, metrics) = server.get("/metrics").await;
        let text = metrics.as_str().unwrap_or_default().to_string();
        text.lines()
            .find_map(|l| l.strip_prefix("tickertape_memory_points "))
            .and_then(|v| v.parse::<u64>().ok())
    };
    // The test store flushes its head every few points, in the background: any number of
    // them may still be in memory here, none included (a CI run saw 0), so only the
    // gauge's presence and bound are checked before compaction.
    let before = memory_points().await.expect("the gauge is reported");
    assert!(before <= 400, "{before} points in memory");
    assert_eq!(server.compact().await, 204);
    assert_eq!(
        memory_points().await,
        Some(0),
        "in part files after compaction"
    );
    assert_eq!(
        server.points("measurement=m").await,
        want,
        "after compaction"
    );
    Arc::into_inner(server).expect("one handle").stop().await;
    let server = TestServer::start(reopen(dir.path()).await, ServerConfig::default()).await;
    assert_eq!(server.points("measurement=m").await, want, "after restart");
    server.stop().await;
}

/// The embedded store computes the rollups of value segments itself (1h and 1d by
/// default) when it writes part files: every windowed answer read from them equals the
/// raw answer, bit for bit, with late and replaced points, before and after compaction
/// and a restart.
#[tokio::test]
async fn embedded_rollups_answer_as_raw_points_do() {
    const HOUR: i64 = 3_600_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(embedded(dir.path()), ServerConfig::default()).await;
    // Three days every 7 minutes, sent newest body first; then every 5th point again
    // with another value (the last write wins).
    let line = |k: i64, scale: f64| {
        format!(
            "m,h=a v={} {}\n",
            k as f64 * scale + 0.1,
            k * 420_000_000_000
        )
    };
    let n = 3 * 24 * 60 / 7;
    let bodies: Vec<String> = (0..n)
        .collect::<Vec<i64>>()
        .chunks(50)
        .rev()
        .map(|ks| ks.iter().map(|&k| line(k, 0.37)).collect())
        .collect();
    for body in bodies {
        assert_eq!(server.write("", &body).await.0, 204);
    }
    let replaced: String = (0..n).step_by(5).map(|k| line(k, -1.3)).collect();
    assert_eq!(server.write("", &replaced).await.0, 204);
    let end = n * 420_000_000_000;
    let queries: Vec<String> = ["sum", "avg", "min", "max", "count", "first", "last"]
        .iter()
        .flat_map(|agg| {
            [
                format!("measurement=m&start=0&end={end}&step=1h&agg={agg}"),
                format!("measurement=m&start={HOUR}&end={end}&step=1d&agg={agg}"),
                format!("measurement=m&start=0&end={}&agg={agg}", 2 * 24 * HOUR),
            ]
        })
        .collect();
    check_rollups(&server, &queries, "written").await;
    assert_eq!(server.compact().await, 204);
    check_rollups(&server, &queries, "compacted").await;
    // A late point into a compacted day.
    assert_eq!(server.write("", &line(3, 100.0)).await.0, 204);
    check_rollups(&server, &queries, "late point").await;
    server.stop().await;
    let server = TestServer::start(reopen(dir.path()).await, ServerConfig::default()).await;
    check_rollups(&server, &queries, "restarted").await;
    server.stop().await;
}

/// Each query answered from rollups (the default) and from raw points is the same.
async fn check_rollups(server: &TestServer, queries: &[String], when: &str) {
    for q in queries {
        let rolled = server.get(&format!("/api/v1/query?{q}")).await;
        let raw = server
            .get(&format!("/api/v1/query?{q}&resolution=raw"))
            .await;
        assert_eq!(rolled.0, 200, "{when}: {q}: {}", rolled.1);
        assert_eq!(rolled, raw, "{when}: {q}");
    }
}
