//! InfluxQL's row model where one selector picks a point: `SELECT max("a"), "host",
//! "b"` answers the row of the selected point — its time (without `GROUP BY time()`),
//! its series' tags and its series' other fields at that time — and `top()`/`bottom()`
//! answer several such rows, as InfluxDB 1.x does.

use std::collections::{BTreeMap, HashMap};

use crate::{Expr, Fill, Select, VarKind};

use super::compute::{window_starts, Agg};
use super::naming::single_selector;
use super::output::Series;
use super::select::{budget_error, GroupBy, Plan};
use super::show::{names_of, MAX_NAMES};
use super::store::{checkpoint, Store};
use super::table::Cell;

/// How the selector picks its point(s) of a window.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pick {
    /// `first`, `last`, `min`, `max`, `percentile`: one point.
    One(Agg),
    /// `top(f, n)`: the `n` greatest values, earliest first among equals.
    Top(usize),
    /// `bottom(f, n)`: the `n` smallest.
    Bottom(usize),
}

#[derive(Clone, Debug)]
pub(super) enum RowColumn {
    /// The selected value.
    Selected,
    /// A name: the series' field of that name, else its tag (resolved per measurement).
    Name(String),
    /// `"k"::tag`.
    Tag(String),
}

/// A statement whose one call is a selector beside other columns, or `top`/`bottom`.
#[derive(Clone, Debug)]
pub(super) struct SelectorRows {
    pick: Pick,
    field: String,
    columns: Vec<RowColumn>,
}

impl SelectorRows {
    /// The statement read in the row model, if it is one: a lone selector call (as
    /// [`single_selector`] says) with names beside it, or `top`/`bottom`.
    pub fn of(select: &Select) -> Result<Option<Self>, String> {
        let mut pick = None;
        let mut columns = Vec::new();
        for f in &select.fields {
            match &f.expr {
                Expr::Call { name, args } => {
                    let Some((p, field)) = call_pick(name, args)? else {
                        return Ok(None);
                    };
                    if pick.is_none() {
                        pick = Some((p, field));
                    }
                    columns.push(RowColumn::Selected);
                }
                Expr::Var {
                    name,
                    kind: Some(VarKind::Tag),
                } => columns.push(RowColumn::Tag(name.clone())),
                Expr::Var { name, .. } => columns.push(RowColumn::Name(name.clone())),
                _ => return Ok(None),
            }
        }
        let Some((pick, field)) = pick else {
            return Ok(None);
        };
        let several = matches!(pick, Pick::Top(_) | Pick::Bottom(_));
        let beside = columns.iter().any(|c| !matches!(c, RowColumn::Selected));
        if !single_selector(&select.fields) || !(several || beside) {
            return Ok(None);
        }
        Ok(Some(SelectorRows {
            pick,
            field,
            columns,
        }))
    }
}

/// The selector a call names (`None`: not a selector).
fn call_pick(name: &str, args: &[Expr]) -> Result<Option<(Pick, String)>, String> {
    let field = match args.first() {
        Some(Expr::Var { name, .. }) => name.clone(),
        _ => return Ok(None),
    };
    let count = || match args.get(1) {
        Some(Expr::Integer(n)) if *n > 0 && args.len() == 2 => Ok(*n as usize),
        _ => Err(format!(
            "{name}() needs a field and a positive number of points, as {name}(\"f\", 3)"
        )),
    };
    let pick = match name {
        "top" => Pick::Top(count()?),
        "bottom" => Pick::Bottom(count()?),
        other => match Agg::of_call(other, args) {
            Ok(Some(agg)) if agg.is_selector() => Pick::One(agg),
            _ => return Ok(None),
        },
    };
    Ok(Some((pick, field)))
}

/// A candidate point: its time, value and series (index into the group's series).
#[derive(Clone, Copy)]
struct Candidate {
    time: i64,
    value: f64,
    series: usize,
}

/// Per group (its `GROUP BY` tags), its series by their tags.
type Groups = BTreeMap<Vec<(String, String)>, BTreeMap<Vec<(String, String)>, SeriesRows>>;

/// One series of a group: its tags, and each field's values by time.
struct SeriesRows {
    tags: Vec<(String, String)>,
    fields: HashMap<String, BTreeMap<i64, f64>>,
}

impl Pick {
    /// The picked points of one window (sorted by time, then series), in answer order.
    fn pick(self, window: &[Candidate]) -> Vec<Candidate> {
        let first = match window.first() {
            Some(c) => *c,
            None => return Vec::new(),
        };
        match self {
            Pick::One(Agg::First) => vec![window
                .iter()
                .take_while(|c| c.time == first.time)
                .fold(first, |m, c| if c.value > m.value { *c } else { m })],
            Pick::One(Agg::Last) => {
                let last = window[window.len() - 1];
                vec![window
                    .iter()
                    .rev()
                    .take_while(|c| c.time == last.time)
                    .fold(last, |m, c| if c.value > m.value { *c } else { m })]
            }
            Pick::One(Agg::Min) => {
                vec![window
                    .iter()
                    .fold(first, |m, c| if c.value < m.value { *c } else { m })]
            }
            Pick::One(Agg::Max) => {
                vec![window
                    .iter()
                    .fold(first, |m, c| if c.value > m.value { *c } else { m })]
            }
            Pick::One(Agg::Percentile(p)) => {
                let mut sorted = window.to_vec();
                sorted.sort_by(|a, b| a.value.total_cmp(&b.value));
                let i = (sorted.len() as f64 * p / 100.0 + 0.5).floor() as i64 - 1;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| sorted.get(i).copied())
                    .into_iter()
                    .collect()
            }
            Pick::One(_) => Vec::new(),
            Pick::Top(n) | Pick::Bottom(n) => {
                let mut sorted = window.to_vec();
                let top = matches!(self, Pick::Top(_));
                sorted.sort_by(|a, b| {
                    let by_value = a.value.total_cmp(&b.value);
                    (if top { by_value.reverse() } else { by_value }).then(a.time.cmp(&b.time))
                });
                sorted.truncate(n);
                sorted.sort_by_key(|c| c.time);
                sorted
            }
        }
    }
}

impl Plan<'_> {
    /// A group's first LIMIT points (in time order; its last under ORDER BY time DESC),
    /// kept in time order.
    fn points_in_limit(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let limit = self.select.limit.map_or(usize::MAX, |n| n as usize);
        let mut kept: Vec<Candidate> = match self.select.descending {
            false => candidates.into_iter().take(limit).collect(),
            true => candidates.into_iter().rev().take(limit).collect(),
        };
        kept.sort_by_key(|c| c.time);
        kept
    }

    pub(super) async fn selector_rows<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        rows: &SelectorRows,
    ) -> Result<Vec<Series>, String> {
        let group_by = self.grouping(store, measurement).await?;
        let fields = names_of(store.fields(measurement, MAX_NAMES).await)?;
        let tags = names_of(store.tag_keys(measurement, MAX_NAMES).await)?;
        let is_tag =
            |name: &str| !fields.iter().any(|f| f == name) && tags.iter().any(|t| t == name);
        let mut wanted = vec![rows.field.clone()];
        for c in &rows.columns {
            if let RowColumn::Name(n) = c {
                if !is_tag(n) && !wanted.contains(n) {
                    wanted.push(n.clone());
                }
            }
        }
        // Per group, its series by tags.
        let mut groups: Groups = BTreeMap::new();
        let range = self.condition.range;
        let field_rows = self.field_rows(store, measurement).await?;
        for field in &wanted {
            for (key, points) in self
                .kept_points(store, measurement, field, &field_rows)
                .await?
            {
                let series = groups
                    .entry(group_by.key(&key))
                    .or_default()
                    .entry(key.tags.clone())
                    .or_insert_with(|| SeriesRows {
                        tags: key.tags,
                        fields: HashMap::new(),
                    });
                series
                    .fields
                    .entry(field.clone())
                    .or_default()
                    .extend(points.iter().map(|p| (p.time, p.value)));
            }
        }
        let windows = match self.window() {
            Some((interval, offset)) => Some((
                window_starts(range.start, range.end, interval, offset, self.zone)?,
                interval,
            )),
            None => None,
        };
        // InfluxDB 1.6 reads top() and bottom() as raw selections: LIMIT also chooses the
        // points they pick from (OFFSET then pages the rows they answer).
        let limits_points =
            matches!(rows.pick, Pick::Top(_) | Pick::Bottom(_)) && self.select.limit.is_some();
        let mut out = Vec::new();
        for (group, series) in groups {
            let series: Vec<SeriesRows> = series.into_values().collect();
            let mut candidates: Vec<Candidate> = Vec::new();
            for (i, s) in series.iter().enumerate() {
                if let Some(values) = s.fields.get(&rows.field) {
                    candidates.extend(values.iter().map(|(&time, &value)| Candidate {
                        time,
                        value,
                        series: i,
                    }));
                }
            }
            if candidates.is_empty() {
                continue;
            }
            // Stable: points of one time stay in series order.
            candidates.sort_by_key(|c| c.time);
            if limits_points {
                candidates = self.points_in_limit(candidates);
            }
            // InfluxDB fills a row's missing tags and fields with fill(<number>) too.
            let missing = match &self.select.fill {
                Some(Fill::Number(x)) => Cell::Float(*x),
                _ => Cell::Null,
            };
            let row_of = |c: &Candidate, time: i64| -> Vec<Cell> {
                let s = &series[c.series];
                let tag = |k: &str| {
                    s.tags
                        .iter()
                        .find(|(key, _)| key == k)
                        .map_or(missing.clone(), |(_, v)| Cell::Text(v.clone()))
                };
                let mut row = vec![Cell::Time(time)];
                for col in &rows.columns {
                    row.push(match col {
                        RowColumn::Selected => Cell::Float(c.value),
                        RowColumn::Tag(k) => tag(k),
                        RowColumn::Name(n) if is_tag(n) => tag(n),
                        RowColumn::Name(n) => s
                            .fields
                            .get(n)
                            .and_then(|v| v.get(&c.time))
                            .map_or(missing.clone(), |v| Cell::Float(*v)),
                    });
                }
                row
            };
            let mut made: Vec<Vec<Cell>> = Vec::new();
            match &windows {
                None => {
                    for c in rows.pick.pick(&candidates) {
                        made.push(row_of(&c, c.time));
                    }
                    // top() and bottom() answer in time order under ORDER BY time DESC
                    // too: undone here what paging reverses.
                    if self.select.descending {
                        made.reverse();
                    }
                }
                Some((starts, interval)) => {
                    let fill = self.select.fill.clone().unwrap_or(Fill::Null);
                    // top() and bottom() answer their points' own times.
                    let own_time = matches!(rows.pick, Pick::Top(_) | Pick::Bottom(_));
                    let mut previous: Option<f64> = None;
                    let mut rest = candidates.as_slice();
                    for (i, &w) in starts.iter().enumerate() {
                        let end = starts.get(i + 1).copied().unwrap_or(w + interval);
                        let skip = rest.partition_point(|c| c.time < w);
                        rest = &rest[skip..];
                        let take = rest.partition_point(|c| c.time < end);
                        let picked = rows.pick.pick(&rest[..take]);
                        rest = &rest[take..];
                        if picked.is_empty() {
                            let value = match &fill {
                                // top() and bottom() answer points, none for an empty window.
                                _ if own_time => continue,
                                Fill::None => continue,
                                Fill::Number(x) => Some(*x),
                                Fill::Previous => previous,
                                Fill::Null | Fill::Linear => None,
                            };
                            let mut row = vec![Cell::Time(w)];
                            for col in &rows.columns {
                                row.push(match (col, value) {
                                    (RowColumn::Selected, Some(v)) => Cell::Float(v),
                                    _ => Cell::Null,
                                });
                            }
                            made.push(row);
                            continue;
                        }
                        let at = made.len();
                        for c in &picked {
                            previous = Some(c.value);
                            made.push(row_of(c, if own_time { c.time } else { w }));
                        }
                        // Under ORDER BY time DESC windows come last first, but a window's
                        // points keep their order: undone here what paging reverses.
                        if self.select.descending {
                            made[at..].reverse();
                        }
                    }
                }
            }
            self.budget
                .charge_points(made.len().saturating_mul(rows.columns.len() + 1))
                .map_err(budget_error)?;
            let values = self.paged(made);
            if values.is_empty() {
                continue;
            }
            let mut names = vec!["time".to_string()];
            names.extend(self.columns.iter().cloned());
            let tags = match &self.group_by {
                GroupBy::Keys(keys) if keys.is_empty() => Vec::new(),
                _ => group,
            };
            out.push(Series {
                name: measurement.to_string(),
                tags,
                columns: names,
                values,
            });
            checkpoint(store, self.budget).await;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(points: &[(i64, f64)]) -> Vec<Candidate> {
        points
            .iter()
            .enumerate()
            .map(|(series, &(time, value))| Candidate {
                time,
                value,
                series,
            })
            .collect()
    }

    fn picked(pick: Pick, points: &[(i64, f64)]) -> Vec<(i64, f64)> {
        pick.pick(&candidates(points))
            .iter()
            .map(|c| (c.time, c.value))
            .collect()
    }

    #[test]
    fn selectors_pick_points_as_influxdb_does() {
        let points = [(1, 5.0), (2, 9.0), (3, 1.0), (4, 9.0), (5, 4.0)];
        // Equal values: the earliest point.
        assert_eq!(picked(Pick::One(Agg::Max), &points), [(2, 9.0)]);
        assert_eq!(picked(Pick::One(Agg::Min), &points), [(3, 1.0)]);
        assert_eq!(picked(Pick::One(Agg::Last), &points), [(5, 4.0)]);
        // top/bottom: the n greatest (smallest), answered in time order.
        assert_eq!(
            picked(Pick::Top(3), &points),
            [(1, 5.0), (2, 9.0), (4, 9.0)]
        );
        assert_eq!(picked(Pick::Bottom(2), &points), [(3, 1.0), (5, 4.0)]);
        assert!(picked(Pick::Top(2), &[]).is_empty());
    }

    fn select(text: &str) -> Select {
        match crate::parse_statement(text) {
            Ok(crate::Statement::Select(s)) => *s,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn which_statements_are_read_as_rows() {
        let rows = |t: &str| SelectorRows::of(&select(t)).ok().flatten().is_some();
        assert!(rows(r#"SELECT last("a"), "host", "b" FROM m"#));
        assert!(rows(r#"SELECT top("a", 2) FROM m"#));
        assert!(rows(r#"SELECT bottom("a", 2), "host"::tag FROM m"#));
        // A selector alone, several calls, or an aggregate: the columns' computation.
        assert!(!rows(r#"SELECT last("a") FROM m"#));
        assert!(!rows(r#"SELECT last("a"), first("a"), "host" FROM m"#));
        assert!(!rows(r#"SELECT mean("a"), "host" FROM m"#));
        assert!(SelectorRows::of(&select(r#"SELECT top("a") FROM m"#)).is_err());
    }
}
