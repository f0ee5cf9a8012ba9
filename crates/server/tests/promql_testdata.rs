//! Prometheus' own PromQL test files (`promql/testdata/*.test` of Prometheus 2.42) replayed
//! against tickertape through its HTTP API: every `load` goes in by remote write, every
//! `eval instant` case is asked of `GET /prometheus/api/v1/query`, and the answer is
//! compared as Prometheus' `promql/test.go` compares it (labels exact, values within a
//! relative 1e-6), then, as that test does, asked again as a range query over
//! [t - 1m, t + 1m] at a 1 m step whose middle step must give the same answer. Every case
//! of every file must pass both ways: nothing is skipped or counted apart.
//!
//! The files are not in this repository: `scripts/test` fetches them from Debian's source
//! package and names their directory in `TICKERTAPE_PROMQL_TESTDATA`. The per-file table is
//! printed and written to `target/promql-testdata.txt`.

mod promql_testfile;
mod support;

use promql_testfile::compare::{compare, compare_range_middle};
use promql_testfile::{Command, EvalCase, EvalKind, Labels, LoadedSeries};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use support::TestServer;

/// Samples per remote-write request: well under the 32 MiB a server may refuse.
const SAMPLES_PER_WRITE: usize = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_promql_testdata() {
    let Some(dir) = testdata_dir() else {
        eprintln!(
            "SKIPPED: Prometheus' PromQL test files not found (set TICKERTAPE_PROMQL_TESTDATA \
             to their directory; scripts/test fetches them into .cache/prometheus-2.42)"
        );
        return;
    };
    let files = test_files(&dir);
    assert!(!files.is_empty(), "no *.test file in {}", dir.display());
    let mut tally = Vec::new();
    for file in &files {
        tally.push(run_file(file).await);
    }
    let report = render(&tally, &dir);
    println!("{report}");
    let out = target_dir().join("promql-testdata.txt");
    match std::fs::write(&out, &report) {
        Ok(()) => eprintln!("written to {}", out.display()),
        Err(e) => eprintln!("could not write {}: {e}", out.display()),
    }
    let total = Tally::sum(&tally);
    assert!(total.passed > 0, "no case ran");
    assert!(
        total.failed.is_empty(),
        "{} of {} cases pass; every one must (the failures are listed above)",
        total.passed,
        total.cases()
    );
}

/// `$TICKERTAPE_PROMQL_TESTDATA`, else the cache `scripts/test` fills; `None` when absent.
fn testdata_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("TICKERTAPE_PROMQL_TESTDATA").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => workspace_dir().join(".cache/prometheus-2.42/promql/testdata"),
    };
    dir.is_dir().then_some(dir)
}

fn workspace_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_dir().join("target"))
}

fn test_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the testdata dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    files.sort();
    files
}

/// What became of one file's cases.
#[derive(Default, Clone)]
struct Tally {
    file: String,
    passed: usize,
    /// (line, expression, why): a wrong answer, an error, or a range form that
    /// disagreed with the instant one.
    failed: Vec<(usize, String, String)>,
}

impl Tally {
    fn cases(&self) -> usize {
        self.passed + self.failed.len()
    }

    fn sum(all: &[Tally]) -> Tally {
        let mut total = Tally {
            file: "total".into(),
            ..Tally::default()
        };
        for t in all {
            total.passed += t.passed;
            total.failed.extend(t.failed.iter().cloned());
        }
        total
    }
}

enum Outcome {
    Pass,
    Fail(String),
}

/// Replays one file: a fresh server for its start and after every `clear`.
async fn run_file(path: &Path) -> Tally {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).expect("read a test file");
    let commands = promql_testfile::parse_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Every case of the file is counted somewhere: none lost by the reader.
    let evals = commands
        .iter()
        .filter(|c| matches!(c, Command::Eval(_)))
        .count();
    let evals_in_text = text
        .lines()
        .filter(|l| l.trim_start().starts_with("eval"))
        .count();
    assert_eq!(evals, evals_in_text, "{name}: eval commands read");
    let mut tally = Tally {
        file: name,
        ..Tally::default()
    };
    let mut server: Option<TestServer> = None;
    // A load the server refused: every case until the next `clear` fails with it.
    let mut load_error: Option<String> = None;
    for command in commands {
        match command {
            Command::Clear => {
                if let Some(s) = server.take() {
                    s.stop().await;
                }
                load_error = None;
            }
            Command::Load(series) => {
                let s = started(&mut server).await;
                if let Err(e) = load(s, &series).await {
                    load_error.get_or_insert(e);
                }
            }
            Command::Eval(case) => {
                let outcome = match &load_error {
                    Some(e) => Outcome::Fail(format!("the load before it failed: {e}")),
                    None => evaluate(started(&mut server).await, &case).await,
                };
                match outcome {
                    Outcome::Pass => tally.passed += 1,
                    Outcome::Fail(why) => tally.failed.push((case.line, case.expr.clone(), why)),
                }
            }
        }
    }
    if let Some(s) = server {
        s.stop().await;
    }
    tally
}

async fn started(server: &mut Option<TestServer>) -> &TestServer {
    if server.is_none() {
        *server = Some(TestServer::start().await);
    }
    server.as_ref().unwrap()
}

/// Sends a `load` block by remote write, in requests of at most `SAMPLES_PER_WRITE` samples.
async fn load(server: &TestServer, series: &[LoadedSeries]) -> Result<(), String> {
    let mut batch: Vec<(&Labels, &[(i64, f64)])> = Vec::new();
    let mut in_batch = 0;
    for s in series {
        for chunk in s.samples.chunks(SAMPLES_PER_WRITE) {
            if in_batch + chunk.len() > SAMPLES_PER_WRITE {
                send(server, &batch).await?;
                batch.clear();
                in_batch = 0;
            }
            batch.push((&s.labels, chunk));
            in_batch += chunk.len();
        }
    }
    if batch.is_empty() {
        return Ok(());
    }
    send(server, &batch).await
}

async fn send(server: &TestServer, batch: &[(&Labels, &[(i64, f64)])]) -> Result<(), String> {
    match server.remote_write(batch).await {
        (204, _) => Ok(()),
        (status, body) => Err(format!("remote write answered {status}: {body}")),
    }
}

/// Asks the case's query at its time and judges the answer; a passing unordered case is
/// also asked in range mode, as Prometheus' test asks it.
async fn evaluate(server: &TestServer, case: &EvalCase) -> Outcome {
    let time = seconds(case.at_ms);
    let answer = ask(server, "query", &[("query", &case.expr), ("time", &time)]).await;
    let answer = match answer {
        Ok(a) => a,
        Err(outcome) => return outcome,
    };
    let data = match (answer, case.kind) {
        (Err(_), EvalKind::Fail) => return Outcome::Pass,
        (Err((kind, e)), _) => return Outcome::Fail(format!("error {kind}: {e}")),
        (Ok(_), EvalKind::Fail) => return Outcome::Fail("answered; an error was expected".into()),
        (Ok(data), _) => data,
    };
    if let Err(why) = compare(&case.expected, &data, case.kind == EvalKind::Ordered) {
        return Outcome::Fail(why);
    }
    if case.kind == EvalKind::Ordered {
        // Prometheus' test does not ask ordered cases in range mode: a matrix has no order.
        return Outcome::Pass;
    }
    match range_mode(server, case).await {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    }
}

/// The case as `query_range` over [t - 1m, t + 1m] at a 1 m step, judged at t.
async fn range_mode(server: &TestServer, case: &EvalCase) -> Result<(), String> {
    let (start, end) = (seconds(case.at_ms - 60_000), seconds(case.at_ms + 60_000));
    let params = [
        ("query", case.expr.as_str()),
        ("start", &start),
        ("end", &end),
        ("step", "60"),
    ];
    match ask(server, "query_range", &params).await {
        Ok(Ok(data)) => compare_range_middle(&case.expected, &data, case.at_ms),
        Ok(Err((kind, e))) => Err(format!("range mode: error {kind}: {e}")),
        Err(_) => Err("range mode: not Prometheus' JSON".into()),
    }
}

/// Milliseconds as the API's seconds.
fn seconds(ms: i64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// `GET /prometheus/api/v1/{endpoint}`: `Ok(Ok(data))`, `Ok(Err((errorType, error)))`, or
/// `Err` (a failed case) when the answer is not Prometheus' JSON.
async fn ask(
    server: &TestServer,
    endpoint: &str,
    params: &[(&str, &str)],
) -> Result<Result<Value, (String, String)>, Outcome> {
    let path = format!("/prometheus/api/v1/{endpoint}");
    let (status, body) = server.get(&path, params).await;
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    match body["status"].as_str() {
        Some("success") => Ok(Ok(body["data"].clone())),
        Some("error") => Ok(Err((text(&body["errorType"]), text(&body["error"])))),
        _ => Err(Outcome::Fail(format!(
            "HTTP {status}, not Prometheus' JSON: {body}"
        ))),
    }
}

/// The table, then every failure.
fn render(tally: &[Tally], dir: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "PromQL test files of Prometheus 2.42 ({}) against tickertape {}\n",
        dir.display(),
        git_head()
    );
    let _ = writeln!(
        out,
        "{:<22} {:>5} {:>6} {:>6} {:>7}",
        "file", "cases", "passed", "failed", "pass %"
    );
    for t in tally.iter().chain(std::iter::once(&Tally::sum(tally))) {
        let _ = writeln!(
            out,
            "{:<22} {:>5} {:>6} {:>6} {:>7.1}",
            t.file,
            t.cases(),
            t.passed,
            t.failed.len(),
            100.0 * t.passed as f64 / t.cases().max(1) as f64
        );
    }
    let _ = writeln!(
        out,
        "\nFailed cases (instant, or range mode over [t-1m, t+1m]):"
    );
    for t in tally {
        for (line, expr, why) in &t.failed {
            let _ = writeln!(out, "  {}:{line}  {expr}\n      {why}", t.file);
        }
    }
    out
}

/// The commit under test, for the report (`git` may be absent: then "(unknown commit)").
fn git_head() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(workspace_dir())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "(unknown commit)".into())
}
