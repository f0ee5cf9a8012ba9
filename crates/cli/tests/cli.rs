//! The CLI's output, through the real binary: import into a store, then query it in each
//! output format.

mod support;

use support::{import, serve, text, tickertape};

#[test]
fn import_reports_bad_lines_and_query_prints_table_csv_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("data.lp");
    std::fs::write(
        &file,
        "temp,room=kitchen celsius=21.5 1700000000\nnot line protocol\ntemp,room=kitchen celsius=22 1700000060\n",
    )
    .unwrap();
    let out = import(&store, &file);
    assert!(!out.status.success(), "a rejected line makes import fail");
    let err = text(&out.stderr);
    assert!(err.contains("data.lp:2:"), "{err}");
    assert!(err.contains("imported 2 lines, rejected 1 lines"), "{err}");

    let s = store.to_str().unwrap();
    let out = tickertape(&["query", "--store", s, "-m", "temp"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "SERIES                      TIME                  VALUE\n\
         temp{room=kitchen}#celsius  2023-11-14T22:13:20Z   21.5\n\
         temp{room=kitchen}#celsius  2023-11-14T22:14:20Z     22\n"
    );

    let out = tickertape(&[
        "query", "--store", s, "-m", "temp", "--agg", "avg", "--step", "1h", "--format", "csv",
    ]);
    assert_eq!(
        text(&out.stdout),
        "series,time,value\ntemp{room=kitchen}#celsius,2023-11-14T22:00:00Z,21.75\n"
    );

    let out = tickertape(&[
        "query",
        "--store",
        s,
        "-m",
        "temp",
        "--tag",
        "room:kitchen",
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["series"][0]["points"][1],
        serde_json::json!([1_700_000_060_000_000_000i64, 22.0])
    );
    assert_eq!(json["series"][0]["tags"]["room"], "kitchen");
}

#[test]
fn bad_arguments_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().to_str().unwrap();
    let out = tickertape(&[
        "query",
        "--store",
        s,
        "-m",
        "temp",
        "--step",
        "fortnight",
        "--agg",
        "max",
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("step"), "{}", text(&out.stderr));
    let out = tickertape(&["import", "/nonexistent/file.lp", "--store", s]);
    assert!(text(&out.stderr).contains("/nonexistent/file.lp"));
}

#[test]
fn merge_puts_series_in_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("data.lp");
    std::fs::write(
        &file,
        "temp,room=a c=20 1700000000\ntemp,room=b c=5.5 1700000010\ntemp,room=a c=21 1700000020\n",
    )
    .unwrap();
    let out = import(&store, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = store.to_str().unwrap();
    let query = |format: &str| {
        let out = tickertape(&[
            "query", "--store", s, "-m", "temp", "--merge", "--format", format,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(
        query("table"),
        "TIME                  temp{room=a}#c  temp{room=b}#c\n\
         2023-11-14T22:13:20Z              20\n\
         2023-11-14T22:13:30Z                             5.5\n\
         2023-11-14T22:13:40Z              21\n"
    );
    assert_eq!(
        query("csv"),
        "time,temp{room=a}#c,temp{room=b}#c\n\
         2023-11-14T22:13:20Z,20,\n\
         2023-11-14T22:13:30Z,,5.5\n\
         2023-11-14T22:13:40Z,21,\n"
    );
    let json: serde_json::Value = serde_json::from_str(&query("json")).unwrap();
    assert_eq!(json["times"].as_array().unwrap().len(), 3);
    assert_eq!(
        json["series"][1]["values"],
        serde_json::json!([null, 5.5, null])
    );
}

/// `--start -2h`, `now-2h`, `now-30m`: times relative to now, on a store and through a
/// server alike (the CLI makes them absolute before asking); a bad one names its flag.
#[test]
fn relative_times_select_from_now() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("data.lp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let body: String = [3 * 3600, 90 * 60, 10 * 60]
        .iter()
        .enumerate()
        .map(|(i, ago)| format!("temp,room=a c={i} {}\n", now - ago))
        .collect();
    std::fs::write(&file, body).unwrap();
    let out = import(&store, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = store.to_str().unwrap();
    let values = |extra: &[&str]| {
        let mut args = vec!["query", "-m", "temp", "--format", "csv"];
        args.extend_from_slice(extra);
        let out = tickertape(&args);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        let csv = text(&out.stdout);
        csv.lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(&["--store", s, "--start", "-2h"]), ["1", "2"]);
    assert_eq!(
        values(&["--store", s, "--start", "now-2h", "--end", "now-30m"]),
        ["1"]
    );
    let out = tickertape(&["query", "--store", s, "-m", "temp", "--start", "yesterday"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--start") && err.contains("now-1h"), "{err}");
    let (mut server, url) = serve(&store);
    let through_server = values(&["--url", &url, "--start", "-2h"]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(through_server, ["1", "2"]);
}

#[test]
fn admin_delete_prints_what_it_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("data.lp");
    std::fs::write(
        &file,
        "temp,room=a c=20 1700000000\ntemp,room=b c=5.5 1700000010\ntemp,room=a c=21 1700000020\n",
    )
    .unwrap();
    assert!(import(&store, &file).status.success());
    let s = store.to_str().unwrap();
    let delete = |extra: &[&str]| {
        let mut args = vec!["admin", "delete", "--store", s, "-m", "temp"];
        args.extend_from_slice(extra);
        tickertape(&args)
    };
    let out = delete(&[
        "--tag",
        "room=a",
        "--start",
        "2023-11-14T22:13:20Z",
        "--end",
        "1700000010000000000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "deleted the points in [2023-11-14T22:13:20Z, 2023-11-14T22:13:30Z) of 1 series of temp; \
         0 series left with no point removed\n"
    );
    let out = delete(&["--tag", "room:b"]);
    assert_eq!(
        text(&out.stdout),
        "deleted the points at every time of 1 series of temp; 1 series left with no point removed\n"
    );
    let out = tickertape(&["query", "--store", s, "-m", "temp", "--format", "csv"]);
    assert_eq!(
        text(&out.stdout),
        "series,time,value\ntemp{room=a}#c,2023-11-14T22:13:40Z,21\n"
    );
    let out = delete(&["--start", "2", "--end", "1"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--start"),
        "{}",
        text(&out.stderr)
    );
}

/// `--retention` reaches measurements no config lists: `admin retention` drops their old
/// raw partitions (after a dry run that changes nothing); a bad value names the flag.
#[test]
fn retention_flag_covers_unlisted_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("data.lp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let lines: String = ["node_load1", "node_load5"]
        .iter()
        .flat_map(|m| [1_700_000_000, now - 60].map(|t| format!("{m},instance=a value=1 {t}\n")))
        .collect();
    std::fs::write(&file, lines).unwrap();
    assert!(import(&store, &file).status.success());
    let s = store.to_str().unwrap();
    let count = |m: &str| {
        let out = tickertape(&[
            "query", "--store", s, "-m", m, "--start", "0", "--format", "csv",
        ]);
        text(&out.stdout).lines().count() - 1
    };
    let retention = |extra: &[&str]| {
        let mut args = vec!["admin", "retention", "--store", s, "--retention", "raw=30d"];
        args.extend_from_slice(extra);
        tickertape(&args)
    };
    let out = retention(&["--dry-run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("would drop node_load1 raw partition 2023-11-14"),
        "{said}"
    );
    assert!(
        said.contains("would drop node_load5 raw partition 2023-11-14"),
        "{said}"
    );
    assert_eq!((count("node_load1"), count("node_load5")), (2, 2));
    let out = retention(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("2 partitions dropped"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!((count("node_load1"), count("node_load5")), (1, 1));

    let out = tickertape(&["admin", "retention", "--store", s, "--retention", "5m=1d"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--retention.5m: 5m is not one of the rollups"),
        "{err}"
    );
}
