//! A `SELECT`'s expressions resolved into what is computed: fields, aggregates,
//! transformations and arithmetic, and what each needs read.

use std::collections::BTreeMap;

use crate::{BinaryOp, Expr};

use super::compute::{Agg, Transform};

/// A selected expression, resolved.
#[derive(Clone, Debug)]
pub(super) enum Node {
    Scalar(f64),
    Field(String),
    Agg {
        agg: Agg,
        field: String,
    },
    Transform {
        transform: Transform,
        inner: Box<Node>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
}

pub(super) fn node(e: &Expr) -> Result<Node, String> {
    match e {
        Expr::Integer(n) => Ok(Node::Scalar(*n as f64)),
        Expr::Number(x) => Ok(Node::Scalar(*x)),
        Expr::Var { name, .. } => Ok(Node::Field(name.clone())),
        Expr::Binary { op, lhs, rhs }
            if matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod
            ) =>
        {
            Ok(Node::Binary {
                op: *op,
                lhs: Box::new(node(lhs)?),
                rhs: Box::new(node(rhs)?),
            })
        }
        Expr::Call { name, args } => {
            if let (Some(field), true) = (count_distinct(args), name == "count") {
                return Ok(Node::Agg {
                    agg: Agg::CountDistinct,
                    field,
                });
            }
            if let Some(agg) = Agg::of_call(name, args)? {
                return match args.first() {
                    Some(Expr::Var { name: field, .. }) => Ok(Node::Agg {
                        agg,
                        field: field.clone(),
                    }),
                    Some(other) => Err(format!("expected field argument in {name}(), got {other}")),
                    None => Err(format!(
                        "invalid number of arguments for {name}, expected 1, got 0"
                    )),
                };
            }
            if let Some(transform) = Transform::of_call(name, args)? {
                let inner = args
                    .first()
                    .ok_or_else(|| format!("{name}() needs an argument"))?;
                return Ok(Node::Transform {
                    transform,
                    inner: Box::new(node(inner)?),
                });
            }
            Err(format!("function {name}() is not supported by tickertape"))
        }
        other => Err(format!("unsupported expression in SELECT: {other}")),
    }
}

/// `count(distinct(f))`'s field, from `count`'s arguments.
fn count_distinct(args: &[Expr]) -> Option<String> {
    match args {
        [Expr::Call { name, args }] if name == "distinct" => match args.as_slice() {
            [Expr::Var { name, .. }] => Some(name.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Transformations that compare a window with the one before it (not `cumulative_sum`).
pub(super) fn reads_window_before(n: &Node) -> bool {
    match n {
        Node::Transform { transform, inner } => {
            !matches!(transform, Transform::CumulativeSum) || reads_window_before(inner)
        }
        Node::Binary { lhs, rhs, .. } => reads_window_before(lhs) || reads_window_before(rhs),
        _ => false,
    }
}

pub(super) fn has_agg(n: &Node) -> bool {
    match n {
        Node::Agg { .. } => true,
        Node::Transform { inner, .. } => has_agg(inner),
        Node::Binary { lhs, rhs, .. } => has_agg(lhs) || has_agg(rhs),
        _ => false,
    }
}

pub(super) fn has_raw_field(n: &Node) -> bool {
    match n {
        Node::Field(_) => true,
        Node::Transform { inner, .. } => has_raw_field(inner),
        Node::Binary { lhs, rhs, .. } => has_raw_field(lhs) || has_raw_field(rhs),
        _ => false,
    }
}

/// The aggregates each field is read for (empty: raw points).
pub(super) fn collect_needs(n: &Node, needs: &mut BTreeMap<String, Vec<Agg>>) {
    match n {
        Node::Field(f) => {
            needs.entry(f.clone()).or_default();
        }
        Node::Agg { agg, field } => needs.entry(field.clone()).or_default().push(*agg),
        Node::Transform { inner, .. } => collect_needs(inner, needs),
        Node::Binary { lhs, rhs, .. } => {
            collect_needs(lhs, needs);
            collect_needs(rhs, needs);
        }
        Node::Scalar(_) => {}
    }
}
