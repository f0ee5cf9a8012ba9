//! What InfluxDB 1.x names a statement's columns, and when its rows carry the selected
//! point's time: rules of the language rather than of any one computation.

use crate::{Expr, Field};

/// A column's name before conflicts are resolved: the alias; else a call's name; else a
/// field's; else, for arithmetic, the names of its calls and fields joined by `_`
/// (`max("a") - min("a")` is `max_min`, `"a" * 2` is `a`), as InfluxDB names them.
fn field_name(f: &Field) -> String {
    if let Some(alias) = &f.alias {
        return alias.clone();
    }
    match &f.expr {
        Expr::Call { name, .. } | Expr::Var { name, .. } => name.clone(),
        e @ Expr::Binary { .. } => {
            let mut names = Vec::new();
            binary_names(e, &mut names);
            names.join("_")
        }
        _ => String::new(),
    }
}

/// The calls and fields of an arithmetic expression, left to right, not inside calls.
fn binary_names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Call { name, .. } | Expr::Var { name, .. } => out.push(name.clone()),
        Expr::Binary { lhs, rhs, .. } => {
            binary_names(lhs, out);
            binary_names(rhs, out);
        }
        _ => {}
    }
}

/// The selected columns' names (without `time`). Aliases are kept as written, repeated
/// ones included; a generated name that is already taken gets the first free `_N`
/// suffix (`max`, `max_1`), as InfluxDB resolves them.
pub fn column_names(fields: &[Field]) -> Vec<String> {
    let mut taken: std::collections::HashMap<String, usize> = fields
        .iter()
        .filter_map(|f| f.alias.clone().map(|a| (a, 1)))
        .collect();
    fields
        .iter()
        .map(|f| {
            if let Some(alias) = &f.alias {
                return alias.clone();
            }
            let mut name = field_name(f);
            if let Some(&count) = taken.get(&name) {
                let mut n = count;
                loop {
                    let candidate = format!("{name}_{n}");
                    if !taken.contains_key(&candidate) {
                        taken.insert(name.clone(), n + 1);
                        name = candidate;
                        break;
                    }
                    n += 1;
                }
            }
            *taken.entry(name.clone()).or_insert(0) += 1;
            name
        })
        .collect()
}

/// Selectors: a point's value, so its time and its row's other columns can answer.
pub fn is_selector_name(name: &str) -> bool {
    matches!(
        name,
        "first" | "last" | "min" | "max" | "percentile" | "sample" | "top" | "bottom"
    )
}

/// Whether a statement answers its selected point's own time (without `GROUP BY
/// time()`): when its fields hold exactly one distinct call, and that call is a
/// selector — `max("a")`, `max("a") * 2`, `max("a"), "host"` — but not `max("a"),
/// min("a")` (the range's start then).
pub fn single_selector(fields: &[Field]) -> bool {
    let mut calls: Vec<&Expr> = Vec::new();
    for f in fields {
        outer_calls(&f.expr, &mut calls);
    }
    // Calls compared as trees: two print alike exactly when they are equal, since a
    // statement's text parses back to the same tree.
    match calls.split_first() {
        Some((Expr::Call { name, .. }, rest)) if rest.iter().all(|c| *c == calls[0]) => {
            is_selector_name(name)
        }
        _ => false,
    }
}

/// The outermost calls of `e`.
fn outer_calls<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Call { .. } => out.push(e),
        Expr::Binary { lhs, rhs, .. } => {
            outer_calls(lhs, out);
            outer_calls(rhs, out);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Field> {
        let q = format!("SELECT {text} FROM m");
        match crate::parse_statement(&q) {
            Ok(crate::Statement::Select(s)) => s.fields,
            other => panic!("{q}: {other:?}"),
        }
    }

    #[test]
    fn columns_are_named_as_influxdb_names_them() {
        let names = |t: &str| column_names(&fields(t));
        assert_eq!(names(r#"max("a") - min("a")"#), ["max_min"]);
        assert_eq!(names(r#"first("a") + mean("a") * 2"#), ["first_mean"]);
        assert_eq!(names(r#""a" + "b", "a" * 2"#), ["a_b", "a"]);
        assert_eq!(
            names(r#"max("a"), max("a"), max("b")"#),
            ["max", "max_1", "max_2"]
        );
        assert_eq!(names(r#"max("a") AS x, min("a") AS x"#), ["x", "x"]);
        assert_eq!(
            names(r#"max("a") AS max_1, max("a"), max("b")"#),
            ["max_1", "max", "max_2"]
        );
    }

    #[test]
    fn only_a_lone_selector_answers_its_points_time() {
        let lone = |t: &str| single_selector(&fields(t));
        assert!(lone(r#"max("a")"#));
        assert!(lone(r#"max("a") * 2, "host""#));
        assert!(lone(r#"max("a"), max("a")"#));
        assert!(!lone(r#"max("a"), min("a")"#));
        assert!(!lone(r#"mean("a")"#));
        assert!(!lone(r#"derivative(max("a"))"#));
    }
}
