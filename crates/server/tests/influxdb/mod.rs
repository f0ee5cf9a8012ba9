//! What the differential tests of InfluxQL share: a real InfluxDB 1.x (Debian's `influxdb`
//! package, `/usr/bin/influxd`) started on loopback ports with its own temporary
//! directories and killed by its PID when dropped, and the comparison of two answers.

// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const INFLUXD: &str = "/usr/bin/influxd";
/// How long influxd may take to answer `/ping` after it is started.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Whether influxd is installed; a test prints SKIPPED and returns when it is not.
pub fn installed() -> bool {
    Path::new(INFLUXD).exists()
}

/// influxd, killed by its PID when dropped (so a failing assertion does not leave it).
pub struct Influxd {
    child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Influxd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("addr").port()
}

pub async fn start_influxd() -> Influxd {
    let dir = tempfile::tempdir().expect("temp dir");
    let (http, rpc) = (free_port(), free_port());
    let root = dir.path().display();
    let config = format!(
        "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
         [meta]\n  dir = \"{root}/meta\"\n\
         [data]\n  dir = \"{root}/data\"\n  wal-dir = \"{root}/wal\"\n  query-log-enabled = false\n\
         [http]\n  bind-address = \"127.0.0.1:{http}\"\n  log-enabled = false\n\
         [monitor]\n  store-enabled = false\n\
         [continuous_queries]\n  enabled = false\n\
         [subscriber]\n  enabled = false\n"
    );
    let path = dir.path().join("influxdb.conf");
    std::fs::write(&path, config).expect("write the config");
    let log = std::fs::File::create(dir.path().join("influxd.log")).expect("log file");
    let child = Command::new(INFLUXD)
        .args(["run", "-config"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start influxd");
    let influxd = Influxd {
        child,
        url: format!("http://127.0.0.1:{http}"),
        _dir: dir,
    };
    let client = super::support::client();
    let started = Instant::now();
    loop {
        let ping = client.get(format!("{}/ping", influxd.url)).send().await;
        if ping.is_ok_and(|r| r.status().as_u16() == 204) {
            return influxd;
        }
        assert!(started.elapsed() < START_LIMIT, "influxd did not start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether two answers agree: same shape, strings and integers equal, floats within 1e-9
/// relative. `path` names where they part, for the failure message.
pub fn agree(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            let scale = x.abs().max(y.abs()).max(1e-300);
            if x == y || (x - y).abs() / scale <= 1e-9 {
                Ok(())
            } else {
                Err(format!("{path}: {x} != {y}"))
            }
        }
        (Value::Array(xs), Value::Array(ys)) => {
            if xs.len() != ys.len() {
                return Err(format!("{path}: {} items != {}", xs.len(), ys.len()));
            }
            for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
                agree(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Object(xs), Value::Object(ys)) => {
            let keys: std::collections::BTreeSet<&String> = xs.keys().chain(ys.keys()).collect();
            for k in keys {
                match (xs.get(k), ys.get(k)) {
                    (Some(x), Some(y)) => agree(x, y, &format!("{path}.{k}"))?,
                    // Only whether there is an error must agree, not its words.
                    _ if k == "error" => return Err(format!("{path}: error on one side only")),
                    (x, y) => return Err(format!("{path}.{k}: {x:?} != {y:?}")),
                }
            }
            Ok(())
        }
        (x, y) if x == y => Ok(()),
        (x, y) => Err(format!("{path}: {x} != {y}")),
    }
}

/// Both sides' errors are kept as "an error": their words differ.
pub fn without_error_text(mut v: Value) -> Value {
    if let Some(results) = v.get_mut("results").and_then(Value::as_array_mut) {
        for r in results {
            if let Some(e) = r.get_mut("error") {
                *e = Value::Bool(true);
            }
        }
    }
    v
}

/// Each series' rows sorted by time, then by their text: the order of rows with the same
/// time left out of the comparison.
pub fn ties_sorted(mut v: Value) -> Value {
    each_series(&mut v, |series| {
        if let Some(rows) = series["values"].as_array_mut() {
            rows.sort_by_key(|row| (row[0].as_i64(), row.to_string()));
        }
    });
    v
}

/// Calls `f` with every series of every statement's result of an answer.
pub fn each_series(v: &mut Value, mut f: impl FnMut(&mut Value)) {
    for result in v
        .get_mut("results")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for series in result
            .get_mut("series")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            f(series);
        }
    }
}

/// An answer's text, cut at 600 characters.
pub fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(600) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}
