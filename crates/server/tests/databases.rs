//! Databases over HTTP: two databases holding a measurement of the same name answer
//! apart through every API — InfluxDB 1.x and 2 writes, the own query API and listings,
//! the cardinality view, deletes, InfluxQL, Prometheus (`?db=` and `/prometheus/db/<name>/`,
//! remote write and PromQL), OTLP — and a request naming no database uses the default one.
//! The engine's rules over every backend are the conformance suite's
//! (`databases_keep_series_apart`).

mod support;

use serde_json::{json, Value};
use support::{snappy_block, write_request, Labels, TestServer};

const T: i64 = 1_700_000_000;

async fn post(server: &TestServer, path: &str, body: &str) -> (u16, Value) {
    let r = server
        .client
        .post(format!("{}{path}", server.url))
        .body(body.to_owned())
        .send()
        .await
        .expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn influxql(server: &TestServer, params: &[(&str, &str)]) -> Value {
    let (status, body) = server.get("/query", params).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// `host=value` of each point of `measurement` in `db` through `/api/v1/query`.
async fn own_values(server: &TestServer, db: Option<&str>, measurement: &str) -> Vec<String> {
    let mut params = vec![("measurement", measurement), ("start", "0")];
    params.extend(db.map(|d| ("db", d)));
    let (status, body) = server.get("/api/v1/query", &params).await;
    assert_eq!(status, 200, "{body}");
    let mut out = Vec::new();
    for series in body["series"].as_array().expect("series") {
        let host = series["tags"]["host"].as_str().unwrap_or_default();
        for p in series["points"].as_array().expect("points") {
            out.push(format!("{host}={}", p[1]));
        }
    }
    out
}

/// `metric{host}=value` of a PromQL instant query at T through `prefix`.
async fn promql(server: &TestServer, prefix: &str, params: &[(&str, &str)]) -> Vec<String> {
    let time = T.to_string();
    let mut all = vec![("time", time.as_str())];
    all.extend_from_slice(params);
    let (status, body) = server.get(&format!("{prefix}/api/v1/query"), &all).await;
    assert_eq!(status, 200, "{body}");
    let mut out: Vec<String> = body["data"]["result"]
        .as_array()
        .expect("result")
        .iter()
        .map(|r| {
            let m = &r["metric"];
            let name = m["__name__"].as_str().unwrap_or_default();
            let host = m["host"].as_str().unwrap_or_default();
            format!(
                "{name}{{{host}}}={}",
                r["value"][1].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn two_databases_answer_apart_through_every_api() {
    let server = TestServer::start().await;
    let (status, body) = post(
        &server,
        "/write?db=app",
        &format!("cpu,host=a usage=2 {T}000000000\n"),
    )
    .await;
    assert_eq!(status, 404, "writing to a database nobody created: {body}");
    assert_eq!(body, json!({ "error": "database not found: \"app\"" }));
    let (status, body) = post(&server, "/write?db=a%2Fb", "cpu usage=1\n").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("invalid database name"),
        "{body}"
    );

    let (status, body) = post(&server, "/api/v1/admin/databases?name=app", "").await;
    assert_eq!((status, &body["created"]), (201, &json!(true)), "{body}");
    let (status, _) = post(&server, "/api/v1/admin/databases?name=app", "").await;
    assert_eq!(status, 200, "creating it again changes nothing");
    let body = influxql(&server, &[("q", "CREATE DATABASE telegraf")]).await;
    assert_eq!(body["results"][0], json!({ "statement_id": 0 }));

    // The default database, written as before; `app` through InfluxDB 1.x and 2 writes.
    let line = |host: &str, v: i64| format!("cpu,host={host} usage={v} {T}000000000\n");
    assert_eq!(post(&server, "/write", &line("a", 1)).await.0, 204);
    assert_eq!(
        post(&server, "/write?db=tickertape", &line("b", 1)).await.0,
        204
    );
    assert_eq!(post(&server, "/write?db=app", &line("a", 2)).await.0, 204);
    let v2 = "/api/v2/write?org=o&bucket=app%2Fautogen&precision=ns";
    assert_eq!(post(&server, v2, &line("c", 2)).await.0, 204);
    assert_eq!(
        post(&server, "/write?db=telegraf", &line("t", 3)).await.0,
        204
    );

    // The own API.
    assert_eq!(own_values(&server, None, "cpu").await, ["a=1.0", "b=1.0"]);
    assert_eq!(
        own_values(&server, Some("app"), "cpu").await,
        ["a=2.0", "c=2.0"]
    );
    assert_eq!(
        own_values(&server, Some("telegraf"), "cpu").await,
        ["t=3.0"]
    );
    let (status, body) = server
        .get("/api/v1/query", &[("measurement", "cpu"), ("db", "nope")])
        .await;
    assert_eq!(
        (status, body),
        (404, json!({ "error": "database not found: \"nope\"" }))
    );
    let hosts = |db: &'static str| {
        let server = &server;
        async move {
            let params = [("measurement", "cpu"), ("key", "host"), ("db", db)];
            server.get("/api/v1/tag_values", &params).await.1["tag_values"].clone()
        }
    };
    assert_eq!(hosts("tickertape").await, json!(["a", "b"]));
    assert_eq!(hosts("app").await, json!(["a", "c"]));
    let (status, body) = server
        .get(
            "/api/v1/tag_values",
            &[("measurement", "cpu"), ("key", "host"), ("db", "")],
        )
        .await;
    assert_eq!(
        status, 400,
        "an empty db is not the default database: {body}"
    );
    let (_, body) = server.get("/api/v1/databases", &[]).await;
    assert_eq!(
        body,
        json!({ "databases": ["app", "telegraf", "tickertape"], "default": "tickertape" })
    );
    let (_, c) = server
        .get("/api/v1/status/cardinality", &[("db", "app")])
        .await;
    assert_eq!(
        (&c["database"], &c["series"], &c["series_in_all_databases"]),
        (&json!("app"), &json!(2), &json!(5)),
        "{c}"
    );

    // InfluxQL: the request's db, the statement's own (`ON`, `"db".."m"`), SHOW DATABASES.
    let body = influxql(
        &server,
        &[
            ("q", "SELECT sum(usage) FROM cpu"),
            ("db", "app"),
            ("epoch", "s"),
        ],
    )
    .await;
    assert_eq!(
        body["results"][0]["series"][0]["values"],
        json!([[0, 4.0]]),
        "{body}"
    );
    let body = influxql(&server, &[("q", r#"SELECT sum(usage) FROM "telegraf".."cpu"; SHOW TAG VALUES ON app WITH KEY = "host"; SHOW DATABASES"#), ("epoch", "s")]).await;
    assert_eq!(
        body["results"][0]["series"][0]["values"],
        json!([[0, 3.0]]),
        "{body}"
    );
    assert_eq!(
        body["results"][1]["series"][0]["values"],
        json!([["host", "a"], ["host", "c"]]),
        "{body}"
    );
    assert_eq!(
        body["results"][2]["series"][0]["values"],
        json!([["app"], ["telegraf"], ["tickertape"]]),
        "{body}"
    );
    let body = influxql(&server, &[("q", "SELECT usage FROM cpu"), ("db", "nope")]).await;
    assert_eq!(
        body["results"][0]["error"],
        json!("database not found: nope"),
        "{body}"
    );

    // Prometheus: remote write and PromQL under /prometheus/db/app/, and `?db=`.
    let labels: Labels = [("__name__", "disk_used"), ("host", "z")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let samples: &[(i64, f64)] = &[(T * 1000, 7.0)];
    let r = server
        .client
        .post(format!("{}/prometheus/db/app/api/v1/write", server.url))
        .header("Content-Encoding", "snappy")
        .header("Content-Type", "application/x-protobuf")
        .body(snappy_block(&write_request(&[(&labels, samples)])))
        .send()
        .await
        .expect("remote write");
    assert_eq!(r.status().as_u16(), 204);
    let app = ["cpu_usage{a}=2", "cpu_usage{c}=2", "disk_used{z}=7"];
    assert_eq!(
        promql(
            &server,
            "/prometheus/db/app",
            &[("query", r#"{host=~".+"}"#)]
        )
        .await,
        app
    );
    assert_eq!(
        promql(
            &server,
            "/prometheus",
            &[("query", r#"{host=~".+"}"#), ("db", "app")]
        )
        .await,
        app
    );
    assert_eq!(
        promql(&server, "/prometheus", &[("query", "cpu_usage")]).await,
        ["cpu_usage{a}=1", "cpu_usage{b}=1"]
    );
    let (status, body) = server
        .get("/prometheus/db/nope/api/v1/query", &[("query", "up")])
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        (&body["status"], &body["errorType"]),
        (&json!("error"), &json!("not_found")),
        "{body}"
    );

    // OTLP into `app`.
    let otlp = format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{{"name":"temp","gauge":{{"dataPoints":[{{"timeUnixNano":"{T}000000000","asDouble":21.5,"attributes":[{{"key":"host","value":{{"stringValue":"o"}}}}]}}]}}}}]}}]}}]}}"#
    );
    let r = server
        .client
        .post(format!("{}/opentelemetry/v1/metrics?db=app", server.url))
        .header("Content-Type", "application/json")
        .body(otlp)
        .send()
        .await
        .expect("otlp");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        promql(&server, "/prometheus/db/app", &[("query", "temp")]).await,
        ["temp{o}=21.5"]
    );
    assert_eq!(
        promql(&server, "/prometheus", &[("query", "temp")]).await,
        Vec::<String>::new()
    );

    // A delete in `app` (its db in the form body) leaves the default database alone.
    let r = server
        .client
        .post(format!("{}/api/v1/admin/delete", server.url))
        .form(&[("measurement", "cpu"), ("tag", "host:a"), ("db", "app")])
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(own_values(&server, Some("app"), "cpu").await, ["c=2.0"]);
    assert_eq!(own_values(&server, None, "cpu").await, ["a=1.0", "b=1.0"]);

    // DROP DATABASE over InfluxQL, and the admin route.
    let body = influxql(
        &server,
        &[(
            "q",
            "DROP DATABASE telegraf; DROP DATABASE telegraf; SHOW DATABASES",
        )],
    )
    .await;
    assert_eq!(
        body["results"][1],
        json!({ "statement_id": 1 }),
        "dropping twice is no error"
    );
    assert_eq!(
        body["results"][2]["series"][0]["values"],
        json!([["app"], ["tickertape"]]),
        "{body}"
    );
    let r = server
        .client
        .delete(format!("{}/api/v1/admin/databases?name=app", server.url))
        .send()
        .await
        .expect("drop");
    assert_eq!(r.status().as_u16(), 200);
    let dropped: Value = r.json().await.expect("json");
    assert_eq!(
        dropped["series_removed"],
        json!(3),
        "cpu,host=c, disk_used, temp: {dropped}"
    );
    assert_eq!(post(&server, "/write?db=app", &line("a", 9)).await.0, 404);
    assert_eq!(own_values(&server, None, "cpu").await, ["a=1.0", "b=1.0"]);
    let (_, c) = server.get("/api/v1/status/cardinality", &[]).await;
    assert_eq!(
        (&c["series"], &c["series_in_all_databases"]),
        (&json!(2), &json!(2)),
        "{c}"
    );
    server.stop().await;
}
