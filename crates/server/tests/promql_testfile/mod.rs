//! A reader for Prometheus' PromQL test files (`promql/testdata/*.test`, version 2.42),
//! written from the format's description so that tickertape's harness can replay them.
//!
//! The format, line by line (comments start with `#`; a blank line ends a block):
//! - `load <interval>` then one series per line: `metric{l="v"} <values>`, where the values
//!   expand as Prometheus' series notation does — `a+bxN` and `a-bxN` give N+1 values
//!   (each the previous plus b, accumulated as Prometheus accumulates them), `axN` repeats
//!   a N+1 times, `_` is a missing sample, `_xN` N missing samples, `stale` a stale marker;
//!   value i falls at i·interval since the Unix epoch.
//! - `clear` empties the store.
//! - `eval[_ordered|_fail] instant at <duration> <expr>` then the expected result: one
//!   number (a scalar), or series lines `metric{l="v"} value` (an empty block is an empty
//!   vector).
//!
//! Native-histogram samples (`{{…}}`) do not occur in 2.42's files; one is read as a
//! missing sample, since tickertape stores floats only.

use std::collections::BTreeMap;

/// A series' labels, `__name__` included, in the byte order Prometheus sorts them in.
pub type Labels = BTreeMap<String, String>;

/// The bit pattern of Prometheus' stale marker.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Load(Vec<LoadedSeries>),
    Clear,
    Eval(EvalCase),
}

/// One series of a `load` block: its samples as (milliseconds since the epoch, value).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSeries {
    pub labels: Labels,
    pub samples: Vec<(i64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalKind {
    Instant,
    /// The result's order must be the expected lines' order.
    Ordered,
    /// The query must fail.
    Fail,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EvalCase {
    /// 1-based line of the `eval` command in its file.
    pub line: usize,
    pub kind: EvalKind,
    /// Evaluation time, milliseconds since the epoch.
    pub at_ms: i64,
    pub expr: String,
    pub expected: Expected,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    Scalar(f64),
    /// The series in the order of their lines.
    Vector(Vec<(Labels, f64)>),
}

/// The file's commands, or the first line it cannot read (1-based) with the reason.
pub fn parse_file(text: &str) -> Result<Vec<Command>, String> {
    let lines: Vec<&str> = text.lines().map(strip_comment).collect();
    let mut commands = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let word = line.split_whitespace().next().unwrap_or("");
        // A command's body runs to the next blank line.
        let end = block_end(&lines, i + 1);
        let body = &lines[i + 1..end];
        match word.to_ascii_lowercase().as_str() {
            "" => {}
            "clear" => commands.push(Command::Clear),
            "load" => commands.push(Command::Load(parse_load(line, body, i + 2)?)),
            w if w.starts_with("eval") => {
                commands.push(Command::Eval(parse_eval(line, body, i + 1)?))
            }
            _ => return Err(format!("line {}: unknown command {line:?}", i + 1)),
        }
        i = if matches!(word, "" | "clear") {
            i + 1
        } else {
            end
        };
    }
    Ok(commands)
}

/// Prometheus trims every line and blanks those that start with `#`.
fn strip_comment(line: &str) -> &str {
    let line = line.trim();
    if line.starts_with('#') {
        ""
    } else {
        line
    }
}

/// The index of the first blank line at or after `from` (or the end).
fn block_end(lines: &[&str], from: usize) -> usize {
    (from..lines.len())
        .find(|&j| lines[j].is_empty())
        .unwrap_or(lines.len())
}

/// `load <interval>` and its series lines; `first_line` is the 1-based number of `body[0]`.
fn parse_load(head: &str, body: &[&str], first_line: usize) -> Result<Vec<LoadedSeries>, String> {
    let interval = head.split_whitespace().nth(1).unwrap_or("");
    let interval_ms = parse_duration_ms(interval)
        .map_err(|e| format!("line {}: load interval: {e}", first_line - 1))?;
    let mut series = Vec::new();
    for (k, line) in body.iter().enumerate() {
        let (labels, rest) =
            parse_metric(line).map_err(|e| format!("line {}: {e}", first_line + k))?;
        let values = parse_values(rest).map_err(|e| format!("line {}: {e}", first_line + k))?;
        let samples = values
            .iter()
            .enumerate()
            .filter_map(|(n, v)| v.map(|v| (n as i64 * interval_ms, v)))
            .collect();
        series.push(LoadedSeries { labels, samples });
    }
    Ok(series)
}

/// `eval[_ordered|_fail] instant at <duration> <expr>` and its expected result.
fn parse_eval(head: &str, body: &[&str], line: usize) -> Result<EvalCase, String> {
    let err = |e: String| format!("line {line}: {e}");
    let mut words = head.splitn(2, char::is_whitespace);
    let kind = match words.next().unwrap_or("") {
        "eval" => EvalKind::Instant,
        "eval_ordered" => EvalKind::Ordered,
        "eval_fail" => EvalKind::Fail,
        other => return Err(err(format!("unknown eval command {other:?}"))),
    };
    let rest = words.next().unwrap_or("").trim_start();
    let rest = rest
        .strip_prefix("instant")
        .ok_or_else(|| err("only `eval instant` is known".into()))?
        .trim_start();
    let rest = rest
        .strip_prefix("at")
        .ok_or_else(|| err("no `at <duration>`".into()))?
        .trim_start();
    let (at, expr) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| err("no expression".into()))?;
    let at_ms = parse_duration_ms(at).map_err(err)?;
    let expected = parse_expected(body).map_err(err)?;
    Ok(EvalCase {
        line,
        kind,
        at_ms,
        expr: expr.trim().to_string(),
        expected,
    })
}

/// A lone number is a scalar (and ends the block, as in Prometheus); otherwise series lines
/// with one value each.
fn parse_expected(body: &[&str]) -> Result<Expected, String> {
    if let Some(first) = body.first() {
        if let Some(v) = parse_plain_number(first) {
            if body.len() > 1 {
                return Err(format!("lines after the scalar {first:?}"));
            }
            return Ok(Expected::Scalar(v));
        }
    }
    let mut series = Vec::new();
    for line in body {
        let (labels, rest) = parse_metric(line)?;
        let values = parse_values(rest)?;
        match values.as_slice() {
            [Some(v)] => series.push((labels, *v)),
            _ => return Err(format!("expected one value in {line:?}")),
        }
    }
    Ok(Expected::Vector(series))
}

/// A number as Go's `ParseInt(s, 0, 64)` then `ParseFloat` read it (hexadecimal, `Inf`,
/// `NaN`, signs); `None` for anything else.
fn parse_plain_number(s: &str) -> Option<f64> {
    let (sign, digits) = match s.strip_prefix('-') {
        Some(d) => (-1.0, d),
        None => (1.0, s.strip_prefix('+').unwrap_or(s)),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16).ok().map(|n| sign * n as f64);
    }
    s.parse::<f64>().ok()
}

/// A duration in Prometheus' notation (`5m`, `1h30m`, `100ms`, `2d`), in milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = 0i64;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| format!("bad duration {s:?}"))?;
        rest = &rest[digits..];
        // `ms` before `m`, so that `100ms` is not read as 100 minutes and an `s`.
        let (unit_ms, len) = [
            ("ms", 1),
            ("s", 1_000),
            ("m", 60_000),
            ("h", 3_600_000),
            ("d", 86_400_000),
            ("w", 604_800_000),
            ("y", 31_536_000_000),
        ]
        .iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, ms)| (*ms, u.len()))
        .ok_or_else(|| format!("bad duration unit in {s:?}"))?;
        total += n * unit_ms;
        rest = &rest[len..];
    }
    Ok(total)
}

/// `name{l="v",…}`, `name` or `{l="v",…}` at the start of `line`; the labels (the name as
/// `__name__`) and what follows.
fn parse_metric(line: &str) -> Result<(Labels, &str), String> {
    let mut labels = Labels::new();
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    if name_end > 0 {
        labels.insert("__name__".into(), line[..name_end].to_string());
    }
    let rest = &line[name_end..];
    let Some(mut rest) = rest.strip_prefix('{') else {
        if name_end == 0 {
            return Err(format!("no metric in {line:?}"));
        }
        return Ok((labels, rest));
    };
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let key_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| format!("unterminated labels in {line:?}"))?;
        let key = &rest[..key_end];
        let after_eq = rest[key_end..]
            .trim_start()
            .strip_prefix('=')
            .ok_or_else(|| format!("no `=` after label {key:?} in {line:?}"))?;
        let (value, after) = parse_quoted(after_eq.trim_start())?;
        labels.insert(key.to_string(), value);
        rest = after.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// A string in double, single or back quotes, with Go's escapes inside the first two.
fn parse_quoted(s: &str) -> Result<(String, &str), String> {
    let quote = s
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\'' | '`'))
        .ok_or_else(|| format!("expected a quoted label value at {s:?}"))?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            return Ok((out, &s[1 + i + 1..]));
        }
        if c != '\\' || quote == '`' {
            out.push(c);
            continue;
        }
        let (_, e) = chars.next().ok_or("unterminated escape")?;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..n)
                    .filter_map(|_| chars.next().map(|(_, c)| c))
                    .collect();
                let code = u32::from_str_radix(&hex, 16).map_err(|_| "bad escape")?;
                out.push(char::from_u32(code).ok_or("bad escape")?);
            }
            other => out.push(other),
        }
    }
    Err(format!("unterminated string {s:?}"))
}

/// The series notation after the metric; `None` for a missing sample.
pub fn parse_values(s: &str) -> Result<Vec<Option<f64>>, String> {
    let mut values = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with("{{") {
            let end = rest.find("}}").ok_or("unterminated histogram sample")?;
            ("_", &rest[end + 2..])
        } else {
            rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len()))
        };
        expand_item(item, &mut values)?;
        rest = after.trim_start();
    }
    Ok(values)
}

/// One item of the notation: `_`, `_xN`, `v`, `vxN`, `a+bxN`, `a-bxN`.
fn expand_item(item: &str, out: &mut Vec<Option<f64>>) -> Result<(), String> {
    let bad = || format!("bad series value {item:?}");
    let (head, times) = match item.rfind('x') {
        Some(i) if i > 0 && item[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            let n: usize = item[i + 1..].parse().map_err(|_| bad())?;
            (&item[..i], Some(n))
        }
        _ => (item, None),
    };
    if head == "_" {
        // `_xN` is N missing samples, unlike `vxN`'s N+1 values.
        out.extend(std::iter::repeat_n(None, times.unwrap_or(1)));
        return Ok(());
    }
    let (start, step) = split_start_step(head).ok_or_else(bad)?;
    let Some(n) = times else {
        if step.is_some() {
            return Err(bad());
        }
        out.push(Some(start));
        return Ok(());
    };
    let mut v = start;
    for _ in 0..=n {
        out.push(Some(v));
        // Accumulated as Prometheus does (`$1 += $2`), not start + k·step: the rounding of
        // `0+0.1x10` must be the same in both.
        v += step.unwrap_or(0.0);
    }
    Ok(())
}

/// `a`, `a+b` or `a-b` (a may be signed, `stale`, `Inf` or `NaN`).
fn split_start_step(head: &str) -> Option<(f64, Option<f64>)> {
    // The sign of the step is the first `+`/`-` after the start's own sign and not part of
    // an exponent (`1e-3`).
    let bytes = head.as_bytes();
    let split = (1..bytes.len())
        .find(|&i| matches!(bytes[i], b'+' | b'-') && !matches!(bytes[i - 1], b'e' | b'E'));
    match split {
        None => Some((series_value(head)?, None)),
        Some(i) => {
            let step: f64 = series_value(&head[i..])?;
            Some((series_value(&head[..i])?, Some(step)))
        }
    }
}

/// One number of the notation, or `stale`.
fn series_value(s: &str) -> Option<f64> {
    if s == "stale" {
        return Some(f64::from_bits(STALE_NAN_BITS));
    }
    s.parse::<f64>().ok()
}

pub mod compare;

#[cfg(test)]
mod tests;
