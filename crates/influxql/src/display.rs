//! InfluxQL text for the AST: names always double-quoted, keywords upper case, the fewest
//! parentheses that keep the tree (a child binds weaker than its parent, or as weakly on
//! the right, since operators group to the left).

use std::fmt::{self, Display, Formatter, Write};

use crate::ast::*;

/// `"name"`, with `"` and `\` escaped.
pub struct Ident<'a>(pub &'a str);

impl Display for Ident<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            if c == '"' || c == '\\' {
                f.write_char('\\')?;
            }
            f.write_char(c)?;
        }
        f.write_char('"')
    }
}

struct Regex<'a>(&'a str);

impl Display for Regex<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // Only `/` is escaped: every other backslash is the pattern's own.
        write!(f, "/{}/", self.0.replace('/', "\\/"))
    }
}

struct Str<'a>(&'a str);

impl Display for Str<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('\'')?;
        for c in self.0.chars() {
            match c {
                '\'' | '\\' => write!(f, "\\{c}")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('\'')
    }
}

/// A duration in the largest unit that holds it exactly.
pub struct Duration(pub i64);

/// A retention policy's duration: [`Duration`], `INF` for 0 (forever).
pub struct PolicyDuration(pub i64);

impl Display for PolicyDuration {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("INF"),
            ns => write!(f, "{}", Duration(ns)),
        }
    }
}

impl Display for Duration {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        const UNITS: [(i64, &str); 7] = [
            (604_800_000_000_000, "w"),
            (86_400_000_000_000, "d"),
            (3_600_000_000_000, "h"),
            (60_000_000_000, "m"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "u"),
        ];
        let ns = self.0;
        match UNITS.iter().find(|(size, _)| ns != 0 && ns % size == 0) {
            Some((size, unit)) => write!(f, "{}{unit}", ns / size),
            None => write!(f, "{ns}ns"),
        }
    }
}

fn number(f: &mut Formatter<'_>, x: f64) -> fmt::Result {
    // Debug keeps a `.0` on whole numbers, so a float never reads back as an integer.
    write!(f, "{x:?}")
}

fn kind(f: &mut Formatter<'_>, kind: Option<VarKind>) -> fmt::Result {
    match kind {
        Some(VarKind::Field) => f.write_str("::field"),
        Some(VarKind::Tag) => f.write_str("::tag"),
        None => Ok(()),
    }
}

fn list<T>(
    f: &mut Formatter<'_>,
    items: &[T],
    mut each: impl FnMut(&mut Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        each(f, item)?;
    }
    Ok(())
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Var { name, kind: k } => {
                write!(f, "{}", Ident(name))?;
                kind(f, *k)
            }
            Expr::Wildcard(k) => {
                f.write_char('*')?;
                kind(f, *k)
            }
            Expr::Integer(n) => write!(f, "{n}"),
            Expr::Number(x) => number(f, *x),
            Expr::String(s) => write!(f, "{}", Str(s)),
            Expr::Regex(r) => write!(f, "{}", Regex(r)),
            Expr::Boolean(b) => f.write_str(if *b { "true" } else { "false" }),
            Expr::Duration(ns) => write!(f, "{}", Duration(*ns)),
            Expr::Call { name, args } => {
                write!(f, "{}(", name.to_ascii_lowercase())?;
                list(f, args, |f, a| write!(f, "{a}"))?;
                f.write_char(')')
            }
            Expr::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                side(f, lhs, |q| q < p)?;
                write!(f, " {} ", op.symbol())?;
                side(f, rhs, |q| q <= p)
            }
        }
    }
}

/// One side of a binary expression, parenthesised when `needs` says it binds too weakly.
fn side(f: &mut Formatter<'_>, e: &Expr, needs: impl Fn(u8) -> bool) -> fmt::Result {
    match e {
        Expr::Binary { op, .. } if needs(op.precedence()) => write!(f, "({e})"),
        // A negative literal on the right of `-` would read as `--`: InfluxQL has no such
        // token, but `a - -1` is clearer with the space the symbol already gets.
        _ => write!(f, "{e}"),
    }
}

impl Display for Source {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Source::Measurement {
                database: Some(db),
                retention_policy,
                name,
            } => match retention_policy {
                Some(rp) => write!(f, "{}.{}.{}", Ident(db), Ident(rp), Ident(name)),
                None => write!(f, "{}..{}", Ident(db), Ident(name)),
            },
            Source::Measurement {
                retention_policy: Some(rp),
                name,
                ..
            } => write!(f, "{}.{}", Ident(rp), Ident(name)),
            Source::Measurement { name, .. } => write!(f, "{}", Ident(name)),
            Source::Regex(r) => write!(f, "{}", Regex(r)),
        }
    }
}

impl Display for Dimension {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Dimension::Time {
                interval,
                offset: None,
            } => write!(f, "time({})", Duration(*interval)),
            Dimension::Time {
                interval,
                offset: Some(o),
            } => write!(f, "time({}, {})", Duration(*interval), Duration(*o)),
            Dimension::Tag(t) => write!(f, "{}", Ident(t)),
            Dimension::Wildcard => f.write_char('*'),
        }
    }
}

impl Display for Fill {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("fill(")?;
        match self {
            Fill::Null => f.write_str("null")?,
            Fill::None => f.write_str("none")?,
            Fill::Previous => f.write_str("previous")?,
            Fill::Linear => f.write_str("linear")?,
            Fill::Number(x) => number(f, *x)?,
        }
        f.write_char(')')
    }
}

fn on(f: &mut Formatter<'_>, database: &Option<String>) -> fmt::Result {
    match database {
        Some(db) => write!(f, " ON {}", Ident(db)),
        None => Ok(()),
    }
}

fn from(f: &mut Formatter<'_>, sources: &[Source]) -> fmt::Result {
    if !sources.is_empty() {
        f.write_str(" FROM ")?;
        list(f, sources, |f, s| write!(f, "{s}"))?;
    }
    Ok(())
}

fn clause<T: Display>(f: &mut Formatter<'_>, keyword: &str, value: &Option<T>) -> fmt::Result {
    match value {
        Some(v) => write!(f, " {keyword} {v}"),
        None => Ok(()),
    }
}

impl Display for Select {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        list(f, &self.fields, |f, field| {
            write!(f, "{}", field.expr)?;
            match &field.alias {
                Some(a) => write!(f, " AS {}", Ident(a)),
                None => Ok(()),
            }
        })?;
        from(f, &self.from)?;
        clause(f, "WHERE", &self.condition)?;
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            list(f, &self.group_by, |f, d| write!(f, "{d}"))?;
        }
        if let Some(fill) = &self.fill {
            write!(f, " {fill}")?;
        }
        if self.descending {
            f.write_str(" ORDER BY time DESC")?;
        }
        clause(f, "LIMIT", &self.limit)?;
        clause(f, "OFFSET", &self.offset)?;
        clause(f, "SLIMIT", &self.slimit)?;
        clause(f, "SOFFSET", &self.soffset)?;
        match &self.timezone {
            Some(tz) => write!(f, " tz({})", Str(tz)),
            None => Ok(()),
        }
    }
}

impl Display for TagKeyFilter {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TagKeyFilter::Eq(k) => write!(f, "= {}", Ident(k)),
            TagKeyFilter::NotEq(k) => write!(f, "!= {}", Ident(k)),
            TagKeyFilter::In(keys) => {
                f.write_str("IN (")?;
                list(f, keys, |f, k| write!(f, "{}", Ident(k)))?;
                f.write_char(')')
            }
            TagKeyFilter::Regex(r) => write!(f, "=~ {}", Regex(r)),
            TagKeyFilter::NotRegex(r) => write!(f, "!~ {}", Regex(r)),
        }
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Select(s) => write!(f, "{s}"),
            Statement::ShowMeasurements {
                on: database,
                with,
                condition,
                limit,
                offset,
            } => {
                f.write_str("SHOW MEASUREMENTS")?;
                on(f, database)?;
                match with {
                    Some(MeasurementFilter::Name(n)) => {
                        write!(f, " WITH MEASUREMENT = {}", Ident(n))?
                    }
                    Some(MeasurementFilter::Regex(r)) => {
                        write!(f, " WITH MEASUREMENT =~ {}", Regex(r))?
                    }
                    None => {}
                }
                clause(f, "WHERE", condition)?;
                clause(f, "LIMIT", limit)?;
                clause(f, "OFFSET", offset)
            }
            Statement::ShowTagKeys {
                on: database,
                from: sources,
                condition,
                limit,
                offset,
            } => {
                f.write_str("SHOW TAG KEYS")?;
                on(f, database)?;
                from(f, sources)?;
                clause(f, "WHERE", condition)?;
                clause(f, "LIMIT", limit)?;
                clause(f, "OFFSET", offset)
            }
            Statement::ShowTagValues {
                on: database,
                from: sources,
                key,
                condition,
                limit,
                offset,
            } => {
                f.write_str("SHOW TAG VALUES")?;
                on(f, database)?;
                from(f, sources)?;
                write!(f, " WITH KEY {key}")?;
                clause(f, "WHERE", condition)?;
                clause(f, "LIMIT", limit)?;
                clause(f, "OFFSET", offset)
            }
            Statement::ShowFieldKeys {
                on: database,
                from: sources,
                limit,
                offset,
            } => {
                f.write_str("SHOW FIELD KEYS")?;
                on(f, database)?;
                from(f, sources)?;
                clause(f, "LIMIT", limit)?;
                clause(f, "OFFSET", offset)
            }
            Statement::ShowSeries {
                on: database,
                from: sources,
                condition,
                limit,
                offset,
            } => {
                f.write_str("SHOW SERIES")?;
                on(f, database)?;
                from(f, sources)?;
                clause(f, "WHERE", condition)?;
                clause(f, "LIMIT", limit)?;
                clause(f, "OFFSET", offset)
            }
            Statement::ShowRetentionPolicies { on: database } => {
                f.write_str("SHOW RETENTION POLICIES")?;
                on(f, database)
            }
            Statement::ShowDatabases => f.write_str("SHOW DATABASES"),
            Statement::CreateDatabase { name, with } => {
                write!(f, "CREATE DATABASE {}", Ident(name))?;
                let Some(with) = with else { return Ok(()) };
                f.write_str(" WITH")?;
                if let Some(d) = with.duration {
                    write!(f, " DURATION {}", PolicyDuration(d))?;
                }
                clause(f, "REPLICATION", &with.replication)?;
                if let Some(d) = with.shard_duration {
                    write!(f, " SHARD DURATION {}", PolicyDuration(d))?;
                }
                match &with.name {
                    Some(name) => write!(f, " NAME {}", Ident(name)),
                    None => Ok(()),
                }
            }
            Statement::DropDatabase(name) => write!(f, "DROP DATABASE {}", Ident(name)),
            Statement::CreateRetentionPolicy {
                name,
                database,
                duration,
                replication,
                shard_duration,
                default,
            } => {
                write!(
                    f,
                    "CREATE RETENTION POLICY {} ON {} DURATION {} REPLICATION {replication}",
                    Ident(name),
                    Ident(database),
                    PolicyDuration(*duration)
                )?;
                if let Some(d) = shard_duration {
                    write!(f, " SHARD DURATION {}", PolicyDuration(*d))?;
                }
                if *default {
                    f.write_str(" DEFAULT")?;
                }
                Ok(())
            }
            Statement::AlterRetentionPolicy {
                name,
                database,
                duration,
                replication,
                shard_duration,
                default,
            } => {
                write!(
                    f,
                    "ALTER RETENTION POLICY {} ON {}",
                    Ident(name),
                    Ident(database)
                )?;
                if let Some(d) = duration {
                    write!(f, " DURATION {}", PolicyDuration(*d))?;
                }
                clause(f, "REPLICATION", replication)?;
                if let Some(d) = shard_duration {
                    write!(f, " SHARD DURATION {}", PolicyDuration(*d))?;
                }
                if *default {
                    f.write_str(" DEFAULT")?;
                }
                Ok(())
            }
            Statement::DropRetentionPolicy { name, database } => write!(
                f,
                "DROP RETENTION POLICY {} ON {}",
                Ident(name),
                Ident(database)
            ),
        }
    }
}

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, statement) in self.statements.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{statement}")?;
        }
        Ok(())
    }
}
