//! One test per construct, with the texts Grafana's InfluxDB data source and the `influx`
//! shell send; a property test that printing and parsing gives the same tree.

use super::*;
use proptest::prelude::*;

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

fn select(text: &str) -> Select {
    match parse_statement(text) {
        Ok(Statement::Select(s)) => *s,
        other => panic!("{text}: {other:?}"),
    }
}

fn tag_regex(key: &str, re: &str) -> Expr {
    Expr::binary(BinaryOp::RegexMatch, Expr::var(key), Expr::Regex(re.into()))
}

fn time_cmp(op: BinaryOp, ns: i64) -> Expr {
    Expr::binary(op, Expr::var("time"), Expr::Duration(ns))
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Call {
        name: name.into(),
        args,
    }
}

/// Also checks that the printed form parses back to the same tree.
fn round_trip(text: &str) -> Statement {
    let parsed = parse_statement(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let printed = parsed.to_string();
    assert_eq!(parse_statement(&printed), Ok(parsed.clone()), "{printed}");
    parsed
}

#[test]
fn grafanas_default_query_with_tag_filter_and_time_bounds() {
    let text = r#"SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^server1$/) AND time >= 1596240000000ms and time <= 1596243600000ms GROUP BY time(10s), "host" fill(null)"#;
    let s = select(text);
    assert_eq!(
        s.fields,
        [Field {
            expr: call("mean", vec![Expr::var("usage_user")]),
            alias: None
        }]
    );
    assert_eq!(
        s.from,
        [Source::Measurement {
            database: None,
            retention_policy: None,
            name: "cpu".into()
        }]
    );
    let expected = Expr::binary(
        BinaryOp::And,
        Expr::binary(
            BinaryOp::And,
            tag_regex("host", "^server1$"),
            time_cmp(BinaryOp::GtEq, 1596240000000 * MS),
        ),
        time_cmp(BinaryOp::LtEq, 1596243600000 * MS),
    );
    assert_eq!(s.condition, Some(expected));
    assert_eq!(
        s.group_by,
        [
            Dimension::Time {
                interval: 10 * S,
                offset: None
            },
            Dimension::Tag("host".into())
        ]
    );
    assert_eq!(s.fill, Some(Fill::Null));
    round_trip(text);
}

#[test]
fn grafanas_relative_time_filter_and_retention_policy() {
    let text = r#"SELECT max("value") FROM "autogen"."mem" WHERE time > now() - 6h GROUP BY time(1m) fill(none)"#;
    let s = select(text);
    assert_eq!(
        s.from,
        [Source::Measurement {
            database: None,
            retention_policy: Some("autogen".into()),
            name: "mem".into()
        }]
    );
    let now_minus = Expr::binary(
        BinaryOp::Sub,
        call("now", vec![]),
        Expr::Duration(6 * 3600 * S),
    );
    assert_eq!(
        s.condition,
        Some(Expr::binary(BinaryOp::Gt, Expr::var("time"), now_minus))
    );
    assert_eq!(s.fill, Some(Fill::None));
    round_trip(text);
}

#[test]
fn every_aggregate_and_transformation_parses_with_aliases_and_arithmetic() {
    for name in [
        "mean", "median", "count", "sum", "min", "max", "first", "last", "spread", "stddev",
        "distinct",
    ] {
        let s = select(&format!(r#"SELECT {name}("v") AS "a" FROM "m""#));
        assert_eq!(s.fields[0].expr, call(name, vec![Expr::var("v")]));
        assert_eq!(s.fields[0].alias.as_deref(), Some("a"));
    }
    // `DISTINCT f`, the keyword form, is `distinct(f)`.
    for text in [
        r#"SELECT DISTINCT "v" FROM "m""#,
        "SELECT distinct v FROM m",
    ] {
        let s = select(text);
        assert_eq!(s.fields[0].expr, call("distinct", vec![Expr::var("v")]));
    }
    assert!(parse("SELECT DISTINCT FROM m").is_err());
    let s = select(r#"SELECT percentile("v", 95) FROM "m""#);
    assert_eq!(
        s.fields[0].expr,
        call("percentile", vec![Expr::var("v"), Expr::Integer(95)])
    );
    let s = select(
        r#"SELECT non_negative_derivative(mean("bytes_recv"), 1s) * 8 AS "bits" FROM "net" WHERE time >= now() - 1h GROUP BY time(1m)"#,
    );
    let inner = call("mean", vec![Expr::var("bytes_recv")]);
    let derivative = call("non_negative_derivative", vec![inner, Expr::Duration(S)]);
    assert_eq!(
        s.fields[0].expr,
        Expr::binary(BinaryOp::Mul, derivative, Expr::Integer(8))
    );
    for t in [
        "derivative(mean(\"v\"), 10s)",
        "difference(max(\"v\"))",
        "non_negative_difference(last(\"v\"))",
        "moving_average(mean(\"v\"), 3)",
        "cumulative_sum(sum(\"v\"))",
        "count(distinct(\"v\"))",
        "mean(\"v\") / 1024 + 1.5 - 2 % 3",
    ] {
        round_trip(&format!("SELECT {t} FROM \"m\" GROUP BY time(1m)"));
    }
    // Multiplication binds tighter than addition; operators group to the left.
    let s = select("SELECT a + b * 2 - c FROM m");
    let product = Expr::binary(BinaryOp::Mul, Expr::var("b"), Expr::Integer(2));
    let sum = Expr::binary(BinaryOp::Add, Expr::var("a"), product);
    assert_eq!(
        s.fields[0].expr,
        Expr::binary(BinaryOp::Sub, sum, Expr::var("c"))
    );
}

#[test]
fn raw_fields_wildcards_and_casts() {
    let s = select(r#"SELECT *, "usage_idle"::field, "host"::tag FROM cpu LIMIT 10"#);
    assert_eq!(s.fields[0].expr, Expr::Wildcard(None));
    assert_eq!(
        s.fields[1].expr,
        Expr::Var {
            name: "usage_idle".into(),
            kind: Some(VarKind::Field)
        }
    );
    assert_eq!(
        s.fields[2].expr,
        Expr::Var {
            name: "host".into(),
            kind: Some(VarKind::Tag)
        }
    );
    assert_eq!(s.limit, Some(10));
    let s = select("select *::field from cpu");
    assert_eq!(s.fields[0].expr, Expr::Wildcard(Some(VarKind::Field)));
}

#[test]
fn from_regex_and_several_measurements() {
    let s = select(r#"SELECT mean(*) FROM /^cpu.*/, "mem", "db"."rp"."disk""#);
    assert_eq!(s.from[0], Source::Regex("^cpu.*".into()));
    assert_eq!(
        s.from[2],
        Source::Measurement {
            database: Some("db".into()),
            retention_policy: Some("rp".into()),
            name: "disk".into()
        }
    );
    let s = select(r#"SELECT v FROM /a\/b/"#);
    assert_eq!(s.from[0], Source::Regex("a/b".into()));
    let s = select(r#"SELECT v FROM "app".."cpu""#);
    let app = Source::Measurement {
        database: Some("app".into()),
        retention_policy: None,
        name: "cpu".into(),
    };
    assert_eq!(s.from[0], app);
    assert_eq!(Statement::Select(Box::new(s)).database(), Some("app"));
    round_trip(r#"SELECT v FROM /a\/b\d/"#);
}

#[test]
fn where_tags_fields_or_parentheses_and_every_time_form() {
    let s = select(
        r#"SELECT v FROM m WHERE ("host"::tag = 'a' OR host != 'b') AND region !~ /eu/ AND v > 1.5 AND time >= '2020-08-01T00:00:00Z' AND time < 1596243600s"#,
    );
    let Some(Expr::Binary { op, .. }) = &s.condition else {
        panic!("{:?}", s.condition)
    };
    assert_eq!(*op, BinaryOp::And);
    round_trip(&s.to_string());
    for (text, ns) in [
        ("1ns", 1),
        ("1u", 1_000),
        ("1µ", 1_000),
        ("1ms", MS),
        ("1s", S),
        ("1m", 60 * S),
        ("1h", 3600 * S),
        ("1d", 86400 * S),
        ("1w", 7 * 86400 * S),
    ] {
        let s = select(&format!("SELECT v FROM m WHERE time > {text}"));
        assert_eq!(s.condition, Some(time_cmp(BinaryOp::Gt, ns)), "{text}");
    }
    // OR binds weaker than AND.
    let s = select("SELECT v FROM m WHERE a = 'x' OR b = 'y' AND c = 'z'");
    let Some(Expr::Binary { op, .. }) = s.condition else {
        panic!()
    };
    assert_eq!(op, BinaryOp::Or);
}

#[test]
fn group_by_fill_order_limits_and_timezone() {
    let s = select(
        r#"SELECT last("v") FROM "m" WHERE time > now() - 1d GROUP BY time(1h, 15m), * fill(previous) ORDER BY time DESC LIMIT 5 OFFSET 2 SLIMIT 3 SOFFSET 1 tz('Europe/Paris')"#,
    );
    assert_eq!(
        s.group_by,
        [
            Dimension::Time {
                interval: 3600 * S,
                offset: Some(15 * 60 * S)
            },
            Dimension::Wildcard
        ]
    );
    assert_eq!(s.fill, Some(Fill::Previous));
    assert!(s.descending);
    assert_eq!(
        (s.limit, s.offset, s.slimit, s.soffset),
        (Some(5), Some(2), Some(3), Some(1))
    );
    assert_eq!(s.timezone.as_deref(), Some("Europe/Paris"));
    for (text, fill) in [
        ("linear", Fill::Linear),
        ("0", Fill::Number(0.0)),
        ("-1.5", Fill::Number(-1.5)),
    ] {
        let s = select(&format!(
            "SELECT mean(v) FROM m GROUP BY time(1m) fill({text})"
        ));
        assert_eq!(s.fill, Some(fill));
    }
    assert!(!select("SELECT v FROM m ORDER BY time ASC").descending);
    let s = select(r#"SELECT mean(v) FROM m GROUP BY time(1m), "host"::tag"#);
    assert_eq!(s.group_by[1], Dimension::Tag("host".into()));
}

#[test]
fn show_statements_grafana_sends() {
    let cases = [
        (
            "SHOW MEASUREMENTS LIMIT 100",
            Statement::ShowMeasurements {
                on: None,
                with: None,
                condition: None,
                limit: Some(100),
                offset: None,
            },
        ),
        (
            "SHOW MEASUREMENTS WITH MEASUREMENT =~ /cpu/ LIMIT 100",
            Statement::ShowMeasurements {
                on: None,
                with: Some(MeasurementFilter::Regex("cpu".into())),
                condition: None,
                limit: Some(100),
                offset: None,
            },
        ),
        (
            r#"SHOW TAG KEYS FROM "cpu""#,
            Statement::ShowTagKeys {
                on: None,
                from: vec![Source::Measurement {
                    database: None,
                    retention_policy: None,
                    name: "cpu".into(),
                }],
                condition: None,
                limit: None,
                offset: None,
            },
        ),
        (
            r#"SHOW TAG VALUES FROM "cpu" WITH KEY = "host" WHERE "region" =~ /^eu$/"#,
            Statement::ShowTagValues {
                on: None,
                from: vec![Source::Measurement {
                    database: None,
                    retention_policy: None,
                    name: "cpu".into(),
                }],
                key: TagKeyFilter::Eq("host".into()),
                condition: Some(tag_regex("region", "^eu$")),
                limit: None,
                offset: None,
            },
        ),
        (
            r#"SHOW FIELD KEYS FROM "cpu""#,
            Statement::ShowFieldKeys {
                on: None,
                from: vec![Source::Measurement {
                    database: None,
                    retention_policy: None,
                    name: "cpu".into(),
                }],
                limit: None,
                offset: None,
            },
        ),
        (
            r#"SHOW RETENTION POLICIES on "telegraf""#,
            Statement::ShowRetentionPolicies {
                on: Some("telegraf".into()),
            },
        ),
        (
            r#"SHOW TAG KEYS ON "app" FROM "cpu""#,
            Statement::ShowTagKeys {
                on: Some("app".into()),
                from: vec![Source::Measurement {
                    database: None,
                    retention_policy: None,
                    name: "cpu".into(),
                }],
                condition: None,
                limit: None,
                offset: None,
            },
        ),
        (
            r#"DROP DATABASE "app""#,
            Statement::DropDatabase("app".into()),
        ),
        ("show databases", Statement::ShowDatabases),
        (
            r#"CREATE DATABASE "telegraf""#,
            Statement::CreateDatabase {
                name: "telegraf".into(),
                with: None,
            },
        ),
        (
            "CREATE DATABASE d2 WITH DURATION 3d REPLICATION 1 SHARD DURATION 1h NAME short",
            Statement::CreateDatabase {
                name: "d2".into(),
                with: Some(PolicyDefinition {
                    duration: Some(3 * 86_400 * S),
                    replication: Some(1),
                    shard_duration: Some(3_600 * S),
                    name: Some("short".into()),
                }),
            },
        ),
        (
            "create retention policy \"a b\" on d1 duration inf replication 2 default",
            Statement::CreateRetentionPolicy {
                name: "a b".into(),
                database: "d1".into(),
                duration: 0,
                replication: 2,
                shard_duration: None,
                default: true,
            },
        ),
        (
            "ALTER RETENTION POLICY one ON d1 DEFAULT SHARD DURATION 2h DURATION 0s",
            Statement::AlterRetentionPolicy {
                name: "one".into(),
                database: "d1".into(),
                duration: Some(0),
                replication: None,
                shard_duration: Some(7_200 * S),
                default: true,
            },
        ),
        (
            "DROP RETENTION POLICY one ON d1",
            Statement::DropRetentionPolicy {
                name: "one".into(),
                database: "d1".into(),
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(round_trip(text), expected, "{text}");
    }
    // Refused as InfluxDB's parser refuses them.
    for (text, expected) in [
        (
            "CREATE RETENTION POLICY x ON d DURATION 1d",
            "found EOF, expected REPLICATION",
        ),
        (
            "CREATE RETENTION POLICY x DURATION 1d REPLICATION 1",
            "found DURATION, expected ON",
        ),
        (
            "CREATE RETENTION POLICY x ON d DURATION 1 REPLICATION 1",
            "found 1, expected duration",
        ),
        (
            "CREATE RETENTION POLICY x ON d DURATION -1h REPLICATION 1",
            "found -, expected duration",
        ),
        (
            "CREATE RETENTION POLICY x ON d DURATION 1d REPLICATION 0",
            "found 0, expected integer from 1",
        ),
        (
            "ALTER RETENTION POLICY x ON d",
            "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT",
        ),
        ("DROP RETENTION POLICY x", "found EOF, expected ON"),
        (
            "CREATE DATABASE d WITH",
            "found EOF, expected DURATION, NAME, REPLICATION, SHARD",
        ),
        (
            "CREATE RETENTION POLICY x ON d DURATION 1d REPLICATION 1 DEFAULT SHARD DURATION 1h",
            "found SHARD",
        ),
    ] {
        let error = parse(text).expect_err(text).to_string();
        assert!(error.starts_with(expected), "{text}: {error}");
    }
    for text in [
        r#"SHOW TAG VALUES WITH KEY IN ("host", "region")"#,
        "SHOW TAG VALUES WITH KEY =~ /ho.*/",
        r#"SHOW SERIES FROM "cpu" WHERE "host" = 'a' LIMIT 10"#,
        "SHOW MEASUREMENTS WITH MEASUREMENT = cpu WHERE host = 'a'",
        "SHOW TAG KEYS",
        "SHOW FIELD KEYS",
    ] {
        round_trip(text);
    }
}

#[test]
fn several_statements_in_one_query() {
    let q = parse("SHOW DATABASES; SELECT v FROM m;; CREATE DATABASE x;").unwrap();
    assert_eq!(q.statements.len(), 3);
    assert_eq!(parse(&q.to_string()), Ok(q));
}

#[test]
fn errors_name_the_position_and_what_was_expected() {
    let e = parse("SELECT FROM cpu").unwrap_err();
    assert_eq!((e.line, e.column, e.found.as_str()), (1, 8, "FROM"));
    assert_eq!(
        e.to_string(),
        "found FROM, expected identifier, string, number, bool at line 1, char 8"
    );
    let e = parse("SELECT v FROM m GROUP BY time(10x)").unwrap_err();
    assert_eq!(e.column, 31, "{e}");
    assert!(e.expected.contains("duration"), "{e}");
    let e = parse("SELECT v FROM m WHERE host = 'a").unwrap_err();
    assert!(e.to_string().contains("closing quote"), "{e}");
    let e = parse("SHOW DATABASES\nSHOW FOO").unwrap_err();
    assert_eq!((e.line, e.column), (2, 1), "{e}");
    let e = parse("DROP MEASUREMENT cpu").unwrap_err();
    assert!(
        e.to_string()
            .contains("found MEASUREMENT, expected DATABASE"),
        "{e}"
    );
    let e = parse("DELETE FROM cpu").unwrap_err();
    assert!(e.to_string().contains("DELETE is not supported"), "{e}");
    assert!(parse("  ;  ").is_err());
    let e = parse("SHOW TAG VALUES FROM cpu").unwrap_err();
    assert!(e.to_string().contains("found EOF"), "{e}");
    // Found by the fuzz target: a quoted name before `(` was taken for a function.
    assert!(parse(r#"SELECT "mean "(v) FROM m"#).is_err());
    // Found by the fuzz target: a literal past f64's range printed as `inf`.
    let e = parse(&format!("SELECT v FROM m WHERE v <= {}", "9".repeat(400))).unwrap_err();
    assert!(e.expected.contains("1.8e308"), "{e}");
    let e = parse("SELECT v FROM m WHERE time > 99999999999999999999s").unwrap_err();
    assert!(e.expected.contains("292 years"), "{e}");
}

// ---- the property test ----

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,6}",
        "[ -~]{1,6}", // quoted names with spaces, quotes and backslashes
        Just("time".to_string()),
    ]
}

fn regex_text() -> impl Strategy<Value = String> {
    "[a-z^$.*/\\\\]{0,6}".prop_filter("a trailing backslash escapes the closing /", |r| {
        !r.ends_with('\\')
    })
}

fn duration() -> impl Strategy<Value = i64> {
    prop_oneof![1i64..1_000_000, (1i64..10_000).prop_map(|n| n * S)]
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        (
            name(),
            prop::option::of(prop_oneof![Just(VarKind::Field), Just(VarKind::Tag)])
        )
            .prop_map(|(name, kind)| Expr::Var { name, kind }),
        (-1000i64..1000).prop_map(Expr::Integer),
        (-1e6f64..1e6).prop_map(Expr::Number),
        "[ -~]{0,6}".prop_map(Expr::String),
        regex_text().prop_map(Expr::Regex),
        any::<bool>().prop_map(Expr::Boolean),
        (-1_000_000i64..1_000_000).prop_map(Expr::Duration),
        Just(Expr::Wildcard(None)),
    ]
}

fn op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    prop::sample::select(vec![
        Or,
        And,
        Eq,
        NotEq,
        Lt,
        LtEq,
        Gt,
        GtEq,
        RegexMatch,
        RegexNotMatch,
        Add,
        Sub,
        Mul,
        Div,
        Mod,
    ])
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| Expr::binary(op, l, r)),
            ("[a-z_]{1,8}", prop::collection::vec(inner, 0..3))
                .prop_filter("not a keyword", |(n, _)| !lex::is_reserved(n)
                    || n == "distinct")
                .prop_map(|(name, args)| Expr::Call { name, args }),
        ]
    })
}

fn source() -> impl Strategy<Value = Source> {
    prop_oneof![
        (prop::option::of(name()), prop::option::of(name()), name()).prop_map(
            |(database, retention_policy, name)| Source::Measurement {
                database,
                retention_policy,
                name,
            }
        ),
        regex_text().prop_map(Source::Regex),
    ]
}

fn select_strategy() -> impl Strategy<Value = Select> {
    let dims = prop::collection::vec(
        prop_oneof![
            (duration(), prop::option::of(duration()))
                .prop_map(|(interval, offset)| Dimension::Time { interval, offset }),
            name().prop_map(Dimension::Tag),
            Just(Dimension::Wildcard),
        ],
        0..3,
    );
    let fill = prop::option::of(prop_oneof![
        Just(Fill::Null),
        Just(Fill::None),
        Just(Fill::Previous),
        Just(Fill::Linear),
        (-1e3f64..1e3).prop_map(Fill::Number),
    ]);
    let limits = prop::collection::vec(prop::option::of(0u64..1000), 4);
    (
        prop::collection::vec((expr(), prop::option::of(name())), 1..3),
        prop::collection::vec(source(), 1..3),
        prop::option::of(expr()),
        dims,
        fill,
        any::<bool>(),
        limits,
        prop::option::of("[ -~]{0,8}"),
    )
        .prop_map(
            |(fields, from, condition, group_by, fill, descending, l, timezone)| Select {
                fields: fields
                    .into_iter()
                    .map(|(expr, alias)| Field { expr, alias })
                    .collect(),
                from,
                condition,
                group_by,
                fill,
                descending,
                limit: l[0],
                offset: l[1],
                slimit: l[2],
                soffset: l[3],
                timezone,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn printing_and_parsing_gives_the_same_tree(s in select_strategy()) {
        let statement = Statement::Select(Box::new(s));
        let text = statement.to_string();
        prop_assert_eq!(parse_statement(&text), Ok(statement), "{}", text);
    }
}

/// Text near InfluxQL: keywords, names, numbers, durations, regexes, strings, operators.
fn near_influxql() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "SELECT",
        "FROM",
        "WHERE",
        "GROUP",
        "BY",
        "time",
        "(",
        ")",
        "10s",
        "1596240000000ms",
        "fill",
        "null",
        "previous",
        "SHOW",
        "TAG",
        "VALUES",
        "KEYS",
        "WITH",
        "KEY",
        "=",
        "=~",
        "!~",
        "!=",
        "<",
        ">=",
        "AND",
        "OR",
        "\"host\"",
        "'a'",
        "/^x$/",
        "mean",
        "*",
        ",",
        ";",
        "::",
        "field",
        "tag",
        "now()",
        "-",
        "+",
        "1.5",
        "LIMIT",
        "5",
        "ORDER",
        "DESC",
        "tz",
        "'UTC'",
        "\"",
        "'",
        "/",
        "µ",
        "é",
        "IN",
    ]);
    prop::collection::vec(token, 0..24).prop_map(|t| t.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]
    /// The fuzz target's oracle on text close to the grammar: never a panic, and what
    /// parses prints back to the same statements.
    #[test]
    fn near_influxql_text_parses_or_errs_and_round_trips(text in near_influxql()) {
        if let Ok(query) = parse(&text) {
            let printed = query.to_string();
            prop_assert_eq!(parse(&printed), Ok(query), "{}", printed);
        }
    }
}
