//! InfluxQL, InfluxDB 1.x's query language: the AST ([`ast`]) and a parser ([`parse`]) for
//! the subset that Grafana's InfluxDB data source generates and people type into the
//! `influx` shell — `SELECT` with aggregates, transformations, `WHERE`, `GROUP BY
//! time()`/tags, `fill()`, `ORDER BY`, `LIMIT`/`SLIMIT`/`OFFSET`, `tz()`; the `SHOW`
//! statements a data source's pickers send; `CREATE`/`DROP DATABASE`, `CREATE`/`ALTER`/`DROP
//! RETENTION POLICY` — and the evaluator of its `SELECT` and `SHOW` statements ([`eval`])
//! over a [`eval::Store`] that the server implements. No I/O: the server reads the
//! request, manages databases and policies, and writes the answer.
//!
//! # Why winnow
//! The parser is built on [`winnow`] (nom's maintained successor by the author of
//! `toml_edit`): plain functions over `&mut &str`, cheap backtracking where InfluxQL needs
//! it (`time(` versus a tag named `time`), `cut_err` to stop at the first real mistake,
//! and an error that carries its offset and what was expected, which is all an InfluxDB-
//! shaped message needs. It is already in the dependency tree (through `toml`), and its
//! combinators read like the grammar; nom would do the same with more ceremony around its
//! input and error types.
//!
//! # Layout
//! - [`ast`]: the statements; [`display`]: InfluxQL text for them (parses back to the same
//!   tree).
//! - `lex`: tokens (names, strings, regexes, numbers, durations, keywords).
//! - `expr`: expressions by precedence; `statement`: the statements.
//! - [`ParseError`]: position and what was expected, in InfluxDB's words.
//! - [`eval`]: the statements evaluated against a store, answered in InfluxDB's shapes.
//!
//! An expression nests at most [`MAX_DEPTH`] levels (each parenthesis, function call and
//! operator is one), so that no input can exhaust the stack of whoever parses, prints,
//! evaluates or drops it; deeper is a [`ParseError`] naming the limit.

pub mod ast;
pub mod display;
pub mod eval;
mod expr;
mod lex;
mod statement;

pub use ast::*;
pub use expr::MAX_DEPTH;

use statement::STATEMENTS;
use winnow::ascii::multispace0;
use winnow::combinator::eof;
use winnow::error::{ContextError, StrContext, StrContextValue};
use winnow::prelude::*;

/// A statement that does not parse: where, what was there, what would have been valid.
/// Displays as InfluxDB does: `found FROM, expected identifier at line 1, char 8`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("found {found}, expected {expected} at line {line}, char {column}")]
pub struct ParseError {
    /// Byte offset into the query text.
    pub offset: usize,
    /// 1-based line and character (not byte) of `offset`.
    pub line: usize,
    pub column: usize,
    /// The token at `offset` (`EOF` at the end).
    pub found: String,
    pub expected: String,
}

/// Statement keywords of InfluxQL that tickertape does not run: named in the error, so
/// the user reads "not supported" rather than a syntax complaint.
const UNSUPPORTED: &[&str] = &["DELETE", "EXPLAIN", "GRANT", "KILL", "REVOKE", "SET"];

/// Parses `;`-separated statements (blank ones are skipped; none at all is an error).
pub fn parse(text: &str) -> Result<Query, ParseError> {
    let mut input = text;
    let mut statements = Vec::new();
    loop {
        let _ = multispace0::<_, ContextError>.parse_next(&mut input);
        while let Some(rest) = input.strip_prefix(';') {
            input = rest.trim_start();
        }
        if input.is_empty() {
            break;
        }
        match statement::statement.parse_next(&mut input) {
            Ok(s) => statements.push(s),
            Err(e) => return Err(error(text, input, e.into_inner().ok())),
        }
        let end = (
            multispace0::<_, ContextError>,
            winnow::combinator::alt((";".void(), eof.void())),
        )
            .parse_next(&mut input);
        if end.is_err() {
            return Err(error_expected(text, input, "; or EOF".to_string()));
        }
    }
    if statements.is_empty() {
        return Err(error_expected(text, input, "statement".to_string()));
    }
    Ok(Query { statements })
}

/// Parses exactly one statement.
pub fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    let mut query = parse(text)?;
    if query.statements.len() > 1 {
        let at = text.find(';').unwrap_or(text.len());
        return Err(error_expected(text, &text[at..], "EOF".to_string()));
    }
    Ok(query.statements.remove(0))
}

fn error(text: &str, rest: &str, e: Option<ContextError>) -> ParseError {
    let mut expected: Vec<String> = Vec::new();
    for context in e.iter().flat_map(ContextError::context) {
        if let StrContext::Expected(StrContextValue::Description(d)) = context {
            if !expected.iter().any(|x| x == d) {
                expected.push(d.to_string());
            }
        }
    }
    // The innermost context comes first; it is the most precise.
    let mut expected = expected
        .into_iter()
        .next()
        .unwrap_or_else(|| "statement".into());
    let word = first_word(rest.trim_start());
    if rest.len() == text.len() || expected.starts_with("SELECT") {
        if let Some(k) = UNSUPPORTED.iter().find(|k| k.eq_ignore_ascii_case(word)) {
            expected = format!("{STATEMENTS} ({k} is not supported by tickertape)");
        }
    }
    error_expected(text, rest, expected)
}

fn error_expected(text: &str, rest: &str, expected: String) -> ParseError {
    let rest_trimmed = rest.trim_start();
    let offset = text.len() - rest_trimmed.len();
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let found = match first_word(rest_trimmed) {
        "" => "EOF".to_string(),
        w => w.to_string(),
    };
    ParseError {
        offset,
        line,
        column,
        found,
        expected,
    }
}

/// The token at the start of `s`: a name or number, else one character.
fn first_word(s: &str) -> &str {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end > 0 {
        &s[..end]
    } else {
        s.chars().next().map_or("", |c| &s[..c.len_utf8()])
    }
}

#[cfg(test)]
mod tests;
