//! The randomized differential test of InfluxQL: one data set (`influxql_random/data.rs`)
//! loaded into a real InfluxDB 1.x and into tickertape, then seeded random statements of
//! the shapes people write by hand (`influxql_random/statements.rs`) sent to both, the
//! answers normalised and compared (`influxql_random/compare.rs`). It prints the agreement
//! rate, the classes of differences by count, and for each class one statement minimised.
//!
//! In CI it runs [`SEED`] over [`COUNT`] statements and requires [`MIN_AGREEMENT`]. By
//! hand, longer or with other seeds:
//! `INFLUXQL_RANDOM_SEED=7 INFLUXQL_RANDOM_COUNT=2000 cargo test -p tickertape-server
//! --test influxql_random -- --nocapture`; `INFLUXQL_RANDOM_SHOW=1` prints every
//! differing statement with both answers; `INFLUXQL_RANDOM_ASK='stmt;;stmt'` sends
//! only the statements given, printing both answers.
//!
//! Prints SKIPPED and does nothing when `/usr/bin/influxd` is absent (`scripts/test` then
//! leaves it out by name and counts it as skipped).

mod influxdb;
mod support;

#[path = "influxql_random/compare.rs"]
mod compare;
#[path = "influxql_random/data.rs"]
mod data;
#[path = "influxql_random/rng.rs"]
mod rng;
#[path = "influxql_random/statements.rs"]
mod statements;

use std::collections::BTreeMap;

use compare::{difference, minimised, normalised, on_purpose, Answer};
use influxdb::short;
use serde_json::Value;
use statements::Statement;
use support::TestServer;

/// The seed and statement count CI runs.
const SEED: u64 = 1;
const COUNT: usize = 500;
/// The share of statements whose answers must agree, those that differ on purpose
/// ([`compare::on_purpose`], docs/influxql.md) set aside: a floor under what the CI seed
/// reaches today, so that a regression fails; the classes still differing are listed in
/// docs/influxql.md.
const MIN_AGREEMENT: f64 = 0.97;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A store's answer; a request that fails (the client's 60 s bound) is status 0 and the
/// error's text, a difference like any other rather than the end of the run.
async fn ask(client: &reqwest::Client, url: &str, statement: &str) -> Answer {
    let response = client
        .get(format!("{url}/query"))
        .query(&[("db", "db"), ("epoch", "ns"), ("q", statement)])
        .send()
        .await;
    let text = match response {
        Ok(response) => {
            let status = response.status().as_u16();
            match response.text().await {
                Ok(text) => {
                    return (
                        status,
                        serde_json::from_str(&text).unwrap_or(Value::String(text)),
                    )
                }
                Err(e) => e.to_string(),
            }
        }
        Err(e) => e.to_string(),
    };
    (0, Value::String(format!("request failed: {text}")))
}

struct Stores {
    client: reqwest::Client,
    influxdb: String,
    tickertape: String,
}

impl Stores {
    /// Both answers, normalised.
    async fn answers(&self, statement: &Statement) -> (Answer, Answer) {
        let text = statement.text();
        let influx = ask(&self.client, &self.influxdb, &text).await;
        let ours = ask(&self.client, &self.tickertape, &text).await;
        (normalised(statement, influx), normalised(statement, ours))
    }

    async fn class_of(&self, statement: Statement) -> Option<String> {
        let (influx, ours) = self.answers(&statement).await;
        difference(&statement, &influx, &ours)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn influxql_random_matches_influxdb() {
    if !influxdb::installed() {
        eprintln!(
            "SKIPPED: influxd (InfluxDB 1.x) not found — install Debian's influxdb package \
             to run the randomized InfluxQL differential test"
        );
        return;
    }
    let seed = env_or("INFLUXQL_RANDOM_SEED", SEED);
    let count = env_or("INFLUXQL_RANDOM_COUNT", COUNT);
    let show = std::env::var_os("INFLUXQL_RANDOM_SHOW").is_some();
    let influxd = influxdb::start_influxd().await;
    let server = TestServer::start().await;
    let client = support::client();
    let body = data::line_protocol();
    for url in [&influxd.url, &server.url] {
        let created = ask(&client, url, "CREATE DATABASE db").await;
        assert_eq!(created.0, 200, "{url}: {}", created.1);
        let written = client
            .post(format!("{url}/write?db=db&precision=s"))
            .body(body.clone())
            .send()
            .await
            .expect("write");
        assert_eq!(written.status().as_u16(), 204, "{url}");
    }
    let stores = Stores {
        client,
        influxdb: influxd.url.clone(),
        tickertape: server.url.clone(),
    };

    // By hand: both answers to statements of one's own, then nothing else.
    if let Ok(asked) = std::env::var("INFLUXQL_RANDOM_ASK") {
        for text in asked.split(";;") {
            for url in [&stores.influxdb, &stores.tickertape] {
                let (status, answer) = ask(&stores.client, url, text).await;
                eprintln!("{text}\n  {url}: {status} {answer}");
            }
        }
        return;
    }
    let mut rng = rng::Rng::new(seed);
    let mut classes: BTreeMap<String, Vec<Statement>> = BTreeMap::new();
    let mut kept: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut agreed, mut answered_by_influxdb) = (0, 0);
    for _ in 0..count {
        let statement = statements::generate(&mut rng);
        let (influx, ours) = stores.answers(&statement).await;
        // Not vacuous: count how many InfluxDB answered with series at all.
        let has_series = influx.1["results"][0]["series"].is_array();
        answered_by_influxdb += usize::from(has_series);
        match difference(&statement, &influx, &ours) {
            None => agreed += 1,
            Some(_) if on_purpose(&statement, &influx).is_some() => {
                *kept
                    .entry(on_purpose(&statement, &influx).unwrap_or(""))
                    .or_default() += 1;
            }
            Some(class) => {
                if show {
                    eprintln!(
                        "[{class}] {}\n  influxdb:   {}\n  tickertape: {}",
                        statement.text(),
                        short(&influx.1),
                        short(&ours.1)
                    );
                }
                classes.entry(class).or_default().push(statement);
            }
        }
    }
    let mut by_count: Vec<(&String, &Vec<Statement>)> = classes.iter().collect();
    by_count.sort_by_key(|(_, s)| std::cmp::Reverse(s.len()));
    let on_purpose: usize = kept.values().sum();
    let compared = count - on_purpose;
    let rate = agreed as f64 / compared.max(1) as f64;
    eprintln!(
        "seed {seed}: {agreed} of {count} statements agree ({:.1}%); {agreed} of {compared} \
         ({:.1}%) with the {on_purpose} that differ on purpose set aside; InfluxDB answered \
         {answered_by_influxdb} with series",
        agreed as f64 * 100.0 / count.max(1) as f64,
        rate * 100.0
    );
    for (why, n) in &kept {
        eprintln!("  {n:4} on purpose: {why}");
    }
    for (class, statements) in &by_count {
        let integer = statements.iter().filter(|s| s.integer).count();
        eprintln!(
            "  {:4} {class} ({integer} reading integer fields)",
            statements.len()
        );
    }
    for (class, statements) in &by_count {
        let small = minimised(&statements[0], class, |s| stores.class_of(s)).await;
        let (influx, ours) = stores.answers(&small).await;
        eprintln!(
            "[{class}] {}\n  influxdb:   {}\n  tickertape: {}",
            small.text(),
            short(&influx.1),
            short(&ours.1)
        );
    }
    server.stop().await;
    drop(influxd);
    // Not vacuous: most statements select something InfluxDB answers with rows.
    assert!(
        answered_by_influxdb * 2 > count,
        "InfluxDB answered only {answered_by_influxdb} of {count} with series"
    );
    assert!(
        rate >= MIN_AGREEMENT,
        "seed {seed}: {agreed} of {compared} agree ({:.1}%), below {:.0}%",
        rate * 100.0,
        MIN_AGREEMENT * 100.0
    );
}
