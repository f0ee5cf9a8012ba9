//! Tokens: every parser here skips the whitespace before its token, so the statement
//! parsers compose them without thinking about blanks. Each names what it expects
//! (`StrContext::Expected`), which becomes the error's "expected …".

use winnow::ascii::{multispace0, Caseless};
use winnow::combinator::{cut_err, not, opt};
use winnow::error::{ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::token::{any, take_while};

pub type In<'a> = &'a str;

pub fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

/// A failure that no alternative may paper over, naming what was expected here.
pub fn fail_expected<T>(what: &'static str) -> ModalResult<T> {
    let mut error = ContextError::new();
    error.push(expected(what));
    Err(ErrMode::Cut(error))
}

pub fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A keyword, any case, not followed by more of a name (`LIMIT`, not `LIMITS`).
pub fn kw<'a>(word: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    (
        multispace0,
        Caseless(word),
        not(take_while(1.., ident_char)),
    )
        .void()
        .context(expected(word))
}

/// Punctuation or an operator.
pub fn sym<'a>(s: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    (multispace0, s).void().context(expected(s))
}

/// Words that cannot be unquoted names: InfluxQL's keywords that start or separate clauses.
const RESERVED: &[&str] = &[
    "ALL",
    "ALTER",
    "AND",
    "AS",
    "ASC",
    "BEGIN",
    "BY",
    "CREATE",
    "CONTINUOUS",
    "DATABASE",
    "DATABASES",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DESTINATIONS",
    "DIAGNOSTICS",
    "DISTINCT",
    "DROP",
    "DURATION",
    "END",
    "EVERY",
    "EXPLAIN",
    "FIELD",
    "FOR",
    "FROM",
    "GRANT",
    "GRANTS",
    "GROUP",
    "GROUPS",
    "IN",
    "INF",
    "INSERT",
    "INTO",
    "KEY",
    "KEYS",
    "KILL",
    "LIMIT",
    "MEASUREMENT",
    "MEASUREMENTS",
    "NAME",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "PASSWORD",
    "POLICIES",
    "POLICY",
    "PRIVILEGES",
    "QUERIES",
    "QUERY",
    "READ",
    "REPLICATION",
    "RESAMPLE",
    "RETENTION",
    "REVOKE",
    "SELECT",
    "SERIES",
    "SET",
    "SHARD",
    "SHARDS",
    "SLIMIT",
    "SOFFSET",
    "STATS",
    "SUBSCRIPTION",
    "SUBSCRIPTIONS",
    "TAG",
    "TO",
    "USER",
    "USERS",
    "VALUES",
    "WHERE",
    "WITH",
    "WRITE",
];

pub fn is_reserved(word: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// A name: unquoted (`cpu`, `usage_user`; not a keyword) or double-quoted with `\"`.
pub fn ident(i: &mut In<'_>) -> ModalResult<String> {
    multispace0.parse_next(i)?;
    if i.starts_with('"') {
        return quoted('"').context(expected("identifier")).parse_next(i);
    }
    let start = *i;
    let word = take_while(1.., ident_char)
        .verify(|w: &str| !w.starts_with(|c: char| c.is_ascii_digit()) && !is_reserved(w))
        .context(expected("identifier"))
        .parse_next(i)
        .inspect_err(|_| *i = start)?;
    Ok(word.to_string())
}

/// `'…'` (a string) or `"…"` (a name), backslash escapes; unterminated is a cut error.
fn quoted<'a>(mut quote: char) -> impl Parser<In<'a>, String, ErrMode<ContextError>> {
    move |i: &mut In<'a>| {
        quote.parse_next(i).map(|_| ())?;
        let mut out = String::new();
        loop {
            let c = cut_err(any)
                .context(expected("closing quote"))
                .parse_next(i)?;
            match c {
                c if c == quote => return Ok(out),
                '\\' => match cut_err(any)
                    .context(expected("escaped character"))
                    .parse_next(i)?
                {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    c => out.push(c),
                },
                c => out.push(c),
            }
        }
    }
}

/// `'…'`.
pub fn string(i: &mut In<'_>) -> ModalResult<String> {
    multispace0.parse_next(i)?;
    quoted('\'').context(expected("string")).parse_next(i)
}

/// `/…/`, `\/` for a slash inside; the pattern is kept as written otherwise.
pub fn regex(i: &mut In<'_>) -> ModalResult<String> {
    multispace0.parse_next(i)?;
    '/'.context(expected("regex")).parse_next(i)?;
    let mut out = String::new();
    loop {
        let c = cut_err(any).context(expected("closing /")).parse_next(i)?;
        match c {
            '/' => return Ok(out),
            '\\' if i.starts_with('/') => {
                any.parse_next(i)?;
                out.push('/');
            }
            c => out.push(c),
        }
    }
}

/// A numeric literal: an integer, a float, or a duration (`10s`, `1596240000000ms`).
#[derive(Debug, PartialEq)]
pub enum Numeric {
    Integer(i64),
    Number(f64),
    Duration(i64),
}

const UNITS: [(&str, i64); 10] = [
    ("ns", 1),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("u", 1_000),
    ("µ", 1_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
    ("w", 604_800_000_000_000),
];

/// Digits, an optional fraction and exponent, or a unit right after the digits.
pub fn numeric(i: &mut In<'_>) -> ModalResult<Numeric> {
    multispace0.parse_next(i)?;
    let start = *i;
    let negative = opt('-').parse_next(i)?.is_some();
    let digits = take_while(1.., |c: char| c.is_ascii_digit())
        .context(expected("number"))
        .parse_next(i)
        .inspect_err(|_| *i = start)?;
    for (unit, size) in UNITS {
        let rest = &i[..];
        if rest.starts_with(unit) && !rest[unit.len()..].starts_with(ident_char) {
            *i = &rest[unit.len()..];
            let count: i64 = match digits.parse() {
                Ok(n) => n,
                Err(_) => return fail_expected("duration within ±292 years"),
            };
            let ns = count
                .checked_mul(size)
                .map(|ns| if negative { -ns } else { ns });
            return match ns {
                Some(ns) => Ok(Numeric::Duration(ns)),
                None => fail_expected("duration within ±292 years"),
            };
        }
    }
    let fraction = opt(('.', take_while(0.., |c: char| c.is_ascii_digit()))).parse_next(i)?;
    let exponent = opt((
        one_of_ci('e'),
        opt(winnow::token::one_of(['+', '-'])),
        take_while(1.., |c: char| c.is_ascii_digit()),
    ))
    .parse_next(i)?;
    let text = &start[..start.len() - i.len()];
    let text = text.trim_start();
    if fraction.is_none() && exponent.is_none() {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Numeric::Integer(n));
        }
    }
    match text.parse::<f64>() {
        // Past f64's range a literal would read as infinity, which prints as no number.
        Ok(x) if x.is_finite() => Ok(Numeric::Number(x)),
        _ => fail_expected("number within ±1.8e308"),
    }
}

fn one_of_ci<'a>(c: char) -> impl Parser<In<'a>, char, ErrMode<ContextError>> {
    winnow::token::one_of([c, c.to_ascii_uppercase()])
}

/// An unsigned count (`LIMIT 10`).
pub fn count(i: &mut In<'_>) -> ModalResult<u64> {
    multispace0.parse_next(i)?;
    take_while(1.., |c: char| c.is_ascii_digit())
        .try_map(str::parse::<u64>)
        .context(expected("integer"))
        .parse_next(i)
}

/// A duration literal only (`time(10s)`).
pub fn duration(i: &mut In<'_>) -> ModalResult<i64> {
    let start = *i;
    match numeric.parse_next(i)? {
        Numeric::Duration(ns) => Ok(ns),
        _ => {
            *i = start;
            fail_expected("duration")
        }
    }
}

/// `parser`, whose failure without consuming (every alternative backtracked) names `what`
/// alone rather than the last alternative tried: "expected SELECT, SHOW, …", not "expected
/// DATABASES".
pub fn one_of_these<'a, O>(
    what: &'static str,
    mut parser: impl Parser<In<'a>, O, ErrMode<ContextError>>,
) -> impl Parser<In<'a>, O, ErrMode<ContextError>> {
    move |i: &mut In<'a>| match parser.parse_next(i) {
        Err(ErrMode::Backtrack(_)) => {
            let mut error = ContextError::new();
            error.push(expected(what));
            Err(ErrMode::Backtrack(error))
        }
        other => other,
    }
}
