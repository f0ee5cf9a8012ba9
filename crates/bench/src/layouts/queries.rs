//! The four reference queries of the ingest benchmark, scaled to the data: Q1 all
//! fields of host_0 over the first half of the span; Q2 max of usage_user (host_0) per
//! minute over all of it; Q3 the last point of every series; Q4 max of every field of
//! host_0 per hour over all of it. Each runs `--query-runs` times; the median is reported.

use std::time::Instant;

use anyhow::Result;
use tickertape_core::query::Aggregate;
use tickertape_core::SeriesSelector;
use tickertape_engine::{Engine, Query};

use super::{ms, Data, MEASUREMENT, MINUTE_NS, START_NS};
use crate::dataset::{FIELDS, HOUR_NS};

/// The exclusive end of Q1's range: the middle of the data.
pub(super) fn q1_end(data: &Data) -> i64 {
    START_NS + (data.end - START_NS) / 2
}

/// The median time of `runs` runs of `f` (at least one), which returns how many points or
/// documents it got. `None` when a run failed or got nothing: a query that answers nothing
/// measures nothing.
pub(super) async fn median_of<F, Fut>(runs: usize, mut f: F) -> Option<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize>>,
{
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        match f().await {
            Ok(n) if n > 0 => times.push(ms(t.elapsed())),
            Ok(_) => {
                eprintln!("bench layouts: a reference query returned nothing");
                return None;
            }
            Err(e) => {
                eprintln!("bench layouts: reference query failed: {e:#}");
                return None;
            }
        }
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// The queries through the engine: value segments, or bucket documents when the engine's
/// schema declares the measurement `layout = "buckets"`.
pub(super) async fn engine_queries(engine: &Engine, data: &Data, runs: usize) -> [Option<f64>; 4] {
    let host = data.host(0);
    let selector = |field: Option<&str>, host: Option<&str>| SeriesSelector {
        measurement: MEASUREMENT.into(),
        field: field.map(str::to_owned),
        tags: host
            .map(|h| vec![("hostname".to_owned(), h.to_owned())])
            .unwrap_or_default(),
        matchers: Vec::new(),
    };
    let run = |query: Query| async move {
        let answer = engine.query(&query).await?;
        anyhow::Ok(answer.iter().map(|s| s.points.len()).sum::<usize>())
    };
    let windowed = |field: Option<&str>, step: i64, agg: Aggregate| {
        let mut q = Query::raw(selector(field, Some(&host)), START_NS, data.end);
        q.step = Some(step);
        q.agg = Some(agg);
        q
    };
    let q1 = median_of(runs, || {
        run(Query::raw(
            selector(None, Some(&host)),
            START_NS,
            q1_end(data),
        ))
    })
    .await;
    let q2 = median_of(runs, || {
        run(windowed(Some(FIELDS[0]), MINUTE_NS, Aggregate::Max))
    })
    .await;
    let q3 = median_of(runs, || {
        let mut q = Query::raw(selector(None, None), START_NS, data.end);
        q.agg = Some(Aggregate::Last);
        run(q)
    })
    .await;
    let q4 = median_of(runs, || run(windowed(None, HOUR_NS, Aggregate::Max))).await;
    [q1, q2, q3, q4]
}
