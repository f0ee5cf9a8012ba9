//! The four reference queries (docs/BENCHMARKS.md, "What `tickertape-bench ingest`
//! measures") and the losslessness check, over HTTP against `GET /api/v1/query`, with every
//! answer checked against the dataset.
//!
//! Values in answers are read with Rust's own f64 parser from the JSON text (see
//! [`scan_points`]), not through serde_json, whose default float parsing may be one ulp
//! off: a bit-for-bit check must not depend on it.

use crate::dataset::{Dataset, Reference, HOUR_NS};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One series of an answer.
#[derive(Debug)]
pub struct AnswerSeries {
    pub hostname: String,
    pub field: String,
    pub points: Vec<(i64, f64)>,
}

/// An aggregate the reference queries use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agg {
    Max,
    Last,
}

/// One reference query and what its answer must be.
struct Spec {
    name: &'static str,
    what: String,
    params: Vec<(&'static str, String)>,
    start: i64,
    end: i64,
    step: Option<i64>,
    agg: Option<Agg>,
    /// Only this field (all fields otherwise).
    field: Option<String>,
    /// Only this host (every host otherwise).
    host: Option<String>,
}

/// The outcome of one reference query.
#[derive(Debug, serde::Serialize)]
pub struct QueryOutcome {
    pub name: &'static str,
    pub what: String,
    pub runs: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub series: usize,
    pub points: usize,
    pub expected_series: usize,
    pub expected_points: usize,
    /// Values compared with the dataset (for the series of the reference hosts).
    pub values_checked: usize,
    /// Problems found in the answer; empty when it is right.
    pub problems: Vec<String>,
}

/// The outcome of reading whole series back.
#[derive(Debug, serde::Serialize)]
pub struct Lossless {
    pub series: usize,
    pub points: usize,
    pub mismatches: usize,
    pub first_mismatches: Vec<String>,
}

impl Lossless {
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.points > 0
    }
}

/// The host the reference queries read: `host_33` as in docs/BENCHMARKS.md, or one a third of the
/// way into a smaller dataset.
pub fn query_host(dataset: &Dataset) -> String {
    if dataset.hosts.iter().any(|h| h == "host_33") {
        "host_33".to_string()
    } else {
        dataset.hosts[dataset.hosts.len() / 3].clone()
    }
}

/// The hosts whose every point is read back: the first, the query host and the last.
pub fn reference_hosts(dataset: &Dataset) -> Vec<String> {
    let mut hosts = vec![
        dataset.hosts[0].clone(),
        query_host(dataset),
        dataset.hosts[dataset.hosts.len() - 1].clone(),
    ];
    hosts.dedup();
    hosts.sort();
    hosts.dedup();
    hosts
}

fn specs(dataset: &Dataset) -> Vec<Spec> {
    let host = query_host(dataset);
    let hours = dataset.hours();
    let t0 = dataset.first_time;
    let q1_start = t0 + (hours / 2) * HOUR_NS;
    let q2_hours = hours.min(12);
    let q4_hours = hours.min(8);
    let m = dataset.measurement.clone();
    let tag = format!("hostname:{host}");
    let first_field = dataset.fields.first().cloned().unwrap_or_default();
    vec![
        Spec {
            name: "Q1",
            what: format!("raw: all fields of {host} over 1 h"),
            params: vec![("measurement", m.clone()), ("tag", tag.clone())],
            start: q1_start,
            end: q1_start + HOUR_NS,
            step: None,
            agg: None,
            field: None,
            host: Some(host.clone()),
        },
        Spec {
            name: "Q2",
            what: format!("max of {first_field} per 1 m, {host}, {q2_hours} h"),
            params: vec![
                ("measurement", m.clone()),
                ("field", first_field.clone()),
                ("tag", tag.clone()),
                ("step", "1m".into()),
                ("agg", "max".into()),
            ],
            start: t0,
            end: t0 + q2_hours * HOUR_NS,
            step: Some(60_000_000_000),
            agg: Some(Agg::Max),
            field: Some(first_field),
            host: Some(host.clone()),
        },
        Spec {
            name: "Q3",
            what: "lastpoint: agg=last of every series over the whole range".into(),
            params: vec![("measurement", m.clone()), ("agg", "last".into())],
            start: t0,
            end: dataset.last_time + 1,
            step: None,
            agg: Some(Agg::Last),
            field: None,
            host: None,
        },
        Spec {
            name: "Q4",
            what: format!("max per 1 h of all fields, {host}, {q4_hours} h"),
            params: vec![
                ("measurement", m),
                ("tag", tag),
                ("step", "1h".into()),
                ("agg", "max".into()),
            ],
            start: t0,
            end: t0 + q4_hours * HOUR_NS,
            step: Some(HOUR_NS),
            agg: Some(Agg::Max),
            field: None,
            host: Some(host),
        },
    ]
}

/// Runs the four queries (one unmeasured run, checked, then `runs` measured ones).
pub async fn run_reference_queries(
    client: &reqwest::Client,
    base: &str,
    dataset: &Dataset,
    reference: &Reference,
    runs: usize,
) -> Result<Vec<QueryOutcome>> {
    let mut out = Vec::new();
    for spec in specs(dataset) {
        let url = query_url(base, &spec.params, spec.start, spec.end);
        let answer = parse_answer(&get(client, &url).await?)?;
        let mut outcome = check(&spec, &answer, dataset, reference);
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            get(client, &url).await?;
            times.push(t.elapsed());
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        outcome.median_ms = ms(times[times.len() / 2]);
        outcome.min_ms = ms(times[0]);
        outcome.max_ms = ms(times[times.len() - 1]);
        outcome.runs = runs;
        out.push(outcome);
    }
    Ok(out)
}

/// Reads every point of every series of the reference hosts and compares it, time and
/// value bits, with the dataset.
pub async fn check_lossless(
    client: &reqwest::Client,
    base: &str,
    dataset: &Dataset,
    reference: &Reference,
) -> Result<Lossless> {
    let mut result = Lossless {
        series: 0,
        points: 0,
        mismatches: 0,
        first_mismatches: Vec::new(),
    };
    let hosts: BTreeMap<&str, ()> = reference.keys().map(|(h, _)| (h.as_str(), ())).collect();
    for host in hosts.keys() {
        let params = vec![
            ("measurement", dataset.measurement.clone()),
            ("tag", format!("hostname:{host}")),
        ];
        let url = query_url(base, &params, dataset.first_time, dataset.last_time + 1);
        let answer = parse_answer(&get(client, &url).await?)?;
        let note = |m: &mut Lossless, text: String| {
            m.mismatches += 1;
            if m.first_mismatches.len() < 5 {
                m.first_mismatches.push(text);
            }
        };
        for field in &dataset.fields {
            let expected = &reference[&(host.to_string(), field.clone())];
            let Some(got) = answer.iter().find(|s| &s.field == field) else {
                note(&mut result, format!("{host} {field}: series missing"));
                continue;
            };
            result.series += 1;
            result.points += expected.len();
            if got.points.len() != expected.len() {
                note(
                    &mut result,
                    format!(
                        "{host} {field}: {} points, expected {}",
                        got.points.len(),
                        expected.len()
                    ),
                );
            }
            for (g, e) in got.points.iter().zip(expected) {
                if g.0 != e.0 || g.1.to_bits() != e.1.to_bits() {
                    note(
                        &mut result,
                        format!(
                            "{host} {field}: got ({}, {:?}), expected ({}, {:?})",
                            g.0, g.1, e.0, e.1
                        ),
                    );
                }
            }
        }
    }
    Ok(result)
}

fn query_url(base: &str, params: &[(&str, String)], start: i64, end: i64) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        s.append_pair(k, v);
    }
    s.append_pair("start", &start.to_string());
    s.append_pair("end", &end.to_string());
    format!("{base}/api/v1/query?{}", s.finish())
}

async fn get(client: &reqwest::Client, url: &str) -> Result<String> {
    let response = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .with_context(|| format!("GET {url}: reading the answer"))?;
    if !status.is_success() {
        bail!("GET {url}: {status}: {text:.300}");
    }
    Ok(text)
}

/// Splits an answer into series; names through serde_json, points through [`scan_points`].
pub fn parse_answer(text: &str) -> Result<Vec<AnswerSeries>> {
    #[derive(serde::Deserialize)]
    struct Answer {
        series: Vec<Series>,
    }
    #[derive(serde::Deserialize)]
    struct Series {
        tags: BTreeMap<String, String>,
        field: String,
        #[allow(dead_code)]
        points: serde::de::IgnoredAny,
    }
    let answer: Answer =
        serde_json::from_str(text).with_context(|| format!("unexpected answer: {text:.300}"))?;
    let points = scan_points(text)?;
    if points.len() != answer.series.len() {
        bail!(
            "answer has {} series but {} point arrays",
            answer.series.len(),
            points.len()
        );
    }
    Ok(answer
        .series
        .into_iter()
        .zip(points)
        .map(|(s, points)| AnswerSeries {
            hostname: s.tags.get("hostname").cloned().unwrap_or_default(),
            field: s.field,
            points,
        })
        .collect())
}

/// The `"points":[[t, v], …]` arrays of an answer, in order, each value parsed from its
/// text with `str::parse::<f64>` (`null`, which serde_json writes for NaN, becomes NaN).
///
/// The key with its quotes cannot occur inside a JSON string (quotes there are escaped),
/// so every match is structural.
pub fn scan_points(text: &str) -> Result<Vec<Vec<(i64, f64)>>> {
    const KEY: &str = "\"points\":[";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let mut points = Vec::new();
        loop {
            rest = rest.trim_start_matches([' ', ',', '\n']);
            if let Some(after) = rest.strip_prefix(']') {
                rest = after;
                break;
            }
            let inner = rest.strip_prefix('[').context("malformed points array")?;
            let close = inner.find(']').context("unterminated point")?;
            let (t, v) = inner[..close]
                .split_once(',')
                .context("point is not [time, value]")?;
            let t: i64 = t
                .trim()
                .parse()
                .with_context(|| format!("bad time {t:?}"))?;
            let v = v.trim();
            let v: f64 = if v == "null" {
                f64::NAN
            } else {
                v.parse().with_context(|| format!("bad value {v:?}"))?
            };
            points.push((t, v));
            rest = &inner[close + 1..];
        }
        out.push(points);
    }
    Ok(out)
}

/// Checks an answer's shape for every series and its values for the reference hosts.
fn check(
    spec: &Spec,
    answer: &[AnswerSeries],
    dataset: &Dataset,
    reference: &Reference,
) -> QueryOutcome {
    let hosts: Vec<&String> = match &spec.host {
        Some(h) => vec![h],
        None => dataset.hosts.iter().collect(),
    };
    let fields: Vec<&String> = match &spec.field {
        Some(f) => vec![f],
        None => dataset.fields.iter().collect(),
    };
    let expected_series = hosts.len() * fields.len();
    // Every series of the dataset has the same times, so one reference series gives the
    // expected length of each answer series.
    let per_series = reference
        .values()
        .next()
        .map_or(0, |r| expected(r, spec).len());
    let mut outcome = QueryOutcome {
        name: spec.name,
        what: spec.what.clone(),
        runs: 0,
        median_ms: 0.0,
        min_ms: 0.0,
        max_ms: 0.0,
        series: answer.len(),
        points: answer.iter().map(|s| s.points.len()).sum(),
        expected_series,
        expected_points: expected_series * per_series,
        values_checked: 0,
        problems: Vec::new(),
    };
    if outcome.series != outcome.expected_series || outcome.points != outcome.expected_points {
        outcome.problems.push(format!(
            "{} series / {} points, expected {} / {}",
            outcome.series, outcome.points, outcome.expected_series, outcome.expected_points
        ));
    }
    for ((host, field), points) in reference {
        if !hosts.contains(&host) || !fields.contains(&field) {
            continue;
        }
        let want = expected(points, spec);
        let Some(got) = answer
            .iter()
            .find(|s| &s.hostname == host && &s.field == field)
        else {
            outcome
                .problems
                .push(format!("series {host} {field} missing"));
            continue;
        };
        outcome.values_checked += want.len();
        let same = got.points.len() == want.len()
            && got
                .points
                .iter()
                .zip(&want)
                .all(|(g, w)| g.0 == w.0 && g.1.to_bits() == w.1.to_bits());
        if !same && outcome.problems.len() < 5 {
            outcome.problems.push(format!(
                "{host} {field}: answer differs from the dataset (first points {:?} vs {:?})",
                &got.points[..got.points.len().min(2)],
                &want[..want.len().min(2)]
            ));
        }
    }
    outcome
}

/// What the query must answer for one series, computed from the dataset (the query API's
/// rule: windows aligned to multiples of `step` since the epoch, reported at their start;
/// `last` without step reported at the point's own time).
fn expected(points: &[(i64, f64)], spec: &Spec) -> Vec<(i64, f64)> {
    let mut inside = points
        .iter()
        .copied()
        .filter(|(t, _)| *t >= spec.start && *t < spec.end);
    match (spec.agg, spec.step) {
        (None, _) => inside.collect(),
        (Some(Agg::Last), None) => inside.next_back().into_iter().collect(),
        (Some(agg), Some(step)) => {
            let mut out: Vec<(i64, f64)> = Vec::new();
            for (t, v) in inside {
                let window = t - t.rem_euclid(step);
                match out.last_mut() {
                    Some(last) if last.0 == window => {
                        last.1 = match agg {
                            Agg::Max => last.1.max(v),
                            Agg::Last => v,
                        }
                    }
                    _ => out.push((window, v)),
                }
            }
            out
        }
        (Some(Agg::Max), None) => inside
            .map(|p| p.1)
            .reduce(f64::max)
            .map(|v| (spec.start, v))
            .into_iter()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanner_reads_values_exactly() {
        let text = r#"{"series":[{"measurement":"cpu","tags":{"hostname":"h"},"field":"a","points":[[1,0.1],[2,1e-7],[3,null]]},{"measurement":"cpu","tags":{"hostname":"x\"points\":["},"field":"b","points":[]}]}"#;
        let s = parse_answer(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].points[0], (1, 0.1));
        assert_eq!(s[0].points[1].1.to_bits(), 1e-7f64.to_bits());
        assert!(s[0].points[2].1.is_nan());
        assert!(s[1].points.is_empty());
        assert_eq!(s[1].hostname, "x\"points\":[");
    }

    #[test]
    fn expected_windows_are_aligned_to_the_epoch() {
        let spec = Spec {
            name: "t",
            what: String::new(),
            params: Vec::new(),
            start: 0,
            end: 200,
            step: Some(60),
            agg: Some(Agg::Max),
            field: None,
            host: None,
        };
        let points = [(10, 1.0), (50, 3.0), (60, 2.0), (130, 5.0), (200, 9.0)];
        assert_eq!(expected(&points, &spec), [(0, 3.0), (60, 2.0), (120, 5.0)]);
    }
}
