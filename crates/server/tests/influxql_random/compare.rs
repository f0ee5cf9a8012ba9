//! Two answers normalised and compared, a difference named by its class, and a differing
//! statement minimised: parts dropped while the difference stays of the same class.

use serde_json::Value;

use super::statements::Statement;
use crate::influxdb::{agree, each_series, without_error_text};

/// What a store answered: HTTP status and JSON body.
pub type Answer = (u16, Value);

/// The answer as compared: errors without their words; rows of the same time in any order
/// where the order is not InfluxDB's to define (rows of several series merged, a window's
/// `distinct()` values); integer fields' type in `SHOW FIELD KEYS` set aside.
pub fn normalised(statement: &Statement, answer: Answer) -> Answer {
    let (status, mut json) = answer;
    json = without_error_text(json);
    each_series(&mut json, |series| {
        let field_keys = series["columns"] == serde_json::json!(["fieldKey", "fieldType"]);
        for row in series["values"].as_array_mut().into_iter().flatten() {
            if field_keys && row[1] == "integer" {
                row[1] = Value::String("float".into());
            }
        }
    });
    if json.get("error").is_some() {
        json["error"] = Value::Bool(true);
    }
    let json = ties_in_any_order(json);
    (
        status,
        if cuts_ties(statement) {
            without_edges(json)
        } else {
            json
        },
    )
}

/// Whether LIMIT or OFFSET may cut a run of rows of one time from several series, or of
/// a window's distinct values: which of them InfluxDB keeps is its merge order's (or its
/// hash map's) choice.
fn cuts_ties(statement: &Statement) -> bool {
    let paged = statement
        .tail
        .iter()
        .any(|t| t.starts_with("LIMIT") || t.starts_with("OFFSET"));
    // distinct() answers a window's values in InfluxDB's hash map order.
    let raw = statement
        .columns
        .iter()
        .all(|c| !c.contains('(') || c.starts_with("distinct("));
    paged && raw && !statement.group_by.iter().any(|g| g == "*")
}

/// Each series without the rows of its first and last times (where a LIMIT or OFFSET may
/// cut a run of ties), its row count kept.
fn without_edges(mut v: Value) -> Value {
    each_series(&mut v, |series| {
        let Some(rows) = series["values"].as_array_mut() else {
            return;
        };
        let count = rows.len();
        let edges = (
            rows.first().map(|r| r[0].clone()),
            rows.last().map(|r| r[0].clone()),
        );
        rows.retain(|r| Some(&r[0]) != edges.0.as_ref() && Some(&r[0]) != edges.1.as_ref());
        series["rows"] = Value::from(count);
    });
    v
}

/// Each series' rows of the same time sorted by their text, the order of the times kept:
/// rows of several series at one time come in no order InfluxDB defines (its iterators'
/// merge order), nor do a window's `distinct()` values.
fn ties_in_any_order(mut v: Value) -> Value {
    each_series(&mut v, |series| {
        let Some(rows) = series["values"].as_array_mut() else {
            return;
        };
        let mut start = 0;
        while start < rows.len() {
            let time = rows[start][0].clone();
            let end = start + rows[start..].iter().take_while(|r| r[0] == time).count();
            rows[start..end].sort_by_key(|row| row.to_string());
            start = end;
        }
    });
    v
}

/// The class of a difference between InfluxDB's answer and tickertape's (`None`: they
/// agree): the statement's shape and where the answers first part.
pub fn difference(statement: &Statement, influx: &Answer, ours: &Answer) -> Option<String> {
    if influx.0 != ours.0 {
        return Some(format!(
            "{}: status {} != {}",
            statement.shape, influx.0, ours.0
        ));
    }
    let why = agree(&influx.1, &ours.1, "").err()?;
    Some(format!(
        "{}: {}",
        statement.shape,
        kind(&influx.1, &ours.1, &why)
    ))
}

fn kind(influx: &Value, ours: &Value, why: &str) -> String {
    let result = |v: &Value| v["results"][0].clone();
    let (a, b) = (result(influx), result(ours));
    match (a.get("error").is_some(), b.get("error").is_some()) {
        (false, true) => return "refused by tickertape only".into(),
        (true, false) => return "refused by InfluxDB only".into(),
        _ => {}
    }
    let series = |v: &Value| v["series"].as_array().cloned().unwrap_or_default();
    let (xs, ys) = (series(&a), series(&b));
    if xs.len() != ys.len() {
        return format!("series count {} != {}", xs.len(), ys.len());
    }
    for (x, y) in xs.iter().zip(&ys) {
        if x["columns"] != y["columns"] {
            return "column names".into();
        }
        if x.get("tags") != y.get("tags") {
            return "tags".into();
        }
        let rows = |v: &Value| v["values"].as_array().map_or(0, Vec::len);
        if rows(x) != rows(y) {
            return match rows(x) > rows(y) {
                true => "fewer rows".into(),
                false => "more rows".into(),
            };
        }
        if let (Some(rx), Some(ry)) = (x["values"].as_array(), y["values"].as_array()) {
            for (r, s) in rx.iter().zip(ry) {
                if r[0] != s[0] {
                    return "row times".into();
                }
                let nulls = |row: &Value| {
                    row.as_array()
                        .map(|c| c.iter().map(Value::is_null).collect::<Vec<_>>())
                        .unwrap_or_default()
                };
                if nulls(r) != nulls(s) {
                    return "null where a value is (or the reverse)".into();
                }
            }
        }
    }
    let _ = why;
    "values".into()
}

/// The differences tickertape keeps on purpose (docs/influxql.md says why), recognised by
/// the statement and InfluxDB's answer; `None` for any other.
pub fn on_purpose(statement: &Statement, influx: &Answer) -> Option<&'static str> {
    let has = |clause: &str| statement.tail.iter().any(|t| t.starts_with(clause));
    let series = influx.1["results"][0]["series"].as_array();
    let rows = |s: &Value| {
        s["rows"]
            .as_u64()
            .or_else(|| s["values"].as_array().map(|v| v.len() as u64))
    };
    let raw = statement.columns.iter().all(|c| !c.contains('('));
    if has("SOFFSET") && !has("SLIMIT") && series.is_none() {
        return Some("SOFFSET without SLIMIT: InfluxDB 1.6 answers no series");
    }
    if has("OFFSET")
        && !has("LIMIT")
        && raw
        && series.is_some_and(|s| s.iter().all(|s| rows(s) == Some(1)))
    {
        return Some("a raw OFFSET without LIMIT: InfluxDB 1.6 answers one row per series");
    }
    let unmatched = |c: &str| c.contains("!=") || c.contains("= ''");
    let not_equal = statement.conditions.iter().any(|(c, _)| unmatched(c));
    if statement.head.starts_with("SHOW MEASUREMENTS") && not_equal && series.is_none() {
        return Some("SHOW MEASUREMENTS WHERE tag != value or = '': InfluxDB 1.6 answers none");
    }
    None
}

/// `statement` made as small as it goes while `class_of` still answers `class`.
pub async fn minimised<F, Fut>(statement: &Statement, class: &str, class_of: F) -> Statement
where
    F: Fn(Statement) -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let mut current = statement.clone();
    // Each round drops one part: at most as many rounds as there are parts.
    'rounds: loop {
        for smaller in current.smaller() {
            if class_of(smaller.clone()).await.as_deref() == Some(class) {
                current = smaller;
                continue 'rounds;
            }
        }
        return current;
    }
}
