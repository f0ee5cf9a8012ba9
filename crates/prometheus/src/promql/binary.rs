//! Binary operators: arithmetic, comparisons (with `bool`) and set operators between
//! scalars and vectors, with vector matching (`on`/`ignoring`, `group_left/right`).

use super::value::{Series, Value, VectorBuilder};
use crate::mapping::{Labels, METRIC_NAME};
use promql_parser::parser::token::TokenType;
use promql_parser::parser::token::{
    T_ADD, T_ATAN2, T_DIV, T_EQLC, T_GTE, T_GTR, T_LAND, T_LOR, T_LSS, T_LTE, T_LUNLESS, T_MOD,
    T_MUL, T_NEQ, T_POW, T_SUB,
};
use promql_parser::parser::{BinModifier, LabelModifier, VectorMatchCardinality};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Atan2,
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    And,
    Or,
    Unless,
}

impl BinOp {
    pub(crate) fn from_token(t: TokenType) -> Option<Self> {
        Some(match t.id() {
            T_ADD => Self::Add,
            T_SUB => Self::Sub,
            T_MUL => Self::Mul,
            T_DIV => Self::Div,
            T_MOD => Self::Mod,
            T_POW => Self::Pow,
            T_ATAN2 => Self::Atan2,
            T_EQLC => Self::Eq,
            T_NEQ => Self::Ne,
            T_GTR => Self::Gt,
            T_LSS => Self::Lt,
            T_GTE => Self::Ge,
            T_LTE => Self::Le,
            T_LAND => Self::And,
            T_LOR => Self::Or,
            T_LUNLESS => Self::Unless,
            _ => return None,
        })
    }

    fn is_comparison(self) -> bool {
        matches!(
            self,
            Self::Eq | Self::Ne | Self::Gt | Self::Lt | Self::Ge | Self::Le
        )
    }

    fn is_set(self) -> bool {
        matches!(self, Self::And | Self::Or | Self::Unless)
    }

    /// Arithmetic drops the metric name; comparisons (without `bool`), set operators
    /// and (as in Prometheus 2.x) `atan2` keep it.
    fn drops_name(self) -> bool {
        matches!(
            self,
            Self::Add | Self::Sub | Self::Mul | Self::Div | Self::Mod | Self::Pow
        )
    }

    /// The result and whether it is kept (a comparison that does not hold filters).
    fn apply(self, l: f64, r: f64) -> (f64, bool) {
        match self {
            Self::Add => (l + r, true),
            Self::Sub => (l - r, true),
            Self::Mul => (l * r, true),
            Self::Div => (l / r, true),
            Self::Mod => (go_mod(l, r), true),
            Self::Pow => (l.powf(r), true),
            Self::Atan2 => (l.atan2(r), true),
            Self::Eq => (l, l == r),
            Self::Ne => (l, l != r),
            Self::Gt => (l, l > r),
            Self::Lt => (l, l < r),
            Self::Ge => (l, l >= r),
            Self::Le => (l, l <= r),
            Self::And | Self::Or | Self::Unless => (l, true),
        }
    }
}

/// Go's `math.Mod`: the remainder with the sign of `l` (Rust's `%` on f64 is the same).
fn go_mod(l: f64, r: f64) -> f64 {
    l % r
}

/// `lhs op rhs` at every step.
pub(crate) fn binary(
    op: BinOp,
    lhs: Value,
    rhs: Value,
    modifier: Option<&BinModifier>,
    steps: usize,
) -> Result<Value, String> {
    let return_bool = modifier.is_some_and(|m| m.return_bool);
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => Ok(Value::Scalar(
            l.iter()
                .zip(&r)
                .map(|(&l, &r)| match op.is_comparison() {
                    true => f64::from(u8::from(op.apply(l, r).1)),
                    false => op.apply(l, r).0,
                })
                .collect(),
        )),
        (Value::Vector(v), Value::Scalar(s)) => {
            vector_scalar(op, &v, &s, false, return_bool, steps).map(Value::Vector)
        }
        (Value::Scalar(s), Value::Vector(v)) => {
            vector_scalar(op, &v, &s, true, return_bool, steps).map(Value::Vector)
        }
        (Value::Vector(l), Value::Vector(r)) => {
            let matching = Matching::of(modifier);
            match op.is_set() {
                true => Ok(Value::Vector(set_op(op, &l, &r, &matching, steps))),
                false => {
                    vector_vector(op, &l, &r, &matching, return_bool, steps).map(Value::Vector)
                }
            }
        }
        _ => Err("binary operators apply to scalars and instant vectors only".to_string()),
    }
}

fn vector_scalar(
    op: BinOp,
    vector: &[Series],
    scalar: &[f64],
    scalar_first: bool,
    return_bool: bool,
    steps: usize,
) -> Result<Vec<Series>, String> {
    let mut out = VectorBuilder::new(steps);
    for s in vector {
        let labels = match op.drops_name() || return_bool {
            true => super::value::drop_metric_name(&s.labels),
            false => s.labels.clone(),
        };
        for (step, v) in s.values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let (l, r) = match scalar_first {
                true => (scalar[step], v),
                false => (v, scalar[step]),
            };
            let (mut value, mut keep) = op.apply(l, r);
            if op.is_comparison() && scalar_first {
                value = v;
            }
            if return_bool {
                value = f64::from(u8::from(keep));
                keep = true;
            }
            if keep {
                out.put(labels.clone(), step, value)?;
            }
        }
    }
    Ok(out.finish())
}

/// How the two sides' series are paired.
struct Matching {
    /// `on(…)` (true) or `ignoring(…)` (false; also when no clause is given).
    on: bool,
    labels: Vec<String>,
    card: VectorMatchCardinality,
}

impl Matching {
    fn of(modifier: Option<&BinModifier>) -> Self {
        let (on, labels) = match modifier.and_then(|m| m.matching.as_ref()) {
            Some(LabelModifier::Include(l)) => (true, l.labels.clone()),
            Some(LabelModifier::Exclude(l)) => (false, l.labels.clone()),
            None => (false, Vec::new()),
        };
        Self {
            on,
            labels,
            card: modifier.map_or(VectorMatchCardinality::OneToOne, |m| m.card.clone()),
        }
    }

    /// The labels two series must share to be paired.
    fn signature(&self, labels: &Labels) -> Labels {
        labels
            .iter()
            .filter(|(k, _)| match self.on {
                true => self.labels.contains(k),
                false => k != METRIC_NAME && !self.labels.contains(k),
            })
            .cloned()
            .collect()
    }

    /// The labels `group_left/right(…)` copies from the "one" side.
    fn include(&self) -> &[String] {
        match &self.card {
            VectorMatchCardinality::ManyToOne(l) | VectorMatchCardinality::OneToMany(l) => {
                &l.labels
            }
            _ => &[],
        }
    }
}

fn signatures(series: &[Series], m: &Matching) -> Vec<Labels> {
    series.iter().map(|s| m.signature(&s.labels)).collect()
}

fn vector_vector(
    op: BinOp,
    lhs: &[Series],
    rhs: &[Series],
    m: &Matching,
    return_bool: bool,
    steps: usize,
) -> Result<Vec<Series>, String> {
    let one_to_many = matches!(m.card, VectorMatchCardinality::OneToMany(_));
    // The "many" side is iterated, the "one" side looked up.
    let (many, one) = match one_to_many {
        true => (rhs, lhs),
        false => (lhs, rhs),
    };
    let (many_sigs, one_sigs) = (signatures(many, m), signatures(one, m));
    let mut results: HashMap<(usize, usize), Labels> = HashMap::new();
    let mut out = VectorBuilder::new(steps);
    for step in 0..steps {
        let mut by_sig: HashMap<&Labels, usize> = HashMap::new();
        for (j, s) in one.iter().enumerate() {
            if s.values[step].is_none() {
                continue;
            }
            if let Some(&other) = by_sig.get(&one_sigs[j]) {
                let side = if one_to_many { "left" } else { "right" };
                return Err(format!(
                    "found duplicate series for the match group {} on the {side} hand-side of the operation: [{}, {}];many-to-many matching not allowed: matching labels must be unique on one side",
                    format_labels(&one_sigs[j]), format_labels(&s.labels), format_labels(&one[other].labels)
                ));
            }
            by_sig.insert(&one_sigs[j], j);
        }
        let mut matched: HashMap<&Labels, HashSet<Labels>> = HashMap::new();
        for (i, s) in many.iter().enumerate() {
            let Some(v_many) = s.values[step] else {
                continue;
            };
            let Some(&j) = by_sig.get(&many_sigs[i]) else {
                continue;
            };
            let Some(v_one) = one[j].values[step] else {
                continue;
            };
            let (l, r) = match one_to_many {
                true => (v_one, v_many),
                false => (v_many, v_one),
            };
            let (mut value, keep) = op.apply(l, r);
            if return_bool {
                value = f64::from(u8::from(keep));
            } else if !keep {
                continue;
            }
            let labels = results
                .entry((i, j))
                .or_insert_with(|| result_labels(&s.labels, &one[j].labels, op, m, return_bool))
                .clone();
            let seen = matched.entry(&many_sigs[i]).or_default();
            if matches!(m.card, VectorMatchCardinality::OneToOne) {
                if !seen.is_empty() {
                    return Err("multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)".to_string());
                }
            } else if seen.contains(&labels) {
                return Err(
                    "multiple matches for labels: grouping labels must ensure unique matches"
                        .to_string(),
                );
            }
            seen.insert(labels.clone());
            out.put(labels, step, value)?;
        }
    }
    Ok(out.finish())
}

/// The labels of a pair's result: the "many" side's, without the name for arithmetic,
/// narrowed to the matching labels for one-to-one, plus `group_*(…)`'s from the other.
fn result_labels(
    many: &Labels,
    one: &Labels,
    op: BinOp,
    m: &Matching,
    return_bool: bool,
) -> Labels {
    let mut labels: Labels = many
        .iter()
        .filter(|(k, _)| !(k == METRIC_NAME && (op.drops_name() || return_bool)))
        .filter(|(k, _)| match (&m.card, m.on) {
            (VectorMatchCardinality::OneToOne, true) => m.labels.contains(k),
            (VectorMatchCardinality::OneToOne, false) => !m.labels.contains(k),
            _ => true,
        })
        .cloned()
        .collect();
    for name in m.include() {
        labels.retain(|(k, _)| k != name);
        let value = super::value::label_value(one, name);
        if !value.is_empty() {
            labels.push((name.clone(), value.to_string()));
        }
    }
    labels.sort();
    labels
}

/// `and`, `or`, `unless`, step by step; the output keeps its input's labels.
fn set_op(op: BinOp, lhs: &[Series], rhs: &[Series], m: &Matching, steps: usize) -> Vec<Series> {
    let (lsigs, rsigs) = (signatures(lhs, m), signatures(rhs, m));
    let mut out: Vec<Series> = lhs
        .iter()
        .map(|s| Series {
            labels: s.labels.clone(),
            values: vec![None; steps],
        })
        .collect();
    let mut extra: Vec<Series> = Vec::new();
    if op == BinOp::Or {
        extra = rhs
            .iter()
            .map(|s| Series {
                labels: s.labels.clone(),
                values: vec![None; steps],
            })
            .collect();
    }
    for step in 0..steps {
        let present = |series: &[Series], sigs: &[Labels]| -> HashSet<Labels> {
            series
                .iter()
                .zip(sigs)
                .filter(|(s, _)| s.values[step].is_some())
                .map(|(_, sig)| sig.clone())
                .collect()
        };
        let right = present(rhs, &rsigs);
        for (i, s) in lhs.iter().enumerate() {
            let keep = match op {
                BinOp::And => right.contains(&lsigs[i]),
                BinOp::Unless => !right.contains(&lsigs[i]),
                _ => true,
            };
            if keep {
                out[i].values[step] = s.values[step];
            }
        }
        if op == BinOp::Or {
            let left = present(lhs, &lsigs);
            for (j, s) in rhs.iter().enumerate() {
                if !left.contains(&rsigs[j]) {
                    extra[j].values[step] = s.values[step];
                }
            }
        }
    }
    out.extend(extra);
    out.retain(|s| s.values.iter().any(Option::is_some));
    out
}

/// `{a="1", b="2"}`, as Prometheus prints a label set in errors.
pub(crate) fn format_labels(labels: &Labels) -> String {
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(labels: &[(&str, &str)], v: f64) -> Series {
        Series {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            values: vec![Some(v)],
        }
    }

    #[test]
    fn arithmetic_pairs_by_labels_without_the_name() {
        let l = vec![
            series(&[("__name__", "a"), ("i", "1")], 6.0),
            series(&[("__name__", "a"), ("i", "2")], 8.0),
        ];
        let r = vec![series(&[("__name__", "b"), ("i", "1")], 2.0)];
        let Value::Vector(out) =
            binary(BinOp::Div, Value::Vector(l), Value::Vector(r), None, 1).unwrap()
        else {
            panic!("not a vector")
        };
        assert_eq!(out, vec![series(&[("i", "1")], 3.0)]);
    }

    #[test]
    fn comparisons_filter_or_answer_bool() {
        let v = vec![
            series(&[("__name__", "a")], 1.0),
            series(&[("__name__", "a"), ("x", "y")], 5.0),
        ];
        let Value::Vector(out) = binary(
            BinOp::Gt,
            Value::Vector(v.clone()),
            Value::Scalar(vec![2.0]),
            None,
            1,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].labels.len(), 2, "the name stays");
        assert_eq!(
            binary(
                BinOp::Lt,
                Value::Scalar(vec![1.0]),
                Value::Scalar(vec![2.0]),
                None,
                1
            )
            .unwrap(),
            Value::Scalar(vec![1.0])
        );
    }

    #[test]
    fn many_to_one_needs_group_left() {
        let l = vec![
            series(&[("j", "a"), ("i", "1")], 1.0),
            series(&[("j", "a"), ("i", "2")], 2.0),
        ];
        let r = vec![series(&[("j", "a")], 10.0)];
        let mut m = Matching {
            on: true,
            labels: vec!["j".into()],
            card: VectorMatchCardinality::OneToOne,
        };
        assert!(vector_vector(BinOp::Mul, &l, &r, &m, false, 1).is_err());
        m.card = VectorMatchCardinality::ManyToOne(promql_parser::label::Labels::new(vec![]));
        let out = vector_vector(BinOp::Mul, &l, &r, &m, false, 1).unwrap();
        assert_eq!(
            out.iter().map(|s| s.values[0].unwrap()).collect::<Vec<_>>(),
            vec![10.0, 20.0]
        );
    }
}
