//! A [`SeriesSelector`] as a query on `series` that the index `measurement_tags_field`
//! (`{k.m: 1, k.p: 1, k.f: 1}`, `docs/format/mongodb.md`, "Finding series") answers.
//!
//! The query only narrows: it returns every series the selector matches and possibly
//! more, and `SeriesSelector::matches` has the last word on each document. So the
//! conditions put into the query must each be *implied* by the selector, never stronger:
//!
//! - a tag equality `key = value`: the pair string `key\0value` is in `k.p`;
//! - a matcher that requires the tag (`TagMatcher::requires_tag`): some pair of `key` is in
//!   `k.p`, and for `=~` its value starts with the literal prefix of the regex: one index
//!   range `[key\0prefix, key\0prefix′)`;
//! - other matchers (those a missing tag satisfies) add nothing: a scan of the measurement.

use mongodb::bson::{doc, Bson, Document};
use tickertape_core::{MatchOp, SeriesSelector, TagMatcher};

use crate::layout::tag_pair;

/// The `find` filter for `selector`.
pub(crate) fn filter(selector: &SeriesSelector) -> Document {
    let mut filter = doc! { "k.m": &selector.measurement };
    let mut clauses = equality_clause(&selector.tags)
        .into_iter()
        .collect::<Vec<_>>();
    clauses.extend(
        selector
            .matchers
            .iter()
            .filter(|m| m.requires_tag())
            .map(range_clause),
    );
    match clauses.len() {
        0 => {}
        // Alone, the condition stays a plain field condition, the shape every planner
        // matches against an index most readily.
        1 => {
            filter.insert("k.p", clauses.remove(0));
        }
        _ => {
            let and: Vec<Bson> = clauses
                .into_iter()
                .map(|c| Bson::Document(doc! { "k.p": c }))
                .collect();
            filter.insert("$and", and);
        }
    }
    if let Some(field) = &selector.field {
        filter.insert("k.f", field);
    }
    filter
}

/// One equality is the pair itself; several are `$all` of them (every pair present).
fn equality_clause(tags: &[(String, String)]) -> Option<Bson> {
    let pairs: Vec<Bson> = tags
        .iter()
        .map(|(k, v)| Bson::String(tag_pair(k, v)))
        .collect();
    match pairs.len() {
        0 => None,
        1 => pairs.into_iter().next(),
        _ => Some(Bson::Document(doc! { "$all": pairs })),
    }
}

/// Some pair of the matcher's key whose value starts with its literal prefix.
///
/// `$elemMatch`, because `k.p` is an array: `{$gte: lo, $lt: hi}` alone would be true of
/// an array with one element `>= lo` and *another* `< hi`, and MongoDB then uses only one
/// of the two bounds on a multikey index; within `$elemMatch` both bound one element, and
/// the index scan is `[lo, hi)`.
fn range_clause(matcher: &TagMatcher) -> Bson {
    let prefix = match matcher.op() {
        MatchOp::Regex => literal_prefix(matcher.pattern()),
        // `!=` and `!~` that require the tag say nothing of how its value begins.
        MatchOp::NotEqual | MatchOp::NotRegex => String::new(),
    };
    // The pair ends in a NUL or a prefix character, so an upper bound always exists.
    Bson::Document(doc! { "$elemMatch": prefix_range(&tag_pair(matcher.key(), &prefix)) })
}

/// `{$gte: prefix, $lt: upper_bound(prefix)}`: the strings starting with `prefix`, as one
/// index range (a regular expression would need its metacharacters escaped). Without an
/// upper bound (a prefix of U+10FFFF only) the range is only wider: `$gte` alone.
pub(crate) fn prefix_range(prefix: &str) -> Document {
    let mut range = doc! { "$gte": prefix };
    if let Some(high) = upper_bound(prefix) {
        range.insert("$lt", high);
    }
    range
}

/// The smallest string greater than every string that starts with `prefix`, if any:
/// `prefix` with its last character that has a successor replaced by that successor and
/// the characters after it dropped. MongoDB compares strings by their UTF-8 bytes (no
/// collation is set), and UTF-8 byte order is code point order.
pub(crate) fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = successor(last) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The next Unicode scalar value after `c` (surrogates are not characters).
fn successor(c: char) -> Option<char> {
    match c as u32 + 1 {
        0xD800 => Some('\u{E000}'),
        n => char::from_u32(n),
    }
}

/// A prefix every value matched by the anchored regex `pattern` starts with: its leading
/// run of plain characters. Deliberately conservative (an empty prefix is always correct,
/// only less selective):
/// - any `|` in the pattern gives `""` (an alternation, wherever it is, may reach the start);
/// - the run stops at the first character with a meaning in the syntax (`.`, `(`, `[`,
///   `^`, `\d` …) and at whitespace or `#` (meaningful under the `x` flag);
/// - `\` followed by a punctuation character the syntax defines (`\.`, `\$` …) is that
///   character;
/// - a quantifier (`*`, `+`, `?`, `{`) after the run takes its last character back out, since
///   it applies to that character.
pub(crate) fn literal_prefix(pattern: &str) -> String {
    if pattern.contains('|') || closes_the_anchoring_group(pattern) {
        return String::new();
    }
    let mut prefix = String::new();
    // Length of `prefix` before its last character: what a quantifier cuts back to.
    let mut before_last = 0;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let literal = match c {
            '\\' => match chars.next() {
                Some(escaped) if is_meta(escaped) => escaped,
                _ => break,
            },
            '*' | '+' | '?' | '{' => {
                prefix.truncate(before_last);
                break;
            }
            c if is_meta(c) || c.is_whitespace() => break,
            c => c,
        };
        before_last = prefix.len();
        prefix.push(literal);
    }
    prefix
}

/// Whether `pattern` has a `)` with no `(` before it: the matcher anchors a pattern as
/// `^(?:pattern)$`, so such a `)` closes that group and what follows applies to all that
/// came before (`\.)*(` matches ""), and no literal prefix holds.
fn closes_the_anchoring_group(pattern: &str) -> bool {
    let (mut depth, mut in_class) = (0i64, false);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Characters with a meaning in the regex syntax (outside classes), which a `\` makes
/// literal.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' | '#'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tickertape_core::SeriesKey;

    fn matcher(op: MatchOp, pattern: &str) -> TagMatcher {
        TagMatcher::new("host", op, pattern).expect("valid pattern")
    }

    #[test]
    fn literal_prefixes() {
        for (pattern, prefix) in [
            ("h00.*", "h00"),
            ("h001", "h001"),
            ("h0+", "h"),
            ("h0?", "h"),
            ("h0*x", "h"),
            ("h0{2}", "h"),
            ("ab(c|d)", ""),
            (r"\.)*(", ""),
            ("ab)c(", ""),
            ("a[)]b", "a"),
            ("a|b", ""),
            (r"\$x\.y", "$x.y"),
            (r"\$x\.*", "$x"),
            (r"h\d", "h"),
            ("(?i)host", ""),
            ("ho(?i)st", "ho"),
            ("^h", ""),
            ("h[0-9]", "h"),
            ("a b", "a"),
            ("é.*", "é"),
            ("", ""),
            (".*", ""),
        ] {
            assert_eq!(literal_prefix(pattern), prefix, "{pattern}");
        }
    }

    #[test]
    fn upper_bounds() {
        assert_eq!(upper_bound("host\0h00").as_deref(), Some("host\0h01"));
        assert_eq!(upper_bound("host\0").as_deref(), Some("host\u{1}"));
        assert_eq!(upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(upper_bound("\u{10FFFF}"), None);
        assert_eq!(upper_bound(""), None);
    }

    #[test]
    fn filters_by_selector_shape() {
        let mut selector = SeriesSelector {
            measurement: "cpu".into(),
            ..Default::default()
        };
        assert_eq!(filter(&selector), doc! { "k.m": "cpu" });
        selector.tags.push(("host".into(), "a".into()));
        assert_eq!(filter(&selector), doc! { "k.m": "cpu", "k.p": "host\0a" });
        selector.tags.push(("dc".into(), "eu".into()));
        selector.field = Some("usage".into());
        assert_eq!(
            filter(&selector),
            doc! { "k.m": "cpu", "k.p": { "$all": ["host\0a", "dc\0eu"] }, "k.f": "usage" }
        );
        selector.tags.clear();
        selector.field = None;
        // A matcher a missing tag satisfies cannot narrow.
        selector.matchers.push(matcher(MatchOp::NotEqual, "a"));
        assert_eq!(filter(&selector), doc! { "k.m": "cpu" });
        selector.matchers.push(matcher(MatchOp::Regex, "h00.*"));
        let range = doc! { "$elemMatch": { "$gte": "host\0h00", "$lt": "host\0h01" } };
        assert_eq!(
            filter(&selector),
            doc! { "k.m": "cpu", "k.p": range.clone() }
        );
        selector.tags.push(("dc".into(), "eu".into()));
        selector.matchers.push(matcher(MatchOp::NotRegex, "b?"));
        let any_host = doc! { "$elemMatch": { "$gte": "host\0", "$lt": "host\u{1}" } };
        assert_eq!(
            filter(&selector),
            doc! { "k.m": "cpu", "$and": [
                { "k.p": "dc\0eu" }, { "k.p": range }, { "k.p": any_host },
            ] }
        );
    }

    /// Strings over a small alphabet, every one up to `len` characters.
    fn strings(alphabet: &[char], len: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..len {
            last = last
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    const TOKENS: &[&str] = &[
        "a", "b", "h", "0", ".", "*", "+", "?", "|", "(", ")", "[ab]", "{2}", "(?i)", "^", "$",
        r"\.", r"\d", " ", "é", "A",
    ];

    proptest! {
        /// Every value a regex matcher selects starts with the prefix, so its pair lies in
        /// the index range the query scans.
        #[test]
        fn every_match_lies_in_the_scanned_range(
            tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..6)
        ) {
            let pattern: String = tokens.concat();
            let Ok(m) = TagMatcher::new("host", MatchOp::Regex, &pattern) else {
                return Ok(());
            };
            let prefix = literal_prefix(&pattern);
            let low = tag_pair("host", &prefix);
            let high = upper_bound(&low).expect("a bound after a NUL");
            for value in strings(&['a', 'b', 'h', '0', '.', 'A', 'é', ' '], 4) {
                if m.matches(Some(&value)) {
                    let pair = tag_pair("host", &value);
                    prop_assert!(value.starts_with(&prefix), "{pattern:?} {value:?}");
                    prop_assert!(low <= pair && pair < high, "{pattern:?} {value:?}");
                }
            }
        }

        /// The bound is above every extension of the prefix and above the prefix itself.
        #[test]
        fn upper_bound_is_above_every_extension(
            prefix in "[a\u{0}\u{7f}\u{10FFFF}é]{0,4}",
            rest in "[a\u{0}\u{10FFFF}]{0,4}",
        ) {
            if let Some(high) = upper_bound(&prefix) {
                let longer = format!("{prefix}{rest}");
                prop_assert!(longer.as_str() < high.as_str());
            } else {
                let all_max = prefix.chars().all(|c| c == char::MAX);
                prop_assert!(all_max, "{:?} has a successor", prefix);
            }
        }

        /// What the query narrows to never leaves out a series the selector matches.
        #[test]
        fn the_filter_is_implied_by_the_selector(
            host in "[ab]{0,2}", op in 0..3usize, pattern in "[ab.*?]{0,3}",
        ) {
            let op = [MatchOp::NotEqual, MatchOp::Regex, MatchOp::NotRegex][op];
            let Ok(m) = TagMatcher::new("host", op, &pattern) else { return Ok(()); };
            let key = SeriesKey::new("cpu", vec![("host".into(), host.clone())], "v");
            let selector = SeriesSelector {
                measurement: "cpu".into(),
                matchers: vec![m.clone()],
                ..Default::default()
            };
            if selector.matches(&key) && m.requires_tag() {
                let Some(Bson::Document(clause)) = filter(&selector).get("k.p").cloned() else {
                    return Err(TestCaseError::fail("a range clause"));
                };
                let range = clause.get_document("$elemMatch").expect("elemMatch");
                let pair = tag_pair("host", &host);
                let low = range.get_str("$gte").expect("low");
                let high = range.get_str("$lt").expect("high");
                prop_assert!(low <= pair.as_str() && pair.as_str() < high);
            }
        }
    }
}
