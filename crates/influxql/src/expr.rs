//! Expressions by precedence climbing: OR < AND < comparisons < `+ -` < `* / %`, all
//! grouping to the left, as InfluxDB's parser does. Parentheses leave no node behind.

use winnow::ascii::multispace0;
use winnow::combinator::{alt, cut_err, opt, separated};
use winnow::prelude::*;

use crate::ast::{BinaryOp, Expr, VarKind};
use crate::lex::{expected, ident, kw, numeric, one_of_these, regex, string, sym, In, Numeric};

pub fn expr(i: &mut In<'_>) -> ModalResult<Expr> {
    climb(i, 1)
}

fn climb(i: &mut In<'_>, min: u8) -> ModalResult<Expr> {
    let mut lhs = unary(i)?;
    loop {
        let before = *i;
        match opt(operator).parse_next(i)? {
            Some(op) if op.precedence() >= min => {
                let rhs = cut_err(|i: &mut In<'_>| climb(i, op.precedence() + 1))
                    .context(expected("expression"))
                    .parse_next(i)?;
                lhs = Expr::binary(op, lhs, rhs);
            }
            _ => {
                *i = before;
                return Ok(lhs);
            }
        }
    }
}

fn operator(i: &mut In<'_>) -> ModalResult<BinaryOp> {
    use BinaryOp::*;
    alt((
        sym("=~").value(RegexMatch),
        sym("!~").value(RegexNotMatch),
        sym("!=").value(NotEq),
        sym("<>").value(NotEq),
        sym("<=").value(LtEq),
        sym(">=").value(GtEq),
        sym("=").value(Eq),
        sym("<").value(Lt),
        sym(">").value(Gt),
        sym("+").value(Add),
        sym("-").value(Sub),
        sym("*").value(Mul),
        sym("/").value(Div),
        sym("%").value(Mod),
        kw("AND").value(And),
        kw("OR").value(Or),
    ))
    .parse_next(i)
}

/// A literal, a name, a call, a wildcard or a parenthesised expression.
fn unary(i: &mut In<'_>) -> ModalResult<Expr> {
    one_of_these(
        "identifier, string, number, bool",
        alt((
            parenthesised,
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
            call,
            (ident, opt(kind)).map(|(name, kind)| Expr::Var { name, kind }),
        )),
    )
    .parse_next(i)
}

fn parenthesised(i: &mut In<'_>) -> ModalResult<Expr> {
    sym("(").parse_next(i)?;
    let e = cut_err(expr).parse_next(i)?;
    cut_err(sym(")")).parse_next(i)?;
    Ok(e)
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

/// `name(args)`; `distinct` is a keyword and a function, and `DISTINCT f` (a field name
/// after the keyword, as InfluxDB takes it) is `distinct(f)`.
fn call(i: &mut In<'_>) -> ModalResult<Expr> {
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
        return Ok(Expr::Call {
            name,
            args: vec![Expr::var(&field)],
        });
    }
    if !i.starts_with('(') {
        *i = start;
        return winnow::combinator::fail(i);
    }
    sym("(").parse_next(i)?;
    let args: Vec<Expr> = separated(0.., expr, sym(",")).parse_next(i)?;
    cut_err(sym(")")).parse_next(i)?;
    Ok(Expr::Call {
        name: name.to_ascii_lowercase(),
        args,
    })
}
