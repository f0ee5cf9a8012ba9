//! InfluxQL's regexes (`/…/`), compiled in one place: the `regex` crate bounds a pattern's
//! nesting (250 groups) and its compiled size (10 MiB), so no pattern can exhaust the
//! stack or memory. Every regex of a query is compiled before any statement runs, and one
//! that does not compile refuses the whole query with a 400, as InfluxDB refuses it while
//! parsing; the statements then compile each again where they use it.

use crate::{Expr, MeasurementFilter, Query, Source, Statement, TagKeyFilter};
use regex::Regex;

/// `pattern` compiled, or why not, naming it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| format!("invalid regex /{pattern}/: {e}"))
}

/// Every regex of `query` compiles.
pub fn check(query: &Query) -> Result<(), String> {
    let mut patterns = Vec::new();
    for statement in &query.statements {
        statement_patterns(statement, &mut patterns);
    }
    patterns.into_iter().try_for_each(|p| compile(p).map(drop))
}

fn statement_patterns<'a>(statement: &'a Statement, out: &mut Vec<&'a str>) {
    let (from, condition): (&[Source], Option<&Expr>) = match statement {
        Statement::Select(select) => {
            for field in &select.fields {
                expr_patterns(&field.expr, out);
            }
            (&select.from, select.condition.as_ref())
        }
        Statement::ShowMeasurements {
            with, condition, ..
        } => {
            if let Some(MeasurementFilter::Regex(r)) = with {
                out.push(r);
            }
            (&[], condition.as_ref())
        }
        Statement::ShowTagValues {
            from,
            key,
            condition,
            ..
        } => {
            if let TagKeyFilter::Regex(r) | TagKeyFilter::NotRegex(r) = key {
                out.push(r);
            }
            (from, condition.as_ref())
        }
        Statement::ShowTagKeys {
            from, condition, ..
        }
        | Statement::ShowSeries {
            from, condition, ..
        } => (from, condition.as_ref()),
        Statement::ShowFieldKeys { from, .. } => (from, None),
        Statement::ShowRetentionPolicies { .. }
        | Statement::ShowDatabases
        | Statement::CreateDatabase { .. }
        | Statement::DropDatabase(_)
        | Statement::CreateRetentionPolicy { .. }
        | Statement::AlterRetentionPolicy { .. }
        | Statement::DropRetentionPolicy { .. } => (&[], None),
    };
    for source in from {
        if let Source::Regex(r) = source {
            out.push(r);
        }
    }
    if let Some(condition) = condition {
        expr_patterns(condition, out);
    }
}

/// The expression's regexes. Recursive: the parser bounds its depth
/// (`crate::MAX_DEPTH`).
fn expr_patterns<'a>(expr: &'a Expr, out: &mut Vec<&'a str>) {
    match expr {
        Expr::Regex(r) => out.push(r),
        Expr::Binary { lhs, rhs, .. } => {
            expr_patterns(lhs, out);
            expr_patterns(rhs, out);
        }
        Expr::Call { args, .. } => args.iter().for_each(|a| expr_patterns(a, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_text(text: &str) -> Result<(), String> {
        check(&crate::parse(text).expect("parses"))
    }

    #[test]
    fn every_place_a_regex_can_be_is_checked() {
        assert_eq!(check_text("SELECT v FROM /m/ WHERE host =~ /a|b/"), Ok(()));
        for bad in [
            "SELECT v FROM m WHERE host =~ /(/",
            "SELECT v FROM m WHERE host !~ /(/ AND time > 0",
            "SELECT v FROM /(/",
            "SHOW MEASUREMENTS WITH MEASUREMENT =~ /(/",
            "SHOW TAG VALUES WITH KEY =~ /(/",
            "SHOW TAG VALUES FROM /(/ WITH KEY = host",
            "SHOW SERIES WHERE host =~ /(/",
            "SHOW TAG KEYS FROM m WHERE host =~ /(/",
            "SHOW FIELD KEYS FROM /(/",
            "SELECT count(v) FROM m; SELECT v FROM m WHERE a = 'x' OR b =~ /(/",
        ] {
            let e = check_text(bad).expect_err(bad);
            assert!(e.starts_with("invalid regex /(/"), "{bad}: {e}");
        }
        let huge = check_text("SELECT v FROM m WHERE host =~ /a{1000}{1000}/").expect_err("huge");
        assert!(huge.contains("size limit"), "{huge}");
    }
}
