//! `GET /api/v1/query` and `GET /api/v1/series` (DESIGN §5).

use crate::error::ApiError;
use crate::AppState;
use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;
use std::collections::BTreeMap;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::time::{parse_duration, parse_timestamp};
use tickertape_core::{SeriesKey, SeriesSelector};
use tickertape_engine::Query;

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

pub async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<SeriesList>, ApiError> {
    let query = parse_query(raw.as_deref().unwrap_or(""))?;
    let answer = state.engine.query(&query).await?;
    Ok(Json(SeriesList {
        series: answer
            .into_iter()
            .map(|s| {
                SeriesBody::new(
                    s.key,
                    Some(s.points.iter().map(|p| (p.time, p.value)).collect()),
                )
            })
            .collect(),
    }))
}

pub async fn series(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<SeriesList>, ApiError> {
    let params = Params::parse(
        raw.as_deref().unwrap_or(""),
        &["measurement", "field", "tag"],
    )?;
    let selector = params.selector()?;
    let found = state.engine.list_series(&selector).await?;
    Ok(Json(SeriesList {
        series: found
            .into_iter()
            .map(|s| SeriesBody::new(s.key, None))
            .collect(),
    }))
}

/// Parses the parameters of `/api/v1/query`; `start`/`end` default to the whole series.
pub fn parse_query(raw: &str) -> Result<Query, ApiError> {
    let params = Params::parse(
        raw,
        &[
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
        ],
    )?;
    let bad = |name: &str, e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("parameter {name}: {e}"))
    };
    let time = |name: &str, default: i64| -> Result<i64, ApiError> {
        params.one(name).map_or(Ok(default), |v| {
            parse_timestamp(v).map_err(|e| bad(name, &e))
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
        neighbors: match params.one("neighbors") {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") | Some("") => true,
            Some(other) => {
                return Err(bad("neighbors", &format!("{other:?} is not true or false")))
            }
        },
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
    })
}

/// Query-string parameters; `tag` may repeat, the others may not.
struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    fn parse(raw: &str, known: &[&str]) -> Result<Self, ApiError> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.as_bytes())
            .into_owned()
            .collect();
        for (i, (key, _)) in pairs.iter().enumerate() {
            if !known.contains(&key.as_str()) {
                return Err(ApiError::BadRequest(format!(
                    "unknown parameter {key:?}; expected one of {}",
                    known.join(", ")
                )));
            }
            if key != "tag" && pairs[..i].iter().any(|(k, _)| k == key) {
                return Err(ApiError::BadRequest(format!(
                    "parameter {key} given more than once"
                )));
            }
        }
        Ok(Self { pairs })
    }

    fn one(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn selector(&self) -> Result<SeriesSelector, ApiError> {
        let measurement = self
            .one("measurement")
            .filter(|m| !m.is_empty())
            .ok_or_else(|| ApiError::BadRequest("parameter measurement is required".into()))?;
        let tags = self
            .pairs
            .iter()
            .filter(|(k, _)| k == "tag")
            .map(|(_, v)| {
                v.split_once(':')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!("parameter tag: {v:?} is not KEY:VALUE"))
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(SeriesSelector {
            measurement: measurement.to_string(),
            field: self.one("field").map(str::to_string),
            tags,
        })
    }
}

/// The per-measurement schema in force (the `--config` file, with defaults).
pub async fn schema(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(serde_json::to_value(state.engine.schema()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_parameter() {
        let q = parse_query("measurement=cpu&field=u&tag=host:a&tag=dc:x%3Ay&start=2016-01-01T00:00:00Z&end=10&step=1m&agg=max")
            .unwrap();
        assert_eq!(
            q.selector.tags,
            vec![("host".into(), "a".into()), ("dc".into(), "x:y".into())]
        );
        assert_eq!(q.start, 1_451_606_400_000_000_000);
        assert_eq!(q.end, 10);
        assert_eq!(q.step, Some(60_000_000_000));
    }

    #[test]
    fn errors_name_the_parameter() {
        for (raw, needle) in [
            ("field=u", "measurement"),
            ("measurement=cpu&step=5x", "step"),
            ("measurement=cpu&agg=median", "agg"),
            ("measurement=cpu&start=yesterday", "start"),
            ("measurement=cpu&tag=host", "tag"),
            ("measurement=cpu&bogus=1", "bogus"),
            ("measurement=cpu&neighbors=maybe", "neighbors"),
            ("measurement=cpu&max_points=lots", "max_points"),
            ("measurement=cpu&step=1m&agg=max&resolution=2", "resolution"),
        ] {
            let err = parse_query(raw)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{raw}: {err}");
        }
    }
}
