//! Deleting series over HTTP, on the embedded store: the own API's
//! `POST /api/v1/admin/delete` and Prometheus' `admin/tsdb/delete_series` (POST and PUT).
//! What a delete does to each backend is the conformance suite's
//! (`deleted_points_never_come_back`); here: parameters, answers and what reads see after.

mod support;

use serde_json::{json, Value};
use support::TestServer;

const S: i64 = 1_000_000_000;

async fn write(server: &TestServer, body: &str) {
    let r = server
        .client
        .post(format!("{}/write", server.url))
        .body(body.to_owned())
        .send()
        .await
        .expect("write");
    assert_eq!(
        r.status().as_u16(),
        204,
        "{}",
        r.text().await.unwrap_or_default()
    );
}

/// `POST {path}` with `form` as the body; the status and the body as JSON (or as a JSON
/// string when it is not JSON, or null when empty).
async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, Value) {
    let r = server
        .client
        .request(method, format!("{}{path}", server.url))
        .form(form)
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let body = match text.is_empty() {
        true => Value::Null,
        false => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    };
    (status, body)
}

async fn delete(server: &TestServer, form: &[(&str, &str)]) -> (u16, Value) {
    send(server, reqwest::Method::POST, "/api/v1/admin/delete", form).await
}

/// The times (s) of `measurement`'s series matching `tags`, by the series' tags and field.
async fn times(server: &TestServer, measurement: &str, tags: &[&str]) -> Vec<(String, Vec<i64>)> {
    let mut params = vec![("measurement", measurement)];
    params.extend(tags.iter().map(|t| ("tag", *t)));
    let (status, body) = server.get("/api/v1/query", &params).await;
    assert_eq!(status, 200, "{body}");
    let mut out: Vec<(String, Vec<i64>)> = body["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| {
            let name = format!("{}#{}", s["tags"], s["field"].as_str().unwrap_or_default());
            let times = s["points"]
                .as_array()
                .expect("points")
                .iter()
                .map(|p| p[0].as_i64().expect("a time") / S)
                .collect();
            (name, times)
        })
        .collect();
    out.sort();
    out
}

fn lines(measurement_tags: &str, fields: &[&str], seconds: &[i64]) -> String {
    let mut body = String::new();
    for &t in seconds {
        let values: Vec<String> = fields.iter().map(|f| format!("{f}={t}")).collect();
        body.push_str(&format!(
            "{measurement_tags} {} {}\n",
            values.join(","),
            t * S
        ));
    }
    body
}

#[tokio::test]
async fn the_own_api_deletes_a_range_then_whole_series() {
    let server = TestServer::start().await;
    write(
        &server,
        &lines("cpu,host=a", &["u", "s"], &[10, 20, 30, 40, 50]),
    )
    .await;
    write(&server, &lines("cpu,host=b", &["u"], &[10, 20, 30, 40, 50])).await;

    // [20 s, 40 s) of host a's two series, as RFC 3339 and as integer nanoseconds.
    let start = "1970-01-01T00:00:20Z";
    let end = (40 * S).to_string();
    let (status, body) = delete(
        &server,
        &[
            ("measurement", "cpu"),
            ("tag", "host:a"),
            ("start", start),
            ("end", &end),
        ],
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"series_matched": 2, "series_removed": 0}))
    );
    let want_a = vec![10, 40, 50];
    let got = times(&server, "cpu", &[]).await;
    assert_eq!(
        got,
        vec![
            (r#"{"host":"a"}#s"#.to_owned(), want_a.clone()),
            (r#"{"host":"a"}#u"#.to_owned(), want_a.clone()),
            (r#"{"host":"b"}#u"#.to_owned(), vec![10, 20, 30, 40, 50]),
        ]
    );

    // Host a's field u, whole: it leaves the series list; host a's field s still holds
    // tag value a.
    let (status, body) = delete(
        &server,
        &[("measurement", "cpu"), ("tag", "host:a"), ("field", "u")],
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"series_matched": 1, "series_removed": 1}))
    );
    let (_, listed) = server
        .get("/api/v1/series", &[("measurement", "cpu")])
        .await;
    assert_eq!(
        listed["series"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    let host_values = || {
        server.get(
            "/api/v1/tag_values",
            &[("measurement", "cpu"), ("key", "host")],
        )
    };
    assert_eq!(host_values().await.1["tag_values"], json!(["a", "b"]));

    // Every series of host a, by a regex matcher: the last one with tag value a.
    let (status, body) = delete(&server, &[("measurement", "cpu"), ("tag", "host=~a|c")]).await;
    assert_eq!(
        (status, body),
        (200, json!({"series_matched": 1, "series_removed": 1}))
    );
    assert_eq!(host_values().await.1["tag_values"], json!(["b"]));
    let (_, fields) = server
        .get("/api/v1/fields", &[("measurement", "cpu")])
        .await;
    assert_eq!(fields["fields"], json!(["u"]));

    // Written again, the series holds only its new points.
    write(&server, &lines("cpu,host=a", &["u"], &[60])).await;
    assert_eq!(
        times(&server, "cpu", &["host:a"]).await,
        vec![(r#"{"host":"a"}#u"#.to_owned(), vec![60])]
    );
    // A selection that matches nothing deletes nothing.
    let (status, body) = delete(&server, &[("measurement", "nothing")]).await;
    assert_eq!(
        (status, body),
        (200, json!({"series_matched": 0, "series_removed": 0}))
    );
    server.stop().await;
}

#[tokio::test]
async fn the_own_api_refuses_a_delete_without_a_selection_or_with_bad_times() {
    let server = TestServer::start().await;
    write(&server, &lines("cpu,host=a", &["u"], &[10, 20])).await;
    for (form, names) in [
        (vec![], "measurement"),
        (vec![("measurement", "")], "measurement"),
        (vec![("tag", "host:a")], "measurement"),
        (
            vec![("measurement", "cpu"), ("start", "yesterday-ish")],
            "start",
        ),
        (
            vec![("measurement", "cpu"), ("start", "20"), ("end", "20")],
            "start",
        ),
        (vec![("measurement", "cpu"), ("tag", "host")], "tag"),
        (vec![("measurement", "cpu"), ("match[]", "cpu")], "match[]"),
    ] {
        let (status, body) = delete(&server, &form).await;
        assert_eq!(status, 400, "{form:?}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(names),
            "{form:?}: {message:?} names {names}"
        );
    }
    // Nothing was deleted by any of them.
    assert_eq!(times(&server, "cpu", &[]).await[0].1, vec![10, 20]);
    server.stop().await;
}

#[tokio::test]
async fn prometheus_delete_series_answers_204_and_reads_follow() {
    let server = TestServer::start().await;
    // Metric `up` (field `value`) of two jobs, and `cpu_u` (measurement cpu, field u).
    write(&server, &lines("up,job=x", &["value"], &[10, 20, 30, 40])).await;
    write(&server, &lines("up,job=y", &["value"], &[10, 20, 30, 40])).await;
    write(&server, &lines("cpu,job=x", &["u"], &[10, 20])).await;

    // Prometheus' closed [start, end], in seconds: 20 s and 30 s of job x go.
    let path = "/prometheus/api/v1/admin/tsdb/delete_series";
    let form = [
        ("match[]", r#"up{job="x"}"#),
        ("start", "20"),
        ("end", "30"),
    ];
    let (status, body) = send(&server, reqwest::Method::POST, path, &form).await;
    assert_eq!((status, body), (204, Value::Null));
    assert_eq!(times(&server, "up", &["job:x"]).await[0].1, vec![10, 40]);
    assert_eq!(
        times(&server, "up", &["job:y"]).await[0].1,
        vec![10, 20, 30, 40]
    );

    // PUT, two selectors, no range: both series whole, gone from the series and labels.
    let form = [("match[]", r#"up{job="x"}"#), ("match[]", "cpu_u")];
    let (status, _) = send(&server, reqwest::Method::PUT, path, &form).await;
    assert_eq!(status, 204);
    let (_, series) = server
        .get("/prometheus/api/v1/series", &[("match[]", r#"{job="x"}"#)])
        .await;
    assert_eq!(series["data"], json!([]), "{series}");
    let (_, values) = server.get("/prometheus/api/v1/label/job/values", &[]).await;
    assert_eq!(values["data"], json!(["y"]), "{values}");
    let (_, names) = server
        .get("/prometheus/api/v1/label/__name__/values", &[])
        .await;
    assert_eq!(names["data"], json!(["up"]), "{names}");

    // Refused as Prometheus refuses them, nothing deleted.
    for form in [
        vec![],
        vec![("match[]", "up{")],
        vec![("match[]", "up"), ("start", "40"), ("end", "10")],
        vec![("match[]", "up"), ("end", "not a time")],
    ] {
        let (status, body) = send(&server, reqwest::Method::POST, path, &form).await;
        assert_eq!(status, 400, "{form:?}: {body}");
        assert_eq!(body["errorType"], "bad_data", "{form:?}: {body}");
    }
    assert_eq!(times(&server, "up", &[]).await[0].1, vec![10, 20, 30, 40]);
    server.stop().await;
}
