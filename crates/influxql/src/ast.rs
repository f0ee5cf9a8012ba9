//! The statements of the supported subset, as parsed. Printing ([`std::fmt::Display`])
//! gives InfluxQL that parses back to the same tree (the property test in `tests`), so a
//! statement can be logged or forwarded as text.
//!
//! Times and durations are nanoseconds (`i64`), InfluxDB's unit; a `time >= 1596240000000ms`
//! bound is a [`Expr::Duration`] of 1596240000000 × 10⁶ ns (InfluxDB reads it the same way:
//! a duration since the epoch).

/// One or more statements separated by `;`.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub statements: Vec<Statement>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Select(Box<Select>),
    /// `SHOW MEASUREMENTS [WITH MEASUREMENT =~ /re/ | = name] [WHERE …] [LIMIT n] [OFFSET n]`.
    ShowMeasurements {
        on: Option<String>,
        with: Option<MeasurementFilter>,
        condition: Option<Expr>,
        limit: Option<u64>,
        offset: Option<u64>,
    },
    /// `SHOW TAG KEYS [FROM m] [WHERE …] [LIMIT n]`.
    ShowTagKeys {
        on: Option<String>,
        from: Vec<Source>,
        condition: Option<Expr>,
        limit: Option<u64>,
        offset: Option<u64>,
    },
    /// `SHOW TAG VALUES [FROM m] WITH KEY … [WHERE …] [LIMIT n]`.
    ShowTagValues {
        on: Option<String>,
        from: Vec<Source>,
        key: TagKeyFilter,
        condition: Option<Expr>,
        limit: Option<u64>,
        offset: Option<u64>,
    },
    /// `SHOW FIELD KEYS [FROM m]`.
    ShowFieldKeys {
        on: Option<String>,
        from: Vec<Source>,
        limit: Option<u64>,
        offset: Option<u64>,
    },
    /// `SHOW SERIES [FROM m] [WHERE …] [LIMIT n]`.
    ShowSeries {
        on: Option<String>,
        from: Vec<Source>,
        condition: Option<Expr>,
        limit: Option<u64>,
        offset: Option<u64>,
    },
    ShowRetentionPolicies {
        on: Option<String>,
    },
    ShowDatabases,
    /// `CREATE DATABASE db [WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]]`.
    CreateDatabase {
        name: String,
        with: Option<PolicyDefinition>,
    },
    DropDatabase(String),
    /// `CREATE RETENTION POLICY rp ON db DURATION d REPLICATION n [SHARD DURATION d] [DEFAULT]`.
    CreateRetentionPolicy {
        name: String,
        database: String,
        /// ns; 0 is `INF` (forever).
        duration: i64,
        replication: u32,
        shard_duration: Option<i64>,
        default: bool,
    },
    /// `ALTER RETENTION POLICY rp ON db` and at least one of `DURATION d`, `REPLICATION n`,
    /// `SHARD DURATION d`, `DEFAULT`, in any order.
    AlterRetentionPolicy {
        name: String,
        database: String,
        duration: Option<i64>,
        replication: Option<u32>,
        shard_duration: Option<i64>,
        default: bool,
    },
    /// `DROP RETENTION POLICY rp ON db`.
    DropRetentionPolicy {
        name: String,
        database: String,
    },
}

/// `CREATE DATABASE … WITH`'s policy: what is left out takes InfluxDB's defaults
/// (`INF`, replication 1, the shard duration for the duration, the name `autogen`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyDefinition {
    /// ns; 0 is `INF`.
    pub duration: Option<i64>,
    pub replication: Option<u32>,
    pub shard_duration: Option<i64>,
    pub name: Option<String>,
}

impl Statement {
    /// The database the statement names itself (`ON db`, or the first `FROM "db"."rp"."m"`),
    /// which goes before the request's `db` parameter.
    pub fn database(&self) -> Option<&str> {
        let on = match self {
            Statement::ShowMeasurements { on, .. }
            | Statement::ShowTagKeys { on, .. }
            | Statement::ShowTagValues { on, .. }
            | Statement::ShowFieldKeys { on, .. }
            | Statement::ShowSeries { on, .. }
            | Statement::ShowRetentionPolicies { on } => on.as_deref(),
            _ => None,
        };
        let from = match self {
            Statement::Select(s) => s.from.as_slice(),
            Statement::ShowTagKeys { from, .. }
            | Statement::ShowTagValues { from, .. }
            | Statement::ShowFieldKeys { from, .. }
            | Statement::ShowSeries { from, .. } => from.as_slice(),
            _ => &[],
        };
        on.or_else(|| {
            from.iter().find_map(|s| match s {
                Source::Measurement { database, .. } => database.as_deref(),
                Source::Regex(_) => None,
            })
        })
    }
}

/// `WITH MEASUREMENT = name` or `=~ /re/`.
#[derive(Clone, Debug, PartialEq)]
pub enum MeasurementFilter {
    Name(String),
    Regex(String),
}

/// `WITH KEY = "k"`, `IN ("a", "b")`, `=~ /re/`, `!= "k"`, `!~ /re/`.
#[derive(Clone, Debug, PartialEq)]
pub enum TagKeyFilter {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    Regex(String),
    NotRegex(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub fields: Vec<Field>,
    pub from: Vec<Source>,
    pub condition: Option<Expr>,
    pub group_by: Vec<Dimension>,
    pub fill: Option<Fill>,
    /// `ORDER BY time DESC`; ascending otherwise.
    pub descending: bool,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub slimit: Option<u64>,
    pub soffset: Option<u64>,
    /// `tz('Europe/Paris')`.
    pub timezone: Option<String>,
}

/// A selected expression and its `AS` name.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub expr: Expr,
    pub alias: Option<String>,
}

/// `"m"`, `"rp"."m"`, `"db"."rp"."m"` (the retention policy is kept for printing;
/// tickertape ignores it), `/re/`.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Measurement {
        database: Option<String>,
        retention_policy: Option<String>,
        name: String,
    },
    Regex(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Dimension {
    /// `time(interval[, offset])`, nanoseconds.
    Time {
        interval: i64,
        offset: Option<i64>,
    },
    Tag(String),
    /// `*`: every tag.
    Wildcard,
}

/// `fill(…)`: what an empty time window answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    Null,
    None,
    Previous,
    Linear,
    Number(f64),
}

/// `::field` or `::tag` after a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    Field,
    Tag,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A field, tag or `time`.
    Var {
        name: String,
        kind: Option<VarKind>,
    },
    /// `*`, or `*::field` / `*::tag`.
    Wildcard(Option<VarKind>),
    Integer(i64),
    Number(f64),
    String(String),
    Regex(String),
    Boolean(bool),
    /// A literal with a unit (`10s`, `1596240000000ms`), nanoseconds.
    Duration(i64),
    /// `now()` is a call with no arguments.
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
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
}

impl BinaryOp {
    /// Binding strength, InfluxDB's: OR < AND < comparisons < + - < * / %.
    pub fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Or => 1,
            And => 2,
            Eq | NotEq | Lt | LtEq | Gt | GtEq | RegexMatch | RegexNotMatch => 3,
            Add | Sub => 4,
            Mul | Div | Mod => 5,
        }
    }

    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Or => "OR",
            And => "AND",
            Eq => "=",
            NotEq => "!=",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            RegexMatch => "=~",
            RegexNotMatch => "!~",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
        }
    }
}

impl Expr {
    pub fn var(name: &str) -> Self {
        Expr::Var {
            name: name.to_string(),
            kind: None,
        }
    }

    pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Self {
        Expr::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        }
    }
}
