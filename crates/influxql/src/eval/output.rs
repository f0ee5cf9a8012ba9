//! InfluxDB 1.x's answer shapes: `{"results":[{"statement_id":0,"series":[{"name","tags",
//! "columns","values"}]}]}` with a per-statement `error`, or CSV for `Accept:
//! application/csv`; times as RFC 3339 or, with `epoch=`, integers in that unit.

use serde_json::{json, Map, Value};

use super::table::{Cell, Rows};
use tickertape_core::budget::Growth;
use tickertape_core::{Exhausted, QueryBudget};

/// One series of a statement's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// The `GROUP BY` tags; empty: no `tags` member.
    pub tags: Vec<(String, String)>,
    pub columns: Vec<String>,
    pub values: Rows,
}

/// A statement's answer: its series (possibly none), or the error that stopped it.
pub type StatementResult = Result<Vec<Series>, String>;

/// `epoch=`: the unit of integer times; `None`: RFC 3339.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch(Option<i64>);

impl Epoch {
    pub const RFC3339: Epoch = Epoch(None);

    /// `ns`, `u`/`µ`, `ms`, `s`, `m`, `h`, as InfluxDB takes them.
    pub fn parse(text: &str) -> Option<Self> {
        let ns = match text {
            "ns" | "n" => 1,
            "u" | "µ" | "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        Some(Epoch(Some(ns)))
    }

    fn time(self, ns: i64) -> Value {
        match self.0 {
            Some(unit) => json!(ns.div_euclid(unit)),
            None => json!(rfc3339(ns)),
        }
    }
}

/// `2020-08-01T00:00:00Z`, `…:00.5Z`: Go's RFC3339Nano, which InfluxDB answers with.
pub fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000) as u32;
    match chrono::DateTime::from_timestamp(secs, nanos) {
        Some(t) => {
            let whole = t.format("%Y-%m-%dT%H:%M:%S").to_string();
            if nanos == 0 {
                format!("{whole}Z")
            } else {
                let fraction = format!("{nanos:09}");
                format!("{whole}.{}Z", fraction.trim_end_matches('0'))
            }
        }
        None => ns.to_string(),
    }
}

fn cell(c: &Cell, epoch: Epoch) -> Value {
    match c {
        Cell::Time(ns) => epoch.time(*ns),
        Cell::ZonedTime(ns, zone) => match epoch.0 {
            Some(_) => epoch.time(*ns),
            None => json!(zone.rfc3339(*ns)),
        },
        Cell::Float(x) if x.is_finite() => json!(x),
        Cell::Float(_) | Cell::Null => Value::Null,
        Cell::Integer(n) => json!(n),
        Cell::Text(s) => json!(s),
        Cell::Bool(b) => json!(b),
    }
}

pub fn json_results(results: &[StatementResult], epoch: Epoch) -> Value {
    let results: Vec<Value> = results
        .iter()
        .enumerate()
        .map(|(id, result)| match result {
            Err(error) => json!({ "statement_id": id, "error": error }),
            Ok(series) if series.is_empty() => json!({ "statement_id": id }),
            Ok(series) => {
                let series: Vec<Value> = series.iter().map(|s| json_series(s, epoch)).collect();
                json!({ "statement_id": id, "series": series })
            }
        })
        .collect();
    json!({ "results": results })
}

/// The answer's formats: `Accept: application/csv`, `pretty=true`, or compact JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    PrettyJson,
    Csv,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "application/csv",
            _ => "application/json",
        }
    }
}

/// The answer's text in `format`, charged to `budget` as it is written.
pub fn write(
    results: &[StatementResult],
    epoch: Epoch,
    format: Format,
    budget: &QueryBudget,
) -> Result<Vec<u8>, Exhausted> {
    match format {
        Format::Json => json_text(results, epoch, budget),
        Format::PrettyJson => {
            let compact = json_text(results, epoch, budget)?;
            pretty(&compact, budget)
        }
        Format::Csv => csv_results(results, epoch, budget).map(String::into_bytes),
    }
}

/// [`json_results`] as JSON text, written directly: the shape of `json_results` without a
/// `Value` per cell, numbers through serde_json's own writers (`{:?}` of an `f64` took
/// three times as long), into one buffer sized for the rows (at most the byte budget),
/// charged to `budget` as it grows.
pub fn json_text(
    results: &[StatementResult],
    epoch: Epoch,
    budget: &QueryBudget,
) -> Result<Vec<u8>, Exhausted> {
    let cells: usize = results
        .iter()
        .flat_map(|r| r.iter().flatten())
        .map(|s| s.values.len() * s.columns.len())
        .sum();
    let mut out = Vec::with_capacity(64 + cells.saturating_mul(20).min(budget.max_bytes()));
    let mut growth = Growth::from(0, budget);
    out.extend_from_slice(b"{\"results\":[");
    for (id, result) in results.iter().enumerate() {
        if id > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"statement_id\":");
        number(&mut out, id);
        match result {
            Err(error) => {
                out.extend_from_slice(b",\"error\":");
                quoted(&mut out, error);
            }
            Ok(series) if series.is_empty() => {}
            Ok(series) => {
                out.extend_from_slice(b",\"series\":[");
                for (i, s) in series.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    series_text(&mut out, s, epoch, &mut growth)?;
                }
                out.push(b']');
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    growth.finish(out.len())?;
    Ok(out)
}

fn series_text(
    out: &mut Vec<u8>,
    s: &Series,
    epoch: Epoch,
    growth: &mut Growth,
) -> Result<(), Exhausted> {
    out.push(b'{');
    if !s.name.is_empty() {
        out.extend_from_slice(b"\"name\":");
        quoted(out, &s.name);
        out.push(b',');
    }
    if !s.tags.is_empty() {
        out.extend_from_slice(b"\"tags\":{");
        for (j, (k, v)) in s.tags.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            quoted(out, k);
            out.push(b':');
            quoted(out, v);
        }
        out.extend_from_slice(b"},");
    }
    out.extend_from_slice(b"\"columns\":[");
    for (j, c) in s.columns.iter().enumerate() {
        if j > 0 {
            out.push(b',');
        }
        quoted(out, c);
    }
    out.extend_from_slice(b"],\"values\":[");
    for (r, row) in s.values.iter().enumerate() {
        out.extend_from_slice(if r > 0 { b",[" } else { b"[" });
        for (c, value) in row.iter().enumerate() {
            if c > 0 {
                out.push(b',');
            }
            cell_text(out, value, epoch);
        }
        out.push(b']');
        growth.charge(out.len())?;
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// Compact JSON text (charged) indented as serde_json's pretty printer does it; the
/// whitespace charged as it is added.
fn pretty(compact: &[u8], budget: &QueryBudget) -> Result<Vec<u8>, Exhausted> {
    fn newline(out: &mut Vec<u8>, depth: usize) {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    }
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut growth = Growth::from(0, budget);
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut i = 0;
    while let Some(&c) = compact.get(i) {
        i += 1;
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                out.push(c);
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                out.push(c);
                if compact.get(i) == Some(&close) {
                    out.push(close);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
                // The compact text was charged: only what indenting adds counts.
                growth.charge(out.len().saturating_sub(i))?;
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(c),
        }
    }
    growth.finish(out.len().saturating_sub(compact.len()))?;
    Ok(out)
}

/// A JSON string or number, by serde_json (writing to a `Vec` cannot fail).
fn quoted(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
}

fn number<N: serde::Serialize>(out: &mut Vec<u8>, n: N) {
    let _ = serde_json::to_writer(&mut *out, &n);
}

fn cell_text(out: &mut Vec<u8>, c: &Cell, epoch: Epoch) {
    match c {
        Cell::Time(ns) => match epoch.0 {
            Some(unit) => number(out, ns.div_euclid(unit)),
            None => quoted(out, &rfc3339(*ns)),
        },
        Cell::ZonedTime(ns, zone) => match epoch.0 {
            Some(unit) => number(out, ns.div_euclid(unit)),
            None => quoted(out, &zone.rfc3339(*ns)),
        },
        // serde_json writes the shortest text that reads back as the same f64.
        Cell::Float(x) if x.is_finite() => number(out, x),
        Cell::Float(_) | Cell::Null => out.extend_from_slice(b"null"),
        Cell::Integer(n) => number(out, n),
        Cell::Text(s) => quoted(out, s),
        Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
    }
}

fn json_series(s: &Series, epoch: Epoch) -> Value {
    let mut out = Map::new();
    // `SHOW SERIES` answers a series without a name, as InfluxDB does.
    if !s.name.is_empty() {
        out.insert("name".into(), json!(s.name));
    }
    if !s.tags.is_empty() {
        let tags: Map<String, Value> = s.tags.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        out.insert("tags".into(), Value::Object(tags));
    }
    out.insert("columns".into(), json!(s.columns));
    let values: Vec<Value> = s
        .values
        .iter()
        .map(|row| Value::Array(row.iter().map(|c| cell(c, epoch)).collect()))
        .collect();
    out.insert("values".into(), Value::Array(values));
    Value::Object(out)
}

/// InfluxDB's CSV: `name,tags,<columns>` then a line per row; times are integers
/// (nanoseconds unless `epoch=` says otherwise); statements separated by a blank line.
pub fn csv_results(
    results: &[StatementResult],
    epoch: Epoch,
    budget: &QueryBudget,
) -> Result<String, Exhausted> {
    let epoch = match epoch.0 {
        Some(_) => epoch,
        None => Epoch(Some(1)),
    };
    let mut out = String::new();
    let mut growth = Growth::from(0, budget);
    for (i, result) in results.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let series = match result {
            Ok(series) => series,
            Err(error) => {
                out.push_str(&format!("error\n{}\n", csv_field(error)));
                continue;
            }
        };
        let mut header_written = false;
        for s in series {
            if !header_written {
                out.push_str("name,tags");
                for c in &s.columns {
                    out.push(',');
                    out.push_str(&csv_field(c));
                }
                out.push('\n');
                header_written = true;
            }
            let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            for row in s.values.iter() {
                out.push_str(&csv_field(&s.name));
                out.push(',');
                out.push_str(&csv_field(&tags.join(",")));
                for c in row {
                    out.push(',');
                    let text = match cell(c, epoch) {
                        Value::Null => String::new(),
                        Value::String(s) => s,
                        v => v.to_string(),
                    };
                    out.push_str(&csv_field(&text));
                }
                out.push('\n');
                growth.charge(out.len())?;
            }
        }
    }
    growth.finish(out.len())?;
    Ok(out)
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_nano_or_integers_in_the_epoch_unit() {
        assert_eq!(rfc3339(1_596_240_000_000_000_000), "2020-08-01T00:00:00Z");
        assert_eq!(rfc3339(1_596_240_000_500_000_000), "2020-08-01T00:00:00.5Z");
        let ms = Epoch::parse("ms").map(|e| e.time(1_596_240_000_123_456_789));
        assert_eq!(ms, Some(json!(1_596_240_000_123i64)));
        assert_eq!(Epoch::parse("x"), None);
    }

    #[test]
    fn json_and_csv_shapes() {
        let series = Series {
            name: "cpu".into(),
            tags: vec![("host".into(), "a,b".into())],
            columns: vec!["time".into(), "mean".into()],
            values: vec![
                vec![Cell::Time(10), Cell::Float(1.5)],
                vec![Cell::Time(20), Cell::Null],
            ]
            .into(),
        };
        let results = vec![Ok(vec![series]), Err("boom".to_string()), Ok(vec![])];
        let ns = Epoch::parse("ns").unwrap_or(Epoch::RFC3339);
        let budget = QueryBudget::unlimited();
        for epoch in [ns, Epoch::RFC3339] {
            let compact = json_text(&results, epoch, &budget).unwrap_or_default();
            let text: Value = serde_json::from_slice(&compact).unwrap_or_default();
            assert_eq!(text, json_results(&results, epoch));
            // pretty=true: the same answer, indented as serde_json's pretty printer does
            // (in InfluxDB's order of keys, which a `Value` would sort).
            let pretty = write(&results, epoch, Format::PrettyJson, &budget).unwrap_or_default();
            let text: Value = serde_json::from_slice(&pretty).unwrap_or_default();
            assert_eq!(text, json_results(&results, epoch));
            let text = String::from_utf8_lossy(&pretty);
            assert!(
                text.starts_with("{\n  \"results\": [\n    {\n      \"statement_id\": 0,\n"),
                "{text}"
            );
            assert!(
                text.contains("\"values\": [\n            [\n              "),
                "{text}"
            );
            assert!(text.ends_with("\n  ]\n}"), "{text}");
        }
        assert_eq!(
            json_results(&results, ns),
            json!({"results": [
                {"statement_id": 0, "series": [{"name": "cpu", "tags": {"host": "a,b"},
                  "columns": ["time", "mean"], "values": [[10, 1.5], [20, null]]}]},
                {"statement_id": 1, "error": "boom"},
                {"statement_id": 2}
            ]})
        );
        assert_eq!(
            csv_results(&results, Epoch::RFC3339, &budget).unwrap_or_default(),
            "name,tags,time,mean\ncpu,\"host=a,b\",10,1.5\ncpu,\"host=a,b\",20,\n\nerror\nboom\n\n"
        );
        // Every byte was charged, once per format written.
        let compact = json_text(&results, ns, &budget).unwrap_or_default().len();
        let before = budget.bytes();
        let _ = write(&results, ns, Format::PrettyJson, &budget);
        let pretty = write(&results, ns, Format::PrettyJson, &QueryBudget::unlimited());
        let pretty = pretty.unwrap_or_default().len();
        assert_eq!(budget.bytes() - before, compact + (pretty - compact));
    }

    /// An answer past the byte budget stops as it is written, in every format.
    #[test]
    fn answers_stop_at_the_byte_budget() {
        let values = (0..100_000)
            .map(|t| vec![Cell::Time(t), Cell::Float(t as f64 / 3.0)])
            .collect();
        let series = Series {
            name: "cpu".into(),
            tags: Vec::new(),
            columns: vec!["time".into(), "mean".into()],
            values,
        };
        let results = vec![Ok(vec![series])];
        for format in [Format::Json, Format::PrettyJson, Format::Csv] {
            let budget = QueryBudget::new(usize::MAX, 100_000);
            assert_eq!(
                write(&results, Epoch::RFC3339, format, &budget),
                Err(Exhausted::Bytes { limit: 100_000 }),
                "{format:?}"
            );
        }
    }
}
