//! Function names of Prometheus 2.x that the parser, which follows Prometheus 3, knows
//! by their new name: `holt_winters` became `double_exponential_smoothing`. A query is
//! rewritten to the new name before it is parsed (a call only: a metric or label
//! named `holt_winters` stays as it is), and the parser's messages say the name the
//! query used.

use super::depth::{skip_comment, skip_string};
use std::borrow::Cow;

/// (Prometheus 2.x's name, the parser's name).
const RENAMED: [(&str, &str); 1] = [("holt_winters", "double_exponential_smoothing")];

/// `query` with every call of a renamed function written with its new name.
pub(crate) fn current_names(query: &str) -> Cow<'_, str> {
    if !RENAMED.iter().any(|(old, _)| query.contains(old)) {
        return Cow::Borrowed(query);
    }
    let mut out = String::with_capacity(query.len() + 32);
    let mut copied = 0;
    let mut chars = query.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' | '`' => skip_string(&mut chars, c),
            '#' => skip_comment(&mut chars),
            c if c.is_alphanumeric() || c == '_' => {
                let mut end = at + c.len_utf8();
                while let Some(&(next, c)) = chars.peek() {
                    if !(c.is_alphanumeric() || c == '_' || c == ':') {
                        break;
                    }
                    end = next + c.len_utf8();
                    chars.next();
                }
                let renamed = RENAMED.iter().find(|(old, _)| *old == &query[at..end]);
                if let Some((_, new)) = renamed {
                    if query[end..].trim_start().starts_with('(') {
                        out.push_str(&query[copied..at]);
                        out.push_str(new);
                        copied = end;
                    }
                }
            }
            _ => {}
        }
    }
    out.push_str(&query[copied..]);
    Cow::Owned(out)
}

/// A parser message about a rewritten query, in the names `query` used.
pub(crate) fn in_query_names(query: &str, message: String) -> String {
    RENAMED
        .iter()
        .filter(|(old, _)| query.contains(old))
        .fold(message, |m, (old, new)| m.replace(new, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calls_are_renamed() {
        assert_eq!(
            current_names("holt_winters (x[5m], 0.1, 0.2) + holt_winters{a=\"holt_winters(\"}"),
            "double_exponential_smoothing (x[5m], 0.1, 0.2) + holt_winters{a=\"holt_winters(\"}"
        );
        assert_eq!(
            current_names("sum by (holt_winters) (my_holt_winters(x)) # holt_winters("),
            "sum by (holt_winters) (my_holt_winters(x)) # holt_winters("
        );
        assert!(matches!(current_names("rate(x[5m])"), Cow::Borrowed(_)));
        assert_eq!(
            in_query_names(
                "holt_winters(x)",
                "double_exponential_smoothing: bad".into()
            ),
            "holt_winters: bad"
        );
    }
}
