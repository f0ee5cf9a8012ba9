//! The pickers' listings over HTTP on the embedded store: prefix, limit, truncation, and
//! errors that name the bad parameter.

mod support;

use serde_json::json;
use support::TestServer;

async fn write(server: &TestServer, body: &str) {
    let status = server
        .client
        .post(format!("{}/write", server.url))
        .body(body.to_owned())
        .send()
        .await
        .expect("write")
        .status();
    assert_eq!(status.as_u16(), 204, "write {body:?}");
}

#[tokio::test]
async fn listings_answer_prefix_and_limit_from_the_index() {
    let server = TestServer::start().await;
    let mut body = String::new();
    for host in 0..150 {
        let region = ["eu-central", "eu-west", "us-east"][host % 3];
        body.push_str(&format!(
            "cpu,host=h{host:03},region={region} usage_user=1,usage_idle=2 1000\n"
        ));
    }
    body.push_str("mem,host=h000 free=1 1000\ncomputer,kind=x n=1 1000\n");
    write(&server, &body).await;

    let get = |path: &'static str, params: Vec<(&'static str, &'static str)>| {
        let server = &server;
        async move { server.get(path, &params).await }
    };
    assert_eq!(
        get("/api/v1/measurements", vec![]).await,
        (
            200,
            json!({"measurements": ["computer", "cpu", "mem"], "truncated": false})
        )
    );
    assert_eq!(
        get(
            "/api/v1/measurements",
            vec![("prefix", "c"), ("limit", "1")]
        )
        .await,
        (
            200,
            json!({"measurements": ["computer"], "truncated": true})
        )
    );
    assert_eq!(
        get("/api/v1/fields", vec![("measurement", "cpu")]).await,
        (
            200,
            json!({"fields": ["usage_idle", "usage_user"], "truncated": false})
        )
    );
    assert_eq!(
        get("/api/v1/tag_keys", vec![("measurement", "cpu")]).await,
        (
            200,
            json!({"tag_keys": ["host", "region"], "truncated": false})
        )
    );
    assert_eq!(
        get(
            "/api/v1/tag_values",
            vec![("measurement", "cpu"), ("key", "region"), ("prefix", "eu")]
        )
        .await,
        (
            200,
            json!({"tag_values": ["eu-central", "eu-west"], "truncated": false})
        )
    );
    // 150 hosts: the default limit is 100, and the first 100 in order come back.
    let (status, hosts) = get(
        "/api/v1/tag_values",
        vec![("measurement", "cpu"), ("key", "host")],
    )
    .await;
    assert_eq!(status, 200);
    let names = hosts["tag_values"].as_array().expect("a list");
    assert_eq!((names.len(), &hosts["truncated"]), (100, &json!(true)));
    assert_eq!((&names[0], &names[99]), (&json!("h000"), &json!("h099")));
    assert_eq!(
        get(
            "/api/v1/tag_values",
            vec![
                ("measurement", "cpu"),
                ("key", "host"),
                ("prefix", "h14"),
                ("limit", "3")
            ]
        )
        .await,
        (
            200,
            json!({"tag_values": ["h140", "h141", "h142"], "truncated": true})
        )
    );
    // An unknown measurement or key is an empty list, not an error.
    assert_eq!(
        get("/api/v1/tag_keys", vec![("measurement", "disk")]).await,
        (200, json!({"tag_keys": [], "truncated": false}))
    );
    server.stop().await;
}

#[tokio::test]
async fn listing_errors_name_the_parameter() {
    let server = TestServer::start().await;
    let error = |answer: (u16, serde_json::Value)| {
        (
            answer.0,
            answer.1["error"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let (status, message) = error(
        server
            .get("/api/v1/tag_values", &[("measurement", "cpu")])
            .await,
    );
    assert_eq!(
        (status, message.as_str()),
        (400, "parameter key is required")
    );
    let (status, message) = error(server.get("/api/v1/fields", &[]).await);
    assert_eq!(
        (status, message.as_str()),
        (400, "parameter measurement is required")
    );
    for bad in ["0", "10001", "-1", "many"] {
        let (status, message) = error(server.get("/api/v1/measurements", &[("limit", bad)]).await);
        assert_eq!(status, 400, "limit={bad}");
        assert!(
            message.starts_with("parameter limit:"),
            "limit={bad}: {message}"
        );
    }
    let (status, message) = error(
        server
            .get("/api/v1/tag_keys", &[("measurement", "cpu"), ("x", "1")])
            .await,
    );
    assert_eq!(status, 400);
    assert!(message.contains("unknown parameter \"x\""), "{message}");
    server.stop().await;
}
