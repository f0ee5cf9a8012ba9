//! InfluxDB 1.x clients: `/ping` and the `/query` statements writers send
//! (`CREATE DATABASE`, `SHOW DATABASES`), over HTTP, and the real `influx` CLI (Debian's
//! `influxdb-client`) inserting and importing lines, then querying them with InfluxQL.
//!
//! `influx_cli_writes` prints SKIPPED and does nothing when `/usr/bin/influx` is absent;
//! `scripts/test` installs it where it can and otherwise leaves the test out by name.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use support::TestServer;

const INFLUX: &str = "/usr/bin/influx";
/// One CLI command may take this long before it is killed and the test fails.
const CLI_LIMIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn ping_and_the_statements_writers_send_are_answered() {
    let server = TestServer::start().await;
    let client = support::client();
    let ping = client
        .get(format!("{}/ping", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status().as_u16(), 204);
    let version = ping.headers()["x-influxdb-version"].to_str().unwrap();
    assert!(version.starts_with("tickertape-"), "{version}");
    let head = client
        .head(format!("{}/ping", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 204);

    // Telegraf's influxdb output, on start: a form body.
    let created: Value = client
        .post(format!("{}/query", server.url))
        .form(&[("q", "CREATE DATABASE \"telegraf\"")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(created, json!({ "results": [{ "statement_id": 0 }] }));
    let (status, shown) = server
        .get(
            "/query",
            &[("q", "SHOW DATABASES; SELECT integral(used) FROM mem")],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        shown["results"][0]["series"][0]["values"],
        json!([["telegraf"], ["tickertape"]])
    );
    // Outside the InfluxQL subset: InfluxDB's per-statement error, naming what.
    let error = shown["results"][1]["error"].as_str().unwrap_or_default();
    assert!(error.contains("integral"), "{shown}");
    // The parameters Telegraf's two InfluxDB outputs send with a write.
    for path in [
        "/write?db=telegraf&rp=autogen&precision=s&consistency=any&u=user&p=secret",
        "/api/v2/write?org=o&bucket=telegraf&precision=s",
    ] {
        let written = client
            .post(format!("{}{path}", server.url))
            .body("mem,host=a used=1 1700000000\n")
            .send()
            .await
            .unwrap();
        assert_eq!(written.status().as_u16(), 204, "{path}");
    }
    let (status, missing) = server.get("/query", &[]).await;
    assert_eq!(status, 400);
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or_default()
            .contains("\"q\""),
        "{missing}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn influx_cli_writes() {
    if !Path::new(INFLUX).exists() {
        eprintln!(
            "SKIPPED: influx (the InfluxDB 1.x CLI) not found — install Debian's \
             influxdb-client package (scripts/test does)"
        );
        return;
    }
    let server = TestServer::start().await;
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let influx = |args: &[&str]| {
        let mut all = vec!["-host", "127.0.0.1", "-port", port.as_str()];
        all.extend_from_slice(args);
        support::run_bounded(INFLUX, &all, CLI_LIMIT)
    };
    let (ok, out) = influx(&["-execute", "CREATE DATABASE telegraf"]);
    assert!(ok, "{out}");
    let (ok, out) = influx(&["-execute", "SHOW DATABASES"]);
    assert!(
        ok && out.contains("tickertape") && out.contains("telegraf"),
        "{out}"
    );
    let (ok, out) = influx(&[
        "-database",
        "telegraf",
        "-precision",
        "s",
        "-execute",
        "INSERT cpu,host=cli1 usage=1.5 1700000000",
    ]);
    assert!(ok, "{out}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("import.txt");
    std::fs::write(
        &file,
        "# DML\n# CONTEXT-DATABASE: telegraf\ncpu,host=cli2 usage=2.5 1700000000000000000\n\
         cpu,host=cli2 usage=3.5 1700000010000000000\n",
    )
    .unwrap();
    let (ok, out) = influx(&["-import", "-path", file.to_str().unwrap()]);
    assert!(ok && out.contains("Processed 2 inserts"), "{out}");
    // InfluxQL through the CLI: a raw select and an aggregate, then a SHOW.
    let (ok, out) = influx(&[
        "-database",
        "telegraf",
        "-precision",
        "s",
        "-execute",
        "SELECT \"usage\" FROM \"cpu\"",
    ]);
    assert!(ok && out.contains("1700000010 3.5"), "{out}");
    let in_telegraf = |q: &str| influx(&["-database", "telegraf", "-execute", q]);
    let (ok, out) = in_telegraf("SELECT max(usage) FROM cpu GROUP BY host");
    assert!(
        ok && out.contains("tags: host=cli2") && out.contains("3.5"),
        "{out}"
    );
    let (ok, out) = in_telegraf("SHOW TAG VALUES FROM cpu WITH KEY = host");
    assert!(ok && out.contains("cli1") && out.contains("cli2"), "{out}");

    let (status, answer) = server
        .get(
            "/api/v1/query",
            &[
                ("measurement", "cpu"),
                ("field", "usage"),
                ("db", "telegraf"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["series"],
        json!([
            { "measurement": "cpu", "tags": { "host": "cli1" }, "field": "usage",
              "points": [[1_700_000_000_000_000_000i64, 1.5]] },
            { "measurement": "cpu", "tags": { "host": "cli2" }, "field": "usage",
              "points": [[1_700_000_000_000_000_000i64, 2.5], [1_700_000_010_000_000_000i64, 3.5]] },
        ])
    );
    server.stop().await;
}
