//! The CLI's output, through the real binary: import into a store, then query it in each
//! output format.

mod support;

use support::{import, text, tickertape};

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
