//! The default bounds on lines and new series (`--max-line-bytes`, `--max-tags`,
//! `--max-name-bytes`, `--max-tag-value-bytes`) over HTTP: each refused line names its
//! flag and number while the rest of the body is stored; remote write refuses such a
//! series and stores the others; a series stored before is never refused.

mod support;

use serde_json::Value;
use support::{Labels, TestServer};
use tickertape_engine::KeyLimits;

async fn write(server: &TestServer, body: String) -> (u16, Value) {
    let response = server
        .client
        .post(format!("{}/write", server.url))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn each_bound_refuses_its_line_by_number_and_the_others_are_stored() {
    let server = TestServer::start().await;
    let many_tags: String = (0..5_000).map(|i| format!(",t{i}=v")).collect();
    let body = [
        "ok,host=a v=1 1".to_string(),
        format!("big,host={} v=1 1", "x".repeat(70_000)),
        format!("wide{many_tags} v=1 1"),
        format!("{} v=1 1", "m".repeat(300)),
        format!(
            "huge,host=a v=1,{}=2 1",
            "f".repeat(KeyLimits::DEFAULT_MAX_LINE_BYTES)
        ),
        "ok,host=b v=2 2".to_string(),
    ]
    .join("\n");
    let (status, answer) = write(&server, body).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["accepted"], 2, "{answer}");
    let errors = answer["errors"].as_array().unwrap();
    let expected = [
        (2, "--max-tag-value-bytes"),
        (3, "--max-tags"),
        (4, "--max-name-bytes"),
        (5, "--max-line-bytes"),
    ];
    assert_eq!(errors.len(), expected.len(), "{answer}");
    for (error, (line, flag)) in errors.iter().zip(expected) {
        assert_eq!(error["line"], line, "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(flag), "line {line}: {message}");
        assert!(
            message.len() < 400,
            "a short message, not the line: {message}"
        );
    }
    let (status, listed) = server.get("/api/v1/measurements", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(listed["measurements"], serde_json::json!(["ok"]));
    server.stop().await;
}

#[tokio::test]
async fn remote_write_refuses_a_series_past_a_bound_and_stores_the_others() {
    let server = TestServer::start().await;
    let mut wide: Labels = (0..200)
        .map(|i| (format!("l{i}"), "v".to_string()))
        .collect();
    wide.insert("__name__".into(), "wide".into());
    let narrow: Labels = [("__name__".to_string(), "narrow".to_string())].into();
    let (status, body) = server
        .remote_write(&[(&wide, &[(1_000, 1.0)]), (&narrow, &[(1_000, 2.0)])])
        .await;
    assert_eq!(status, 204, "{body}");
    let (_, listed) = server.get("/api/v1/measurements", &[]).await;
    assert_eq!(listed["measurements"], serde_json::json!(["narrow"]));
    let (_, metrics) = server.get("/metrics", &[]).await;
    let metrics = metrics.as_str().unwrap_or_default();
    assert!(
        metrics.contains("tickertape_prometheus_samples_refused_total 1"),
        "{metrics}"
    );
    server.stop().await;
}
