//! How deep a query's tree can be, bounded before the parser sees the text.
//!
//! `promql-parser` builds its tree without a depth limit, and its type checks, our
//! evaluator and the tree's `Drop` all recurse once per level: 10,000 nested parentheses
//! or a flat `1+1+…` of 10,000 terms overflowed a thread's stack and aborted the whole
//! server. The parser being a dependency, the bound is a scan of the text first.
//!
//! # Why the scan bounds the tree
//! Every node of the parsed tree that is not a leaf is one of: a parenthesis, call or
//! aggregation, whose brackets enclose everything below it; an operator (binary or unary),
//! which has a token of its own; or a range or subquery, which has a `[` of its own. On
//! the way from the root to any leaf, the first kind counts at most the brackets open
//! around that leaf, the others at most one per token in the whole text. So the tree is at
//! most `brackets + operators + 1` deep, where `brackets` is the deepest nesting of `(`,
//! `[` and `{` and `operators` counts every operator sign, operator keyword and `[`:
//! bounding both bounds the depth, whatever the input. Counting is generous (a `-` in
//! `1e-3` counts, a `=` between labels does not since matchers are flat); strings and
//! comments are skipped.

use super::PromqlError;

/// The deepest nesting of `(`, `[` and `{` a query may have. Queries people write and
/// Grafana sends nest a handful of levels; 64 leaves room for generated ones.
pub const MAX_NESTING: usize = 64;

/// The most operators a query may have: binary and unary operator signs, `and`, `or`,
/// `unless`, `atan2`, and each `[` (range or subquery). Large recording rules have a few
/// dozen. Together with [`MAX_NESTING`] this bounds the tree at 321 levels, which a debug
/// build parses, evaluates and drops on a 2 MiB thread stack (tokio's default for its
/// workers); the server's tests check it.
pub const MAX_OPERATORS: usize = 256;

/// Refuses a query that could parse into a tree deeper than the limits allow, naming the
/// limit; anything else is left to the parser.
pub fn check(query: &str) -> Result<(), PromqlError> {
    let Shape { nesting, operators } = shape(query);
    if nesting > MAX_NESTING {
        return Err(PromqlError::BadData(format!(
            "query nests brackets {nesting} deep, more than the limit of {MAX_NESTING}"
        )));
    }
    if operators > MAX_OPERATORS {
        return Err(PromqlError::BadData(format!(
            "query has {operators} operators and ranges, more than the limit of {MAX_OPERATORS}"
        )));
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
struct Shape {
    /// The deepest nesting of `(`, `[`, `{`.
    nesting: usize,
    /// Operator signs, operator keywords and `[`.
    operators: usize,
}

const OPERATOR_KEYWORDS: [&str; 4] = ["and", "or", "unless", "atan2"];

fn shape(query: &str) -> Shape {
    let mut nesting = 0usize;
    let mut deepest = 0;
    let mut operators = 0;
    // Inside `{…}` a `=`, `!=`, `=~`, `!~` is a label matcher, not an operator.
    let mut braces = 0usize;
    let mut chars = query.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' | '`' => skip_string(&mut chars, c),
            '#' => skip_comment(&mut chars),
            '(' | '[' | '{' => {
                nesting += 1;
                deepest = deepest.max(nesting);
                match c {
                    '[' => operators += 1,
                    '{' => braces += 1,
                    _ => {}
                }
            }
            ')' | ']' | '}' => {
                nesting = nesting.saturating_sub(1);
                if c == '}' {
                    braces = braces.saturating_sub(1);
                }
            }
            '+' | '-' | '*' | '/' | '%' | '^' => operators += 1,
            '=' | '!' | '<' | '>' if braces == 0 => operators += 1,
            c if c.is_alphabetic() || c == '_' => {
                let mut end = at + c.len_utf8();
                while let Some(&(next, c)) = chars.peek() {
                    if !(c.is_alphanumeric() || c == '_' || c == ':') {
                        break;
                    }
                    end = next + c.len_utf8();
                    chars.next();
                }
                let word = &query[at..end];
                if OPERATOR_KEYWORDS
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(word))
                {
                    operators += 1;
                }
            }
            _ => {}
        }
    }
    Shape {
        nesting: deepest,
        operators,
    }
}

/// Skips a comment, to the end of its line.
pub(super) fn skip_comment(chars: &mut impl Iterator<Item = (usize, char)>) {
    for (_, c) in chars {
        if c == '\n' {
            return;
        }
    }
}

/// Past a string opened by `quote`: backslash escapes in `"…"` and `'…'`, none in a
/// backtick (raw) string.
pub(super) fn skip_string(chars: &mut impl Iterator<Item = (usize, char)>, quote: char) {
    let mut escaped = false;
    for (_, c) in chars {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote != '`' => escaped = true,
            c if c == quote => return,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(query: &str) -> (usize, usize) {
        let Shape { nesting, operators } = shape(query);
        (nesting, operators)
    }

    #[test]
    fn counts_brackets_and_operators_outside_strings_and_comments() {
        assert_eq!(of("up"), (0, 0));
        assert_eq!(
            of(r#"sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))"#),
            (3, 1)
        );
        assert_eq!(of("a + b * -c"), (0, 3));
        assert_eq!(of("a and b or c unless d"), (0, 3));
        assert_eq!(of("atan2(a, b) > bool 1"), (1, 2));
        assert_eq!(of(r#"up{job!="a",env=~"b"} != 0"#), (1, 2));
        assert_eq!(
            of(r#"label_replace(up, "x", "((((", "y", "[[[[+-*/")"#),
            (1, 0)
        );
        assert_eq!(of(r#"up{a="\"(("} # (((( + - and"#), (1, 0));
        assert_eq!(of("rate(x[5m:1m])[1h:] offset 5m"), (2, 2));
        assert_eq!(of("---1"), (0, 3));
        // A metric named like a keyword counts: generous, never short.
        assert_eq!(of("android_up or or_metric"), (0, 1));
    }

    #[test]
    fn the_limits_are_named() {
        let deep = format!(
            "{}1{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        let Err(PromqlError::BadData(message)) = check(&deep) else {
            panic!("{deep} passed");
        };
        assert!(
            message.contains(&format!("limit of {MAX_NESTING}")),
            "{message}"
        );
        let long = vec!["1"; MAX_OPERATORS + 2].join("+");
        let Err(PromqlError::BadData(message)) = check(&long) else {
            panic!("{long} passed");
        };
        assert!(
            message.contains(&format!("limit of {MAX_OPERATORS}")),
            "{message}"
        );
        let most = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert_eq!(check(&most), Ok(()));
        assert_eq!(check(&vec!["1"; MAX_OPERATORS + 1].join("+")), Ok(()));
    }
}
