//! Several writer *processes* on the same MongoDB series at once: each runs
//! `tickertape import` one line per batch, so their appends interleave. Whatever each one
//! was told was accepted must be readable exactly once, in time order.

use std::process::Command;

fn server_uri() -> String {
    std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    })
}

/// "imported N lines, rejected M lines" from an import's stderr.
fn counts(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("imported "))
        .unwrap_or_else(|| panic!("no summary in: {stderr}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

#[test]
fn concurrent_import_processes_lose_and_duplicate_nothing() {
    const WRITERS: i64 = 3;
    const LINES: i64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("tt_processes_{}", std::process::id());
    let store = tickertape_mongodb::uri_with_database(&server_uri(), &db);
    // Writer k writes times k+1, k+4, k+7, … with value 1000·k + i, so a value names its
    // writer and its line.
    let spawned: Vec<_> = (0..WRITERS)
        .map(|k| {
            let file = dir.path().join(format!("w{k}.lp"));
            let body: String = (0..LINES)
                .map(|i| format!("shared,s=one v={} {}\n", 1000 * k + i, 1 + k + WRITERS * i))
                .collect();
            std::fs::write(&file, body).unwrap();
            Command::new(env!("CARGO_BIN_EXE_tickertape"))
                .args(["import", file.to_str().unwrap(), "--store", &store])
                .args(["--batch-lines", "1"])
                .env("TICKERTAPE_LOG", "warn")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start import")
        })
        .collect();
    let mut accepted = 0;
    for child in spawned {
        let out = child.wait_with_output().expect("import ran");
        let (ok, rejected) = counts(&String::from_utf8_lossy(&out.stderr));
        assert_eq!(ok + rejected, LINES as usize);
        accepted += ok;
    }
    assert!(accepted > 0);

    let out = Command::new(env!("CARGO_BIN_EXE_tickertape"))
        .args([
            "query", "--store", &store, "-m", "shared", "--format", "json",
        ])
        .env("TICKERTAPE_LOG", "warn")
        .output()
        .expect("query");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let points: Vec<(i64, f64)> =
        serde_json::from_value(json["series"][0]["points"].clone()).unwrap();
    assert_eq!(points.len(), accepted, "every accepted point, exactly once");
    assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "in time order");
    for (t, v) in &points {
        let (k, i) = ((*v as i64) / 1000, (*v as i64) % 1000);
        assert_eq!(
            *t,
            1 + k + WRITERS * i,
            "point {t} carries its own writer's value"
        );
    }
}

/// The name store across processes (its conditional `$push`): three import processes
/// register the same new names at once (a measurement with `$`, `.` and unicode, tag values
/// with spaces) and write bucket slots of the same series. Every process must get the same
/// tokens: the measurement's token names the partitions, so a process with another token
/// would put its points where the query does not look.
#[test]
fn concurrent_processes_agree_on_name_tokens() {
    const WRITERS: i64 = 3;
    const LINES: i64 = 30;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("tt_names_{}", std::process::id());
    let store = tickertape_mongodb::uri_with_database(&server_uri(), &db);
    let config = dir.path().join("tickertape.toml");
    std::fs::write(
        &config,
        "[measurements.\"pv$.ü\"]\nlayout = \"buckets\"\ninterval = \"1s\"\nrollups = [\"1m\"]\n",
    )
    .unwrap();
    // Writer k writes second k + 3·i of series page=p{i % 5}: all slots distinct.
    let spawned: Vec<_> = (0..WRITERS)
        .map(|k| {
            let file = dir.path().join(format!("n{k}.lp"));
            let body: String = (0..LINES)
                .map(|i| {
                    format!(
                        "pv$.ü,page=p\\ {} v={} {}\n",
                        i % 5,
                        1000 * k + i,
                        k + WRITERS * i
                    )
                })
                .collect();
            std::fs::write(&file, body).unwrap();
            Command::new(env!("CARGO_BIN_EXE_tickertape"))
                .args(["import", file.to_str().unwrap(), "--store", &store])
                .args(["--config", config.to_str().unwrap()])
                .args(["--batch-lines", "1", "--precision", "s"])
                .env("TICKERTAPE_LOG", "warn")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start import")
        })
        .collect();
    for child in spawned {
        let out = child.wait_with_output().expect("import ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(counts(&stderr), (LINES as usize, 0), "{stderr}");
    }

    let query = |extra: &[&str]| -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_tickertape"))
            .args([
                "query", "--store", &store, "-m", "pv$.ü", "--format", "json",
            ])
            .args(["--config", config.to_str().unwrap()])
            .args(extra)
            .env("TICKERTAPE_LOG", "warn")
            .output()
            .expect("query");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    let raw = query(&[]);
    let series = raw["series"].as_array().expect("series");
    assert_eq!(series.len(), 5, "{raw}");
    let total: usize = series
        .iter()
        .map(|s| s["points"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(
        total,
        (WRITERS * LINES) as usize,
        "every slot of every writer"
    );
    // The 1m rollup (written by all three processes) agrees with the raw points.
    let windows = query(&["--step", "1m", "--agg", "sum"]);
    let forced_raw = query(&["--step", "1m", "--agg", "sum", "--resolution", "raw"]);
    assert_eq!(windows, forced_raw);
}
