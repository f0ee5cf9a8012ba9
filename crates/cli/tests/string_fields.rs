//! `tickertape serve --string-fields=skip|refuse` as users run it: `refuse` keeps the old
//! 400 naming the line while the rest of the body is stored; the default skips string
//! values and logs each series' once.

mod support;

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::serve_with;

const SYSTEM_A: &str = r#"system,host=a load1=0.5,load5=0.4,n_cpus=2i,uptime_format="1 day, 2:03""#;
const SYSTEM_B: &str =
    r#"system,host=b load1=1.5,load5=1.4,n_cpus=4i,uptime_format="3 days, 0:10""#;

async fn post(client: &reqwest::Client, url: &str, body: String) -> (u16, serde_json::Value) {
    let response = client
        .post(format!("{url}/write?precision=s"))
        .body(body)
        .send()
        .await
        .expect("POST /write");
    let status = response.status().as_u16();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

async fn points(client: &reqwest::Client, url: &str, measurement: &str) -> serde_json::Value {
    client
        .get(format!(
            "{url}/api/v1/query?measurement={measurement}&start=0&end=2000000000000000000"
        ))
        .send()
        .await
        .expect("GET /api/v1/query")
        .json()
        .await
        .expect("JSON")
}

fn stop(mut child: Child) {
    child.kill().expect("stop the server");
    child.wait().expect("reap");
}

#[tokio::test]
async fn refuse_answers_400_naming_the_line_and_stores_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (child, url) = serve_with(dir.path(), &["--string-fields=refuse"]);
    let client = reqwest::Client::new();
    let body = format!("cpu,host=a usage=1 1\n{SYSTEM_A} 1\ncpu,host=a usage=2 2\n");
    let (status, answer) = post(&client, &url, body).await;
    let stored_cpu = points(&client, &url, "cpu").await;
    let stored_system = points(&client, &url, "system").await;
    stop(child);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        (&answer["accepted"], &answer["rejected"]),
        (&2.into(), &1.into())
    );
    assert_eq!(answer["errors"][0]["line"], 2, "{answer}");
    let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("field \"uptime_format\" is a string"),
        "{message}"
    );
    assert_eq!(
        stored_cpu["series"][0]["points"],
        serde_json::json!([[1_000_000_000i64, 1.0], [2_000_000_000i64, 2.0]])
    );
    assert_eq!(stored_system["series"], serde_json::json!([]));
}

/// `tickertape serve` on `store` whose log goes to `log`; waits for its address there.
fn serve_logging_to(store: &Path, log: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store"])
        .arg(store)
        .env("TICKERTAPE_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::from(File::create(log).expect("log file")))
        .spawn()
        .expect("start tickertape serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(at) = text.find("listening on http://") {
            let rest = &text[at + "listening on ".len()..];
            let url = rest.split_whitespace().next().unwrap_or_default();
            return (child, url.to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("tickertape serve did not report its address");
}

#[tokio::test]
async fn skip_is_the_default_and_logs_each_series_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let (child, url) = serve_logging_to(&dir.path().join("store"), &log);
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for t in 1..=3 {
        let body = format!("{SYSTEM_A} {t}\n{SYSTEM_B} {t}\n");
        statuses.push(post(&client, &url, body).await.0);
    }
    let stored = points(&client, &url, "system").await;
    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("text");
    stop(child);
    assert_eq!(statuses, [204, 204, 204]);
    // Three numeric fields of two hosts, three points each.
    let series = stored["series"].as_array().expect("series");
    assert_eq!(series.len(), 6, "{stored}");
    assert!(series
        .iter()
        .all(|s| s["points"].as_array().unwrap().len() == 3));
    assert!(
        metrics
            .lines()
            .any(|l| l == "tickertape_string_fields_skipped_total 6"),
        "{metrics}"
    );
    let text = std::fs::read_to_string(&log).expect("log");
    let logged: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("string field value not stored"))
        .collect();
    assert_eq!(logged.len(), 2, "once per series:\n{text}");
    assert!(logged.iter().any(|l| l.contains("host=a")), "{text}");
    assert!(logged.iter().any(|l| l.contains("host=b")), "{text}");
}
