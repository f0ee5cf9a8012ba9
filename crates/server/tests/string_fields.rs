//! Lines with string fields over HTTP, on the embedded store: Telegraf's `system` line is
//! answered 204 with its numbers stored and its string skipped, counted in `/metrics`
//! (`serve --string-fields=refuse`, the old refusal, is tested through the binary in
//! `crates/cli/tests/string_fields.rs`).

mod support;

use serde_json::{json, Value};
use support::TestServer;

/// A line of Telegraf's `system` input, string field included, as Telegraf sends it.
const SYSTEM: &str =
    r#"system,host=h1 load1=0.5,load5=0.4,n_cpus=2i,uptime_format="1 day, 2:03" 1700000000"#;

async fn write(server: &TestServer, body: &str) -> (u16, String) {
    let response = server
        .client
        .post(format!("{}/write?precision=s", server.url))
        .body(body.to_string())
        .send()
        .await
        .expect("POST /write");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// The value of the counter `name` in `/metrics`.
async fn counter(server: &TestServer, name: &str) -> u64 {
    let (status, text) = server.get("/metrics", &[]).await;
    assert_eq!(status, 200);
    let text = text.as_str().expect("/metrics is text");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
        .parse()
        .expect("a count")
}

/// Every series of `measurement`: field → points.
async fn stored(server: &TestServer, measurement: &str) -> Value {
    let (status, answer) = server
        .get(
            "/api/v1/query",
            &[
                ("measurement", measurement),
                ("start", "0"),
                ("end", "2000000000000000000"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let mut by_field = serde_json::Map::new();
    for series in answer["series"].as_array().expect("series") {
        let field = series["field"].as_str().expect("field").to_string();
        by_field.insert(field, series["points"].clone());
    }
    Value::Object(by_field)
}

#[tokio::test]
async fn telegrafs_system_line_is_stored_without_its_string() {
    let server = TestServer::start().await;
    let skipped = "tickertape_string_fields_skipped_total";
    assert_eq!(counter(&server, skipped).await, 0);

    let (status, body) = write(&server, SYSTEM).await;
    assert_eq!(status, 204, "{body}");
    const T: i64 = 1_700_000_000_000_000_000;
    assert_eq!(
        stored(&server, "system").await,
        json!({"load1": [[T, 0.5]], "load5": [[T, 0.4]], "n_cpus": [[T, 2.0]]})
    );
    let (_, fields) = server
        .get("/api/v1/fields", &[("measurement", "system")])
        .await;
    assert_eq!(fields["fields"], json!(["load1", "load5", "n_cpus"]));
    assert_eq!(counter(&server, skipped).await, 1);

    // A line of strings only is accepted (204) and stores nothing; a bad line beside it is
    // refused by number as before, and its string is not counted as skipped.
    let body = "status,host=h1 state=\"on\" 1700000010\nsystem,host=h1 load1=oops,s=\"x\" 1700000010\nsystem,host=h1 load1=0.7 1700000010";
    let (status, answer) = write(&server, body).await;
    assert_eq!(status, 400, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["accepted"], 2, "{answer}");
    assert_eq!(answer["errors"][0]["line"], 2, "{answer}");
    assert_eq!(counter(&server, skipped).await, 2);
    assert_eq!(stored(&server, "status").await, json!({}));
    assert_eq!(
        stored(&server, "system").await["load1"],
        json!([[T, 0.5], [T + 10_000_000_000, 0.7]])
    );
    server.stop().await;
}
