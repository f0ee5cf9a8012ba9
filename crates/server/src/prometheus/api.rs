//! Prometheus' HTTP query API (`/api/v1/query`, `query_range`, `series`, `labels`,
//! `label/<name>/values`, and the status endpoints Grafana asks for), GET and POST alike.

use super::error::PromError;
use super::json;
use super::params::{now_ms, Params, MAX_TIME, MIN_TIME};
use super::select::{fetch_all, ms_to_ns, select_series};
use crate::budget::on_blocking_thread;
use crate::database::PromDatabase;
use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use promql_parser::label::Matcher;
use promql_parser::parser::value::ValueType;
use std::collections::BTreeSet;
use std::sync::Arc;
use tickertape_engine::{Engine, Exhausted, QueryBudget};
use tickertape_prometheus::mapping::{metric_name, Labels, METRIC_NAME};
use tickertape_prometheus::promql::{self, evaluate, selections, Expr, Grid};

/// A range query may have at most this many steps (Prometheus' own limit).
const MAX_STEPS: i64 = 11_000;

/// Listings filter series by `start`/`end` by reading them, up to this many series;
/// past it they list every selected series and say so in `warnings`.
const MAX_SERIES_TIME_FILTERED: usize = 20_000;

type Answer = Result<Response, PromError>;

fn ok(data: &str) -> Response {
    ok_with_warnings(data, &[])
}

fn ok_with_warnings(data: &str, warnings: &[String]) -> Response {
    let body = json::success(data, warnings);
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Fetches what the expression reads, evaluates it over `grid` and writes the answer
/// with `render`, all under one budget: the evaluation and the rendering on a blocking
/// thread, stopped when the client goes away.
async fn run(
    engine: &Engine,
    expr: Expr,
    grid: Grid,
    render: fn(&mut String, promql::Value, &Grid, &QueryBudget) -> Result<(), Exhausted>,
) -> Answer {
    let budget = Arc::new(engine.budget());
    let _cancel = budget.cancel_on_drop();
    // Boxed: the store's answers are keyed by each selector's address, and the
    // expression moves to the blocking thread.
    let expr = Box::new(expr);
    let wanted = selections(&expr, &grid)?;
    let data = fetch_all(engine, &wanted, &budget).await?;
    let body = on_blocking_thread(&budget, move |budget| {
        let value = evaluate(&expr, &grid, &data, budget)?;
        drop(data);
        json::success_with(|out| render(out, value, &grid, budget)).map_err(PromError::from)
    })
    .await??;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

pub(crate) async fn query(PromDatabase(engine): PromDatabase, p: Params) -> Answer {
    let expr = promql::parse(p.required("query")?)?;
    let at = p.time_or("time", now_ms())?;
    run(
        &engine,
        expr,
        Grid::instant(at),
        |out, value, grid, budget| json::instant(out, &value, grid.start, budget),
    )
    .await
}

pub(crate) async fn query_range(PromDatabase(engine): PromDatabase, p: Params) -> Answer {
    let expr = promql::parse(p.required("query")?)?;
    let start = required_time(&p, "start")?;
    let end = required_time(&p, "end")?;
    let step = p.duration("step")?;
    if end < start {
        return Err(PromError::bad_data(
            "invalid parameter \"end\": end timestamp must not be before start time",
        ));
    }
    if step <= 0 {
        return Err(PromError::bad_data(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    if (end - start) / step > MAX_STEPS {
        return Err(PromError::bad_data(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
        ));
    }
    if matches!(expr.value_type(), ValueType::Matrix | ValueType::String) {
        return Err(PromError::bad_data(format!(
            "invalid expression type \"{}\" for range query, must be Scalar or instant Vector",
            match expr.value_type() {
                ValueType::Matrix => "range vector",
                _ => "string",
            }
        )));
    }
    run(&engine, expr, Grid { start, end, step }, json::range).await
}

fn required_time(p: &Params, name: &str) -> Result<i64, PromError> {
    p.required(name)?;
    p.time_or(name, 0)
}

/// The matchers of each `match[]` selector.
pub(super) fn match_params(p: &Params) -> Result<Vec<Vec<Matcher>>, PromError> {
    p.all("match[]")
        .into_iter()
        .map(|text| match promql::parse(text)? {
            Expr::VectorSelector(vs) => {
                let mut matchers = vs.matchers.matchers;
                if let Some(name) = vs.name {
                    matchers.push(Matcher::new(
                        promql_parser::label::MatchOp::Equal,
                        METRIC_NAME,
                        &name,
                    ));
                }
                Ok(matchers)
            }
            _ => Err(PromError::bad_data(format!(
                "invalid parameter \"match[]\": {text:?} is not a series selector"
            ))),
        })
        .collect()
}

/// The label sets of the series the `match[]` selectors select (every series when there
/// are none) that have samples in `[start, end]`; a warning when there were too many to
/// check the time range.
async fn listed_series(
    engine: &Engine,
    p: &Params,
) -> Result<(Vec<Labels>, Vec<String>), PromError> {
    let mut selectors = match_params(p)?;
    if selectors.is_empty() {
        // Every series: all have a name.
        selectors.push(vec![Matcher::new(
            promql_parser::label::MatchOp::NotEqual,
            METRIC_NAME,
            "",
        )]);
    }
    let start = p.time_or("start", MIN_TIME)?;
    let end = p.time_or("end", MAX_TIME)?;
    let mut found: Vec<(Labels, tickertape_backend::SeriesInfo)> = Vec::new();
    for matchers in &selectors {
        found.extend(select_series(engine, matchers).await?);
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.dedup_by(|a, b| a.0 == b.0);
    let mut warnings = Vec::new();
    if start > MIN_TIME || end < MAX_TIME {
        if found.len() <= MAX_SERIES_TIME_FILTERED {
            let infos: Vec<_> = found.iter().map(|(_, i)| i.clone()).collect();
            let points = engine
                .read_raw(&infos, ms_to_ns(start), ms_to_ns(end))
                .await?;
            found = found
                .into_iter()
                .zip(points)
                .filter(|(_, pts)| !pts.is_empty())
                .map(|(f, _)| f)
                .collect();
        } else {
            warnings.push(format!(
                "{} series selected: start and end were not applied (at most {MAX_SERIES_TIME_FILTERED} are checked); narrow with match[]",
                found.len()
            ));
        }
    }
    Ok((found.into_iter().map(|(l, _)| l).collect(), warnings))
}

pub(crate) async fn series(PromDatabase(engine): PromDatabase, p: Params) -> Answer {
    if p.all("match[]").is_empty() {
        return Err(PromError::bad_data("no match[] parameter provided"));
    }
    let (series, warnings) = listed_series(&engine, &p).await?;
    let mut data = String::from("[");
    for (i, labels) in series.iter().enumerate() {
        if i > 0 {
            data.push(',');
        }
        json::labels(&mut data, labels);
    }
    data.push(']');
    Ok(ok_with_warnings(&data, &warnings))
}

pub(crate) async fn labels(PromDatabase(engine): PromDatabase, p: Params) -> Answer {
    let (series, warnings) = listed_series(&engine, &p).await?;
    let names: BTreeSet<&str> = series.iter().flatten().map(|(k, _)| k.as_str()).collect();
    Ok(ok_with_warnings(&json::strings(names), &warnings))
}

pub(crate) async fn label_values(
    PromDatabase(engine): PromDatabase,
    Path(name): Path<String>,
    p: Params,
) -> Answer {
    let every_metric = name == METRIC_NAME && p.all("match[]").is_empty();
    if every_metric && p.get("start").is_none() && p.get("end").is_none() {
        return Ok(ok(&json::strings(
            metric_names(&engine).await?.iter().map(String::as_str),
        )));
    }
    let (series, warnings) = match listed_series(&engine, &p).await {
        // Grafana's metric browser asks for every name in its time range: on a store
        // with more series than one query may select, answer every name instead.
        Err(e) if every_metric && e.is_over_limit() => {
            let names = metric_names(&engine).await?;
            let warning = format!("{e}: every metric name is listed, start and end not applied");
            return Ok(ok_with_warnings(
                &json::strings(names.iter().map(String::as_str)),
                &[warning],
            ));
        }
        other => other?,
    };
    let values: BTreeSet<&str> = series
        .iter()
        .flatten()
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
        .collect();
    Ok(ok_with_warnings(&json::strings(values), &warnings))
}

/// Every metric name, from the store's (measurement, field) list alone.
async fn metric_names(engine: &Engine) -> Result<BTreeSet<String>, PromError> {
    Ok(engine
        .list_fields()
        .await?
        .iter()
        .map(|(m, f)| metric_name(m, f))
        .collect())
}

/// What Grafana reads to learn the server's features: the Prometheus API version this
/// implements, and tickertape's own in `revision`.
pub(crate) async fn buildinfo() -> Response {
    let data = serde_json::json!({
        "version": "2.42.0",
        "revision": concat!("tickertape ", env!("CARGO_PKG_VERSION")),
        "branch": "",
        "buildUser": "",
        "buildDate": "",
        "goVersion": "",
    });
    ok(&data.to_string())
}

/// Metric metadata is not stored: an empty map.
pub(crate) async fn metadata() -> Response {
    ok("{}")
}

pub(crate) async fn query_exemplars() -> Response {
    ok("[]")
}

pub(crate) async fn rules() -> Response {
    ok("{\"groups\":[]}")
}

pub(crate) async fn alerts() -> Response {
    ok("{\"alerts\":[]}")
}
