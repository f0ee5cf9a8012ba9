//! A request's parameters are read once, wherever they are given: the query string, a form
//! body, the path `/prometheus/db/<name>/`. A `db` in a form body is the database on every
//! route that takes a form (Prometheus' query API and delete, InfluxQL's `/query`); a
//! database named twice differently, an empty name, `.` and `..` are refused (400) on
//! every entry point, in each API's error shape.

mod support;

use serde_json::json;
use support::{snappy_block, write_request, Labels, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const T: i64 = 1_700_000_000;

/// A server with database `a`, and `victim v=…` (the metric `victim_v`) in the default
/// database (value 1) and in `a` (value 2, with a label `only_in_a`).
async fn two_databases() -> TestServer {
    let server = TestServer::start().await;
    let (status, body) = server.post("/api/v1/admin/databases?name=a", "").await;
    assert_eq!(status, 201, "{body}");
    for (path, line) in [
        ("/write?precision=s", format!("victim v=1 {T}\n")),
        (
            "/write?precision=s&db=a",
            format!("victim,only_in_a=yes v=2 {T}\n"),
        ),
    ] {
        let (status, body) = server.post(path, &line).await;
        assert_eq!(status, 204, "{body}");
    }
    server
}

/// `victim_v`'s value at T by an instant query in `db` (`None`: the default database).
async fn victim(server: &TestServer, db: Option<&str>) -> Vec<String> {
    let time = T.to_string();
    let mut params = vec![("query", "victim_v"), ("time", time.as_str())];
    params.extend(db.map(|db| ("db", db)));
    let (status, body) = server.get("/prometheus/api/v1/query", &params).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["result"]
        .as_array()
        .expect("a vector")
        .iter()
        .map(|r| r["value"][1].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn delete_series_with_db_in_the_form_body_deletes_in_that_database_only() {
    let server = two_databases().await;
    let path = "/prometheus/api/v1/admin/tsdb/delete_series";
    let (status, body) = server
        .post_form(path, &[("match[]", "victim_v"), ("db", "a")])
        .await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(victim(&server, Some("a")).await, Vec::<String>::new());
    assert_eq!(
        victim(&server, None).await,
        ["1"],
        "the default database kept it"
    );
    // A database that does not exist: 404, nothing deleted.
    let (status, body) = server
        .post_form(path, &[("match[]", "victim_v"), ("db", "no")])
        .await;
    assert_eq!(
        (status, &body["errorType"]),
        (404, &json!("not_found")),
        "{body}"
    );
    assert_eq!(victim(&server, None).await, ["1"]);
    server.stop().await;
}

#[tokio::test]
async fn the_query_api_answers_from_the_database_its_form_body_names() {
    let server = two_databases().await;
    let (t, t_end) = (T.to_string(), (T + 60).to_string());
    let forms: [(&str, Vec<(&str, &str)>); 4] = [
        ("query", vec![("query", "victim_v"), ("time", &t)]),
        (
            "query_range",
            vec![
                ("query", "victim_v"),
                ("start", &t),
                ("end", &t_end),
                ("step", "60"),
            ],
        ),
        ("series", vec![("match[]", "victim_v")]),
        ("labels", vec![("match[]", "victim_v")]),
    ];
    for (route, form) in &forms {
        let path = format!("/prometheus/api/v1/{route}");
        let mut in_a = form.clone();
        in_a.push(("db", "a"));
        let (status, body) = server.post_form(&path, &in_a).await;
        assert_eq!(status, 200, "{route}: {body}");
        let data = body["data"].to_string();
        match *route {
            "query" => assert_eq!(body["data"]["result"][0]["value"][1], "2", "{body}"),
            "query_range" => assert_eq!(body["data"]["result"][0]["values"][0][1], "2", "{body}"),
            _ => assert!(data.contains("only_in_a"), "{route}: {body}"),
        }
        let (status, body) = server.post_form(&path, form).await;
        assert_eq!(status, 200, "{route}: {body}");
        assert!(
            !body["data"].to_string().contains("only_in_a"),
            "{route}: {body}"
        );
        let mut nowhere = form.clone();
        nowhere.push(("db", "nonexist"));
        let (status, body) = server.post_form(&path, &nowhere).await;
        assert_eq!(status, 404, "{route}: {body}");
        assert_eq!(
            (&body["status"], &body["errorType"]),
            (&json!("error"), &json!("not_found")),
            "{route}: {body}"
        );
    }
    // The default database answers 1, so the 2 above came from `a`.
    let (_, body) = server
        .post_form(
            "/prometheus/api/v1/query",
            &[("query", "victim_v"), ("time", &t)],
        )
        .await;
    assert_eq!(body["data"]["result"][0]["value"][1], "1", "{body}");

    // InfluxQL's `/query` likewise.
    let (status, body) = server
        .post_form("/query", &[("q", "SELECT v FROM victim"), ("db", "a")])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["results"][0]["series"][0]["values"][0][1],
        json!(2.0),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_database_named_twice_differently_is_refused_naming_both() {
    let server = two_databases().await;
    let t = T.to_string();
    // Query string and form body, on Prometheus' API: its shape.
    let (status, body) = server
        .post_form(
            "/prometheus/api/v1/query?db=tickertape",
            &[("query", "victim_v"), ("time", &t), ("db", "a")],
        )
        .await;
    assert_eq!(
        (status, &body["errorType"]),
        (400, &json!("bad_data")),
        "{body}"
    );
    let message = body["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"tickertape\" (db in the query string)")
            && message.contains("\"a\" (db in the form body)"),
        "{message}"
    );
    // The path and the query string.
    let (status, body) = server
        .get(
            "/prometheus/db/a/api/v1/query",
            &[("query", "victim_v"), ("db", "tickertape")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("the path /prometheus/db/a/"),
        "{body}"
    );
    // InfluxQL's `/query`: its shape, `{"error": …}`.
    let (status, body) = server
        .post_form(
            "/query?db=tickertape",
            &[("q", "SHOW MEASUREMENTS"), ("db", "a")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("named twice"),
        "{body}"
    );
    // `db` and `bucket` on a write: nothing stored.
    let (status, body) = server
        .post(
            "/api/v2/write?db=a&bucket=tickertape&precision=s",
            &format!("twice v=1 {T}\n"),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"a\" (db in") && message.contains("\"tickertape\" (bucket in"),
        "{message}"
    );
    // The own API's delete, the query string and the form body.
    let (status, body) = server
        .post_form(
            "/api/v1/admin/delete?db=a",
            &[("measurement", "victim"), ("db", "tickertape")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(victim(&server, Some("a")).await, ["2"], "nothing deleted");
    assert_eq!(victim(&server, None).await, ["1"], "nothing deleted");
    // Named twice alike is one database.
    let (status, body) = server
        .post_form(
            "/prometheus/db/a/api/v1/query?db=a",
            &[("query", "victim_v"), ("time", &t), ("db", "a")],
        )
        .await;
    assert_eq!(
        (status, &body["data"]["result"][0]["value"][1]),
        (200, &json!("2")),
        "{body}"
    );
    server.stop().await;
}

/// `METHOD path` over a raw connection, so the path reaches the server as written (an
/// HTTP client library resolves `..` segments before sending): the status.
async fn raw_status(server: &TestServer, method: &str, path: &str, body: &[u8]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8_lossy(&answer);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

#[tokio::test]
async fn empty_dot_and_dot_dot_are_no_databases_on_any_entry_point() {
    let server = two_databases().await;
    let line = format!("victim v=9 {T}\n");
    for name in ["", ".", ".."] {
        let encoded = match name {
            "" => String::new(),
            _ => name.replace('.', "%2E"),
        };
        for path in [
            format!("/write?precision=s&db={encoded}"),
            format!("/api/v2/write?precision=s&bucket={encoded}"),
            format!("/api/v2/write?precision=s&bucket={encoded}%2Fautogen"),
        ] {
            let (status, body) = server.post(&path, &line).await;
            assert_eq!(status, 400, "{path}: {body}");
            let message = body["error"].as_str().unwrap_or_default();
            let says = match name {
                "" => "database name required".to_owned(),
                _ => format!("invalid database name \"{name}\""),
            };
            assert!(message.contains(&says), "{path}: {message}");
        }
        let (status, body) = server
            .get("/api/v1/query", &[("measurement", "victim"), ("db", name)])
            .await;
        assert_eq!(status, 400, "{name:?}: {body}");
        let (status, body) = server
            .get(
                "/prometheus/api/v1/query",
                &[("query", "victim_v"), ("db", name)],
            )
            .await;
        assert_eq!(
            (status, &body["errorType"]),
            (400, &json!("bad_data")),
            "{name:?}: {body}"
        );
        let (status, body) = server
            .post(&format!("/api/v1/admin/databases?name={encoded}"), "")
            .await;
        assert_eq!(status, 400, "create {name:?}: {body}");
        let otlp = r#"{"resourceMetrics":[]}"#;
        let r = server
            .client
            .post(format!(
                "{}/opentelemetry/v1/metrics?db={encoded}",
                server.url
            ))
            .header("Content-Type", "application/json")
            .body(otlp)
            .send()
            .await
            .expect("otlp");
        assert_eq!(r.status().as_u16(), 400, "otlp {name:?}");
        let labels: Labels = [("__name__", "victim_v")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let samples: &[(i64, f64)] = &[(T * 1000, 9.0)];
        let r = server
            .client
            .post(format!(
                "{}/prometheus/api/v1/write?db={encoded}",
                server.url
            ))
            .header("Content-Encoding", "snappy")
            .body(snappy_block(&write_request(&[(&labels, samples)])))
            .send()
            .await
            .expect("remote write");
        assert_eq!(r.status().as_u16(), 400, "remote write {name:?}");
        // InfluxQL: the statement's database, refused in the statement's answer.
        for q in [
            format!("CREATE DATABASE \"{name}\""),
            format!("SELECT v FROM \"{name}\"..\"victim\""),
            format!("SHOW MEASUREMENTS ON \"{name}\""),
        ] {
            let (status, body) = server.get("/query", &[("q", q.as_str())]).await;
            assert_eq!(status, 200, "{q}: {body}");
            let error = body["results"][0]["error"].as_str().unwrap_or_default();
            assert!(error.contains("invalid database name"), "{q}: {body}");
        }
    }
    // The path, as sent (raw, not resolved by a client): `..` and an empty segment.
    let remote = snappy_block(&write_request(&[]));
    for path in [
        "/prometheus/db/../api/v1/write",
        "/prometheus/db//api/v1/write",
        "/prometheus/db/./api/v1/write",
    ] {
        let status = raw_status(&server, "POST", path, &remote).await;
        assert!(status == 400 || status == 404, "{path}: {status}");
    }
    let status = raw_status(
        &server,
        "GET",
        "/prometheus/db/../api/v1/query?query=victim_v",
        b"",
    )
    .await;
    assert!(status == 400 || status == 404, "{status}");
    // Nothing was written or created anywhere.
    assert_eq!(victim(&server, None).await, ["1"]);
    assert_eq!(victim(&server, Some("a")).await, ["2"]);
    let (_, body) = server.get("/api/v1/databases", &[]).await;
    assert_eq!(body["databases"], json!(["a", "tickertape"]), "{body}");
    // `/query`'s clients send `db=` for "none chosen": the default database.
    let (status, body) = server
        .get("/query", &[("q", "SELECT v FROM victim"), ("db", "")])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["results"][0]["series"][0]["values"][0][1],
        json!(1.0),
        "{body}"
    );
    server.stop().await;
}
