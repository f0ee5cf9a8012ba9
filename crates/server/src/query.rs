//! `GET /api/v1/query` and `GET /api/v1/series`: points and series of the own API.

use crate::budget::{on_blocking_thread, write_failure, BudgetedWriter};
use crate::database::InDatabase;
use crate::error::ApiError;
use crate::params::{RequestParams, DB_PARAM};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_core::query::merge_on_time_axis_within;
use tickertape_core::retention_policy::go_duration;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::time::{parse_duration, parse_time};
use tickertape_core::Point;
use tickertape_core::{SeriesKey, SeriesSelector, TagCondition};
use tickertape_engine::{CounterDisplay, Query};
use tickertape_engine::{Exhausted, QueryBudget, SeriesPoints};

#[derive(Serialize)]
pub struct SeriesBody {
    measurement: String,
    tags: BTreeMap<String, String>,
    field: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    points: Option<Vec<(i64, f64)>>,
}

impl SeriesBody {
    fn new(key: SeriesKey, points: Option<Vec<(i64, f64)>>) -> Self {
        Self {
            measurement: key.measurement,
            tags: key.tags.into_iter().collect(),
            field: key.field,
            points,
        }
    }
}

#[derive(Serialize)]
pub struct SeriesList {
    series: Vec<SeriesBody>,
}

/// `GET /api/v1/query`: read under the request's budget, the answer written on a
/// blocking thread through it (`--max-response-bytes`), stopped if the client goes.
pub async fn query(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Response, ApiError> {
    let params = Params::new(&request, QUERY_PARAMS)?;
    let query = query_of(&params, engine.now_nanos())?;
    let merge = params.flag("merge")?;
    let budget = Arc::new(engine.budget());
    let _cancel = budget.cancel_on_drop();
    let answer = engine.query_with(&query, &budget).await?;
    let body = on_blocking_thread(&budget, move |budget| match merge {
        true => merged_json(&answer, budget),
        false => answer_json(&answer, budget),
    })
    .await??;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// A series' tags, borrowed, in the order the answer lists them.
fn tags_of(key: &SeriesKey) -> BTreeMap<&str, &str> {
    key.tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// `{"series": [{"measurement", "tags", "field", "points": [[t, v], …]}]}`.
fn answer_json(answer: &[SeriesPoints], budget: &QueryBudget) -> Result<Vec<u8>, Exhausted> {
    let series: Vec<AnswerSeries> = answer
        .iter()
        .map(|s| AnswerSeries {
            measurement: &s.key.measurement,
            tags: tags_of(&s.key),
            field: &s.key.field,
            points: PointPairs(&s.points),
        })
        .collect();
    let mut out = BudgetedWriter::new(budget);
    serde_json::to_writer(&mut out, &AnswerList { series }).map_err(|_| write_failure(budget))?;
    out.finish()
}

/// `merge=true`: `{"times": […], "series": [{…, "values": […]}]}`.
fn merged_json(answer: &[SeriesPoints], budget: &QueryBudget) -> Result<Vec<u8>, Exhausted> {
    let points: Vec<_> = answer.iter().map(|s| s.points.clone()).collect();
    let (times, columns) = merge_on_time_axis_within(&points, budget)?;
    drop(points);
    let series = answer
        .iter()
        .zip(columns)
        .map(|(s, values)| MergedSeries {
            measurement: &s.key.measurement,
            tags: tags_of(&s.key),
            field: &s.key.field,
            values,
        })
        .collect();
    let mut out = BudgetedWriter::new(budget);
    serde_json::to_writer(&mut out, &MergedList { times, series })
        .map_err(|_| write_failure(budget))?;
    out.finish()
}

#[derive(Serialize)]
struct AnswerList<'a> {
    series: Vec<AnswerSeries<'a>>,
}

#[derive(Serialize)]
struct AnswerSeries<'a> {
    measurement: &'a str,
    tags: BTreeMap<&'a str, &'a str>,
    field: &'a str,
    points: PointPairs<'a>,
}

/// Points as `[[t, v], …]`, written from the engine's answer without a copy.
struct PointPairs<'a>(&'a [Point]);

impl Serialize for PointPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|p| (p.time, p.value)))
    }
}

/// `merge=true`: every series on one time axis, `null` where a series has no point.
#[derive(Serialize)]
struct MergedList<'a> {
    times: Vec<i64>,
    series: Vec<MergedSeries<'a>>,
}

#[derive(Serialize)]
struct MergedSeries<'a> {
    measurement: &'a str,
    tags: BTreeMap<&'a str, &'a str>,
    field: &'a str,
    values: Vec<Option<f64>>,
}

pub async fn series(
    InDatabase(engine): InDatabase,
    request: RequestParams,
) -> Result<Json<SeriesList>, ApiError> {
    let params = Params::new(&request, &["measurement", "field", "tag"])?;
    let selector = params.selector()?;
    let found = engine.list_series(&selector).await?;
    Ok(Json(SeriesList {
        series: found
            .into_iter()
            .map(|s| SeriesBody::new(s.key, None))
            .collect(),
    }))
}

/// Every parameter `/api/v1/query` takes.
const QUERY_PARAMS: &[&str] = &[
    "measurement",
    "field",
    "tag",
    "start",
    "end",
    "step",
    "agg",
    "neighbors",
    "resolution",
    "max_points",
    "merge",
    "display",
];

/// The query of `/api/v1/query`'s parameters as a query string (what the CLI runs on a
/// store it opens itself); see [`query_of`].
pub fn parse_query(raw: &str, now: i64) -> Result<Query, ApiError> {
    let request = RequestParams::new(None, raw, b"")?;
    query_of(&Params::new(&request, QUERY_PARAMS)?, now)
}

/// The query `/api/v1/query`'s parameters (checked against [`QUERY_PARAMS`]) ask for;
/// `start`/`end` default to the whole series and may be relative to `now` (ns):
/// `now-1h`, `-1h` ([`parse_time`]).
fn query_of(params: &Params, now: i64) -> Result<Query, ApiError> {
    let bad = |name: &str, e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("parameter {name}: {e}"))
    };
    let time = |name: &str, default: i64| -> Result<i64, ApiError> {
        params.one(name).map_or(Ok(default), |v| {
            parse_time(v, now).map_err(|e| bad(name, &e))
        })
    };
    Ok(Query {
        selector: params.selector()?,
        start: time("start", i64::MIN)?,
        end: time("end", i64::MAX)?,
        step: params
            .one("step")
            .map(|v| parse_duration(v).map_err(|e| bad("step", &e)))
            .transpose()?,
        agg: params
            .one("agg")
            .map(|v| v.parse().map_err(|e: String| bad("agg", &e)))
            .transpose()?,
        neighbors: params.flag("neighbors")?,
        resolution: params
            .one("resolution")
            .map(|v| ResolutionOrRaw::parse(v).map_err(|e| bad("resolution", &e)))
            .transpose()?,
        max_points: params
            .one("max_points")
            .map(|v| {
                v.parse::<usize>()
                    .map_err(|_| bad("max_points", &format!("{v:?} is not a positive integer")))
            })
            .transpose()?,
        display: params
            .one("display")
            .map(|v| {
                CounterDisplay::parse(v)
                    .ok_or_else(|| bad("display", &format!("{v:?} is not avg_per_sec or total")))
            })
            .transpose()?,
    })
}

/// The own API's parameters of one route, from the request's one reading: each of
/// `known` (or `db`), `tag` repeatable, the others not.
pub(crate) struct Params {
    request: RequestParams,
}

impl Params {
    pub(crate) fn new(request: &RequestParams, known: &[&str]) -> Result<Self, ApiError> {
        let pairs = request.pairs();
        for (i, (key, _)) in pairs.iter().enumerate() {
            // `db` is every route's, and `RequestParams` has checked that it names one
            // database however often it is given.
            if key == DB_PARAM {
                continue;
            }
            if !known.contains(&key.as_str()) {
                return Err(ApiError::BadRequest(format!(
                    "unknown parameter {key:?}; expected one of {}, {DB_PARAM}",
                    known.join(", ")
                )));
            }
            if key != "tag" && pairs[..i].iter().any(|(k, _)| k == key) {
                return Err(ApiError::BadRequest(format!(
                    "parameter {key} given more than once"
                )));
            }
        }
        Ok(Self {
            request: request.clone(),
        })
    }

    /// A boolean parameter: absent, `false` or `0` is false; `true`, `1` or empty is true.
    fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.one(name) {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") | Some("") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!(
                "parameter {name}: {other:?} is not true or false"
            ))),
        }
    }

    /// A parameter that must be given, not empty.
    pub(crate) fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.one(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| ApiError::BadRequest(format!("parameter {name} is required")))
    }

    pub(crate) fn one(&self, name: &str) -> Option<&str> {
        self.request.get(name)
    }

    pub(crate) fn selector(&self) -> Result<SeriesSelector, ApiError> {
        let measurement = self.required("measurement")?;
        let mut selector = SeriesSelector {
            measurement: measurement.to_string(),
            field: self.one("field").map(str::to_string),
            ..Default::default()
        };
        for text in self.request.all("tag") {
            let condition = TagCondition::parse(text)
                .map_err(|e| ApiError::BadRequest(format!("parameter tag: {e}")))?;
            selector.add_condition(condition);
        }
        Ok(selector)
    }
}

/// The schema in force in the request's database (`db=`, else the default one): the
/// `--config` file with its defaults, each raw retention as that database's default
/// retention policy leaves it, and under `database` the database and that policy
/// (`null` where it was dropped).
pub async fn schema(InDatabase(engine): InDatabase) -> Result<Json<serde_json::Value>, ApiError> {
    let in_force = engine.schema_in_force().await?;
    let policies = engine.retention_policies().await?;
    let default_policy = policies
        .default_name()
        .and_then(|name| policies.get(name))
        .map(|p| serde_json::json!({"name": p.name, "duration": go_duration(p.duration_ns)}));
    let mut body = serde_json::to_value(&in_force).unwrap_or_default();
    body["database"] = serde_json::json!({
        "name": engine.database_name().as_str(),
        "default_retention_policy": default_policy,
    });
    Ok(Json(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-14T22:13:20Z, the "now" of relative times in these tests.
    const NOW: i64 = 1_700_000_000_000_000_000;

    #[test]
    fn parses_every_parameter() {
        let q = parse_query("measurement=cpu&field=u&tag=host:a&tag=dc:x%3Ay&start=2016-01-01T00:00:00Z&end=10&step=1m&agg=max", NOW)
            .unwrap();
        assert_eq!(
            q.selector.tags,
            vec![("host".into(), "a".into()), ("dc".into(), "x:y".into())]
        );
        assert_eq!(q.start, 1_451_606_400_000_000_000);
        assert_eq!(q.end, 10);
        assert_eq!(q.step, Some(60_000_000_000));
        let q = parse_query("measurement=cpu&tag=host=~h0.*&tag=dc!=x&end=10", NOW).unwrap();
        assert_eq!(q.selector.matchers.len(), 2);
        assert_eq!(q.selector.matchers[0].to_string(), "host=~h0.*");
        assert_eq!(q.selector.matchers[1].to_string(), "dc!=x");
        let q = parse_query("measurement=cpu&start=now-1h&end=now", NOW).unwrap();
        assert_eq!((q.start, q.end), (NOW - 3_600_000_000_000, NOW));
        let q = parse_query("measurement=cpu&start=-30m", NOW).unwrap();
        assert_eq!(q.start, NOW - 1_800_000_000_000);
    }

    #[test]
    fn db_may_repeat_alike_but_not_differ() {
        assert!(parse_query("measurement=cpu&db=a&db=a", NOW).is_ok());
        let e = parse_query("measurement=cpu&db=a&db=b", NOW)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("named twice"), "{e}");
        let e = parse_query("measurement=cpu&start=1&start=2", NOW)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("start given more than once"), "{e}");
    }

    #[test]
    fn errors_name_the_parameter() {
        for (raw, needle) in [
            ("field=u", "measurement"),
            ("measurement=cpu&step=5x", "step"),
            ("measurement=cpu&agg=median", "agg"),
            ("measurement=cpu&start=yesterday", "start"),
            ("measurement=cpu&tag=host", "tag"),
            ("measurement=cpu&tag=host=~(", "tag"),
            ("measurement=cpu&bogus=1", "bogus"),
            ("measurement=cpu&neighbors=maybe", "neighbors"),
            ("measurement=cpu&max_points=lots", "max_points"),
            ("measurement=cpu&step=1m&agg=max&resolution=2", "resolution"),
            ("measurement=cpu&display=rate", "display"),
        ] {
            let err = parse_query(raw, NOW)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{raw}: {err}");
        }
    }
}
