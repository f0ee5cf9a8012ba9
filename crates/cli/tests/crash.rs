//! A 204 means durable: points acknowledged by a `tickertape serve` process survive
//! `kill -9` of that process.

mod support;

use std::time::Duration;
use support::serve;

#[tokio::test]
async fn acknowledged_points_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let (mut child, url) = serve(dir.path());
    let mut expected = Vec::new();
    for batch in 0..20i64 {
        let body: String = (0..50)
            .map(|i| {
                let t = batch * 50 + i + 1;
                expected.push((t, t as f64 / 4.0));
                format!("k,host=a v={} {t}\n", t as f64 / 4.0)
            })
            .collect();
        let status = client
            .post(format!("{url}/write"))
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 204);
    }
    child.kill().expect("kill -9 the server"); // SIGKILL: no shutdown code runs
    child.wait().expect("reap");

    let (mut child, url) = serve(dir.path());
    let answer: serde_json::Value = client
        .get(format!("{url}/api/v1/query?measurement=k"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    let points: Vec<(i64, f64)> =
        serde_json::from_value(answer["series"][0]["points"].clone()).unwrap();
    assert_eq!(
        points, expected,
        "every acknowledged point is there after kill -9"
    );
}

/// Sends bodies of 60 points (one per second, each body after the last) of series
/// `k,run=RUN` until the server stops answering or `max_bodies` were sent; returns how
/// many were acknowledged.
async fn write_until_killed(url: String, run: String, max_bodies: i64) -> i64 {
    let client = reqwest::Client::new();
    for body_no in 0..max_bodies {
        let body: String = (0..60)
            .map(|i| {
                let t = body_no * 60 + i + 1;
                format!("k,run={run} v={} {t}000000000\n", (t % 7) as f64 + 0.25)
            })
            .collect();
        match client.post(format!("{url}/write")).body(body).send().await {
            Ok(r) if r.status().as_u16() == 204 => {}
            _ => return body_no,
        }
    }
    max_bodies
}

/// Rollups keep up with raw points through `kill -9`: a server killed while bodies are in
/// flight comes back with every rollup window equal to the same window summed from raw
/// points (the embedded store commits a body's points and their rollups in one
/// transaction, so no crash can keep one without the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollups_equal_raw_points_after_kill_9_mid_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let mut acknowledged = 0;
    for round in 0..3u64 {
        let (mut child, url) = serve(dir.path());
        let writers: Vec<_> = ["a", "b"]
            .iter()
            .map(|w| {
                tokio::spawn(write_until_killed(
                    url.clone(),
                    format!("{round}{w}"),
                    2_000,
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300 + 150 * round)).await;
        child.kill().expect("kill -9 the server"); // SIGKILL: no shutdown code runs
        child.wait().expect("reap");
        for w in writers {
            acknowledged += w.await.expect("writer task");
        }
    }
    assert!(
        acknowledged > 0,
        "no body was acknowledged before the kills"
    );

    let (mut child, url) = serve(dir.path());
    let client = reqwest::Client::new();
    let get = |extra: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let q = format!("{url}/api/v1/query?measurement=k&start=0&end=200000000000000&step=1m&agg=sum{extra}");
            client
                .get(q)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };
    let from_rollups = get("").await;
    let from_raw = get("&resolution=raw").await;
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    assert_eq!(from_rollups, from_raw, "rollup windows equal raw windows");
    assert!(
        from_raw["series"].as_array().is_some_and(|s| s.len() >= 2),
        "{from_raw}"
    );
}

/// A delete answered by a `tickertape serve` process is durable: after `kill -9` the
/// deleted points stay deleted, whether they were in part files or only in the head and
/// the write-ahead log, a series deleted whole stays out of the catalog, and a point
/// written into the deleted range after the delete is kept.
#[tokio::test]
async fn a_delete_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let (mut child, url) = serve(dir.path());
    let post = |path: String, body: String| {
        let client = client.clone();
        async move {
            let r = client.post(path).body(body).send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
    };
    let lines = |host: &str, times: std::ops::Range<i64>| -> String {
        times
            .map(|t| format!("k,host={host} v={t} {t}\n"))
            .collect()
    };
    // 1..=600 into part files, 601..=1000 only in the head and the log.
    for (host, times) in [
        ("a", 1..601),
        ("b", 1..601),
        ("a", 601..1001),
        ("b", 601..1001),
    ] {
        assert_eq!(
            post(format!("{url}/write"), lines(host, times)).await.0,
            204
        );
        if host == "b" {
            let compacted = post(format!("{url}/api/v1/admin/compact"), String::new()).await;
            assert_eq!(compacted.0, 204, "{}", compacted.1);
        }
    }
    let delete =
        |query: &'static str| post(format!("{url}/api/v1/admin/delete?{query}"), String::new());
    let (status, answer) = delete("measurement=k&tag=host:a&start=300&end=800").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, r#"{"series_matched":1,"series_removed":0}"#);
    let (status, answer) = delete("measurement=k&tag=host:b").await;
    assert_eq!(
        (status, answer.as_str()),
        (200, r#"{"series_matched":1,"series_removed":1}"#)
    );
    assert_eq!(
        post(format!("{url}/write"), lines("a", 500..501)).await.0,
        204
    );
    child.kill().expect("kill -9 the server"); // SIGKILL: no shutdown code runs
    child.wait().expect("reap");

    let (mut child, url) = serve(dir.path());
    let get = |path: String| {
        let client = client.clone();
        async move {
            let r = client.get(path).send().await.unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let answer = get(format!("{url}/api/v1/query?measurement=k")).await;
    let series = answer["series"].as_array().expect("series").clone();
    let listed = get(format!("{url}/api/v1/series?measurement=k")).await;
    let heads = get(format!("{url}/api/v1/query?measurement=k&agg=last")).await;
    child.kill().expect("stop the server");
    child.wait().expect("reap");
    assert_eq!(series.len(), 1, "host b is gone: {answer}");
    assert_eq!(series[0]["tags"]["host"], "a");
    let times: Vec<i64> = series[0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p[0].as_i64().expect("a time"))
        .collect();
    let want: Vec<i64> = (1..300).chain([500]).chain(800..1001).collect();
    assert_eq!(times, want, "deleted points stay deleted after kill -9");
    assert_eq!(
        listed["series"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(heads["series"][0]["points"][0][0], 1000, "{heads}");
}
