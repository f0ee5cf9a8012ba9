//! String field values (`uptime_format="1 day, 2:03"`). tickertape stores numbers: charts,
//! rollups and PromQL are numeric, so a string column is out of scope for now. What a write
//! does with one is decided once, by the engine's [`StringFields`] (`serve
//! --string-fields`), where a line's fields are converted (`parse.rs`): every caller of the
//! engine gets the same.
//!
//! Skipped values are counted in [`crate::WriteReport::string_fields_skipped`] (the server
//! adds them to `/metrics`) and logged once per series by a `SkipLog`, whose memory is
//! bounded.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::str::FromStr;
use std::sync::Mutex;

/// What a write does with a string field value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StringFields {
    /// The value is not stored; the line's numeric and boolean fields are. The line counts
    /// as accepted, also when all its fields were strings (it stores nothing, and InfluxDB
    /// would have accepted it): a client such as Telegraf, which drops a batch answered
    /// 4xx, keeps its numbers.
    #[default]
    Skip,
    /// The whole line is refused with its number, its other fields too (the rest of the
    /// body is stored): for those who would rather hear of every value not stored.
    Refuse,
}

impl StringFields {
    /// The spellings of `serve --string-fields`.
    pub const NAMES: [&'static str; 2] = ["skip", "refuse"];
}

impl FromStr for StringFields {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "skip" => Ok(Self::Skip),
            "refuse" => Ok(Self::Refuse),
            other => Err(format!("{other:?} is not skip or refuse")),
        }
    }
}

impl std::fmt::Display for StringFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Skip => "skip",
            Self::Refuse => "refuse",
        })
    }
}

/// Series (by line text and field) whose skipped string values have been logged, so each
/// is logged once. Bounded: it remembers at most [`SkipLog::MAX_SERIES`] series, by a
/// 64-bit hash rather than by name (a name may be kilobytes long); past that it says once
/// that it stops logging, and the counter in `/metrics` goes on counting. For a process,
/// not for good: a restarted server logs each series once again.
///
/// A hash collision (one in ~10^15 pairs at the bound) would leave one series unlogged,
/// never a value stored or lost. A series spelled two ways (tags in another order) may be
/// logged once per spelling.
#[derive(Default)]
pub(crate) struct SkipLog {
    hasher: RandomState,
    logged: Mutex<Logged>,
}

#[derive(Default)]
struct Logged {
    /// Hashes of (series text, field) logged.
    series: HashSet<u64>,
    /// Whether the bound was reached and said so.
    full: bool,
}

/// One skipped string value: the line it was on, its series' text (measurement and tags
/// as written) and its field key.
pub(crate) struct Skipped<'a> {
    pub(crate) line: usize,
    pub(crate) series_text: &'a str,
    pub(crate) field: &'a str,
}

impl SkipLog {
    /// Series remembered as logged: 10,000 hashes are ~200 KB, whatever the names.
    pub(crate) const MAX_SERIES: usize = 10_000;

    /// Logs each skipped value whose series has not been logged yet; returns how many
    /// values were skipped. Takes the lock once per body, and only for a body that
    /// skipped something.
    pub(crate) fn note<'a>(&self, skipped: impl IntoIterator<Item = Skipped<'a>>) -> u64 {
        let mut skipped = skipped.into_iter().peekable();
        if skipped.peek().is_none() {
            return 0;
        }
        let mut count = 0;
        let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        for value in skipped {
            count += 1;
            if logged.full {
                continue;
            }
            if logged.series.len() == Self::MAX_SERIES {
                logged.full = true;
                tracing::warn!(
                    "string field values of {} series skipped: more are counted in \
                     tickertape_string_fields_skipped_total but no longer logged",
                    Self::MAX_SERIES
                );
                continue;
            }
            let key = self.hasher.hash_one((value.series_text, value.field));
            if logged.series.insert(key) {
                tracing::warn!(
                    series = %cut(value.series_text),
                    field = %cut(value.field),
                    line = value.line,
                    "string field value not stored: tickertape stores numbers and booleans; \
                     the line's other fields are stored (logged once per series; \
                     serve --string-fields=refuse refuses such lines instead)"
                );
            }
        }
        count
    }

    /// Series logged so far, and whether the bound was reached.
    #[cfg(test)]
    fn logged(&self) -> (usize, bool) {
        let logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        (logged.series.len(), logged.full)
    }
}

/// `text` cut to 120 characters for a log line: a name may be as long as a line.
fn cut(text: &str) -> String {
    const SHOWN: usize = 120;
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped<'a>(series_text: &'a str, field: &'a str) -> Skipped<'a> {
        Skipped {
            line: 1,
            series_text,
            field,
        }
    }

    #[test]
    fn counts_every_value_and_remembers_each_series_once() {
        let log = SkipLog::default();
        assert_eq!(log.note(Vec::new()), 0);
        assert_eq!(log.logged(), (0, false));
        let body = [
            skipped("system,host=a", "uptime_format"),
            skipped("system,host=a", "uptime_format"),
            skipped("system,host=b", "uptime_format"),
            skipped("system,host=a", "other"),
        ];
        assert_eq!(log.note(body), 4);
        assert_eq!(log.logged(), (3, false));
        assert_eq!(log.note([skipped("system,host=a", "uptime_format")]), 1);
        assert_eq!(log.logged(), (3, false));
    }

    #[test]
    fn memory_is_bounded_and_counting_goes_on() {
        let log = SkipLog::default();
        let names: Vec<String> = (0..SkipLog::MAX_SERIES + 500)
            .map(|i| format!("m,host=h{i}"))
            .collect();
        let counted = log.note(names.iter().map(|n| skipped(n, "s")));
        assert_eq!(counted, names.len() as u64);
        assert_eq!(log.logged(), (SkipLog::MAX_SERIES, true));
        assert_eq!(log.note([skipped("m,host=new", "s")]), 1);
        assert_eq!(log.logged(), (SkipLog::MAX_SERIES, true));
    }

    #[test]
    fn the_flag_spellings_round_trip() {
        for name in StringFields::NAMES {
            let parsed: StringFields = name.parse().unwrap();
            assert_eq!(parsed.to_string(), name);
        }
        assert_eq!(StringFields::default(), StringFields::Skip);
        let refused = "keep".parse::<StringFields>().unwrap_err();
        assert!(refused.contains("\"keep\""), "{refused}");
    }
}
