//! A `WHERE` clause taken apart: the time range (`time >= …` in every form Grafana and
//! users write), the tag conditions (checked against each series' key, and the plain
//! ones pushed down into the store's selector so the series index narrows the read), and
//! field conditions (checked on each point).

use crate::{BinaryOp, Expr, VarKind};
use regex::Regex;
use tickertape_core::matcher::{MatchOp, TagMatcher};
use tickertape_core::{SeriesKey, SeriesSelector};

/// `[start, end)`, nanoseconds; `i64::MIN`/`i64::MAX` when not bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub start: i64,
    pub end: i64,
}

/// A tag or field condition, with its regexes compiled once.
#[derive(Clone, Debug)]
pub enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    /// `key = 'v'` (`negate`: `!=`); a missing tag is `""`, as in InfluxDB.
    TagEq {
        key: String,
        value: String,
        negate: bool,
    },
    /// `key =~ /re/` (`negate`: `!~`); unanchored, as in InfluxDB.
    TagRegex {
        key: String,
        regex: Regex,
        negate: bool,
    },
    /// `field <op> number`.
    Field {
        name: String,
        op: BinaryOp,
        value: f64,
    },
}

/// What a `WHERE` clause says.
#[derive(Clone, Debug)]
pub struct Condition {
    pub range: TimeRange,
    pub tags: Option<Filter>,
    pub field: Option<Filter>,
}

impl Condition {
    /// `now` (ns) is what `now()` means.
    pub fn new(expr: Option<&Expr>, now: i64) -> Result<Self, String> {
        let mut out = Condition {
            range: TimeRange {
                start: i64::MIN,
                end: i64::MAX,
            },
            tags: None,
            field: None,
        };
        let mut conjuncts = Vec::new();
        if let Some(e) = expr {
            split_and(e, &mut conjuncts);
        }
        for c in conjuncts {
            if mentions_time(c) {
                out.time_bound(c, now)?;
            } else if is_field_condition(c) {
                out.field = Some(and(out.field.take(), filter(c)?));
            } else {
                out.tags = Some(and(out.tags.take(), filter(c)?));
            }
        }
        Ok(out)
    }

    fn time_bound(&mut self, e: &Expr, now: i64) -> Result<(), String> {
        let Expr::Binary { op, lhs, rhs } = e else {
            return Err(format!("unsupported time condition: {e}"));
        };
        let (op, value) = match (is_time(lhs), is_time(rhs)) {
            (true, false) => (*op, time_value(rhs, now)?),
            (false, true) => (flip(*op), time_value(lhs, now)?),
            _ => return Err(format!("unsupported time condition: {e}")),
        };
        let r = &mut self.range;
        match op {
            BinaryOp::GtEq => r.start = r.start.max(value),
            BinaryOp::Gt => r.start = r.start.max(value.saturating_add(1)),
            BinaryOp::LtEq => r.end = r.end.min(value.saturating_add(1)),
            BinaryOp::Lt => r.end = r.end.min(value),
            BinaryOp::Eq => {
                r.start = r.start.max(value);
                r.end = r.end.min(value.saturating_add(1));
            }
            _ => return Err(format!("unsupported time condition: {e}")),
        }
        Ok(())
    }

    /// The measurement's selector with the conjunctive tag conditions pushed down.
    pub fn selector(&self, measurement: &str, field: Option<&str>) -> SeriesSelector {
        let mut selector = SeriesSelector {
            measurement: measurement.to_string(),
            field: field.map(str::to_string),
            tags: Vec::new(),
            matchers: Vec::new(),
        };
        let mut pushed = Vec::new();
        if let Some(tags) = &self.tags {
            conjunct_filters(tags, &mut pushed);
        }
        for f in pushed {
            match f {
                Filter::TagEq {
                    key,
                    value,
                    negate: false,
                } if !value.is_empty() => selector.tags.push((key.clone(), value.clone())),
                Filter::TagRegex { key, regex, negate } => {
                    // A selector's patterns are anchored; InfluxDB's are not.
                    let op = if *negate {
                        MatchOp::NotRegex
                    } else {
                        MatchOp::Regex
                    };
                    let pattern = format!("(?s:.*(?:{}).*)", regex.as_str());
                    if let Ok(m) = TagMatcher::new(key.clone(), op, pattern) {
                        selector.matchers.push(m);
                    }
                }
                _ => {}
            }
        }
        selector
    }

    /// Whether a series passes the tag conditions.
    pub fn matches(&self, key: &SeriesKey) -> bool {
        self.tags.as_ref().is_none_or(|f| f.matches_tags(key))
    }
}

impl Filter {
    pub fn matches_tags(&self, key: &SeriesKey) -> bool {
        match self {
            Filter::And(a, b) => a.matches_tags(key) && b.matches_tags(key),
            Filter::Or(a, b) => a.matches_tags(key) || b.matches_tags(key),
            Filter::TagEq {
                key: k,
                value,
                negate,
            } => (key.tag(k).unwrap_or("") == value) != *negate,
            Filter::TagRegex {
                key: k,
                regex,
                negate,
            } => regex.is_match(key.tag(k).unwrap_or("")) != *negate,
            Filter::Field { .. } => true,
        }
    }

    /// Whether a row passes the field conditions, `value_of` giving the row's value of
    /// a field (`None`: the row has none, and a comparison with it is false, as in
    /// InfluxDB).
    pub fn matches_row(&self, value_of: &dyn Fn(&str) -> Option<f64>) -> bool {
        match self {
            Filter::And(a, b) => a.matches_row(value_of) && b.matches_row(value_of),
            Filter::Or(a, b) => a.matches_row(value_of) || b.matches_row(value_of),
            Filter::Field { name, .. } => value_of(name).is_some_and(|v| self.matches_value(v)),
            _ => true,
        }
    }

    /// The fields the conditions name.
    pub fn field_names(&self, out: &mut Vec<String>) {
        match self {
            Filter::And(a, b) | Filter::Or(a, b) => {
                a.field_names(out);
                b.field_names(out);
            }
            Filter::Field { name, .. } if !out.contains(name) => out.push(name.clone()),
            _ => {}
        }
    }

    pub fn matches_value(&self, v: f64) -> bool {
        match self {
            Filter::And(a, b) => a.matches_value(v) && b.matches_value(v),
            Filter::Or(a, b) => a.matches_value(v) || b.matches_value(v),
            Filter::Field { op, value, .. } => match op {
                BinaryOp::Eq => v == *value,
                BinaryOp::NotEq => v != *value,
                BinaryOp::Lt => v < *value,
                BinaryOp::LtEq => v <= *value,
                BinaryOp::Gt => v > *value,
                BinaryOp::GtEq => v >= *value,
                _ => false,
            },
            _ => true,
        }
    }
}

fn and(kept: Option<Filter>, new: Filter) -> Filter {
    match kept {
        Some(k) => Filter::And(Box::new(k), Box::new(new)),
        None => new,
    }
}

fn conjunct_filters<'a>(f: &'a Filter, out: &mut Vec<&'a Filter>) {
    match f {
        Filter::And(a, b) => {
            conjunct_filters(a, out);
            conjunct_filters(b, out);
        }
        other => out.push(other),
    }
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => {
            split_and(lhs, out);
            split_and(rhs, out);
        }
        other => out.push(other),
    }
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Var { name, .. } if name.eq_ignore_ascii_case("time"))
}

/// Whether a condition names `time` anywhere.
pub fn mentions_time(e: &Expr) -> bool {
    match e {
        Expr::Binary { lhs, rhs, .. } => mentions_time(lhs) || mentions_time(rhs),
        e => is_time(e),
    }
}

/// A comparison of a name with a number (or a name marked `::field`).
fn is_field_condition(e: &Expr) -> bool {
    match e {
        Expr::Binary {
            op: BinaryOp::And | BinaryOp::Or,
            lhs,
            rhs,
        } => is_field_condition(lhs) && is_field_condition(rhs),
        Expr::Binary { lhs, rhs, .. } => {
            let number = |e: &Expr| matches!(e, Expr::Integer(_) | Expr::Number(_));
            let field = |e: &Expr| {
                matches!(
                    e,
                    Expr::Var {
                        kind: Some(VarKind::Field),
                        ..
                    }
                )
            };
            number(rhs) || number(lhs) || field(lhs) || field(rhs)
        }
        _ => false,
    }
}

fn filter(e: &Expr) -> Result<Filter, String> {
    let Expr::Binary { op, lhs, rhs } = e else {
        return Err(format!("unsupported condition: {e}"));
    };
    match op {
        BinaryOp::And => return Ok(Filter::And(Box::new(filter(lhs)?), Box::new(filter(rhs)?))),
        BinaryOp::Or => return Ok(Filter::Or(Box::new(filter(lhs)?), Box::new(filter(rhs)?))),
        _ => {}
    }
    let name = match &**lhs {
        Expr::Var { name, .. } => name.clone(),
        _ => return Err(format!("unsupported condition: {e}")),
    };
    match (op, &**rhs) {
        (BinaryOp::Eq | BinaryOp::NotEq, Expr::String(v)) => Ok(Filter::TagEq {
            key: name,
            value: v.clone(),
            negate: *op == BinaryOp::NotEq,
        }),
        (BinaryOp::RegexMatch | BinaryOp::RegexNotMatch, Expr::Regex(r)) => Ok(Filter::TagRegex {
            key: name,
            regex: super::regexes::compile(r)?,
            negate: *op == BinaryOp::RegexNotMatch,
        }),
        (_, Expr::Integer(n)) => Ok(Filter::Field {
            name,
            op: *op,
            value: *n as f64,
        }),
        (_, Expr::Number(x)) => Ok(Filter::Field {
            name,
            op: *op,
            value: *x,
        }),
        _ => Err(format!("unsupported condition: {e}")),
    }
}

/// `a op time` read as `time op' a`.
fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        op => op,
    }
}

/// A time literal in ns: `1596240000000ms`, a bare integer (ns), an RFC 3339 string,
/// `now()`, and sums and differences of those with durations.
pub fn time_value(e: &Expr, now: i64) -> Result<i64, String> {
    match e {
        Expr::Duration(ns) | Expr::Integer(ns) => Ok(*ns),
        Expr::Number(x) => Ok(*x as i64),
        Expr::String(s) => parse_time(s),
        Expr::Call { name, args } if name == "now" && args.is_empty() => Ok(now),
        Expr::Binary {
            op: BinaryOp::Add,
            lhs,
            rhs,
        } => Ok(time_value(lhs, now)?.saturating_add(time_value(rhs, now)?)),
        Expr::Binary {
            op: BinaryOp::Sub,
            lhs,
            rhs,
        } => Ok(time_value(lhs, now)?.saturating_sub(time_value(rhs, now)?)),
        e => Err(format!("invalid time value: {e}")),
    }
}

/// RFC 3339 (`2020-08-01T00:00:00Z`), or InfluxDB's `2020-08-01 00:00:00` and
/// `2020-08-01` (UTC).
fn parse_time(s: &str) -> Result<i64, String> {
    let parsed = chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .map_err(|_| format!("invalid time '{s}': expected RFC 3339"))?;
    parsed
        .timestamp_nanos_opt()
        .ok_or_else(|| format!("time '{s}' is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(text: &str) -> Condition {
        let q = format!("SELECT v FROM m WHERE {text}");
        let Ok(crate::Statement::Select(s)) = crate::parse_statement(&q) else {
            panic!("{q}")
        };
        Condition::new(s.condition.as_ref(), 1_000_000_000_000).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn time_bounds_in_every_form() {
        let c = condition("time >= 1596240000000ms and time <= 1596243600000ms");
        assert_eq!(c.range.start, 1_596_240_000_000_000_000);
        assert_eq!(c.range.end, 1_596_243_600_000_000_001);
        let c = condition("time > now() - 6h");
        assert_eq!(c.range.start, 1_000_000_000_000 - 6 * 3_600_000_000_000 + 1);
        let c = condition("time >= '2020-08-01T00:00:00Z' AND time < '2020-08-01 01:00:00'");
        assert_eq!(c.range.start, 1_596_240_000_000_000_000);
        assert_eq!(c.range.end, 1_596_243_600_000_000_000);
        let c = condition("1596240000s <= time");
        assert_eq!(c.range.start, 1_596_240_000_000_000_000);
    }

    #[test]
    fn tag_conditions_filter_keys_and_push_down_what_they_can() {
        let c = condition(r#"("host" =~ /^a$/ OR host = 'b') AND region = 'eu' AND v > 1"#);
        let key = |host: &str| {
            SeriesKey::new(
                "m",
                vec![("host".into(), host.into()), ("region".into(), "eu".into())],
                "v",
            )
        };
        assert!(c.matches(&key("a")) && c.matches(&key("b")) && !c.matches(&key("c")));
        let selector = c.selector("m", Some("v"));
        assert_eq!(selector.tags, [("region".to_string(), "eu".to_string())]);
        assert!(c
            .field
            .as_ref()
            .is_some_and(|f| f.matches_value(2.0) && !f.matches_value(1.0)));
        // Unanchored, as InfluxDB's regexes are.
        let c = condition("host =~ /erv/");
        assert!(c.matches(&SeriesKey::new(
            "m",
            vec![("host".into(), "server1".into())],
            "v"
        )));
        assert!(c.selector("m", None).matches_tags(&SeriesKey::new(
            "m",
            vec![("host".into(), "server1".into())],
            "v"
        )));
    }

    #[test]
    fn field_conditions_filter_rows() {
        let c = condition(r#"region = 'eu' AND ("b" < 30 OR "c" >= 2)"#);
        let filter = c
            .field
            .as_ref()
            .unwrap_or_else(|| panic!("a field condition"));
        let mut names = Vec::new();
        filter.field_names(&mut names);
        assert_eq!(names, ["b", "c"]);
        let row = |b: Option<f64>, c: Option<f64>| {
            filter.matches_row(&|f: &str| match f {
                "b" => b,
                "c" => c,
                _ => None,
            })
        };
        assert!(row(Some(10.0), None));
        assert!(row(Some(40.0), Some(2.0)));
        // A field the row lacks compares false, as in InfluxDB.
        assert!(!row(None, None));
        assert!(!row(Some(40.0), None));
    }
}
