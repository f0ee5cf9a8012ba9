//! The `SHOW` statements of the subset, from the store's name listings and its series
//! index: what Grafana's pickers (measurement, tag key, tag value, field) and the `influx`
//! shell ask.

use crate::{Expr, MeasurementFilter, Source, Statement, TagKeyFilter};
use tickertape_core::SeriesKey;

use super::condition::Condition;
use super::output::{Series, StatementResult};
use super::regexes::compile as regex;
use super::store::{Names, ReadError, Store};
use super::table::Cell;

/// Names one listing may return; past it the statement is refused rather than cut short
/// without a word.
pub(super) const MAX_NAMES: usize = 100_000;

pub async fn run<S: Store>(store: &S, statement: &Statement) -> StatementResult {
    match statement {
        Statement::ShowMeasurements {
            with,
            condition,
            limit,
            offset,
            ..
        } => show_measurements(store, with.as_ref(), condition.as_ref(), *limit, *offset).await,
        Statement::ShowTagKeys {
            from,
            condition,
            limit,
            offset,
            ..
        } => {
            let mut out = Vec::new();
            for m in measurements_or_all(store, from).await? {
                let keys = match condition {
                    None => names_of(store.tag_keys(&m, MAX_NAMES).await)?,
                    Some(c) => {
                        let mut keys: Vec<String> = series_keys(store, &m, Some(c))
                            .await?
                            .into_iter()
                            .flat_map(|k| k.tags.into_iter().map(|(k, _)| k))
                            .collect();
                        keys.sort();
                        keys.dedup();
                        keys
                    }
                };
                let rows = limited(keys, *limit, *offset)
                    .into_iter()
                    .map(|k| vec![Cell::Text(k)]);
                out.push(series(&m, &["tagKey"], rows.collect()));
            }
            Ok(non_empty(out))
        }
        Statement::ShowTagValues {
            from,
            key,
            condition,
            limit,
            offset,
            ..
        } => {
            let mut out = Vec::new();
            for m in measurements_or_all(store, from).await? {
                let pairs = tag_values(store, &m, key, condition.as_ref()).await?;
                let rows = limited(pairs, *limit, *offset)
                    .into_iter()
                    .map(|(k, v)| vec![Cell::Text(k), Cell::Text(v)]);
                out.push(series(&m, &["key", "value"], rows.collect()));
            }
            Ok(non_empty(out))
        }
        Statement::ShowFieldKeys {
            from,
            limit,
            offset,
            ..
        } => {
            let mut out = Vec::new();
            for m in measurements_or_all(store, from).await? {
                let fields = names_of(store.fields(&m, MAX_NAMES).await)?;
                // tickertape keeps every number as a float (integers written with `i` too).
                let rows = limited(fields, *limit, *offset)
                    .into_iter()
                    .map(|f| vec![Cell::Text(f), Cell::Text("float".into())]);
                out.push(series(&m, &["fieldKey", "fieldType"], rows.collect()));
            }
            Ok(non_empty(out))
        }
        Statement::ShowSeries {
            from,
            condition,
            limit,
            offset,
            ..
        } => {
            let mut keys = Vec::new();
            for m in measurements_or_all(store, from).await? {
                for k in series_keys(store, &m, condition.as_ref()).await? {
                    keys.push(series_key_text(&k));
                }
            }
            keys.sort();
            keys.dedup();
            let rows = limited(keys, *limit, *offset)
                .into_iter()
                .map(|k| vec![Cell::Text(k)]);
            Ok(non_empty(vec![series("", &["key"], rows.collect())]))
        }
        other => Err(format!("statement is not supported by tickertape: {other}")),
    }
}

async fn show_measurements<S: Store>(
    store: &S,
    with: Option<&MeasurementFilter>,
    condition: Option<&Expr>,
    limit: Option<u64>,
    offset: Option<u64>,
) -> StatementResult {
    // InfluxDB 1.x refuses it; the other SHOW statements read past time conditions
    // (their listings have no times), as InfluxDB 1.x answers them.
    if condition.is_some_and(super::condition::mentions_time) {
        return Err("SHOW MEASUREMENTS doesn't support time in WHERE clause".into());
    }
    let mut measurements = names_of(store.measurements(MAX_NAMES).await)?;
    match with {
        Some(MeasurementFilter::Name(n)) => measurements.retain(|m| m == n),
        Some(MeasurementFilter::Regex(r)) => {
            let re = regex(r)?;
            measurements.retain(|m| re.is_match(m));
        }
        None => {}
    }
    if let Some(c) = condition {
        let mut kept = Vec::new();
        for m in measurements {
            if !series_keys(store, &m, Some(c)).await?.is_empty() {
                kept.push(m);
            }
        }
        measurements = kept;
    }
    let rows = limited(measurements, limit, offset)
        .into_iter()
        .map(|m| vec![Cell::Text(m)]);
    Ok(non_empty(vec![series(
        "measurements",
        &["name"],
        rows.collect(),
    )]))
}

/// `(key, value)` pairs of the keys `filter` picks, sorted by key then value.
async fn tag_values<S: Store>(
    store: &S,
    measurement: &str,
    filter: &TagKeyFilter,
    condition: Option<&Expr>,
) -> Result<Vec<(String, String)>, String> {
    let picks = |k: &str| -> Result<bool, String> {
        Ok(match filter {
            TagKeyFilter::Eq(key) => k == key,
            TagKeyFilter::NotEq(key) => k != key,
            TagKeyFilter::In(keys) => keys.iter().any(|key| key == k),
            TagKeyFilter::Regex(r) => regex(r)?.is_match(k),
            TagKeyFilter::NotRegex(r) => !regex(r)?.is_match(k),
        })
    };
    let mut pairs = Vec::new();
    if let Some(c) = condition {
        for key in series_keys(store, measurement, Some(c)).await? {
            for (k, v) in key.tags {
                if picks(&k)? {
                    pairs.push((k, v));
                }
            }
        }
    } else {
        for k in names_of(store.tag_keys(measurement, MAX_NAMES).await)? {
            if picks(&k)? {
                for v in names_of(store.tag_values(measurement, &k, MAX_NAMES).await)? {
                    pairs.push((k.clone(), v));
                }
            }
        }
    }
    pairs.sort();
    pairs.dedup();
    Ok(pairs)
}

/// The keys (field left out) of the series of `measurement` passing `condition`'s tag
/// conditions, through the store's series index (and its limit of series per query).
async fn series_keys<S: Store>(
    store: &S,
    measurement: &str,
    condition: Option<&Expr>,
) -> Result<Vec<SeriesKey>, String> {
    let condition = Condition::new(condition, store.now_nanos())?;
    let selector = condition.selector(measurement, None);
    let found = store.series(&selector).await.map_err(|e| e.to_string())?;
    let mut keys: Vec<SeriesKey> = found
        .into_iter()
        .filter(|key| condition.matches(key))
        .map(|key| SeriesKey {
            field: String::new(),
            ..key
        })
        .collect();
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// The measurements `FROM` names (a regex matched against every measurement).
pub async fn measurements_of<S: Store>(store: &S, from: &[Source]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for source in from {
        match source {
            Source::Measurement { name, .. } => out.push(name.clone()),
            Source::Regex(r) => {
                let re = regex(r)?;
                let all = names_of(store.measurements(MAX_NAMES).await)?;
                out.extend(all.into_iter().filter(|m| re.is_match(m)));
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

async fn measurements_or_all<S: Store>(store: &S, from: &[Source]) -> Result<Vec<String>, String> {
    match from.is_empty() {
        true => names_of(store.measurements(MAX_NAMES).await),
        false => measurements_of(store, from).await,
    }
}

pub(super) fn names_of(listing: Result<Names, ReadError>) -> Result<Vec<String>, String> {
    let listing = listing.map_err(|e| e.to_string())?;
    if listing.truncated {
        return Err(format!("more than {MAX_NAMES} names: narrow the statement"));
    }
    Ok(listing.names)
}

fn limited<T>(items: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let skip = offset.unwrap_or(0) as usize;
    let take = limit.map_or(usize::MAX, |n| n as usize);
    items.into_iter().skip(skip).take(take).collect()
}

fn series(name: &str, columns: &[&str], values: Vec<Vec<Cell>>) -> Series {
    Series {
        name: name.to_string(),
        tags: Vec::new(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        values: values.into(),
    }
}

/// Series without rows are left out, as InfluxDB leaves them.
fn non_empty(series: Vec<Series>) -> Vec<Series> {
    series
        .into_iter()
        .filter(|s| !s.values.is_empty())
        .collect()
}

/// `cpu,host=a,region=eu`, escaped as line protocol escapes keys.
fn series_key_text(key: &SeriesKey) -> String {
    let escape = |s: &str| {
        s.replace(',', "\\,")
            .replace(' ', "\\ ")
            .replace('=', "\\=")
    };
    let mut out = key.measurement.replace(',', "\\,").replace(' ', "\\ ");
    for (k, v) in &key.tags {
        out.push_str(&format!(",{}={}", escape(k), escape(v)));
    }
    out
}
