//! The evaluator: an expression, the store's answers for its selectors, and a grid of
//! steps in; a value at every step out.

use super::aggregate::{aggregate, count_values, AggregateOp, Grouping};
use super::anchor::Anchor;
use super::binary::{binary, BinOp};
use super::functions::{
    date_function, date_of, label_join, label_replace, map_values, round, scalar, simple_function,
    sort_by_value,
};
use super::histogram::histogram_quantile;
use super::range_functions::range_function;
use super::select::{self, fetched, instant_vector, Fetched};
use super::value::{Grid, Series, Value};
use super::PromqlError;
use crate::mapping::{Labels, METRIC_NAME};
use promql_parser::label::MatchOp;
use promql_parser::parser::{AggregateExpr, BinaryExpr, Call, Expr, LabelModifier, VectorSelector};
use std::collections::HashSet;
use tickertape_core::QueryBudget;

pub(crate) struct Evaluator<'a> {
    /// The steps this expression is evaluated at: the query's, or a subquery's own.
    pub(crate) grid: Grid,
    /// The query's steps, whose start and end `@ start()` and `@ end()` name.
    pub(crate) query: Grid,
    pub(crate) data: &'a Fetched,
    pub(crate) budget: &'a QueryBudget,
}

type Result<T> = std::result::Result<T, PromqlError>;

impl Evaluator<'_> {
    pub(crate) fn steps(&self) -> usize {
        self.grid.len()
    }

    /// The value of `expr`, charged to the budget. Selectors and range functions charge
    /// before (or as) they make their series; the other nodes make at most as many
    /// series as their inputs held (`count_values` charges its own), so they are
    /// charged when made, their inputs' charge bounding what they spent meanwhile.
    pub(crate) fn eval(&self, expr: &Expr) -> Result<Value> {
        self.budget.check()?;
        let (value, charged) = match expr {
            Expr::NumberLiteral(n) => (Value::Scalar(vec![n.val; self.steps()]), false),
            Expr::StringLiteral(s) => (Value::String(s.val.clone()), true),
            Expr::Paren(p) => (self.eval(&p.expr)?, true),
            Expr::Unary(u) => (self.negate(self.eval(&u.expr)?)?, false),
            Expr::VectorSelector(vs) => (Value::Vector(self.vector_selector(vs)?), true),
            // A selector's samples were charged when read, a subquery's as it made them.
            Expr::MatrixSelector(_) | Expr::Subquery(_) => (self.range_result(expr)?, true),
            Expr::Call(call) => (self.call(call)?, range_function(call.func.name).is_some()),
            // `count_values` charges as it makes its series.
            Expr::Aggregate(a) => (self.aggregate(a)?, a.op.to_string() == "count_values"),
            Expr::Binary(b) => (self.binary(b)?, false),
            Expr::Extension(_) => return Err(PromqlError::unsupported("extension expressions")),
        };
        if !charged {
            self.budget
                .charge_points(values_held(&value, self.steps()))?;
        }
        Ok(value)
    }

    fn negate(&self, value: Value) -> Result<Value> {
        match value {
            Value::Scalar(s) => Ok(Value::Scalar(s.into_iter().map(|v| -v).collect())),
            Value::Vector(v) => Ok(Value::Vector(
                map_values(&v, self.steps(), |x, _| Some(-x)).map_err(PromqlError::Execution)?,
            )),
            _ => Err(PromqlError::Execution(
                "unary minus applies to scalars and instant vectors".into(),
            )),
        }
    }

    /// Charged before it is made: a value slot per step for each selected series.
    fn vector_selector(&self, vs: &VectorSelector) -> Result<Vec<Series>> {
        let raw = fetched(self.data, vs);
        self.budget
            .charge_points(raw.len().saturating_mul(self.steps()))?;
        Ok(instant_vector(raw, &self.grid, self.anchor(vs)))
    }

    /// Where `vs` looks at each step (its `@` and `offset`).
    fn anchor(&self, vs: &VectorSelector) -> Anchor {
        Anchor::new(&vs.at, &vs.offset, &self.query)
    }

    pub(crate) fn scalar_arg(&self, expr: &Expr) -> Result<Vec<f64>> {
        match self.eval(expr)? {
            Value::Scalar(s) => Ok(s),
            _ => Err(PromqlError::Execution("expected a scalar argument".into())),
        }
    }

    fn vector_arg(&self, expr: &Expr) -> Result<Vec<Series>> {
        match self.eval(expr)? {
            Value::Vector(v) => Ok(v),
            _ => Err(PromqlError::Execution(
                "expected an instant vector argument".into(),
            )),
        }
    }

    fn string_arg(&self, expr: &Expr) -> Result<String> {
        match self.eval(expr)? {
            Value::String(s) => Ok(s),
            _ => Err(PromqlError::Execution("expected a string argument".into())),
        }
    }

    fn call(&self, call: &Call) -> Result<Value> {
        let name = call.func.name;
        let args: Vec<&Expr> = call.args.args.iter().map(|a| a.as_ref()).collect();
        if let Some(f) = range_function(name) {
            return self.range_call(name, f, &args);
        }
        let steps = self.steps();
        let exec = PromqlError::Execution;
        if let Some(f) = simple_function(name) {
            let v = self.vector_arg(args[0])?;
            return Ok(Value::Vector(
                map_values(&v, steps, |x, _| Some(f(x))).map_err(exec)?,
            ));
        }
        let value = match name {
            "time" => Value::Scalar(
                (0..steps)
                    .map(|i| self.grid.time(i) as f64 / 1000.0)
                    .collect(),
            ),
            "vector" => Value::Vector(vec![Series {
                labels: Vec::new(),
                values: self.scalar_arg(args[0])?.into_iter().map(Some).collect(),
            }]),
            "scalar" => Value::Scalar(scalar(&self.vector_arg(args[0])?, steps)),
            "clamp" | "clamp_min" | "clamp_max" => self.clamp(name, &args)?,
            "round" => {
                let v = self.vector_arg(args[0])?;
                let to = match args.get(1) {
                    Some(a) => self.scalar_arg(a)?,
                    None => vec![1.0; steps],
                };
                Value::Vector(map_values(&v, steps, |x, i| Some(round(x, to[i]))).map_err(exec)?)
            }
            "histogram_quantile" => {
                let q = self.scalar_arg(args[0])?;
                let v = self.vector_arg(args[1])?;
                Value::Vector(histogram_quantile(&q, &v, steps).map_err(exec)?)
            }
            "label_replace" => {
                let v = self.vector_arg(args[0])?;
                let s: Vec<String> = args[1..5]
                    .iter()
                    .map(|a| self.string_arg(a))
                    .collect::<Result<_>>()?;
                Value::Vector(label_replace(&v, steps, &s[0], &s[1], &s[2], &s[3]).map_err(exec)?)
            }
            "absent" => self.absent(args[0])?,
            "absent_over_time" => self.absent_over_time(args[0])?,
            "pi" => Value::Scalar(vec![std::f64::consts::PI; steps]),
            "timestamp" => self.timestamp(args[0])?,
            "label_join" => {
                let v = self.vector_arg(args[0])?;
                let s: Vec<String> = args[1..]
                    .iter()
                    .map(|a| self.string_arg(a))
                    .collect::<Result<_>>()?;
                Value::Vector(label_join(&v, steps, &s[0], &s[1], &s[2..]).map_err(exec)?)
            }
            name if date_function(name).is_some() => self.date(name, args.first().copied())?,
            "sort" | "sort_desc" => {
                let v = self.vector_arg(args[0])?;
                match steps {
                    1 => Value::Vector(sort_by_value(v, name == "sort_desc")),
                    _ => Value::Vector(v),
                }
            }
            other => return Err(PromqlError::unsupported(&format!("the function {other}()"))),
        };
        Ok(value)
    }

    fn clamp(&self, name: &str, args: &[&Expr]) -> Result<Value> {
        let v = self.vector_arg(args[0])?;
        let a = self.scalar_arg(args[1])?;
        let b = match args.get(2) {
            Some(e) => self.scalar_arg(e)?,
            None => Vec::new(),
        };
        let steps = self.steps();
        let out = match name {
            "clamp_min" => map_values(&v, steps, |x, i| Some(go_max(x, a[i]))),
            "clamp_max" => map_values(&v, steps, |x, i| Some(go_min(x, a[i]))),
            // clamp(v, min, max) is empty where max < min.
            _ => map_values(&v, steps, |x, i| {
                (b[i] >= a[i] || b[i].is_nan() || a[i].is_nan())
                    .then(|| go_max(a[i], go_min(b[i], x)))
            }),
        };
        Ok(Value::Vector(out.map_err(PromqlError::Execution)?))
    }

    /// `absent(v)`: 1 at the steps where `v` has no series, labelled with the equality
    /// matchers of a selector argument.
    fn absent(&self, arg: &Expr) -> Result<Value> {
        let v = self.vector_arg(arg)?;
        let present: Vec<bool> = (0..self.steps())
            .map(|i| v.iter().any(|s| s.values[i].is_some()))
            .collect();
        Ok(absent_series(arg, &present))
    }

    /// `timestamp(v)`: of a selector, each sample's own time; of anything else, the
    /// step's (in seconds, the name dropped).
    fn timestamp(&self, arg: &Expr) -> Result<Value> {
        let exec = PromqlError::Execution;
        if let Expr::VectorSelector(vs) = unwrap_parens(arg) {
            let raw = fetched(self.data, vs);
            let times = select::sample_times(raw, &self.grid, self.anchor(vs));
            return Ok(Value::Vector(
                map_values(&times, self.steps(), |t, _| Some(t)).map_err(exec)?,
            ));
        }
        let v = self.vector_arg(arg)?;
        let out = map_values(&v, self.steps(), |_, i| {
            Some(self.grid.time(i) as f64 / 1000.0)
        });
        Ok(Value::Vector(out.map_err(exec)?))
    }

    /// `hour(v)` and the other calendar functions; without an argument, of the step's time.
    fn date(&self, name: &str, arg: Option<&Expr>) -> Result<Value> {
        let Some(f) = date_function(name) else {
            return Err(PromqlError::unsupported(&format!("the function {name}()")));
        };
        let Some(arg) = arg else {
            let values = (0..self.steps())
                .map(|i| Some(date_of((self.grid.time(i) / 1000) as f64, f)))
                .collect();
            return Ok(Value::Vector(vec![Series {
                labels: Vec::new(),
                values,
            }]));
        };
        let v = self.vector_arg(arg)?;
        let out = map_values(&v, self.steps(), |x, _| Some(date_of(x, f)));
        Ok(Value::Vector(out.map_err(PromqlError::Execution)?))
    }
}

/// The answer of `absent` and `absent_over_time`: 1 where nothing is `present`, labelled
/// with the equality matchers of a selector argument (a label matched twice left out).
pub(crate) fn absent_series(arg: &Expr, present: &[bool]) -> Value {
    let values: Vec<Option<f64>> = present.iter().map(|p| (!p).then_some(1.0)).collect();
    if values.iter().all(Option::is_none) {
        return Value::Vector(Vec::new());
    }
    let matchers = match unwrap_parens(arg) {
        Expr::VectorSelector(vs) => vs.matchers.matchers.as_slice(),
        Expr::MatrixSelector(ms) => ms.vs.matchers.matchers.as_slice(),
        _ => &[],
    };
    let mut labels: Labels = Vec::new();
    let mut has: HashSet<&str> = HashSet::new();
    for m in matchers.iter().filter(|m| m.name != METRIC_NAME) {
        labels.retain(|(k, _)| *k != m.name);
        if matches!(m.op, MatchOp::Equal) && has.insert(m.name.as_str()) {
            labels.push((m.name.clone(), m.value.clone()));
        }
    }
    labels.sort();
    Value::Vector(vec![Series { labels, values }])
}

impl Evaluator<'_> {
    fn aggregate(&self, a: &AggregateExpr) -> Result<Value> {
        let name = a.op.to_string();
        let grouping = match &a.modifier {
            Some(LabelModifier::Include(l)) => Grouping::By(l.labels.clone()),
            Some(LabelModifier::Exclude(l)) => Grouping::Without(l.labels.clone()),
            None => Grouping::By(Vec::new()),
        };
        if name == "count_values" {
            let label = match &a.param {
                Some(p) => self.string_arg(p)?,
                None => {
                    return Err(PromqlError::BadData(
                        "count_values needs a label name".into(),
                    ))
                }
            };
            let input = self.vector_arg(&a.expr)?;
            let out = count_values(&label, &grouping, &input, self.steps(), self.budget)?;
            return Ok(Value::Vector(out));
        }
        let Some(op) = AggregateOp::from_name(&name) else {
            return Err(PromqlError::unsupported(&format!("the aggregation {name}")));
        };
        let param = match &a.param {
            Some(p) => Some(self.scalar_arg(p)?),
            None => None,
        };
        let input = self.vector_arg(&a.expr)?;
        let out = aggregate(op, &grouping, param.as_deref(), &input, self.steps())
            .map_err(PromqlError::Execution)?;
        Ok(Value::Vector(out))
    }

    fn binary(&self, b: &BinaryExpr) -> Result<Value> {
        let Some(op) = BinOp::from_token(b.op) else {
            return Err(PromqlError::unsupported(&format!("the operator {}", b.op)));
        };
        let lhs = self.eval(&b.lhs)?;
        let rhs = self.eval(&b.rhs)?;
        binary(op, lhs, rhs, b.modifier.as_ref(), self.steps()).map_err(PromqlError::Execution)
    }
}

pub(crate) fn unwrap_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => unwrap_parens(&p.expr),
        e => e,
    }
}

/// Go's `math.Min`/`math.Max`: NaN if either is NaN.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.min(b)
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.max(b)
}

/// The value slots `value` holds: a series holds one per step, present or not.
fn values_held(value: &Value, steps: usize) -> usize {
    match value {
        Value::Scalar(s) => s.len(),
        Value::Vector(v) => v.len().saturating_mul(steps),
        Value::Matrix(m) => m.iter().map(|s| s.samples.len()).sum(),
        Value::String(_) => 0,
    }
}
