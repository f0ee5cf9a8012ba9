//! InfluxDB's retention policies through the server: `SHOW RETENTION POLICIES` after
//! `CREATE`, `ALTER` and `DROP RETENTION POLICY` and `CREATE DATABASE … WITH`, their
//! refusals, `rp` on `/write` and `/query` and in `FROM`, durability across a restart,
//! and the default policy's duration dropping a database's old raw points in the
//! retention pass. `policies_match_influxdb` sends the same statements and writes to a
//! real InfluxDB 1.x (`/usr/bin/influxd`; SKIPPED without it) and compares every answer.

mod influxdb;
mod support;

use serde_json::{json, Value};
use support::TestServer;

/// `/query` with `q` and `extra` parameters; the status and the body.
async fn query(server: &TestServer, q: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let mut params = vec![("q", q)];
    params.extend_from_slice(extra);
    server.get("/query", &params).await
}

/// The first statement's result of a `/query` that must answer 200.
async fn result(server: &TestServer, q: &str, extra: &[(&str, &str)]) -> Value {
    let (status, body) = query(server, q, extra).await;
    assert_eq!(status, 200, "{q}: {body}");
    body["results"][0].clone()
}

/// The rows of `SHOW RETENTION POLICIES ON db`.
async fn policies(server: &TestServer, db: &str) -> Value {
    let r = result(server, &format!("SHOW RETENTION POLICIES ON {db}"), &[]).await;
    assert_eq!(
        r["series"][0]["columns"],
        json!([
            "name",
            "duration",
            "shardGroupDuration",
            "replicaN",
            "default"
        ]),
        "{r}"
    );
    r["series"][0]["values"].clone()
}

async fn error_of(server: &TestServer, q: &str) -> String {
    let r = result(server, q, &[]).await;
    r["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{q}: no error in {r}"))
        .to_string()
}

async fn write(server: &TestServer, params: &str, body: &str) -> (u16, Value) {
    server
        .post(&format!("/write?precision=s&{params}"), body.to_string())
        .await
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

#[tokio::test]
async fn show_tells_what_create_alter_and_drop_did() {
    let server = TestServer::start().await;
    assert_eq!(
        policies(&server, "tickertape").await,
        json!([["autogen", "0s", "168h0m0s", 1, true]]),
        "a database nobody set policies on"
    );
    result(&server, "CREATE DATABASE d1", &[]).await;
    for q in [
        "CREATE RETENTION POLICY one ON d1 DURATION 1d REPLICATION 1",
        "CREATE RETENTION POLICY one ON d1 DURATION 1d REPLICATION 1",
        "CREATE RETENTION POLICY four ON d1 DURATION 200d REPLICATION 2 DEFAULT",
        "CREATE RETENTION POLICY three ON d1 DURATION 1h REPLICATION 1 SHARD DURATION 10m",
    ] {
        let r = result(&server, q, &[]).await;
        assert_eq!(r, json!({"statement_id": 0}), "{q}");
    }
    assert_eq!(
        policies(&server, "d1").await,
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["one", "24h0m0s", "1h0m0s", 1, false],
            ["four", "4800h0m0s", "168h0m0s", 2, true],
            ["three", "1h0m0s", "1h0m0s", 1, false],
        ])
    );
    for (q, error) in [
        (
            "CREATE RETENTION POLICY one ON d1 DURATION 2d REPLICATION 1",
            "retention policy already exists",
        ),
        (
            "CREATE RETENTION POLICY two ON d1 DURATION 30m REPLICATION 1",
            "retention policy duration must be at least 1h0m0s",
        ),
        (
            "CREATE RETENTION POLICY one ON d1 DURATION 1d REPLICATION 1 DEFAULT",
            "retention policy conflicts with an existing policy",
        ),
        (
            "CREATE RETENTION POLICY x ON nope DURATION 1d REPLICATION 1",
            "database not found: nope",
        ),
        (
            "ALTER RETENTION POLICY nope ON d1 DURATION 3d",
            "retention policy not found: nope",
        ),
    ] {
        assert_eq!(error_of(&server, q).await, error, "{q}");
    }
    result(
        &server,
        "ALTER RETENTION POLICY one ON d1 SHARD DURATION 2h DEFAULT",
        &[],
    )
    .await;
    assert_eq!(
        error_of(&server, "ALTER RETENTION POLICY one ON d1 DURATION 1h").await,
        "retention policy duration must be greater than the shard duration"
    );
    result(&server, "DROP RETENTION POLICY four ON d1", &[]).await;
    result(&server, "DROP RETENTION POLICY never ON d1", &[]).await;
    assert_eq!(
        policies(&server, "d1").await,
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["one", "24h0m0s", "2h0m0s", 1, true],
            ["three", "1h0m0s", "1h0m0s", 1, false],
        ])
    );
    result(
        &server,
        "CREATE DATABASE d2 WITH DURATION 3d SHARD DURATION 1h NAME short",
        &[],
    )
    .await;
    assert_eq!(
        policies(&server, "d2").await,
        json!([["short", "72h0m0s", "1h0m0s", 1, true]])
    );
    assert_eq!(
        error_of(&server, "CREATE DATABASE d2 WITH DURATION 4d").await,
        "retention policy conflicts with an existing policy"
    );
    // A parse error refuses the request, as InfluxDB's parser does.
    let (status, body) = query(&server, "CREATE RETENTION POLICY x ON d1 DURATION 1d", &[]).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("found EOF, expected REPLICATION")),
        "{body}"
    );
    // Dropping a database drops its policies: made again, it has InfluxDB's autogen.
    result(&server, "DROP DATABASE d2", &[]).await;
    result(&server, "CREATE DATABASE d2", &[]).await;
    assert_eq!(
        policies(&server, "d2").await,
        json!([["autogen", "0s", "168h0m0s", 1, true]])
    );
}

#[tokio::test]
async fn rp_names_an_existing_policy_of_the_one_store() {
    let server = TestServer::start().await;
    let t = now_s();
    result(&server, "CREATE DATABASE app", &[]).await;
    result(
        &server,
        "CREATE RETENTION POLICY week ON app DURATION 7d REPLICATION 1",
        &[],
    )
    .await;
    let (status, body) = write(&server, "db=app&rp=nope", &format!("cpu v=1 {t}")).await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "retention policy not found: nope"}))
    );
    let (status, body) = server
        .post(
            "/api/v2/write?precision=s&bucket=app/nope",
            format!("cpu v=1 {t}"),
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (404, &json!("retention policy not found: nope"))
    );
    for (params, value, at) in [
        ("db=app&rp=week", 1, t - 2),
        ("db=app&rp=autogen", 2, t - 1),
        ("db=app", 3, t),
    ] {
        let (status, body) = write(&server, params, &format!("cpu v={value} {at}")).await;
        assert_eq!(status, 204, "{params}: {body}");
    }
    // Every policy names the same points: one store per database.
    let rows = json!([[t - 2, 1.0], [t - 1, 2.0], [t, 3.0]]);
    for (q, extra) in [
        ("SELECT v FROM cpu", vec![("db", "app"), ("rp", "week")]),
        ("SELECT v FROM \"autogen\".\"cpu\"", vec![("db", "app")]),
        ("SELECT v FROM \"app\".\"week\".\"cpu\"", vec![]),
        ("SELECT v FROM \"app\"..\"cpu\"", vec![]),
    ] {
        let mut params = extra.clone();
        params.push(("epoch", "s"));
        let r = result(&server, q, &params).await;
        assert_eq!(r["series"][0]["values"], rows, "{q} {extra:?}: {r}");
    }
    for (q, extra) in [
        ("SELECT v FROM cpu", vec![("db", "app"), ("rp", "nope")]),
        ("SELECT v FROM \"app\".\"nope\".\"cpu\"", vec![]),
        ("SHOW SERIES FROM \"nope\".\"cpu\"", vec![("db", "app")]),
    ] {
        let r = result(&server, q, &extra).await;
        assert_eq!(r["error"], json!("retention policy not found: nope"), "{q}");
    }
    // The default policy dropped: what names no policy is refused naming it.
    result(&server, "DROP RETENTION POLICY autogen ON app", &[]).await;
    let (status, body) = write(&server, "db=app", &format!("cpu v=4 {t}")).await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "retention policy not found: autogen"}))
    );
    let r = result(&server, "SELECT v FROM cpu", &[("db", "app")]).await;
    assert_eq!(r["error"], json!("retention policy not found: autogen"));
    let (status, _) = write(&server, "db=app&rp=week", &format!("cpu v=4 {t}")).await;
    assert_eq!(status, 204);
}

#[tokio::test]
async fn policies_survive_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_on(dir.path(), "").await;
    result(&server, "CREATE DATABASE app", &[]).await;
    for q in [
        "CREATE RETENTION POLICY week ON app DURATION 7d REPLICATION 1 DEFAULT",
        "ALTER RETENTION POLICY autogen ON tickertape DURATION 30d",
    ] {
        assert_eq!(
            result(&server, q, &[]).await,
            json!({"statement_id": 0}),
            "{q}"
        );
    }
    let before = (
        policies(&server, "app").await,
        policies(&server, "tickertape").await,
    );
    assert_eq!(
        before.1,
        json!([["autogen", "720h0m0s", "168h0m0s", 1, true]])
    );
    server.stop().await;
    let server = TestServer::start_on(dir.path(), "").await;
    let after = (
        policies(&server, "app").await,
        policies(&server, "tickertape").await,
    );
    assert_eq!(before, after);
    assert_eq!(
        after.0,
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["week", "168h0m0s", "24h0m0s", 1, true],
        ])
    );
    server.stop().await;
}

/// Points of `measurement` in `db` since the epoch, by the own API.
async fn count(server: &TestServer, db: &str, measurement: &str) -> usize {
    let (status, body) = server
        .get(
            "/api/v1/query",
            &[("db", db), ("measurement", measurement), ("start", "0")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| s["points"].as_array().map_or(0, Vec::len))
        .sum()
}

/// The default policy's duration is the database's raw retention: the pass drops its
/// points older than it, not another database's; a measurement the config gives its own
/// retention keeps to it, one listed without follows the policy.
#[tokio::test]
async fn the_default_policy_bounds_a_databases_raw_points() {
    let schema = "[measurements.own]\nretention = { raw = \"365d\" }\n\
                  [measurements.listed]\nrollups = [\"1h\"]\n";
    let server = TestServer::start_with_schema(schema).await;
    let now = now_s();
    let old = now - 60 * 86_400;
    result(&server, "CREATE DATABASE app", &[]).await;
    let body: String = ["cpu", "own", "listed"]
        .iter()
        .flat_map(|m| [old, now - 60].map(|t| format!("{m},host=a v=1 {t}\n")))
        .collect();
    for db in ["app", "tickertape"] {
        let (status, answer) = write(&server, &format!("db={db}"), &body).await;
        assert_eq!(status, 204, "{answer}");
    }
    result(
        &server,
        "CREATE RETENTION POLICY month ON app DURATION 30d REPLICATION 1 DEFAULT",
        &[],
    )
    .await;
    // `/api/v1/schema` shows each database's raw retention by the same rule.
    let (status, app) = server.get("/api/v1/schema", &[("db", "app")]).await;
    assert_eq!(status, 200, "{app}");
    assert_eq!(app["default"]["retention"]["raw"], "30d", "{app}");
    assert_eq!(app["measurements"]["listed"]["retention"]["raw"], "30d");
    assert_eq!(app["measurements"]["own"]["retention"]["raw"], "1y");
    assert_eq!(
        app["database"],
        json!({"name": "app", "default_retention_policy": {"name": "month", "duration": "720h0m0s"}})
    );
    let (_, default_db) = server.get("/api/v1/schema", &[]).await;
    assert_eq!(
        default_db["default"]["retention"],
        json!({}),
        "{default_db}"
    );
    assert_eq!(
        default_db["database"],
        json!({"name": "tickertape", "default_retention_policy": {"name": "autogen", "duration": "0s"}})
    );
    let (status, _) = server.get("/api/v1/schema", &[("db", "nope")]).await;
    assert_eq!(status, 404);

    // Retention drops whole parts: the points written are flushed into them first.
    let (status, body) = server.post("/api/v1/admin/compact", "").await;
    assert_eq!(status, 204, "{body}");
    server
        .engine
        .apply_retention(false)
        .await
        .expect("retention");
    let counts = |db: &'static str| {
        let server = &server;
        async move {
            [
                count(server, db, "cpu").await,
                count(server, db, "own").await,
                count(server, db, "listed").await,
            ]
        }
    };
    assert_eq!(counts("app").await, [1, 2, 1], "app keeps 30 days");
    assert_eq!(
        counts("tickertape").await,
        [2, 2, 2],
        "the default database keeps everything"
    );
    // Made forever again, nothing more is dropped; the old points are gone for good.
    result(
        &server,
        "ALTER RETENTION POLICY month ON app DURATION INF",
        &[],
    )
    .await;
    server
        .engine
        .apply_retention(false)
        .await
        .expect("retention");
    assert_eq!(counts("app").await, [1, 2, 1]);
}

/// The same statements and writes, to a real InfluxDB 1.x and to tickertape, answer the
/// same: statuses, results and error texts (parse errors by status alone).
#[tokio::test]
async fn policies_match_influxdb() {
    if !influxdb::installed() {
        eprintln!("SKIPPED: {} is not installed", influxdb::INFLUXD);
        return;
    }
    let influxd = influxdb::start_influxd().await;
    let server = TestServer::start().await;
    let client = support::client();
    let t = now_s().to_string();
    let line = format!("cpu,host=a v=1 {t}");
    enum Step<'a> {
        Query(&'a str, &'a [(&'a str, &'a str)]),
        Write(&'a str),
    }
    use Step::{Query as Q, Write as W};
    let steps = [
        Q("CREATE DATABASE d1", &[]),
        Q("SHOW RETENTION POLICIES ON d1", &[]),
        Q("SHOW RETENTION POLICIES", &[("db", "d1")]),
        Q("CREATE RETENTION POLICY one ON d1 DURATION 1d REPLICATION 1", &[]),
        Q("CREATE RETENTION POLICY one ON d1 DURATION 1d REPLICATION 1", &[]),
        Q("CREATE RETENTION POLICY one ON d1 DURATION 2d REPLICATION 1", &[]),
        Q("CREATE RETENTION POLICY two ON d1 DURATION 30m REPLICATION 1", &[]),
        Q("CREATE RETENTION POLICY two ON d1 DURATION 1h REPLICATION 1 SHARD DURATION 2h", &[]),
        Q("CREATE RETENTION POLICY three ON d1 DURATION 1h REPLICATION 1 SHARD DURATION 10m", &[]),
        Q("CREATE RETENTION POLICY four ON d1 DURATION 200d REPLICATION 2 DEFAULT", &[]),
        Q("CREATE RETENTION POLICY five ON d1 DURATION INF REPLICATION 1 SHARD DURATION 0s", &[]),
        Q("CREATE RETENTION POLICY \"a b\" ON d1 DURATION 3d REPLICATION 1 SHARD DURATION 1000d", &[]),
        Q("CREATE RETENTION POLICY x ON nope DURATION 1d REPLICATION 1", &[]),
        Q("CREATE RETENTION POLICY three ON d1 DURATION 1h REPLICATION 1 SHARD DURATION 10m DEFAULT", &[]),
        Q("CREATE RETENTION POLICY x ON d1 DURATION 1d REPLICATION 0", &[]),
        Q("CREATE RETENTION POLICY x ON d1 DURATION 1d", &[]),
        Q("SHOW RETENTION POLICIES ON d1", &[]),
        Q("ALTER RETENTION POLICY one ON d1 DURATION 3d", &[]),
        Q("ALTER RETENTION POLICY one ON d1 SHARD DURATION 2h DEFAULT", &[]),
        Q("ALTER RETENTION POLICY one ON d1 DURATION 1h", &[]),
        Q("ALTER RETENTION POLICY one ON d1 DURATION 30m", &[]),
        Q("ALTER RETENTION POLICY one ON d1 REPLICATION 3", &[]),
        Q("ALTER RETENTION POLICY nope ON d1 DURATION 3d", &[]),
        Q("ALTER RETENTION POLICY one ON nope DURATION 3d", &[]),
        Q("ALTER RETENTION POLICY one ON d1", &[]),
        Q("ALTER RETENTION POLICY five ON d1 DEFAULT DURATION 5d", &[]),
        Q("SHOW RETENTION POLICIES ON d1", &[]),
        Q("DROP RETENTION POLICY nope ON d1", &[]),
        Q("DROP RETENTION POLICY one ON nope", &[]),
        Q("SHOW RETENTION POLICIES ON nope", &[]),
        Q("CREATE DATABASE d2 WITH DURATION 3d REPLICATION 1 SHARD DURATION 1h NAME short", &[]),
        Q("CREATE DATABASE d3 WITH DURATION 3d", &[]),
        Q("CREATE DATABASE d4 WITH NAME foo", &[]),
        Q("CREATE DATABASE d5 WITH", &[]),
        Q("CREATE DATABASE d6 WITH DURATION 30m", &[]),
        Q("CREATE DATABASE d7 WITH SHARD DURATION 3h", &[]),
        Q("SHOW RETENTION POLICIES ON d2", &[]),
        Q("SHOW RETENTION POLICIES ON d3", &[]),
        Q("SHOW RETENTION POLICIES ON d4", &[]),
        Q("SHOW RETENTION POLICIES ON d7", &[]),
        Q("CREATE DATABASE d2 WITH DURATION 4d", &[]),
        Q("CREATE DATABASE d2", &[]),
        Q("CREATE DATABASE d2 WITH DURATION 3d REPLICATION 1 SHARD DURATION 1h NAME short", &[]),
        W("db=d1&rp=nope"),
        W("db=d1&rp=three"),
        W("db=d2"),
        W("db=d2&rp=short"),
        Q("SELECT * FROM cpu", &[("db", "d2"), ("rp", "nope")]),
        Q("SELECT * FROM cpu", &[("db", "d2"), ("rp", "short")]),
        Q("SELECT * FROM \"d2\".\"nope\".\"cpu\"", &[]),
        Q("SELECT * FROM \"nope\".\"cpu\"", &[("db", "d2")]),
        Q("SELECT * FROM \"short\".\"cpu\"", &[("db", "d2"), ("rp", "nope")]),
        Q("SELECT * FROM \"d2\"..\"cpu\"", &[]),
        Q("SELECT * FROM cpu", &[("db", "d1"), ("rp", "three")]),
        Q("SHOW SERIES FROM \"nope\".\"cpu\"", &[("db", "d1")]),
        Q("SHOW FIELD KEYS FROM \"nope\".\"cpu\"", &[("db", "d1")]),
        Q("SHOW TAG KEYS FROM \"nope\".\"cpu\"", &[("db", "d1")]),
        Q("DROP RETENTION POLICY five ON d1", &[]),
        W("db=d1"),
        Q("SELECT * FROM cpu", &[("db", "d1")]),
        Q("SHOW RETENTION POLICIES ON d1", &[]),
    ];
    let mut failures = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let (what, theirs, ours) = match step {
            Q(q, extra) => {
                let mut params = vec![("q", *q), ("epoch", "s")];
                params.extend_from_slice(extra);
                // POST: InfluxDB warns of statements that change things sent by GET.
                let send = |url: String| {
                    let request = client.post(url).form(&params);
                    async move { influxdb_answer(request).await }
                };
                let theirs = send(format!("{}/query", influxd.url)).await;
                let ours = send(format!("{}/query", server.url)).await;
                (format!("{q} {extra:?}"), theirs, ours)
            }
            W(params) => {
                let send = |url: String| {
                    let request = client.post(url).body(line.clone());
                    async move { influxdb_answer(request).await }
                };
                let theirs = send(format!("{}/write?precision=s&{params}", influxd.url)).await;
                let ours = send(format!("{}/write?precision=s&{params}", server.url)).await;
                (format!("write {params}"), theirs, ours)
            }
        };
        // A parse error's words are the parser's own; its status must agree. Numbers
        // agree as numbers (InfluxDB prints a float 1 as `1`). The one status kept
        // different on purpose: an unknown policy on a write is 404 here, 500 there,
        // with the same words.
        let unknown_policy = theirs.0 == 500 && ours.0 == 404 && theirs.1 == ours.1;
        let same = (theirs.0 == ours.0 || unknown_policy)
            && (theirs.0 == 400 || influxdb::agree(&theirs.1, &ours.1, "").is_ok());
        if !same {
            failures.push(format!(
                "step {i}, {what}:\n  influxdb   {} {}\n  tickertape {} {}",
                theirs.0,
                influxdb::short(&theirs.1),
                ours.0,
                influxdb::short(&ours.1)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A response's status and JSON body (`null` for none).
async fn influxdb_answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}
