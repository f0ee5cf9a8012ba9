//! Prometheus label matchers → the stored series they select, and their samples.
//!
//! A metric name is a (measurement, field) pair (`tickertape_prometheus::mapping`), so
//! matchers on `__name__` pick pairs from the store's list; the other matchers go to the
//! store's index as tag conditions where they can, and every selected series is checked
//! against all matchers on the labels it is shown with, so the answer is exact.

use promql_parser::label::{MatchOp as PromOp, Matcher};
use tickertape_backend::SeriesInfo;
use tickertape_core::Point;
use tickertape_core::{MatchOp, SeriesSelector, TagMatcher};
use tickertape_engine::{Engine, EngineError, QueryBudget, SeriesHistory};
use tickertape_prometheus::mapping::{labels_of, metric_name, Labels, METRIC_NAME};
use tickertape_prometheus::promql::{
    matches_all, Fetched, History, RawSeries, Selection, Slot, HISTORY_LEAD_SLOTS,
};

/// Nanoseconds per millisecond: Prometheus' times are in ms, tickertape's in ns.
const NS_PER_MS: i64 = 1_000_000;

/// The series `matchers` select with the labels they are shown with, sorted by labels;
/// refused past `--max-query-series`, as a query is.
pub(crate) async fn select_series(
    engine: &Engine,
    matchers: &[Matcher],
) -> Result<Vec<(Labels, SeriesInfo)>, EngineError> {
    select(engine, matchers, true).await
}

/// [`select_series`] without the query limits: what a delete selects.
pub(crate) async fn select_series_to_delete(
    engine: &Engine,
    matchers: &[Matcher],
) -> Result<Vec<(Labels, SeriesInfo)>, EngineError> {
    select(engine, matchers, false).await
}

async fn select(
    engine: &Engine,
    matchers: &[Matcher],
    limited: bool,
) -> Result<Vec<(Labels, SeriesInfo)>, EngineError> {
    let (names, others): (Vec<&Matcher>, Vec<&Matcher>) =
        matchers.iter().partition(|m| m.name == METRIC_NAME);
    let others: Vec<Matcher> = others.into_iter().cloned().collect();
    let mut out = Vec::new();
    for (measurement, field) in engine.list_fields().await? {
        let metric = metric_name(&measurement, &field);
        if !names.iter().all(|m| m.is_match(&metric)) {
            continue;
        }
        let selector = pushed_down(measurement, field, &others);
        let found = match limited {
            true => engine.find_series_limited(&selector).await?,
            false => engine.find_series(&selector).await?,
        };
        for info in found {
            let labels = labels_of(&info.key);
            if matches_all(&labels, matchers) {
                out.push((labels, info));
            }
        }
        // Over all metrics too, as soon as it is passed.
        if limited {
            engine.check_series_limit(out.len())?;
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The store's selector for one metric: the label matchers the index can answer. A
/// matcher it cannot take (an empty equality, a regex the store's engine refuses) is
/// left to the exact check after.
fn pushed_down(measurement: String, field: String, matchers: &[Matcher]) -> SeriesSelector {
    let mut selector = SeriesSelector {
        measurement,
        field: Some(field),
        ..SeriesSelector::default()
    };
    for m in matchers {
        let op = match &m.op {
            PromOp::Equal if !m.value.is_empty() => {
                selector.tags.push((m.name.clone(), m.value.clone()));
                continue;
            }
            PromOp::Equal => continue,
            PromOp::NotEqual => MatchOp::NotEqual,
            PromOp::Re(_) => MatchOp::Regex,
            PromOp::NotRe(_) => MatchOp::NotRegex,
        };
        if let Ok(tag) = TagMatcher::new(m.name.clone(), op, m.value.clone()) {
            selector.matchers.push(tag);
        }
    }
    selector
}

/// The samples of the selected series in `[start, end]` (ms), stale markers kept,
/// charged to the request's `budget`.
pub(crate) async fn fetch(
    engine: &Engine,
    matchers: &[Matcher],
    start: i64,
    end: i64,
    budget: &QueryBudget,
) -> Result<Vec<RawSeries>, EngineError> {
    let selected = select_series(engine, matchers).await?;
    let infos: Vec<SeriesInfo> = selected.iter().map(|(_, i)| i.clone()).collect();
    let points = engine
        .read_raw_with(&infos, ms_to_ns(start), ms_to_ns(end), budget)
        .await?;
    Ok(selected
        .into_iter()
        .zip(points)
        .map(|((labels, _), points)| {
            let samples = points
                .into_iter()
                .map(|p| (p.time.div_euclid(NS_PER_MS), p.value))
                .collect();
            RawSeries::new(labels, samples)
        })
        .collect())
}

/// Every selection of a query, fetched for PromQL: where a measurement's raw retention
/// has dropped the raw points of a selection's range, its rollup slots answer there
/// (`tickertape_engine::history`), which the evaluator reads as PromQL's `history`
/// says.
pub(crate) async fn fetch_all(
    engine: &Engine,
    selections: &[Selection],
    budget: &QueryBudget,
) -> Result<Fetched, EngineError> {
    let mut fetched = Fetched::new();
    for s in selections {
        let selected = select_series(engine, &s.matchers).await?;
        let infos: Vec<SeriesInfo> = selected.iter().map(|(_, i)| i.clone()).collect();
        let read = engine
            .read_history_with(
                &infos,
                ms_to_ns(s.start),
                ms_to_ns(s.end),
                HISTORY_LEAD_SLOTS,
                budget,
            )
            .await?;
        let series = selected
            .into_iter()
            .zip(read)
            .map(|((labels, _), read)| with_history(labels, read))
            .collect();
        fetched.insert(s.id, series);
    }
    Ok(fetched)
}

/// One series' read in PromQL's terms: times in ms.
fn with_history(labels: Labels, read: SeriesHistory) -> RawSeries {
    let point = |p: Point| (p.time.div_euclid(NS_PER_MS), p.value);
    let raw = read.points.into_iter().map(point);
    if read.slots.is_empty() {
        return RawSeries::new(labels, raw.collect());
    }
    let slots = read
        .slots
        .into_iter()
        .map(|(resolution, start, s)| Slot {
            start: start.div_euclid(NS_PER_MS),
            end: start
                .saturating_add(resolution.nanos())
                .div_euclid(NS_PER_MS),
            count: s.count,
            sum: s.sum,
            min: s.min,
            max: s.max,
            first: point(s.first),
            last: point(s.last),
        })
        .collect();
    let history = History {
        slots,
        raw_from: read.raw_from.div_euclid(NS_PER_MS),
    };
    RawSeries::with_history(labels, history, raw)
}

pub(crate) fn ms_to_ns(ms: i64) -> i64 {
    ms.saturating_mul(NS_PER_MS)
}
