//! `serve --auth` and `admin token` as a user runs them: the refusal to start without a
//! token, `create` printing the token alone on its last line, tokens made and revoked
//! while the server runs.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{text, tickertape};

/// `admin token create` on `store`: the token (the last line of its output).
fn create(store: &str, scope: &str, name: &str) -> String {
    let out = tickertape(&[
        "admin", "token", "create", "--store", store, "--scope", scope, "--name", name,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default().trim().to_string();
    assert!(
        last.starts_with("tt_") && !last.contains(' '),
        "last line {last:?} of {stdout}"
    );
    last
}

/// `tickertape serve --auth` on a free port: the child and its URL.
fn serve_with_auth(store: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args([
            "serve",
            "--auth",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store,
        ])
        .env("TICKERTAPE_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tickertape serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(at) = line.find("listening on http://") {
            let url = line[at + "listening on ".len()..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            std::thread::spawn(move || for _ in lines {});
            return (child, url);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("tickertape serve --auth did not report its address");
}

#[test]
fn auth_without_a_token_refuses_to_start_and_says_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let out = tickertape(&[
        "serve",
        "--auth",
        "--listen",
        "127.0.0.1:0",
        "--store",
        store,
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("tickertape admin token create"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_and_revoked_while_the_server_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    tokens_while_serving(store.to_str().unwrap()).await;
}

/// The same on a MongoDB store: the tokens in its `api_tokens` collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_and_revoked_while_the_server_runs_on_mongodb() {
    let server = std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    });
    let db = format!("tt_cli_tokens_{}", std::process::id());
    tokens_while_serving(&tickertape_mongodb::uri_with_database(&server, &db)).await;
}

async fn tokens_while_serving(store: &str) {
    let admin = create(store, "admin", "ops");
    let (mut server, url) = serve_with_auth(store);
    let client = reqwest::Client::new();
    let write = |token: String| {
        let client = client.clone();
        let url = format!("{url}/write");
        async move {
            client
                .post(url)
                .bearer_auth(token)
                .body("cpu,host=a usage=1 1700000000000000000")
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(write(admin.clone()).await, 204);
    assert_eq!(write("tt_made_up".into()).await, 401);

    // A token made while the server runs works within a second or so.
    let telegraf = create(store, "write", "telegraf");
    let deadline = Instant::now() + Duration::from_secs(5);
    while write(telegraf.clone()).await != 204 {
        assert!(
            Instant::now() < deadline,
            "the new token is still refused after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = tickertape(&["admin", "token", "list", "--store", store]);
    let listed = text(&listed.stdout);
    assert!(
        listed.contains("telegraf") && listed.contains("ops"),
        "{listed}"
    );
    assert!(
        !listed.contains(&telegraf),
        "list never shows a token: {listed}"
    );
    let id = listed
        .lines()
        .find(|l| l.ends_with("telegraf"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();

    let revoked = tickertape(&["admin", "token", "revoke", "--store", store, &id]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let deadline = Instant::now() + Duration::from_secs(5);
    while write(telegraf.clone()).await != 401 {
        assert!(
            Instant::now() < deadline,
            "the revoked token still works after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(write(admin).await, 204, "the other tokens still work");
    let again = tickertape(&["admin", "token", "revoke", "--store", store, &id]);
    assert!(!again.status.success() && text(&again.stderr).contains("no token with id"));

    let _ = server.kill();
    let _ = server.wait();
}
