//! Evaluating a `SELECT`'s expressions for one group of series: aggregate columns per
//! window (from the store's windows or from raw points), transformations, arithmetic, and
//! the rows that join the columns by time.

use std::collections::{BTreeMap, HashMap};

use crate::{BinaryOp, Fill};
use tickertape_core::query::Aggregate;
use tickertape_core::Point;

use super::compute::{distinct_values, fill, per_window, Agg, Column};
use super::condition::TimeRange;
use super::nodes::Node;
use super::table::{Cell, Rows};

/// What is read for one field of one group: raw points (merged, sorted), or the store's
/// windows per series for each aggregate.
#[derive(Default)]
pub(super) struct FieldData {
    pub raw: Option<Vec<Point>>,
    pub windows: HashMap<Aggregate, Vec<Vec<Point>>>,
}

/// Rows from columns: one per time of any column, in time order (a single column keeps
/// its rows as they are, duplicate times included).
pub(super) fn join(columns: &[Column]) -> Rows {
    let cell = |v: Option<f64>| v.map_or(Cell::Null, Cell::Float);
    // Cells pushed one at a time into one buffer: the rows of a day of one-minute
    // windows are built in a few microseconds.
    if let [only] = columns {
        let mut cells = Vec::with_capacity(2 * only.len());
        for (t, v) in only {
            cells.push(Cell::Time(*t));
            cells.push(cell(*v));
        }
        return Rows::from_cells(2, cells);
    }
    let mut by_time: BTreeMap<i64, Vec<Option<f64>>> = BTreeMap::new();
    for (i, c) in columns.iter().enumerate() {
        for (t, v) in c {
            by_time
                .entry(*t)
                .or_insert_with(|| vec![None; columns.len()])[i] = *v;
        }
    }
    let mut cells = Vec::with_capacity((columns.len() + 1) * by_time.len());
    for (t, vs) in by_time {
        cells.push(Cell::Time(t));
        cells.extend(vs.into_iter().map(cell));
    }
    Rows::from_cells(columns.len() + 1, cells)
}

pub(super) enum Value {
    Scalar(f64),
    Column(Column),
}

pub(super) struct Eval<'p> {
    pub fill: Fill,
    pub range: TimeRange,
    /// The statement's one call is a selector: it answers its point's time (without
    /// `GROUP BY time()`).
    pub alone: bool,
    /// `ORDER BY time DESC`: transformations run over the column from its end, as
    /// InfluxDB's do (a difference is the earlier value less the later).
    pub descending: bool,
    pub data: &'p HashMap<String, FieldData>,
    pub windows: Option<&'p (Vec<i64>, i64)>,
}

impl Eval<'_> {
    pub fn eval(&self, n: &Node) -> Value {
        match n {
            Node::Scalar(x) => Value::Scalar(*x),
            Node::Field(f) => Value::Column(
                self.raw(f)
                    .iter()
                    .map(|p| (p.time, Some(p.value)))
                    .collect(),
            ),
            Node::Agg { agg, field } => Value::Column(self.aggregate(*agg, field)),
            Node::Transform { transform, inner } => match self.eval(inner) {
                Value::Column(c) if self.descending => {
                    let reversed: Column = c.into_iter().rev().collect();
                    let mut out = transform.apply(&reversed);
                    out.reverse();
                    Value::Column(out)
                }
                Value::Column(c) => Value::Column(transform.apply(&c)),
                scalar => scalar,
            },
            Node::Binary { op, lhs, rhs } => binary(*op, self.eval(lhs), self.eval(rhs)),
        }
    }

    fn raw(&self, field: &str) -> &[Point] {
        self.data
            .get(field)
            .and_then(|f| f.raw.as_deref())
            .unwrap_or(&[])
    }

    fn aggregate(&self, agg: Agg, field: &str) -> Column {
        let fill_mode = &self.fill;
        let Some((windows, interval)) = self.windows else {
            let range = self.range;
            let at = if range.start == i64::MIN {
                0
            } else {
                range.start
            };
            let selector_alone = self.alone && agg.is_selector();
            if agg == Agg::Distinct {
                let values = distinct_values(self.raw(field));
                return values.into_iter().map(|v| (at, Some(v))).collect();
            }
            return match agg.over(self.raw(field)) {
                Some((Some(t), v)) if selector_alone => vec![(t, Some(v))],
                Some((_, v)) => vec![(at, Some(v))],
                None if agg.counts() => vec![(at, Some(0.0))],
                None => Vec::new(),
            };
        };
        let column = match self.data.get(field) {
            Some(f) if !f.windows.is_empty() => merged_windows(agg, &f.windows, windows),
            _ => per_window(agg, self.raw(field), windows, *interval),
        };
        match agg {
            // InfluxDB fills no window of distinct().
            Agg::Distinct => column,
            // Under ORDER BY time DESC the windows are filled in that order, as InfluxDB
            // fills them (`fill(previous)` from the later window).
            _ if self.descending => {
                let reversed: Column = column.into_iter().rev().collect();
                let mut filled = fill(reversed, fill_mode, agg);
                filled.reverse();
                without_null_marks(filled)
            }
            _ => without_null_marks(fill(column, fill_mode, agg)),
        }
    }
}

/// A window whose `stddev` is null (one point) is marked NaN by [`per_window`] so that
/// `fill()` leaves it, as InfluxDB does; here the mark becomes the null it is.
fn without_null_marks(column: Column) -> Column {
    column
        .into_iter()
        .map(|(t, v)| (t, v.filter(|x| !x.is_nan())))
        .collect()
}

/// A column of `agg` from the store's per-series windows of its parts. The store's
/// windows start where ours do (`GROUP BY time()` without offset or zone) and come in
/// time order, as ours are: one walk along both puts each value in its slot, no map per
/// window.
fn merged_windows(
    agg: Agg,
    parts: &HashMap<Aggregate, Vec<Vec<Point>>>,
    windows: &[i64],
) -> Column {
    let merged = |a: Aggregate| -> Vec<Option<f64>> {
        let mut out: Vec<Option<f64>> = vec![None; windows.len()];
        for series in parts.get(&a).into_iter().flatten() {
            let mut slot = 0;
            for p in series {
                while slot < windows.len() && windows[slot] < p.time {
                    slot += 1;
                }
                if slot == windows.len() {
                    break;
                }
                if windows[slot] != p.time {
                    continue;
                }
                out[slot] = Some(match out[slot] {
                    None => p.value,
                    Some(v) => match a {
                        Aggregate::Min => v.min(p.value),
                        Aggregate::Max => v.max(p.value),
                        _ => v + p.value,
                    },
                });
            }
        }
        out
    };
    let both = |a: Aggregate, b: Aggregate, f: fn(f64, f64) -> f64| -> Vec<Option<f64>> {
        let (x, y) = (merged(a), merged(b));
        x.into_iter().zip(y).map(|(x, y)| Some(f(x?, y?))).collect()
    };
    let values = match agg.stored_aggregate().filter(|a| parts.contains_key(a)) {
        // Read as the store's own aggregate (one series per group).
        Some(direct) => merged(direct),
        None => match agg {
            Agg::Mean => both(Aggregate::Sum, Aggregate::Count, |s, n| s / n),
            Agg::Spread => both(Aggregate::Max, Aggregate::Min, |hi, lo| hi - lo),
            other => merged(other.stored_parts().map_or(Aggregate::Sum, |(p, _)| p[0])),
        },
    };
    windows.iter().copied().zip(values).collect()
}

fn binary(op: BinaryOp, lhs: Value, rhs: Value) -> Value {
    let f = |a: f64, b: f64| match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div if b == 0.0 => 0.0,
        BinaryOp::Div => a / b,
        BinaryOp::Mod => a % b,
        _ => f64::NAN,
    };
    match (lhs, rhs) {
        (Value::Scalar(a), Value::Scalar(b)) => Value::Scalar(f(a, b)),
        (Value::Column(c), Value::Scalar(b)) => Value::Column(
            c.into_iter()
                .map(|(t, v)| (t, v.map(|a| f(a, b))))
                .collect(),
        ),
        (Value::Scalar(a), Value::Column(c)) => Value::Column(
            c.into_iter()
                .map(|(t, v)| (t, v.map(|b| f(a, b))))
                .collect(),
        ),
        // A row at every time either side has (a field the row lacks makes it null), as
        // InfluxDB joins the fields of one series.
        (Value::Column(a), Value::Column(b)) => {
            let mut rows: BTreeMap<i64, (Option<f64>, Option<f64>)> = BTreeMap::new();
            for (t, v) in a {
                rows.entry(t).or_default().0 = v;
            }
            for (t, v) in b {
                rows.entry(t).or_default().1 = v;
            }
            Value::Column(
                rows.into_iter()
                    .map(|(t, (x, y))| (t, x.zip(y).map(|(x, y)| f(x, y))))
                    .collect(),
            )
        }
    }
}
