//! Statements: `SELECT`, the `SHOW`s of the subset, `CREATE DATABASE`, `DROP DATABASE`,
//! `CREATE`/`ALTER`/`DROP RETENTION POLICY`.

use winnow::combinator::{alt, cut_err, opt, preceded, separated};
use winnow::prelude::*;

use crate::ast::*;
use crate::expr::expr;
use crate::lex::{
    count, duration, expected, fail_expected, ident, kw, numeric, one_of_these, regex, string, sym,
    In, Numeric,
};

/// The statements the parser takes, as its errors name them.
pub const STATEMENTS: &str =
    "SELECT, SHOW, CREATE DATABASE, DROP DATABASE, CREATE/ALTER/DROP RETENTION POLICY";

pub fn statement(i: &mut In<'_>) -> ModalResult<Statement> {
    one_of_these(
        STATEMENTS,
        alt((
            preceded(kw("SELECT"), cut_err(select)).map(|s| Statement::Select(Box::new(s))),
            preceded(kw("SHOW"), cut_err(show)),
            preceded(
                kw("CREATE"),
                cut_err(one_of_these(
                    "DATABASE, RETENTION",
                    alt((
                        preceded(kw("DATABASE"), cut_err(create_database)),
                        preceded(
                            (kw("RETENTION"), cut_err(kw("POLICY"))),
                            cut_err(create_policy),
                        ),
                    )),
                )),
            ),
            preceded(
                kw("DROP"),
                cut_err(one_of_these(
                    "DATABASE, RETENTION",
                    alt((
                        preceded(kw("DATABASE"), cut_err(ident)).map(Statement::DropDatabase),
                        preceded((kw("RETENTION"), cut_err(kw("POLICY"))), cut_err(policy_on)).map(
                            |(name, database)| Statement::DropRetentionPolicy { name, database },
                        ),
                    )),
                )),
            ),
            preceded(
                (kw("ALTER"), cut_err(kw("RETENTION")), cut_err(kw("POLICY"))),
                cut_err(alter_policy),
            ),
        )),
    )
    .parse_next(i)
}

/// `rp ON db`.
fn policy_on(i: &mut In<'_>) -> ModalResult<(String, String)> {
    let name = ident(i)?;
    kw("ON").parse_next(i)?;
    let database = cut_err(ident).parse_next(i)?;
    Ok((name, database))
}

/// A policy's duration: a positive duration literal, `0s`, or `INF` (forever, 0).
fn policy_duration(i: &mut In<'_>) -> ModalResult<i64> {
    if opt(kw("INF")).parse_next(i)?.is_some() {
        return Ok(0);
    }
    let start = *i;
    let ns = duration.parse_next(i)?;
    if ns < 0 {
        *i = start;
        return fail_expected("duration");
    }
    Ok(ns)
}

/// `REPLICATION n`'s n: InfluxDB's 1 to 2³¹ − 1.
fn replication(i: &mut In<'_>) -> ModalResult<u32> {
    let start = *i;
    match count.parse_next(i)? {
        n @ 1..=0x7fff_ffff => Ok(n as u32),
        _ => {
            *i = start;
            fail_expected("integer from 1 to 2147483647")
        }
    }
}

fn create_database(i: &mut In<'_>) -> ModalResult<Statement> {
    let name = ident(i)?;
    if opt(kw("WITH")).parse_next(i)?.is_none() {
        return Ok(Statement::CreateDatabase { name, with: None });
    }
    let mut with = PolicyDefinition::default();
    let mut any = false;
    if opt(kw("DURATION")).parse_next(i)?.is_some() {
        with.duration = Some(cut_err(policy_duration).parse_next(i)?);
        any = true;
    }
    if opt(kw("REPLICATION")).parse_next(i)?.is_some() {
        with.replication = Some(cut_err(replication).parse_next(i)?);
        any = true;
    }
    if opt(kw("SHARD")).parse_next(i)?.is_some() {
        cut_err(kw("DURATION")).parse_next(i)?;
        with.shard_duration = Some(cut_err(policy_duration).parse_next(i)?);
        any = true;
    }
    if opt(kw("NAME")).parse_next(i)?.is_some() {
        with.name = Some(cut_err(ident).parse_next(i)?);
        any = true;
    }
    if !any {
        return fail_expected("DURATION, NAME, REPLICATION, SHARD");
    }
    Ok(Statement::CreateDatabase {
        name,
        with: Some(with),
    })
}

fn create_policy(i: &mut In<'_>) -> ModalResult<Statement> {
    let (name, database) = policy_on(i)?;
    cut_err(kw("DURATION")).parse_next(i)?;
    let duration = cut_err(policy_duration).parse_next(i)?;
    cut_err(kw("REPLICATION")).parse_next(i)?;
    let replication = cut_err(replication).parse_next(i)?;
    let shard_duration = opt(preceded(
        (kw("SHARD"), cut_err(kw("DURATION"))),
        cut_err(policy_duration),
    ))
    .parse_next(i)?;
    let default = opt(kw("DEFAULT")).parse_next(i)?.is_some();
    Ok(Statement::CreateRetentionPolicy {
        name,
        database,
        duration,
        replication,
        shard_duration,
        default,
    })
}

/// `ALTER RETENTION POLICY rp ON db` and its clauses in any order, each at most once.
fn alter_policy(i: &mut In<'_>) -> ModalResult<Statement> {
    let (name, database) = policy_on(i)?;
    let (mut duration, mut replication_n, mut shard_duration, mut default) =
        (None, None, None, false);
    loop {
        let start = *i;
        if duration.is_none() && opt(kw("DURATION")).parse_next(i)?.is_some() {
            duration = Some(cut_err(policy_duration).parse_next(i)?);
        } else if replication_n.is_none() && opt(kw("REPLICATION")).parse_next(i)?.is_some() {
            replication_n = Some(cut_err(replication).parse_next(i)?);
        } else if shard_duration.is_none() && opt(kw("SHARD")).parse_next(i)?.is_some() {
            cut_err(kw("DURATION")).parse_next(i)?;
            shard_duration = Some(cut_err(policy_duration).parse_next(i)?);
        } else if !default && opt(kw("DEFAULT")).parse_next(i)?.is_some() {
            default = true;
        }
        if *i == start {
            break;
        }
    }
    if duration.is_none() && replication_n.is_none() && shard_duration.is_none() && !default {
        return fail_expected("DURATION, REPLICATION, SHARD, DEFAULT");
    }
    Ok(Statement::AlterRetentionPolicy {
        name,
        database,
        duration,
        replication: replication_n,
        shard_duration,
        default,
    })
}

fn select(i: &mut In<'_>) -> ModalResult<Select> {
    let fields = separated(1.., field, sym(",")).parse_next(i)?;
    kw("FROM").parse_next(i)?;
    let from = sources(i)?;
    let condition = opt(preceded(kw("WHERE"), cut_err(expr))).parse_next(i)?;
    let group_by = opt(preceded(
        (kw("GROUP"), cut_err(kw("BY"))),
        cut_err(dimensions),
    ))
    .parse_next(i)?
    .unwrap_or_default();
    let fill = opt(fill).parse_next(i)?;
    let descending = opt(preceded(
        (kw("ORDER"), cut_err(kw("BY")), cut_err(kw("time"))),
        cut_err(opt(alt((kw("ASC").value(false), kw("DESC").value(true))))),
    ))
    .parse_next(i)?
    .flatten()
    .unwrap_or(false);
    let limit = opt(preceded(kw("LIMIT"), cut_err(count))).parse_next(i)?;
    let offset = opt(preceded(kw("OFFSET"), cut_err(count))).parse_next(i)?;
    let slimit = opt(preceded(kw("SLIMIT"), cut_err(count))).parse_next(i)?;
    let soffset = opt(preceded(kw("SOFFSET"), cut_err(count))).parse_next(i)?;
    let timezone = opt(preceded(
        (kw("tz"), cut_err(sym("("))),
        cut_err((string, sym(")")).map(|(s, _)| s)),
    ))
    .parse_next(i)?;
    Ok(Select {
        fields,
        from,
        condition,
        group_by,
        fill,
        descending,
        limit,
        offset,
        slimit,
        soffset,
        timezone,
    })
}

fn field(i: &mut In<'_>) -> ModalResult<Field> {
    let expr = expr.parse_next(i)?;
    let alias = opt(preceded(kw("AS"), cut_err(ident))).parse_next(i)?;
    Ok(Field { expr, alias })
}

fn sources(i: &mut In<'_>) -> ModalResult<Vec<Source>> {
    separated(1.., one_of_these("identifier, regex", source), sym(",")).parse_next(i)
}

/// `m`, `rp.m`, `db.rp.m` (the retention policy is not tickertape's), `/re/`.
fn source(i: &mut In<'_>) -> ModalResult<Source> {
    if let Some(r) = opt(regex).parse_next(i)? {
        return Ok(Source::Regex(r));
    }
    let first = ident(i)?;
    if opt(sym(".")).parse_next(i)?.is_none() {
        return Ok(measurement(None, None, first));
    }
    // `db..m` names the database's default retention policy.
    let second = opt(ident).parse_next(i)?;
    if opt(sym(".")).parse_next(i)?.is_some() {
        let name = cut_err(ident).parse_next(i)?;
        return Ok(measurement(Some(first), second, name));
    }
    match second {
        Some(name) => Ok(measurement(None, Some(first), name)),
        None => fail_expected("identifier"),
    }
}

fn measurement(database: Option<String>, retention_policy: Option<String>, name: String) -> Source {
    Source::Measurement {
        database,
        retention_policy,
        name,
    }
}

fn dimensions(i: &mut In<'_>) -> ModalResult<Vec<Dimension>> {
    separated(1.., one_of_these("time(), tag key, *", dimension), sym(",")).parse_next(i)
}

fn dimension(i: &mut In<'_>) -> ModalResult<Dimension> {
    alt((
        preceded((kw("time"), sym("(")), cut_err(time_dimension)),
        sym("*").value(Dimension::Wildcard),
        // `"host"::tag`, as Grafana may write a tag key; the cast says nothing more here.
        (ident, opt((sym("::"), kw("tag")))).map(|(k, _)| Dimension::Tag(k)),
    ))
    .parse_next(i)
}

fn time_dimension(i: &mut In<'_>) -> ModalResult<Dimension> {
    let interval = duration.parse_next(i)?;
    if interval <= 0 {
        return fail_expected("positive duration");
    }
    let offset = opt(preceded(sym(","), cut_err(duration))).parse_next(i)?;
    sym(")").parse_next(i)?;
    Ok(Dimension::Time { interval, offset })
}

fn fill(i: &mut In<'_>) -> ModalResult<Fill> {
    preceded(
        (kw("fill"), sym("(")),
        cut_err((
            alt((
                kw("null").value(Fill::Null),
                kw("none").value(Fill::None),
                kw("previous").value(Fill::Previous),
                kw("linear").value(Fill::Linear),
                numeric.map(|n| match n {
                    Numeric::Integer(n) => Fill::Number(n as f64),
                    Numeric::Number(x) => Fill::Number(x),
                    Numeric::Duration(ns) => Fill::Number(ns as f64),
                }),
            ))
            .context(expected("null, none, previous, linear, number")),
            sym(")"),
        )),
    )
    .map(|(f, _)| f)
    .parse_next(i)
}

/// `ON db` after `SHOW …`: the database the statement is about.
fn on_database(i: &mut In<'_>) -> ModalResult<Option<String>> {
    opt(preceded(kw("ON"), cut_err(ident))).parse_next(i)
}

/// `[ON db] [FROM sources]`.
fn from(i: &mut In<'_>) -> ModalResult<(Option<String>, Vec<Source>)> {
    let on = on_database(i)?;
    let sources = opt(preceded(kw("FROM"), cut_err(sources))).parse_next(i)?;
    Ok((on, sources.unwrap_or_default()))
}

fn condition(i: &mut In<'_>) -> ModalResult<Option<Expr>> {
    opt(preceded(kw("WHERE"), cut_err(expr))).parse_next(i)
}

fn limit(i: &mut In<'_>) -> ModalResult<Option<u64>> {
    opt(preceded(kw("LIMIT"), cut_err(count))).parse_next(i)
}

fn offset(i: &mut In<'_>) -> ModalResult<Option<u64>> {
    opt(preceded(kw("OFFSET"), cut_err(count))).parse_next(i)
}

fn show_field_keys(i: &mut In<'_>) -> ModalResult<Statement> {
    let (on, from) = from(i)?;
    let limit = limit(i)?;
    let offset = offset(i)?;
    Ok(Statement::ShowFieldKeys {
        on,
        from,
        limit,
        offset,
    })
}

fn show(i: &mut In<'_>) -> ModalResult<Statement> {
    let what =
        "MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES, RETENTION POLICIES, DATABASES";
    one_of_these(
        what,
        alt((
            preceded(kw("MEASUREMENTS"), show_measurements),
            preceded((kw("TAG"), kw("KEYS")), show_tag_keys),
            preceded((kw("TAG"), kw("VALUES")), show_tag_values),
            preceded((kw("FIELD"), cut_err(kw("KEYS"))), show_field_keys),
            preceded(kw("SERIES"), show_series),
            preceded((kw("RETENTION"), cut_err(kw("POLICIES"))), on_database)
                .map(|on| Statement::ShowRetentionPolicies { on }),
            kw("DATABASES").value(Statement::ShowDatabases),
        )),
    )
    .parse_next(i)
}

fn show_measurements(i: &mut In<'_>) -> ModalResult<Statement> {
    let on = on_database(i)?;
    let with = opt(preceded(
        (kw("WITH"), cut_err(kw("MEASUREMENT"))),
        cut_err(alt((
            preceded(sym("=~"), regex).map(MeasurementFilter::Regex),
            preceded(sym("="), ident).map(MeasurementFilter::Name),
        ))),
    ))
    .parse_next(i)?;
    let condition = condition(i)?;
    let limit = limit(i)?;
    let offset = offset(i)?;
    Ok(Statement::ShowMeasurements {
        on,
        with,
        condition,
        limit,
        offset,
    })
}

fn show_tag_keys(i: &mut In<'_>) -> ModalResult<Statement> {
    let (on, from) = from(i)?;
    let condition = condition(i)?;
    let limit = limit(i)?;
    let offset = offset(i)?;
    Ok(Statement::ShowTagKeys {
        on,
        from,
        condition,
        limit,
        offset,
    })
}

fn show_tag_values(i: &mut In<'_>) -> ModalResult<Statement> {
    let (on, from) = from(i)?;
    cut_err((kw("WITH"), kw("KEY"))).parse_next(i)?;
    let key = cut_err(one_of_these(
        "=, !=, =~, !~, IN",
        alt((
            preceded(sym("=~"), regex).map(TagKeyFilter::Regex),
            preceded(sym("!~"), regex).map(TagKeyFilter::NotRegex),
            preceded(sym("!="), ident).map(TagKeyFilter::NotEq),
            preceded(sym("="), ident).map(TagKeyFilter::Eq),
            preceded(
                (kw("IN"), sym("(")),
                cut_err((separated(1.., ident, sym(",")), sym(")"))),
            )
            .map(|(keys, _)| TagKeyFilter::In(keys)),
        )),
    ))
    .parse_next(i)?;
    let condition = condition(i)?;
    let limit = limit(i)?;
    let offset = offset(i)?;
    Ok(Statement::ShowTagValues {
        on,
        from,
        key,
        condition,
        limit,
        offset,
    })
}

fn show_series(i: &mut In<'_>) -> ModalResult<Statement> {
    let (on, from) = from(i)?;
    let condition = condition(i)?;
    let limit = limit(i)?;
    let offset = offset(i)?;
    Ok(Statement::ShowSeries {
        on,
        from,
        condition,
        limit,
        offset,
    })
}
