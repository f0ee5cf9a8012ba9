//! `SELECT` without aggregates: the points of each series as rows, one per series and
//! time (several fields of a series joined on their times), tags as columns where asked
//! (`"k"::tag`, `*`), all series of a group merged in time order, as InfluxDB answers them.

use std::collections::{BTreeMap, HashMap};

use crate::{Fill, VarKind};

use super::columns::FieldData;
use super::columns::{join, Eval, Value};
use super::nodes::Node;
use super::output::Series;
use super::select::{budget_error, GroupBy, Plan, RawColumn};
use super::show::{names_of, MAX_NAMES};
use super::store::{checkpoint, Store};
use super::table::Cell;

/// The points of one series (its tags), per field.
type TagsetData = HashMap<String, FieldData>;
/// Per group (the `GROUP BY` tags), per series tag set.
type RawGroups = BTreeMap<Vec<(String, String)>, BTreeMap<Vec<(String, String)>, TagsetData>>;

/// A column as read: a value computed from fields, or a tag.
enum Resolved<'n> {
    Value(&'n Node),
    Tag(String),
}

impl Plan<'_> {
    pub(super) async fn raw_measurement<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        raw: &[RawColumn],
    ) -> Result<Vec<Series>, String> {
        let (names, columns, field_nodes) = self.resolve(store, measurement, raw).await?;
        let columns: Vec<Resolved> = columns
            .into_iter()
            .map(|c| match c {
                Err(tag) => Resolved::Tag(tag),
                Ok(i) => Resolved::Value(&field_nodes[i]),
            })
            .collect();
        let mut fields: Vec<String> = Vec::new();
        for c in &columns {
            if let Resolved::Value(n) = c {
                fields_of(n, &mut fields);
            }
        }
        fields.sort();
        fields.dedup();
        let groups = self.read_raw(store, measurement, &fields).await?;
        let mut out = Vec::new();
        for (group, tagsets) in groups {
            let mut rows: Vec<Vec<Cell>> = Vec::new();
            for (tags, data) in &tagsets {
                let made = self.tagset_rows(&columns, tags, data);
                // Each row's time and values, as they are made (the points they come
                // from were charged when read).
                self.budget
                    .charge_points(made.len().saturating_mul(columns.len() + 1))
                    .map_err(budget_error)?;
                rows.extend(made);
                checkpoint(store, self.budget).await;
            }
            // Stable: series of the same time stay in key order.
            rows.sort_by_key(|row| match row.first() {
                Some(Cell::Time(t)) => *t,
                _ => i64::MIN,
            });
            let values = self.paged(rows);
            if values.is_empty() {
                continue;
            }
            let mut column_names = vec!["time".to_string()];
            column_names.extend(names.iter().cloned());
            out.push(Series {
                name: measurement.to_string(),
                tags: group,
                columns: column_names,
                values,
            });
        }
        Ok(out)
    }

    /// The column names, and for each column a node index (`Ok`) or a tag (`Err`);
    /// wildcards expanded to the measurement's fields and tags, sorted by name.
    async fn resolve<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        raw: &[RawColumn],
    ) -> Result<(Vec<String>, Vec<Result<usize, String>>, Vec<Node>), String> {
        let mut names = Vec::new();
        let mut columns = Vec::new();
        let mut nodes = Vec::new();
        // A name that is no field but a tag key is the tag, as InfluxDB resolves it
        // (a field wins where both are named so).
        let fields = names_of(store.fields(measurement, MAX_NAMES).await)?;
        let tags = names_of(store.tag_keys(measurement, MAX_NAMES).await)?;
        for (c, name) in raw.iter().zip(&self.columns) {
            match c {
                RawColumn::Value(Node::Field(f)) if !fields.contains(f) && tags.contains(f) => {
                    columns.push(Err(f.clone()));
                    names.push(name.clone());
                }
                RawColumn::Value(n) => {
                    columns.push(Ok(nodes.len()));
                    nodes.push(n.clone());
                    names.push(name.clone());
                }
                RawColumn::Tag(k) => {
                    columns.push(Err(k.clone()));
                    names.push(name.clone());
                }
                RawColumn::Wildcard(kind) => {
                    let mut all: Vec<(String, bool)> = Vec::new();
                    if *kind != Some(VarKind::Tag) {
                        all.extend(fields.iter().map(|f| (f.clone(), true)));
                    }
                    // The tags the rows are grouped by are the series' tags, not columns.
                    if *kind != Some(VarKind::Field) {
                        let grouped = match self.grouping(store, measurement).await? {
                            GroupBy::Keys(keys) => keys,
                            GroupBy::All => Vec::new(),
                        };
                        let columns = tags.iter().filter(|t| !grouped.contains(t));
                        all.extend(columns.map(|t| (t.clone(), false)));
                    }
                    all.sort();
                    for (name, is_field) in all {
                        if is_field {
                            columns.push(Ok(nodes.len()));
                            nodes.push(Node::Field(name.clone()));
                        } else {
                            columns.push(Err(name.clone()));
                        }
                        names.push(name);
                    }
                }
            }
        }
        Ok((names, columns, nodes))
    }

    async fn read_raw<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        fields: &[String],
    ) -> Result<RawGroups, String> {
        let mut groups = RawGroups::new();
        let field_rows = self.field_rows(store, measurement).await?;
        let group_by = self.grouping(store, measurement).await?;
        for field in fields {
            for (key, points) in self
                .kept_points(store, measurement, field, &field_rows)
                .await?
            {
                let tagsets = groups.entry(group_by.key(&key)).or_default();
                let data = tagsets.entry(key.tags).or_default();
                data.entry(field.clone()).or_default().raw = Some(points);
            }
        }
        Ok(groups)
    }

    fn tagset_rows(
        &self,
        columns: &[Resolved],
        tags: &[(String, String)],
        data: &TagsetData,
    ) -> Vec<Vec<Cell>> {
        let eval = Eval {
            fill: Fill::Null,
            range: self.condition.range,
            alone: false,
            descending: self.select.descending,
            data,
            windows: None,
        };
        let value_columns: Vec<_> = columns
            .iter()
            .filter_map(|c| match c {
                Resolved::Value(n) => match eval.eval(n) {
                    Value::Column(col) => Some(col),
                    Value::Scalar(_) => Some(Vec::new()),
                },
                Resolved::Tag(_) => None,
            })
            .collect();
        let tag = |k: &str| {
            tags.iter()
                .find(|(key, _)| key == k)
                .map_or(Cell::Null, |(_, v)| Cell::Text(v.clone()))
        };
        join(&value_columns)
            .iter()
            .map(|row| {
                let mut values = row.iter().cloned();
                let mut out = vec![values.next().unwrap_or(Cell::Null)];
                for c in columns {
                    out.push(match c {
                        Resolved::Tag(k) => tag(k),
                        Resolved::Value(_) => values.next().unwrap_or(Cell::Null),
                    });
                }
                out
            })
            .collect()
    }
}

fn fields_of(n: &Node, out: &mut Vec<String>) {
    match n {
        Node::Field(f) | Node::Agg { field: f, .. } => out.push(f.clone()),
        Node::Transform { inner, .. } => fields_of(inner, out),
        Node::Binary { lhs, rhs, .. } => {
            fields_of(lhs, out);
            fields_of(rhs, out);
        }
        Node::Scalar(_) => {}
    }
}
