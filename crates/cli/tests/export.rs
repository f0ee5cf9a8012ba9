//! `tickertape admin export` end to end: points written to an embedded store (value
//! segments over several partitions, a late point, names needing escapes, a bucket
//! measurement) are exported, imported into a fresh MongoDB database with `tickertape
//! import`, and exported again: both exports hold exactly the points written, bit for bit.
//! This is the move from an embedded store to MongoDB that docs/scale-out.md describes.

mod support;

use std::path::Path;
use support::{text, tickertape};

fn server_uri() -> String {
    std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
        panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
    })
}

/// 2023-11-14T22:13:20Z, a multiple of the bucket interval (10 s).
const T0: i64 = 1_700_000_000_000_000_000;
const SECOND: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * SECOND;

const CONFIG: &str = r#"
[measurements.room]
layout = "buckets"
interval = "10s"
rollups = []
"#;

/// Runs `tickertape` and returns its stderr, failing with both outputs if it failed.
fn run_ok(args: &[&str]) -> String {
    let out = tickertape(args);
    assert!(
        out.status.success(),
        "tickertape {args:?} failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

fn sorted_lines(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// The export of `store` into `file`, sorted; checks the summary's counts.
fn export(store: &str, config: &Path, file: &Path, expected: usize) -> Vec<String> {
    let stderr = run_ok(&[
        "admin",
        "export",
        "--store",
        store,
        "--config",
        config.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains(&format!(
            "exported {expected} points of 8 series in 3 measurements"
        )),
        "{stderr}"
    );
    sorted_lines(file)
}

#[test]
fn an_embedded_store_moves_to_mongodb_through_export_and_import() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tickertape.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let config_arg = config.to_str().unwrap();
    let embedded = dir.path().join("data");
    let embedded = embedded.to_str().unwrap();

    // Canonical lines (tags sorted by key, one field per line), which is what an export
    // writes: the expected export is these, sorted. Values that only a shortest
    // round-trip formatting gives back bit for bit.
    let values = [0.1 + 0.2, 1e-300, -2.5, 123_456_789.123_456_78, 1e300, 7.0];
    let mut expected: Vec<String> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let t = T0 + i as i64 * DAY / 2; // three days: several time partitions
        expected.push(format!(r"cpu\ load,dc=x\,y\=z,host=a\ b us\ er={v:?} {t}"));
        expected.push(format!(
            r"cpu\ load,dc=x\,y\=z,host=a\ b sys={:?} {t}",
            v / 3.0
        ));
        expected.push(format!(r"cpu\ load,dc=eu,host=c us\ er={:?} {}", -v, t + 1));
        expected.push(format!("mem,host=c free={:?} {}", v * 1e6, t + SECOND));
    }
    for slot in 0..5i64 {
        let t = T0 + slot * 10 * SECOND;
        expected.push(format!(
            "room,k=kitchen temp={:?} {t}",
            20.0 + slot as f64 / 8.0
        ));
        expected.push(format!(
            r"room,k=living\ room temp={:?} {t}",
            18.5 - slot as f64
        ));
    }
    // One line in another spelling: two fields, tags out of order, an escape that is no
    // escape in a field key (`\x`), a float written as an integer.
    let late_time = T0 + DAY / 2 + 7;
    let body: String = expected
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + &format!("mem,host=d free=5,us\\x=1.25 {}\n", T0 + 3);
    expected.push(format!("mem,host=d free=5.0 {}", T0 + 3));
    expected.push(format!(r"mem,host=d us\x=1.25 {}", T0 + 3));
    let first = dir.path().join("first.lp");
    std::fs::write(&first, body).unwrap();
    run_ok(&[
        "import",
        first.to_str().unwrap(),
        "--store",
        embedded,
        "--config",
        config_arg,
    ]);
    // A late point: older than what its series already holds, written afterwards.
    let late = dir.path().join("late.lp");
    let late_line = format!(r"cpu\ load,dc=eu,host=c us\ er=42.5 {late_time}");
    std::fs::write(&late, format!("{late_line}\n")).unwrap();
    run_ok(&[
        "import",
        late.to_str().unwrap(),
        "--store",
        embedded,
        "--config",
        config_arg,
    ]);
    expected.push(late_line);
    expected.sort();

    // Without the config the bucket measurement would be read as value segments: refused.
    let out = tickertape(&["admin", "export", "--store", embedded]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(r#"measurement "room" is stored in buckets of 10s slots"#),
        "{}",
        text(&out.stderr)
    );

    let from_embedded = dir.path().join("embedded.lp");
    let first_export = export(embedded, &config, &from_embedded, expected.len());
    assert_eq!(first_export, expected, "the embedded store's export");

    let db = format!("tt_export_{}", std::process::id());
    let mongo = tickertape_mongodb::uri_with_database(&server_uri(), &db);
    let stderr = run_ok(&[
        "import",
        from_embedded.to_str().unwrap(),
        "--store",
        &mongo,
        "--config",
        config_arg,
    ]);
    assert!(
        stderr.contains(&format!(
            "imported {} lines, rejected 0 lines",
            expected.len()
        )),
        "{stderr}"
    );
    let from_mongo = dir.path().join("mongo.lp");
    let second_export = export(&mongo, &config, &from_mongo, expected.len());
    assert_eq!(
        second_export, first_export,
        "MongoDB's export equals the embedded one"
    );

    // One measurement only, to standard output.
    // (Without --config the store would be read as if `room` were value segments.)
    let room = [
        "admin", "export", "--store", &mongo, "--config", config_arg, "-m", "room",
    ];
    let out = tickertape(&room);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut rooms: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    rooms.sort();
    let expected_rooms: Vec<String> = expected
        .iter()
        .filter(|l| l.starts_with("room,"))
        .cloned()
        .collect();
    assert_eq!(rooms, expected_rooms);
    let out = tickertape(&["admin", "export", "--store", &mongo, "-m", "nothing"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no series of this measurement"));
}
