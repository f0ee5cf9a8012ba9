//! The seeded generator of statements of the shapes people write by hand: aggregates,
//! selectors beside tags and fields, transformations, arithmetic, raw selections, WHERE on
//! time, tags and fields, GROUP BY time/tags/`*`, fill, ORDER BY, LIMIT/OFFSET,
//! SLIMIT/SOFFSET, and the SHOW statements. A statement is kept in parts, so that a
//! difference can be minimised by dropping parts while it persists.

use super::data::{tag_values, Measurement, MEASUREMENTS, SPAN, T0};
use super::rng::Rng;

/// A statement in parts: `head` (`SELECT … FROM m`, or a SHOW statement's start),
/// `WHERE` conditions joined by AND, `GROUP BY` items, and the clauses after them.
#[derive(Clone, Debug)]
pub struct Statement {
    /// What kind of statement this is, for the classes of differences.
    pub shape: &'static str,
    /// Selected columns (empty for SHOW).
    pub columns: Vec<String>,
    pub head: String,
    /// Conditions, and whether the minimiser may drop each.
    pub conditions: Vec<(String, bool)>,
    pub group_by: Vec<String>,
    pub tail: Vec<String>,
    /// Whether the statement reads an integer field (whose type a numbers-only store
    /// does not keep).
    pub integer: bool,
    /// GROUP BY time() without an upper time bound: its `fill(none)` stays, or InfluxDB
    /// would build every window up to now.
    pub open_windows: bool,
}

impl Statement {
    pub fn text(&self) -> String {
        let mut s = match self.columns.is_empty() {
            true => self.head.clone(),
            false => format!("SELECT {} FROM {}", self.columns.join(", "), self.head),
        };
        if !self.conditions.is_empty() {
            let c: Vec<&str> = self.conditions.iter().map(|(c, _)| c.as_str()).collect();
            s.push_str(&format!(" WHERE {}", c.join(" AND ")));
        }
        if !self.group_by.is_empty() {
            s.push_str(&format!(" GROUP BY {}", self.group_by.join(", ")));
        }
        for t in &self.tail {
            s.push(' ');
            s.push_str(t);
        }
        s
    }

    /// The statements one part smaller, for the minimiser.
    pub fn smaller(&self) -> Vec<Statement> {
        let mut out = Vec::new();
        if self.columns.len() > 1 {
            for i in 0..self.columns.len() {
                let mut s = self.clone();
                s.columns.remove(i);
                out.push(s);
            }
        }
        for i in 0..self.conditions.len() {
            if self.conditions[i].1 {
                let mut s = self.clone();
                s.conditions.remove(i);
                out.push(s);
            }
        }
        for i in 0..self.group_by.len() {
            let mut s = self.clone();
            s.group_by.remove(i);
            out.push(s);
        }
        for i in 0..self.tail.len() {
            if self.open_windows && self.tail[i] == "fill(none)" {
                continue;
            }
            let mut s = self.clone();
            s.tail.remove(i);
            out.push(s);
        }
        out
    }
}

fn ms(seconds_from_t0: i64) -> String {
    format!("{}ms", (T0 + seconds_from_t0) * 1000)
}

fn rfc3339(seconds_from_t0: i64) -> String {
    let s = seconds_from_t0;
    format!(
        "'2020-08-01T{:02}:{:02}:{:02}Z'",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A time condition; `bounded` asks for both bounds. Which bounds it has: (lower, upper).
fn time_range(rng: &mut Rng, bounded: bool) -> (String, bool, bool) {
    let kind = if bounded { rng.below(5) } else { rng.below(8) };
    match kind {
        0 => (
            format!("time >= {} AND time < {}", ms(0), ms(SPAN)),
            true,
            true,
        ),
        1 => (
            format!("time >= {} AND time <= {}", rfc3339(1800), rfc3339(5400)),
            true,
            true,
        ),
        2 => {
            let start = rng.below(100) as i64 * 60 + 7;
            let end = start + (5 + rng.below(60) as i64) * 60;
            (
                format!("time > {} AND time < {}", ms(start), ms(end)),
                true,
                true,
            )
        }
        3 => {
            let start = (40 + rng.below(40) as i64) * 60;
            (
                format!("time >= {} AND time < {}", ms(start), ms(start + 180)),
                true,
                true,
            )
        }
        4 => (
            format!("time >= {} AND time < {}", ms(3000), ms(3000 + 1200)),
            true,
            true,
        ),
        5 => (format!("time >= {}", ms(6000)), true, false),
        6 => (format!("time < {}", ms(1500)), false, true),
        _ => (String::new(), false, false),
    }
}

fn quoted<S: AsRef<str> + ?Sized>(name: &S) -> String {
    format!("\"{}\"", name.as_ref())
}

/// A field of `m`, and whether it is an integer field.
fn field(rng: &mut Rng, m: &Measurement) -> (String, bool) {
    match rng.chance(20) {
        true => (rng.pick(m.integers).to_string(), true),
        false => (rng.pick(m.floats).to_string(), false),
    }
}

fn tag_condition(rng: &mut Rng, m: &Measurement) -> String {
    let tag = *rng.pick(m.tags);
    let value = *rng.pick(tag_values(tag));
    match rng.below(6) {
        0..=2 => format!("{} = '{value}'", quoted(tag)),
        3 => format!("{} != '{value}'", quoted(tag)),
        4 => format!("{} =~ /^{}$/", quoted(tag), value.replace('/', "\\/")),
        _ => format!(
            "({} = '{value}' OR {} = '{}')",
            quoted(tag),
            quoted(tag),
            rng.pick(tag_values(tag))
        ),
    }
}

fn field_condition(rng: &mut Rng, m: &Measurement) -> String {
    let f = *rng.pick(m.floats);
    let op = *rng.pick(&[">", "<", ">=", "<="]);
    let value = match f {
        "usage_system" => rng.below(20),
        "used_pct" => 30 + rng.below(40),
        _ => rng.below(100),
    };
    format!("{} {op} {value}", quoted(f))
}

const AGGREGATES: &[&str] = &[
    "mean", "median", "count", "sum", "min", "max", "first", "last", "spread", "stddev",
];
const SELECTORS: &[&str] = &["first", "last", "min", "max"];
const INTERVALS: &[(&str, i64)] = &[
    ("1m", 60),
    ("5m", 300),
    ("10m", 600),
    ("15m", 900),
    ("30m", 1800),
    ("1h", 3600),
];
const FILLS: &[&str] = &[
    "fill(null)",
    "fill(none)",
    "fill(0)",
    "fill(-1)",
    "fill(previous)",
    "fill(linear)",
];

fn aggregate_call(rng: &mut Rng, f: &str) -> String {
    match rng.below(12) {
        0 => format!(
            "percentile({}, {})",
            quoted(f),
            rng.pick(&[5, 50, 90, 95, 99])
        ),
        n => format!(
            "{}({})",
            AGGREGATES[(n as usize - 1) % AGGREGATES.len()],
            quoted(f)
        ),
    }
}

/// One statement of a shape chosen by `rng`.
pub fn generate(rng: &mut Rng) -> Statement {
    let m = rng.pick(MEASUREMENTS);
    let mut s = Statement {
        shape: "",
        columns: Vec::new(),
        head: quoted(m.name),
        conditions: Vec::new(),
        group_by: Vec::new(),
        tail: Vec::new(),
        integer: false,
        open_windows: false,
    };
    match rng.below(100) {
        0..=29 => aggregates(rng, m, &mut s),
        30..=41 => selector_row(rng, m, &mut s),
        42..=51 => transformation(rng, m, &mut s),
        52..=59 => arithmetic(rng, m, &mut s),
        60..=74 => raw(rng, m, &mut s),
        75..=78 => elapsed(rng, m, &mut s),
        79..=82 => distinct(rng, m, &mut s),
        _ => show(rng, m, &mut s),
    }
    s
}

/// The WHERE of a SELECT: a time range (both bounds when `bounded`), sometimes tag and
/// field conditions. Returns whether there is an upper bound.
fn conditions(rng: &mut Rng, m: &Measurement, s: &mut Statement, bounded: bool) -> bool {
    let (time, _, upper) = time_range(rng, bounded);
    if !time.is_empty() {
        s.conditions.push((time, false));
    }
    if rng.chance(35) {
        s.conditions.push((tag_condition(rng, m), true));
    }
    if rng.chance(12) {
        s.conditions.push((field_condition(rng, m), true));
    }
    upper
}

/// `GROUP BY time(…)` (sometimes with an offset), tags or `*`, and fill.
fn group_by(rng: &mut Rng, m: &Measurement, s: &mut Statement, time: bool) {
    if time {
        let (interval, seconds) = *rng.pick(INTERVALS);
        match rng.chance(15) {
            true => s.group_by.push(format!(
                "time({interval}, {}s)",
                rng.below(seconds as u64 / 2 + 1)
            )),
            false => s.group_by.push(format!("time({interval})")),
        }
    }
    match rng.below(10) {
        0..=2 => s.group_by.push(quoted(rng.pick(m.tags))),
        3 => s.group_by.push("*".into()),
        4 => {
            s.group_by.push(quoted(m.tags[0]));
            s.group_by.push(quoted(m.tags[m.tags.len() - 1]));
        }
        _ => {}
    }
    if time && rng.chance(60) {
        s.tail.push(rng.pick(FILLS).to_string());
    }
}

/// A LIMIT where there is none (raw answers are long), before any OFFSET.
fn with_limit(rng: &mut Rng, s: &mut Statement) {
    if s.tail.iter().any(|t| t.starts_with("LIMIT")) {
        return;
    }
    let at = s
        .tail
        .iter()
        .position(|t| {
            t.starts_with("OFFSET") || t.starts_with("SLIMIT") || t.starts_with("SOFFSET")
        })
        .unwrap_or(s.tail.len());
    s.tail.insert(at, format!("LIMIT {}", 5 + rng.below(20)));
}

/// ORDER BY, LIMIT, OFFSET, SLIMIT, SOFFSET, each sometimes.
fn paging(rng: &mut Rng, s: &mut Statement) {
    if rng.chance(15) {
        s.tail.push("ORDER BY time DESC".into());
    }
    if rng.chance(25) {
        s.tail.push(format!("LIMIT {}", 1 + rng.below(8)));
    }
    if rng.chance(10) {
        s.tail.push(format!("OFFSET {}", 1 + rng.below(4)));
    }
    if rng.chance(8) {
        s.tail.push(format!("SLIMIT {}", 1 + rng.below(3)));
    }
    if rng.chance(5) {
        s.tail.push(format!("SOFFSET {}", 1 + rng.below(2)));
    }
}

fn aggregates(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "aggregate";
    for _ in 0..1 + rng.below(3) {
        let (f, integer) = field(rng, m);
        s.integer |= integer;
        s.columns.push(aggregate_call(rng, &f));
    }
    let time = rng.chance(65);
    let bounded = time && rng.chance(90);
    let upper = conditions(rng, m, s, bounded);
    group_by(rng, m, s, time);
    if time && !upper {
        // No upper bound: InfluxDB's windows run to now; only non-empty ones are wanted.
        s.tail.retain(|t| !t.starts_with("fill("));
        s.tail.push("fill(none)".into());
        s.open_windows = true;
    }
    paging(rng, s);
}

fn selector_row(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "selector beside columns";
    let (f, integer) = field(rng, m);
    s.integer |= integer;
    let selector = match rng.below(8) {
        0 => format!("top({}, {})", quoted(&f), 1 + rng.below(3)),
        1 => format!("bottom({}, {})", quoted(&f), 1 + rng.below(3)),
        2 => format!("percentile({}, {})", quoted(&f), rng.pick(&[50, 90])),
        _ => format!("{}({})", rng.pick(SELECTORS), quoted(&f)),
    };
    s.columns.push(selector);
    for _ in 0..1 + rng.below(2) {
        match rng.chance(60) {
            true => s.columns.push(quoted(rng.pick(m.tags))),
            false => {
                let (other, integer) = field(rng, m);
                s.integer |= integer;
                s.columns.push(quoted(&other));
            }
        }
    }
    let time = rng.chance(25);
    conditions(rng, m, s, true);
    group_by(rng, m, s, time);
    paging(rng, s);
}

fn transformation(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "transformation";
    let (f, integer) = field(rng, m);
    s.integer |= integer;
    let over_windows = rng.chance(75);
    let inner = match over_windows {
        true => format!(
            "{}({})",
            rng.pick(&["mean", "max", "min", "last", "sum"]),
            quoted(&f)
        ),
        false => quoted(&f),
    };
    let call = match rng.below(6) {
        0 => format!("derivative({inner}, {})", rng.pick(&["1s", "1m"])),
        1 => format!("non_negative_derivative({inner}, 1s)"),
        2 => format!("difference({inner})"),
        3 => format!("non_negative_difference({inner})"),
        4 => format!("moving_average({inner}, {})", 2 + rng.below(3)),
        _ => format!("cumulative_sum({inner})"),
    };
    s.columns.push(call);
    conditions(rng, m, s, true);
    if over_windows {
        group_by(rng, m, s, true);
    } else {
        // Over raw points InfluxDB merges a group's series and keeps whichever point of a
        // time comes first: one series per group keeps the answer defined.
        s.group_by.push("*".into());
    }
    paging(rng, s);
}

fn arithmetic(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "arithmetic";
    let (a, ia) = field(rng, m);
    let (b, ib) = field(rng, m);
    s.integer |= ia || ib;
    let op = *rng.pick(&["+", "-", "*", "/"]);
    let aggregated = rng.chance(55);
    if aggregated {
        let f = |rng: &mut Rng, x: &str| format!("{}({})", rng.pick(AGGREGATES), quoted(x));
        let (x, y) = (f(rng, &a), f(rng, &b));
        match rng.below(4) {
            0 => s.columns.push(format!("{x} {op} {}", 1 + rng.below(9))),
            1 => {
                s.columns.push(format!("{x} {op} {y} AS \"v\""));
                s.columns.push(format!("{y} AS \"v\""));
            }
            _ => s.columns.push(format!("{x} {op} {y}")),
        }
    } else {
        match rng.below(3) {
            0 => s
                .columns
                .push(format!("{} {op} {}", quoted(&a), 1 + rng.below(9))),
            _ => s
                .columns
                .push(format!("{} {op} {}", quoted(&a), quoted(&b))),
        }
        if rng.chance(30) {
            s.columns.push(quoted(&a));
        }
    }
    let time = aggregated && rng.chance(50);
    conditions(rng, m, s, true);
    if aggregated {
        group_by(rng, m, s, time);
    } else if rng.chance(30) {
        s.group_by.push(quoted(m.tags[0]));
    }
    paging(rng, s);
}

fn raw(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "raw";
    match rng.below(8) {
        0 => s.columns.push("*".into()),
        1 => s.columns.push("*::field".into()),
        _ => {
            for _ in 0..1 + rng.below(3) {
                match rng.below(4) {
                    0 => s.columns.push(quoted(rng.pick(m.tags))),
                    1 => s.columns.push(format!("{}::tag", quoted(rng.pick(m.tags)))),
                    _ => {
                        let (f, integer) = field(rng, m);
                        s.integer |= integer;
                        s.columns.push(quoted(&f));
                    }
                }
            }
        }
    }
    s.integer |= s.columns[0].starts_with('*');
    // Raw answers are long: a narrow range, or a LIMIT.
    conditions(rng, m, s, true);
    if rng.chance(30) {
        s.group_by.push(quoted(rng.pick(m.tags)));
    } else if rng.chance(10) {
        s.group_by.push("*".into());
    }
    paging(rng, s);
    with_limit(rng, s);
}

fn elapsed(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "elapsed";
    let (f, integer) = field(rng, m);
    s.integer |= integer;
    s.columns.push(match rng.below(3) {
        0 => format!("elapsed({})", quoted(&f)),
        1 => format!("elapsed({}, 1s)", quoted(&f)),
        _ => format!("elapsed({}, 1m)", quoted(&f)),
    });
    conditions(rng, m, s, true);
    // One series per group, as for raw transformations.
    s.group_by.push("*".into());
    paging(rng, s);
    with_limit(rng, s);
}

fn distinct(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "distinct";
    s.integer = true;
    let f = quoted(m.integers[0]);
    s.columns.push(match rng.chance(50) {
        true => format!("count(distinct({f}))"),
        false => format!("distinct({f})"),
    });
    let time = rng.chance(50);
    conditions(rng, m, s, time);
    group_by(rng, m, s, time);
    paging(rng, s);
}

fn show(rng: &mut Rng, m: &Measurement, s: &mut Statement) {
    s.shape = "show";
    let from = match rng.chance(70) {
        true => format!(" FROM {}", quoted(m.name)),
        false => String::new(),
    };
    s.head = match rng.below(5) {
        0 => "SHOW MEASUREMENTS".to_string(),
        1 => format!("SHOW TAG KEYS{from}"),
        2 => format!(
            "SHOW TAG VALUES{from} WITH KEY = {}",
            quoted(rng.pick(m.tags))
        ),
        3 => format!("SHOW SERIES{from}"),
        _ => {
            s.integer = true;
            format!("SHOW FIELD KEYS{from}")
        }
    };
    if !s.head.starts_with("SHOW FIELD") {
        if rng.chance(35) {
            s.conditions.push((tag_condition(rng, m), true));
        }
        if rng.chance(20) {
            let (time, _, _) = time_range(rng, true);
            s.conditions.push((time, true));
        }
    }
    if rng.chance(30) {
        s.tail.push(format!("LIMIT {}", 1 + rng.below(4)));
    }
    if rng.chance(30) {
        s.tail.push(format!("OFFSET {}", 1 + rng.below(3)));
    }
}
