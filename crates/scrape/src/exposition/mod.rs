//! The exposition formats a target answers in: Prometheus' text format 0.0.4 and
//! OpenMetrics 1.0 text. Every sample line is one sample, whatever its family's type
//! (a histogram's `_bucket`/`_sum`/`_count`, a summary's quantiles, an OpenMetrics
//! counter's `_total` and `_created`), as Prometheus 2.x stores them.
//!
//! Fed by the network: no input panics, and an error names its line. One bad line fails
//! the whole body, as it fails the whole scrape in Prometheus.

mod line;

use std::borrow::Cow;

#[cfg(test)]
mod tests;

/// The `Accept` header Prometheus 2.x sends: OpenMetrics first, the text format after.
pub const ACCEPT_HEADER: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Text format 0.0.4: timestamps in milliseconds, `# EOF` not needed.
    Text,
    /// OpenMetrics 1.0: timestamps in seconds, `# EOF` at the end, exemplars.
    OpenMetrics,
}

impl Format {
    /// The format of a body from its `Content-Type`: OpenMetrics when it says so, the
    /// text format otherwise (as Prometheus falls back to it).
    pub fn of_content_type(content_type: &str) -> Format {
        let media = content_type.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case("application/openmetrics-text") {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

/// One sample of a body, borrowed from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample<'a> {
    /// The line's series as written: the name and the label set, braces included. The
    /// same text is the same series, so a scraper can remember what it made of it.
    pub series: &'a str,
    pub name: &'a str,
    /// In the order written; an escaped value is unescaped (owned).
    pub labels: Vec<(&'a str, Cow<'a, str>)>,
    pub value: f64,
    /// Milliseconds since the epoch, when the line gives a time.
    pub timestamp_ms: Option<i64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based; 0 for the body as a whole (a missing `# EOF`).
    pub line: usize,
    pub message: String,
}

/// The metric types of `# TYPE` lines.
const TEXT_TYPES: [&str; 5] = ["counter", "gauge", "histogram", "summary", "untyped"];
const OPENMETRICS_TYPES: [&str; 8] = [
    "counter",
    "gauge",
    "histogram",
    "gaugehistogram",
    "summary",
    "info",
    "stateset",
    "unknown",
];

/// Parses a whole body.
pub fn parse(body: &str, format: Format) -> Result<Vec<Sample<'_>>, ParseError> {
    let mut samples = Vec::new();
    let mut seen_eof = false;
    let mut lines = body.split('\n').enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let number = index + 1;
        let error = |message: String| ParseError {
            line: number,
            message,
        };
        let text = raw.strip_suffix('\r').unwrap_or(raw);
        if seen_eof {
            if text.is_empty() && lines.peek().is_none() {
                continue;
            }
            return Err(error("data after # EOF".into()));
        }
        match format {
            Format::Text => {
                let trimmed = text.trim_start_matches([' ', '\t']);
                if trimmed.is_empty() {
                    continue;
                }
                if let Some(comment) = trimmed.strip_prefix('#') {
                    text_comment(comment).map_err(error)?;
                    continue;
                }
                samples.push(line::sample(trimmed, format).map_err(error)?);
            }
            Format::OpenMetrics => {
                if text == "# EOF" {
                    seen_eof = true;
                    continue;
                }
                if text.is_empty() && lines.peek().is_none() {
                    continue;
                }
                if text.is_empty() {
                    return Err(error("empty line: OpenMetrics has none".into()));
                }
                if let Some(comment) = text.strip_prefix('#') {
                    openmetrics_comment(comment).map_err(error)?;
                    continue;
                }
                samples.push(line::sample(text, format).map_err(error)?);
            }
        }
    }
    if format == Format::OpenMetrics && !seen_eof {
        return Err(ParseError {
            line: 0,
            message: "data does not end with # EOF".into(),
        });
    }
    Ok(samples)
}

/// A text-format comment (after `#`): `HELP` and `TYPE` are checked, others ignored.
fn text_comment(comment: &str) -> Result<(), String> {
    let rest = comment.trim_start_matches([' ', '\t']);
    let mut words = rest.splitn(3, [' ', '\t']);
    match words.next() {
        Some("HELP") => {
            let name = words.next().unwrap_or("");
            line::check_metric_name(name)
        }
        Some("TYPE") => {
            let name = words.next().unwrap_or("");
            line::check_metric_name(name)?;
            let kind = words.next().unwrap_or("").trim();
            if TEXT_TYPES.contains(&kind) {
                Ok(())
            } else {
                Err(format!("invalid metric type {kind:?}"))
            }
        }
        _ => Ok(()),
    }
}

/// An OpenMetrics comment (after `#`): `HELP`, `TYPE`, `UNIT` only.
fn openmetrics_comment(comment: &str) -> Result<(), String> {
    let Some(rest) = comment.strip_prefix(' ') else {
        return Err("a comment must be \"# HELP\", \"# TYPE\", \"# UNIT\" or \"# EOF\"".into());
    };
    let mut words = rest.splitn(3, ' ');
    let keyword = words.next().unwrap_or("");
    let name = words.next().unwrap_or("");
    match keyword {
        "HELP" => line::check_metric_name(name),
        "UNIT" => {
            line::check_metric_name(name)?;
            // A family with a unit is named after it: `size_bytes` of unit `bytes`.
            let unit = words.next().unwrap_or("");
            let suffixed = name
                .strip_suffix(unit)
                .is_some_and(|stem| stem.len() > 1 && stem.ends_with('_'));
            if unit.is_empty() || suffixed {
                Ok(())
            } else {
                Err(format!("unit not a suffix of metric {name:?}"))
            }
        }
        "TYPE" => {
            line::check_metric_name(name)?;
            let kind = words.next().unwrap_or("");
            if OPENMETRICS_TYPES.contains(&kind) {
                Ok(())
            } else {
                Err(format!("invalid metric type {kind:?}"))
            }
        }
        other => Err(format!("invalid metadata keyword {other:?}")),
    }
}
