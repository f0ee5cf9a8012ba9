//! Expressions by precedence climbing: OR < AND < comparisons < `+ -` < `* / %`, all
//! grouping to the left, as InfluxDB's parser does. Parentheses leave no node behind.
//!
//! # Depth
//! An expression is at most [`MAX_DEPTH`] levels deep, counting each parenthesis, function
//! call and operator on the way from the outermost expression to a name or literal. The
//! parser recurses once per parenthesis, call and right-hand operand, and everything that
//! reads the tree afterwards (printing, the server's evaluator, `Drop` of the boxes)
//! recurses once per node: the bound keeps all of them within a thread's stack, whatever
//! the input. `v + v + … + v` parses in a loop but builds a tree as deep as it has terms,
//! so a chain counts too. Two numbers are kept while parsing: `depth`, the levels known to
//! enclose the expression being read (top-down: parentheses, calls, operators whose
//! right-hand side it is), which stops the parser's own recursion; and each expression's
//! height (bottom-up), which catches a long left-grouping chain.

use winnow::ascii::multispace0;
use winnow::combinator::{alt, cut_err, opt};
use winnow::error::{ContextError, ErrMode};
use winnow::prelude::*;

use crate::ast::{BinaryOp, Expr, VarKind};
use crate::lex::{
    expected, fail_expected, ident, ident_char, kw, numeric, regex, string, sym, In, Numeric,
};

/// How many levels an expression may nest, counting each parenthesis, function call and
/// operator (see the module's doc). Grafana's queries stay under 20; an `OR` chain of 250
/// conditions still fits. Past it the query is refused with a [`crate::ParseError`] that
/// names the limit. The value is set so that a debug build, whose frames are several
/// times a release build's, parses and evaluates the deepest accepted query on a 2 MiB
/// thread stack (tokio's default for its workers); the server's tests check it.
pub const MAX_DEPTH: usize = 256;

/// What a too-deep expression was expected to be (the limit's number is [`MAX_DEPTH`];
/// a test keeps the two in step).
pub(crate) const TOO_DEEP: &str =
    "at most 256 levels of nesting (each parenthesis, function call and operator is one)";

pub fn expr(i: &mut In<'_>) -> ModalResult<Expr> {
    climb(i, 1, 0).map(|(e, _)| e)
}

// `climb`, `unary`, `parenthesised` and `call` are the recursion. They call each other
// directly, leave every other step to a helper function and match on results rather than
// using `?`, because a debug build gives each combinator and temporary a slot of its own
// in the frame, which stays on the stack for every level: written with combinators and
// `?`, one level of parentheses took 4 KB of stack, a level of calls 6 KB.

/// Operators of precedence `min` and up, under `depth` enclosing levels; the expression
/// and its height (1 for a name or literal). Invariant of every `Ok`:
/// `depth + height <= MAX_DEPTH`.
#[allow(clippy::question_mark)] // `?` costs stack in a debug build: see above.
fn climb(i: &mut In<'_>, min: u8, depth: usize) -> ModalResult<(Expr, usize)> {
    let (mut lhs, mut height) = match unary(i, depth) {
        Ok(operand) => operand,
        Err(e) => return Err(e),
    };
    loop {
        let Some((op, at)) = operator_from(i, min) else {
            return Ok((lhs, height));
        };
        match climb(i, op.precedence() + 1, depth + 1) {
            Ok((rhs, rhs_height)) => {
                height = 1 + height.max(rhs_height);
                if depth + height > MAX_DEPTH {
                    return too_deep_at(i, at);
                }
                lhs = Expr::binary(op, lhs, rhs);
            }
            Err(e) => return Err(operand(e)),
        }
    }
}

/// A literal, a name, a call, a wildcard or a parenthesised expression, and its height.
#[allow(clippy::question_mark)] // `?` costs stack in a debug build: see above.
fn unary(i: &mut In<'_>, depth: usize) -> ModalResult<(Expr, usize)> {
    // Even a literal here would be one level too many.
    if depth >= MAX_DEPTH {
        return fail_expected(TOO_DEEP);
    }
    if i.trim_start().starts_with('(') {
        return parenthesised(i, depth);
    }
    match literal(i) {
        Ok(Some(literal)) => return Ok((literal, 1)),
        Ok(None) => {}
        Err(e) => return Err(e),
    }
    let start = *i;
    match call(i, depth) {
        Err(ErrMode::Backtrack(_)) => *i = start,
        answer => return answer,
    }
    variable(i).map(|v| (v, 1))
}

/// `( e )`: no node of its own, but a level (the parser recurses for it).
fn parenthesised(i: &mut In<'_>, depth: usize) -> ModalResult<(Expr, usize)> {
    symbol(i, "(")?;
    match climb(i, 1, depth + 1) {
        Ok((e, height)) => closing(i).map(|()| (e, height + 1)),
        Err(e) => Err(e.cut()),
    }
}

/// `name(args)`; `distinct` is a keyword and a function, and `DISTINCT f` (a field name
/// after the keyword, as InfluxDB takes it) is `distinct(f)`.
#[allow(clippy::question_mark)] // `?` costs stack in a debug build: see above.
fn call(i: &mut In<'_>, depth: usize) -> ModalResult<(Expr, usize)> {
    let name = match call_start(i) {
        Ok(CallStart::Name(name)) => name,
        // `distinct(f)`: the field is one level further in.
        Ok(CallStart::Distinct(call)) if depth + 2 <= MAX_DEPTH => return Ok((call, 2)),
        Ok(CallStart::Distinct(_)) => return fail_expected(TOO_DEEP),
        Err(e) => return Err(e),
    };
    // Arguments separated by commas, none at all allowed: an argument that does not start
    // (or a comma not followed by one) ends the list, and `)` must come there.
    let mut args = Vec::new();
    let mut height = 1;
    let mut before = *i;
    loop {
        match climb(i, 1, depth + 1) {
            Ok((arg, arg_height)) => {
                args.push(arg);
                height = height.max(1 + arg_height);
            }
            Err(ErrMode::Backtrack(_)) => {
                *i = before;
                break;
            }
            Err(e) => return Err(e),
        }
        before = *i;
        match comma(i) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(e),
        }
    }
    closing(i).map(|()| (Expr::Call { name, args }, height))
}

/// The next operator if it binds at least as strongly as `min`, and where it starts;
/// nothing consumed otherwise.
///
/// Read by hand rather than as winnow alternatives: this runs after every operand at
/// every precedence level, and sixteen failing alternatives, each building its error,
/// took more time than the rest of a statement's parse. It accepts what `sym` and `kw`
/// would, in the same order (`=~` before `=`, `<=` before `<`).
fn operator_from<'a>(i: &mut In<'a>, min: u8) -> Option<(BinaryOp, In<'a>)> {
    use BinaryOp::*;
    const SYMBOLS: [(&str, BinaryOp); 14] = [
        ("=~", RegexMatch),
        ("!~", RegexNotMatch),
        ("!=", NotEq),
        ("<>", NotEq),
        ("<=", LtEq),
        (">=", GtEq),
        ("=", Eq),
        ("<", Lt),
        (">", Gt),
        ("+", Add),
        ("-", Sub),
        ("*", Mul),
        ("/", Div),
        ("%", Mod),
    ];
    let before = *i;
    // `multispace0`'s blanks.
    let rest = before.trim_start_matches([' ', '\t', '\r', '\n']);
    let symbol = SYMBOLS
        .iter()
        .find(|(text, _)| rest.starts_with(text))
        .map(|&(text, op)| (op, text.len()));
    let found = symbol.or_else(|| {
        [("AND", And), ("OR", Or)]
            .into_iter()
            .find(|(word, _)| {
                rest.get(..word.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(word))
                    && !rest[word.len()..].starts_with(ident_char)
            })
            .map(|(word, op)| (op, word.len()))
    });
    match found {
        Some((op, len)) if op.precedence() >= min => {
            *i = &rest[len..];
            Some((op, before))
        }
        _ => None,
    }
}

/// A right-hand operand that does not parse: no other reading is possible any more.
fn operand(e: ErrMode<ContextError>) -> ErrMode<ContextError> {
    e.cut().map(|mut e| {
        e.push(expected("expression"));
        e
    })
}

/// Refuses the expression, pointing at `at` (the operator that made it too deep).
fn too_deep_at<'a, T>(i: &mut In<'a>, at: In<'a>) -> ModalResult<T> {
    *i = at;
    fail_expected(TOO_DEEP)
}

/// A regex, string, number, duration, `*` or boolean; nothing consumed otherwise.
fn literal(i: &mut In<'_>) -> ModalResult<Option<Expr>> {
    opt(alt((
        regex.map(Expr::Regex),
        string.map(Expr::String),
        numeric.map(|n| match n {
            Numeric::Integer(n) => Expr::Integer(n),
            Numeric::Number(x) => Expr::Number(x),
            Numeric::Duration(ns) => Expr::Duration(ns),
        }),
        (sym("*"), opt(kind)).map(|(_, k)| Expr::Wildcard(k)),
        kw("true").value(Expr::Boolean(true)),
        kw("false").value(Expr::Boolean(false)),
    )))
    .parse_next(i)
}

/// A field, tag or `time`, with its `::field`/`::tag`; what the error names when no
/// expression starts here.
fn variable(i: &mut In<'_>) -> ModalResult<Expr> {
    let start = *i;
    match (ident, opt(kind)).parse_next(i) {
        Ok((name, kind)) => Ok(Expr::Var { name, kind }),
        Err(ErrMode::Backtrack(_)) => {
            *i = start;
            let mut error = ContextError::new();
            error.push(expected("identifier, string, number, bool"));
            Err(ErrMode::Backtrack(error))
        }
        Err(e) => Err(e),
    }
}

/// `::field` or `::tag`.
fn kind(i: &mut In<'_>) -> ModalResult<VarKind> {
    sym("::").parse_next(i)?;
    cut_err(alt((
        kw("field").value(VarKind::Field),
        kw("tag").value(VarKind::Tag),
    )))
    .parse_next(i)
}

enum CallStart {
    /// A function's name, lowercased, and its `(` read.
    Name(String),
    /// `DISTINCT f`, whole.
    Distinct(Expr),
}

/// A call's name and `(`; a backtrack with nothing consumed where no call starts.
fn call_start(i: &mut In<'_>) -> ModalResult<CallStart> {
    let start = *i;
    // A function's name is a bare word: `"mean"(x)` is no call (and would not print back).
    if i.trim_start().starts_with('"') {
        return winnow::combinator::fail(i);
    }
    let name = alt((kw("distinct").value("distinct".to_string()), ident)).parse_next(i)?;
    multispace0.parse_next(i)?;
    if name == "distinct" && !i.starts_with('(') {
        let field = cut_err(ident)
            .context(expected("identifier"))
            .parse_next(i)?;
        return Ok(CallStart::Distinct(Expr::Call {
            name,
            args: vec![Expr::var(&field)],
        }));
    }
    if !i.starts_with('(') {
        *i = start;
        return winnow::combinator::fail(i);
    }
    symbol(i, "(")?;
    Ok(CallStart::Name(name.to_ascii_lowercase()))
}

fn symbol(i: &mut In<'_>, s: &'static str) -> ModalResult<()> {
    sym(s).parse_next(i)
}

/// `)`, which must come.
fn closing(i: &mut In<'_>) -> ModalResult<()> {
    cut_err(sym(")")).parse_next(i)
}

/// A `,` (consumed) or not (nothing consumed).
fn comma(i: &mut In<'_>) -> ModalResult<bool> {
    Ok(opt(sym(",")).parse_next(i)?.is_some())
}

#[cfg(test)]
mod tests {
    use super::{MAX_DEPTH, TOO_DEEP};
    use crate::{parse, parse_statement, Query};

    /// Parses on a thread with tokio's default worker stack, so a debug build proves the
    /// limit small enough; prints and drops the tree there too.
    fn parse_on_small_stack(text: String) -> Result<Query, crate::ParseError> {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let parsed = parse(&text);
                if let Ok(query) = &parsed {
                    // Printing recurses over the whole tree.
                    assert!(!query.statements[0].to_string().is_empty());
                }
                parsed
            })
            .expect("spawn a parser thread")
            .join()
            .expect("the parser thread ends")
    }

    fn nest(open: &str, inner: &str, close: &str, levels: usize) -> String {
        format!("{}{inner}{}", open.repeat(levels), close.repeat(levels))
    }

    fn chain(term: &str, op: &str, terms: usize) -> String {
        vec![term; terms].join(op)
    }

    /// A shape that grows a tree: what it is, its text at `n` repetitions, and the most
    /// repetitions the limit allows.
    type Shape = (&'static str, fn(usize) -> String, usize);

    fn shapes() -> Vec<Shape> {
        vec![
            (
                "parentheses in WHERE",
                |n| format!("SELECT v FROM m WHERE {}", nest("(", "host = 'h1'", ")", n)),
                // The comparison is two levels itself.
                MAX_DEPTH - 2,
            ),
            (
                "parentheses in a field",
                |n| format!("SELECT {} FROM m", nest("(", "v", ")", n)),
                MAX_DEPTH - 1,
            ),
            (
                "a chain of +",
                |n| format!("SELECT {} FROM m", chain("v", " + ", n)),
                MAX_DEPTH,
            ),
            (
                "a right-grouping chain",
                |n| format!("SELECT {} FROM m", nest("v - (", "v", ")", n)),
                (MAX_DEPTH - 1) / 2,
            ),
            (
                "nested calls",
                |n| format!("SELECT {} FROM m", nest("cumulative_sum(", "v", ")", n)),
                MAX_DEPTH - 1,
            ),
            (
                "an OR chain",
                |n| format!("SELECT v FROM m WHERE {}", chain("host = 'h'", " OR ", n)),
                MAX_DEPTH - 1,
            ),
            (
                "an AND chain of ORs in a SHOW",
                |n| {
                    let condition = chain("(host = 'a' OR host = 'b')", " AND ", n);
                    format!("SHOW TAG VALUES WITH KEY = host WHERE {condition}")
                },
                // Each term is a parenthesis, an OR and a comparison: four levels.
                MAX_DEPTH - 3,
            ),
            (
                "distinct inside calls",
                |n| format!("SELECT {} FROM m", nest("count(", "DISTINCT v", ")", n)),
                MAX_DEPTH - 2,
            ),
        ]
    }

    #[test]
    fn the_message_names_the_limit() {
        assert!(TOO_DEEP.contains(&format!("at most {MAX_DEPTH} levels")));
    }

    #[test]
    fn every_shape_parses_up_to_the_limit_and_is_refused_past_it() {
        for (what, text, most) in shapes() {
            if let Err(e) = parse_on_small_stack(text(most)) {
                panic!("{what} at {most}: {e}");
            }
            match parse_on_small_stack(text(most + 1)) {
                Err(e) => assert_eq!(e.expected, TOO_DEEP, "{what}: {e}"),
                Ok(_) => panic!("{what} at {} parsed", most + 1),
            }
        }
    }

    #[test]
    fn far_past_the_limit_is_refused_at_the_level_past_it() {
        for (what, text, _) in shapes() {
            let e = parse_on_small_stack(text(100_000)).expect_err(what);
            assert_eq!(e.expected, TOO_DEEP, "{what}: {e}");
        }
        let e = parse_statement(&format!("SELECT {} FROM m", nest("(", "v", ")", 10_000)))
            .expect_err("too deep");
        assert_eq!(
            e.to_string(),
            format!(
                "found (, expected {TOO_DEEP} at line 1, char {}",
                8 + MAX_DEPTH
            )
        );
        let e = parse_statement(&format!("SELECT {} FROM m", chain("v", " + ", 10_000)))
            .expect_err("too deep");
        assert_eq!(e.found, "+", "{e}");
    }
}
