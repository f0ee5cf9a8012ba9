//! `tickertape-bench layouts` on the embedded store, through the real binary, at sizes
//! that take a moment: every row runs, reports its points and queries, and leaves nothing
//! behind. (The MongoDB rows need a server; they are run by hand, see docs/BENCHMARKS.md.)

use std::process::Command;

#[test]
fn embedded_rows_run_and_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("layouts");
    let output = Command::new(env!("CARGO_BIN_EXE_tickertape-bench"))
        .args(["layouts", "--store"])
        .arg(&store)
        .args([
            "--series",
            "3",
            "--points-per-series",
            "400",
            "--batch",
            "30",
            "--query-runs",
            "1",
            "--timeout",
            "60",
        ])
        .env("TICKERTAPE_LOG", "warn")
        .output()
        .expect("run tickertape-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for row in [
        "(s) segments, append",
        "(h) hour buckets v.M.S, upsert",
        "(i) hour buckets v.M.S, pre-allocated",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(row))
            .unwrap_or_else(|| panic!("no row {row:?} in:\n{stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells[2], "1200", "points of {row:?}: {line}");
        // The four query columns are the last ones: every query answered.
        let queries = &cells[cells.len() - 5..cells.len() - 1];
        assert!(
            queries.iter().all(|q| q.parse::<f64>().is_ok()),
            "queries of {row:?}: {line}\nstderr:\n{stderr}"
        );
    }
    assert!(!stdout.contains("note:"), "{stdout}");
    assert!(stdout.contains("file B"), "{stdout}");
    assert!(!stdout.contains("index entries"), "{stdout}");
    // 2 documents per series × 3 series: the pre-allocation row says how many shells.
    assert_eq!(cell(&stdout, "(i) hour buckets", "prealloc docs"), "6");
    assert_eq!(cell(&stdout, "(h) hour buckets", "prealloc docs"), "-");
    assert!(!store.exists(), "the bench left {} behind", store.display());
}

#[test]
fn an_unknown_row_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tickertape-bench"))
        .args(["layouts", "--only", "a", "--store"])
        .arg(dir.path())
        .output()
        .expect("run tickertape-bench");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--only") && stderr.contains("\"a\""),
        "{stderr}"
    );
}

/// The cell of the row containing `row` in the column headed `column`.
fn cell(table: &str, row: &str, column: &str) -> String {
    let split =
        |line: &str| -> Vec<String> { line.split('|').map(|c| c.trim().to_owned()).collect() };
    let header = table
        .lines()
        .find(|l| l.starts_with("| layout"))
        .map(split)
        .unwrap_or_default();
    let index = header
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("no column {column:?} in:\n{table}"));
    let line = table
        .lines()
        .find(|l| l.contains(row))
        .unwrap_or_else(|| panic!("no row {row:?} in:\n{table}"));
    split(line)[index].clone()
}
