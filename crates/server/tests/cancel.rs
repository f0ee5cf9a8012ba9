//! A query whose client has gone stops using CPU, through the real server: a heavy query
//! is sent, its client gives up after 300 ms, and the process's own CPU time (this test
//! binary runs the server) must then stay almost flat. One test in its own binary, so
//! that nothing else in the process uses CPU meanwhile.
//!
//! Each heavy query is first measured on a slice of its work, run to its end: that
//! proves the full query would burn the CPU the check looks for, had it not stopped.

mod support;

use std::time::Duration;
use support::TestServer;
use tickertape_engine::QueryLimits;

/// 2023-11-14T22:13:20Z in seconds.
const T0: i64 = 1_700_000_000;

/// This process's CPU time (user + system), from `/proc/self/stat` (in USER_HZ, which
/// Linux fixes at 100 per second for `/proc`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds `request` takes when run to its end.
async fn cpu_of(request: reqwest::RequestBuilder) -> f64 {
    let before = cpu_seconds();
    let r = request.send().await.expect("request");
    assert_eq!(
        r.status().as_u16(),
        200,
        "{}",
        r.text().await.unwrap_or_default()
    );
    let _ = r.bytes().await;
    cpu_seconds() - before
}

/// Sends `request` with a 300 ms timeout from a thread and runtime of its own (so that
/// it gives up on time whatever the server's runtime is doing); then checks that the
/// process, given a second to stop, uses less than a quarter of a core over the next
/// two seconds.
async fn abandoned_stops(what: &str, request: reqwest::RequestBuilder) {
    let (before, asked) = (cpu_seconds(), std::time::Instant::now());
    let request = request.timeout(Duration::from_millis(300));
    let client = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the client");
        runtime.block_on(async { request.send().await.map(|r| r.status()) })
    });
    while !client.is_finished() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    match client.join().expect("the client thread") {
        Err(e) if e.is_timeout() => {}
        other => panic!("{what}: expected no answer within 300 ms, got {other:?}"),
    }
    // Not asserted: on a busy machine the process may get little CPU in 300 ms.
    eprintln!(
        "{what}: {:.2} CPU-s while its client waited {:?}",
        cpu_seconds() - before,
        asked.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = cpu_seconds();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = cpu_seconds() - settled;
    eprintln!("{what}: {after:.2} CPU-s in the 2 s after its client left");
    assert!(
        after < 0.5,
        "{what}: {after:.2} CPU-s used in the 2 s after its client left"
    );
}

/// On two workers, as `tickertape serve` runs on this machine's two cores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_whose_client_has_gone_stops_using_cpu() {
    let unlimited = QueryLimits {
        max_points: usize::MAX,
        ..QueryLimits::default()
    };
    let server = TestServer::start_with_limits(unlimited).await;
    // InfluxQL: 200 series, one point each 100 s; median per 1 ms window over 999 s makes
    // 999,000 windows per series, computed group by group in the request's task.
    let mut body = String::new();
    for h in 0..200 {
        for i in 0..10 {
            body.push_str(&format!("load,host=h{h:03} v={i} {}\n", T0 + 100 * i));
        }
    }
    // PromQL: one series of 20,000 samples; quantile_over_time over a day at each of
    // 11,000 steps sorts the 20,000 samples each time, on a blocking thread.
    for i in 0..20_000 {
        body.push_str(&format!("big value={} {}\n", i % 97, T0 + i));
    }
    server.write_seconds(body).await;

    let influxql = |hosts: &str| {
        let q = format!(
            "SELECT median(v) FROM load WHERE host =~ /{hosts}/ AND time >= {T0}s AND \
             time < {}s GROUP BY time(1ms), * fill(none)",
            T0 + 999
        );
        server
            .client
            .get(format!("{}/query", server.url))
            .query(&[("q", q)])
    };
    let slice = cpu_of(influxql("^h00[0-4]$")).await;
    eprintln!("InfluxQL: {slice:.2} CPU-s for 5 of 200 groups");
    assert!(
        slice * 40.0 > 4.0,
        "the InfluxQL query is too light to show anything: {slice} CPU-s for 5 of 200 groups"
    );
    abandoned_stops("InfluxQL", influxql(".*")).await;

    let promql = |steps: i64| {
        let start = T0 + 20_000;
        server
            .client
            .get(format!("{}/prometheus/api/v1/query_range", server.url))
            .query(&[
                ("query", "quantile_over_time(0.5, big[1d])".to_string()),
                ("start", start.to_string()),
                ("end", (start + steps - 1).to_string()),
                ("step", "1".to_string()),
            ])
    };
    let slice = cpu_of(promql(110)).await;
    eprintln!("PromQL: {slice:.2} CPU-s for 110 of 11,000 steps");
    assert!(
        slice * 100.0 > 4.0,
        "the PromQL query is too light to show anything: {slice} CPU-s for 110 of 11,000 steps"
    );
    abandoned_stops("PromQL", promql(11_000)).await;

    // The server still answers.
    let (status, _) = server.get("/query", &[("q", "SHOW MEASUREMENTS")]).await;
    assert_eq!(status, 200);
    server.stop().await;
}
