//! The data model: a series is a measurement, a sorted set of tags and one field;
//! a point is a timestamp in nanoseconds and an f64.

use crate::matcher::{TagCondition, TagMatcher};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The store's 64-bit identifier of a series. Issued once by a backend, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesId(pub u64);

impl fmt::Display for SeriesId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Prometheus' stale marker: a NaN with this bit pattern ends a series for PromQL's
/// lookback. It is stored like any value and never returned by tickertape's own API.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether `value` is the stale marker (bit for bit; other NaNs are not).
pub fn is_stale_marker(value: f64) -> bool {
    value.to_bits() == STALE_NAN_BITS
}

/// One sample: `time` in nanoseconds since the Unix epoch (UTC), and its value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub time: i64,
    pub value: f64,
}

impl Point {
    pub fn new(time: i64, value: f64) -> Self {
        Self { time, value }
    }

    /// Equality that treats values as bit patterns, so NaN == NaN and -0.0 != 0.0.
    /// This is the equality a lossless store promises.
    pub fn bit_eq(&self, other: &Point) -> bool {
        self.time == other.time && self.value.to_bits() == other.value.to_bits()
    }
}

/// What names a series: `measurement{tags}#field`.
///
/// Invariant: `tags` is sorted by key and keys are unique, so two keys naming the same
/// series compare equal whatever order the tags arrived in.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub field: String,
}

impl SeriesKey {
    /// Builds a key, sorting the tags. A tag key given twice keeps its last value.
    pub fn new(
        measurement: impl Into<String>,
        mut tags: Vec<(String, String)>,
        field: impl Into<String>,
    ) -> Self {
        tags.reverse();
        tags.sort_by(|a, b| a.0.cmp(&b.0));
        tags.dedup_by(|a, b| a.0 == b.0);
        Self {
            measurement: measurement.into(),
            tags,
            field: field.into(),
        }
    }

    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.tags[i].1.as_str())
    }
}

impl fmt::Display for SeriesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{{", self.measurement)?;
        for (i, (k, v)) in self.tags.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{k}={v}")?;
        }
        write!(f, "}}#{}", self.field)
    }
}

/// Which series a query or listing is about: one measurement, optionally one field, tag
/// equalities and tag matchers (`!=`, `=~`, `!~`), all of which must hold (AND).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeriesSelector {
    pub measurement: String,
    pub field: Option<String>,
    /// `key = value`: the series has the tag with exactly this value.
    pub tags: Vec<(String, String)>,
    pub matchers: Vec<TagMatcher>,
}

impl SeriesSelector {
    pub fn matches(&self, key: &SeriesKey) -> bool {
        key.measurement == self.measurement
            && self.field.as_ref().is_none_or(|f| *f == key.field)
            && self.matches_tags(key)
    }

    /// Adds a parsed `tag` condition of the query API or the CLI.
    pub fn add_condition(&mut self, condition: TagCondition) {
        match condition {
            TagCondition::Equal(k, v) => self.tags.push((k, v)),
            TagCondition::Matcher(m) => self.matchers.push(m),
        }
    }

    /// The tag conditions alone (measurement and field not checked).
    pub fn matches_tags(&self, key: &SeriesKey) -> bool {
        self.tags
            .iter()
            .all(|(k, v)| key.tag(k) == Some(v.as_str()))
            && self.matchers.iter().all(|m| m.matches(key.tag(m.key())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_sorted_and_last_duplicate_wins() {
        let key = SeriesKey::new(
            "cpu",
            vec![
                ("z".into(), "1".into()),
                ("a".into(), "2".into()),
                ("z".into(), "3".into()),
            ],
            "usage",
        );
        assert_eq!(
            key.tags,
            vec![("a".into(), "2".into()), ("z".into(), "3".into())]
        );
        assert_eq!(key.to_string(), "cpu{a=2,z=3}#usage");
    }

    #[test]
    fn selector_requires_every_tag() {
        let key = SeriesKey::new("cpu", vec![("host".into(), "a".into())], "u");
        let mut sel = SeriesSelector {
            measurement: "cpu".into(),
            ..Default::default()
        };
        assert!(sel.matches(&key));
        sel.tags.push(("host".into(), "b".into()));
        assert!(!sel.matches(&key));
        sel.tags[0].1 = "a".into();
        sel.field = Some("u".into());
        assert!(sel.matches(&key));
    }
}
