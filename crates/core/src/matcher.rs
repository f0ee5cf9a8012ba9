//! Tag matchers other than equality: `!=`, `=~` and `!~`, with Prometheus' meaning, so the
//! query API and the Prometheus API select series the same way.
//!
//! - A series without the tag matches as if its value were the empty string
//!   (`host!=a` selects series without `host`; `host=~.*` selects every series).
//! - A regular expression is anchored at both ends: `host=~h00.*` means `^(?:h00.*)$`.

use regex::Regex;
use std::fmt;

/// The operator of a [`TagMatcher`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchOp {
    /// `!=`: the value differs (a missing tag is `""`).
    NotEqual,
    /// `=~`: the value matches the anchored regular expression.
    Regex,
    /// `!~`: the value does not match the anchored regular expression.
    NotRegex,
}

impl MatchOp {
    pub fn symbol(self) -> &'static str {
        match self {
            MatchOp::NotEqual => "!=",
            MatchOp::Regex => "=~",
            MatchOp::NotRegex => "!~",
        }
    }
}

/// Why a matcher cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    #[error("tag matcher on {key:?}: invalid regular expression {pattern:?}: {reason}")]
    BadRegex {
        key: String,
        pattern: String,
        reason: String,
    },
    #[error("tag matcher with an empty tag key")]
    EmptyKey,
    #[error("{0:?} is not KEY:VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX")]
    Syntax(String),
}

/// A tag condition as the query API and the CLI write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagCondition {
    /// `KEY:VALUE`
    Equal(String, String),
    /// `KEY!=VALUE`, `KEY=~REGEX`, `KEY!~REGEX`
    Matcher(TagMatcher),
}

impl TagCondition {
    /// Parses `KEY:VALUE`, `KEY!=VALUE`, `KEY=~REGEX` or `KEY!~REGEX`. The operator is the
    /// first of them in the text, so a value may contain the others (`dc:a=~b` is the value
    /// `a=~b`); a key cannot contain `:`, `!=`, `=~` or `!~`.
    pub fn parse(text: &str) -> Result<Self, MatcherError> {
        let ops = [
            (":", None),
            ("!=", Some(MatchOp::NotEqual)),
            ("=~", Some(MatchOp::Regex)),
            ("!~", Some(MatchOp::NotRegex)),
        ];
        let (at, symbol, op) = ops
            .iter()
            .filter_map(|(symbol, op)| text.find(symbol).map(|at| (at, *symbol, *op)))
            .min_by_key(|(at, _, _)| *at)
            .ok_or_else(|| MatcherError::Syntax(text.to_owned()))?;
        let (key, value) = (&text[..at], &text[at + symbol.len()..]);
        if key.is_empty() {
            return Err(MatcherError::Syntax(text.to_owned()));
        }
        Ok(match op {
            None => TagCondition::Equal(key.to_owned(), value.to_owned()),
            Some(op) => TagCondition::Matcher(TagMatcher::new(key, op, value)?),
        })
    }
}

/// One condition on a tag's value. Invariant: `regex` is the compiled, anchored `pattern`
/// for the two regex operators, and `None` for `!=`.
#[derive(Clone, Debug)]
pub struct TagMatcher {
    key: String,
    op: MatchOp,
    pattern: String,
    regex: Option<Regex>,
}

/// The largest compiled program a pattern may take, so one query cannot exhaust memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl TagMatcher {
    pub fn new(
        key: impl Into<String>,
        op: MatchOp,
        pattern: impl Into<String>,
    ) -> Result<Self, MatcherError> {
        let key = key.into();
        let pattern = pattern.into();
        if key.is_empty() {
            return Err(MatcherError::EmptyKey);
        }
        let regex = match op {
            MatchOp::NotEqual => None,
            MatchOp::Regex | MatchOp::NotRegex => Some(
                regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| MatcherError::BadRegex {
                        key: key.clone(),
                        pattern: pattern.clone(),
                        reason: e.to_string(),
                    })?,
            ),
        };
        Ok(Self {
            key,
            op,
            pattern,
            regex,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn op(&self) -> MatchOp {
        self.op
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether a series whose tag `key` has `value` (`None`: no such tag) is selected.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let value = value.unwrap_or("");
        match (self.op, &self.regex) {
            (MatchOp::NotEqual, _) => value != self.pattern,
            (MatchOp::Regex, Some(re)) => re.is_match(value),
            (MatchOp::NotRegex, Some(re)) => !re.is_match(value),
            // Not built by `new`; select nothing rather than everything.
            (_, None) => false,
        }
    }

    /// Whether the matcher selects only series that have the tag: then an index can
    /// start from the postings of the values it matches instead of every series.
    pub fn requires_tag(&self) -> bool {
        !self.matches(None)
    }
}

impl PartialEq for TagMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.op == other.op && self.pattern == other.pattern
    }
}

impl Eq for TagMatcher {}

impl fmt::Display for TagMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.key, self.op.symbol(), self.pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(op: MatchOp, pattern: &str) -> TagMatcher {
        TagMatcher::new("host", op, pattern).unwrap()
    }

    #[test]
    fn regex_is_anchored_and_missing_tags_are_empty() {
        let re = m(MatchOp::Regex, "h00.*");
        assert!(re.matches(Some("h001")));
        assert!(!re.matches(Some("xh001")));
        assert!(!re.matches(None));
        assert!(re.requires_tag());
        let all = m(MatchOp::Regex, ".*");
        assert!(all.matches(None));
        assert!(!all.requires_tag());
        let nre = m(MatchOp::NotRegex, "h0|h1");
        assert!(!nre.matches(Some("h1")));
        assert!(nre.matches(Some("h10")));
        assert!(nre.matches(None));
    }

    #[test]
    fn not_equal_selects_series_without_the_tag() {
        let ne = m(MatchOp::NotEqual, "a");
        assert!(ne.matches(None));
        assert!(ne.matches(Some("b")));
        assert!(!ne.matches(Some("a")));
        assert!(m(MatchOp::NotEqual, "").requires_tag());
    }

    #[test]
    fn conditions_parse_at_their_first_operator() {
        let eq = |k: &str, v: &str| TagCondition::Equal(k.into(), v.into());
        assert_eq!(TagCondition::parse("dc:x:y").unwrap(), eq("dc", "x:y"));
        assert_eq!(TagCondition::parse("dc:a=~b").unwrap(), eq("dc", "a=~b"));
        assert_eq!(TagCondition::parse("dc:").unwrap(), eq("dc", ""));
        let re = TagCondition::parse("host=~h0:1").unwrap();
        assert_eq!(re, TagCondition::Matcher(m(MatchOp::Regex, "h0:1")));
        let ne = TagCondition::parse("host!=a").unwrap();
        assert_eq!(ne, TagCondition::Matcher(m(MatchOp::NotEqual, "a")));
        let nre = TagCondition::parse("host!~a|b").unwrap();
        assert_eq!(nre, TagCondition::Matcher(m(MatchOp::NotRegex, "a|b")));
        for bad in ["host", ":a", "=~a", "host=a"] {
            assert!(TagCondition::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_regex_names_the_key_and_pattern() {
        let e = TagMatcher::new("host", MatchOp::Regex, "(").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("\"host\"") && text.contains("\"(\""),
            "{text}"
        );
    }
}
