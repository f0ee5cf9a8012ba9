//! `SELECT`: the series of each measurement (tag conditions pushed into the store's
//! selector, the rest checked on each key), grouped by the `GROUP BY` tags, read through
//! the [`Store`], and computed ([`super::compute`]) into InfluxDB's series.
//!
//! Aggregates per `GROUP BY time()` window are read as the store's windowed aggregates
//! (the server's engine picks a rollup for long ranges), under the store's limits of
//! series and points per query; aggregates the store does not keep (median, stddev,
//! percentile), windows with an offset, field conditions, and whole-range aggregates are
//! computed from the raw points the store reads.

use std::collections::{BTreeMap, HashMap};

use crate::{Dimension, Expr, Fill, Select, Statement, VarKind};
use tickertape_core::query::Aggregate;
use tickertape_core::{Exhausted, QueryBudget, SeriesKey};

use super::columns::{join, Eval, FieldData, Value};
use super::compute::{window_starts, Agg, Column};
use super::condition::Condition;
use super::nodes::{collect_needs, has_agg, has_raw_field, node, reads_window_before, Node};
use super::output::{Series, StatementResult};
use super::selector_rows::SelectorRows;
use super::show::{measurements_of, names_of, MAX_NAMES};
use super::store::{checkpoint, Read, Store};
use super::table::{Cell, Rows};
use super::zone::Zone;

/// `GROUP BY` tags: these keys, or every tag (`*`).
pub(super) enum GroupBy {
    Keys(Vec<String>),
    All,
}

impl GroupBy {
    /// A series' group: its values of the keys, `""` for a tag it lacks, as InfluxDB
    /// groups it (`GROUP BY *` is resolved to the measurement's keys first,
    /// [`Plan::grouping`]).
    pub fn key(&self, series: &SeriesKey) -> Vec<(String, String)> {
        match self {
            GroupBy::All => series.tags.clone(),
            GroupBy::Keys(keys) => keys
                .iter()
                .map(|k| (k.clone(), series.tag(k).unwrap_or("").to_string()))
                .collect(),
        }
    }
}

type Groups = BTreeMap<Vec<(String, String)>, HashMap<String, FieldData>>;

pub(super) struct Plan<'a> {
    pub select: &'a Select,
    pub condition: Condition,
    /// `tz('Area/City')` other than UTC: windows and printed times in that zone.
    pub zone: Option<Zone>,
    /// `GROUP BY time(interval, offset)`.
    window: Option<(i64, i64)>,
    pub group_by: GroupBy,
    /// The selected expressions (aggregate statements).
    nodes: Vec<Node>,
    /// The selected columns of a raw statement (no aggregate): values, tags, wildcards.
    pub raw: Option<Vec<RawColumn>>,
    /// A lone selector beside other columns, or `top`/`bottom`: the selected points' rows.
    rows: Option<SelectorRows>,
    pub columns: Vec<String>,
    /// The request's budget: the store's reads, every window computed (filled ones
    /// too) and every row are charged to it as they are made.
    pub budget: &'a QueryBudget,
}

/// A column of a statement without aggregates.
#[derive(Clone, Debug)]
pub(super) enum RawColumn {
    Value(Node),
    /// `"k"::tag`: the series' tag value.
    Tag(String),
    /// `*`, `*::field`, `*::tag`: every field and tag, sorted by name, as InfluxDB does.
    Wildcard(Option<VarKind>),
}

/// A `SELECT`'s answer from `store`, its reads and rows charged to `budget`.
pub async fn run<S: Store>(store: &S, select: &Select, budget: &QueryBudget) -> StatementResult {
    let mut plan = Plan::new(store, select, budget)?;
    let measurements = measurements_of(store, &select.from).await?;
    plan.open_bounds(store, &measurements).await?;
    let mut out = Vec::new();
    for measurement in measurements {
        out.extend(plan.measurement(store, &measurement).await?);
    }
    let mut out = series_paged(out, select.soffset, select.slimit);
    // InfluxDB orders series as it orders times: `ORDER BY time DESC` answers them in
    // reverse (measurement, tags) order.
    if select.descending {
        out.reverse();
    }
    Ok(out)
}

/// SOFFSET and SLIMIT, counted as InfluxDB counts them: in the order of the series keys
/// (a tag a series lacks is left out of its key, so `cpu,dc=a,host=h1` comes before
/// `cpu,host=h4`), while the answer lists groups by their tag values (`""` first).
fn series_paged(out: Vec<Series>, soffset: Option<u64>, slimit: Option<u64>) -> Vec<Series> {
    if soffset.is_none() && slimit.is_none() {
        return out;
    }
    let key = |s: &Series| {
        let tags: Vec<String> = s
            .tags
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        (s.name.clone(), tags.join(","))
    };
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| key(&out[i]));
    let skip = soffset.unwrap_or(0) as usize;
    let take = slimit.map_or(usize::MAX, |n| n as usize);
    let kept: std::collections::HashSet<usize> = order.into_iter().skip(skip).take(take).collect();
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| kept.contains(i))
        .map(|(_, s)| s)
        .collect()
}

/// Every `tz()` of the query names a zone: InfluxDB refuses an unknown one while parsing,
/// before any statement runs.
pub fn check_zones(query: &crate::Query) -> Result<(), String> {
    for statement in &query.statements {
        if let Statement::Select(select) = statement {
            if let Some(name) = &select.timezone {
                Zone::parse(name)?;
            }
        }
    }
    Ok(())
}

impl<'a> Plan<'a> {
    /// One series' rows, in time order, as the statement pages them: `ORDER BY time
    /// DESC`, `OFFSET`, `LIMIT`; times in the zone of `tz()`.
    pub(crate) fn paged(&self, rows: impl Into<Rows>) -> Rows {
        let mut rows = rows.into();
        if self.select.descending {
            rows.reverse();
        }
        let offset = self.select.offset.unwrap_or(0) as usize;
        let limit = self.select.limit.map_or(usize::MAX, |n| n as usize);
        rows.page(offset, limit);
        rows.zoned(self.zone);
        rows
    }

    fn new<S: Store>(
        store: &S,
        select: &'a Select,
        budget: &'a QueryBudget,
    ) -> Result<Self, String> {
        let zone = match &select.timezone {
            Some(name) => Zone::parse(name)?,
            None => None,
        };
        let mut condition = Condition::new(select.condition.as_ref(), store.now_nanos())?;
        let mut window = None;
        let mut keys = Vec::new();
        let mut all = false;
        for d in &select.group_by {
            match d {
                Dimension::Time { interval, offset } => {
                    window = Some((*interval, offset.unwrap_or(0).rem_euclid(*interval)))
                }
                Dimension::Tag(k) => keys.push(k.clone()),
                Dimension::Wildcard => all = true,
            }
        }
        // Groups come in the order of their tags sorted by key, whatever the order named.
        keys.sort();
        keys.dedup();
        let columns = super::naming::column_names(&select.fields);
        let rows = SelectorRows::of(select)?;
        if let Some(rows) = rows {
            // Columns of the selected points' rows: read in the row model.
            let mut plan = Self::empty(select, condition, Vec::new(), None, columns, budget);
            plan.zone = zone;
            plan.window = window;
            plan.group_by = if all {
                GroupBy::All
            } else {
                GroupBy::Keys(keys)
            };
            plan.rows = Some(rows);
            return Ok(plan);
        }
        let mut nodes = Vec::new();
        let mut raw = Vec::new();
        for f in &select.fields {
            match &f.expr {
                Expr::Wildcard(kind) => raw.push(RawColumn::Wildcard(*kind)),
                Expr::Var {
                    name,
                    kind: Some(VarKind::Tag),
                } => raw.push(RawColumn::Tag(name.clone())),
                e => {
                    let n = node(e)?;
                    raw.push(RawColumn::Value(n.clone()));
                    nodes.push(n);
                }
            }
        }
        let aggregated = nodes.iter().any(has_agg);
        let all_values = raw.iter().all(|c| matches!(c, RawColumn::Value(_)));
        if aggregated && (nodes.iter().any(has_raw_field) || !all_values) {
            return Err("mixing aggregate and non-aggregate queries is not supported".into());
        }
        let distinct = |n: &Node| {
            matches!(
                n,
                Node::Agg {
                    agg: Agg::Distinct,
                    ..
                }
            )
        };
        if nodes.iter().any(distinct) && (nodes.len() > 1 || !all_values) {
            return Err(
                "aggregate function distinct() cannot be combined with other functions or fields"
                    .into(),
            );
        }
        if window.is_some() && !aggregated {
            return Err("GROUP BY requires at least one aggregate function".into());
        }
        if let Some((interval, _)) = window.filter(|_| nodes.iter().any(reads_window_before)) {
            // As InfluxDB does, a transformation over GROUP BY time() reads one window
            // before the range (after it under ORDER BY time DESC), so that the range's
            // first window has one to be compared with.
            let r = &mut condition.range;
            match select.descending {
                false => r.start = r.start.saturating_sub(interval),
                true => r.end = r.end.saturating_add(interval),
            }
        }
        let raw = (!aggregated).then_some(raw);
        if condition.range.start >= condition.range.end {
            return Ok(Self::empty(select, condition, nodes, raw, columns, budget));
        }
        Ok(Plan {
            select,
            condition,
            zone,
            window,
            group_by: if all {
                GroupBy::All
            } else {
                GroupBy::Keys(keys)
            },
            nodes,
            raw,
            rows: None,
            columns,
            budget,
        })
    }

    /// `GROUP BY time(interval, offset)`, if the statement has it.
    pub(super) fn window(&self) -> Option<(i64, i64)> {
        self.window
    }

    fn empty(
        select: &'a Select,
        condition: Condition,
        nodes: Vec<Node>,
        raw: Option<Vec<RawColumn>>,
        columns: Vec<String>,
        budget: &'a QueryBudget,
    ) -> Self {
        Plan {
            select,
            condition,
            zone: None,
            raw,
            rows: None,
            window: None,
            group_by: GroupBy::All,
            nodes,
            columns,
            budget,
        }
    }

    /// The statement's grouping in `measurement`: `GROUP BY *` is every tag key of the
    /// measurement, so a series without one of them is grouped under `""` for it.
    pub(super) async fn grouping<S: Store>(
        &self,
        store: &S,
        measurement: &str,
    ) -> Result<GroupBy, String> {
        Ok(match &self.group_by {
            GroupBy::Keys(keys) => GroupBy::Keys(keys.clone()),
            GroupBy::All => {
                let listed = store.tag_keys(measurement, MAX_NAMES).await;
                GroupBy::Keys(names_of(listed)?)
            }
        })
    }

    async fn measurement<S: Store>(
        &self,
        store: &S,
        measurement: &str,
    ) -> Result<Vec<Series>, String> {
        if self.condition.range.start >= self.condition.range.end {
            return Ok(Vec::new());
        }
        if let Some(rows) = &self.rows {
            return self.selector_rows(store, measurement, rows).await;
        }
        let group_by = self.grouping(store, measurement).await?;
        if let Some(raw) = &self.raw {
            return self.raw_measurement(store, measurement, raw).await;
        }
        let mut groups = Groups::new();
        let mut needs: BTreeMap<String, Vec<Agg>> = BTreeMap::new();
        for n in &self.nodes {
            collect_needs(n, &mut needs);
        }
        for (field, aggs) in &needs {
            self.read_field(store, measurement, field, aggs, &group_by, &mut groups)
                .await?;
        }
        // Not computed without data: an empty answer is not refused for its windows.
        let windows = match groups.values().any(has_data) {
            true => self.windows()?,
            false => None,
        };
        // Every row of every group (a time and a value per selected column, filled or
        // not) before any is computed: `fill(0)` over tiny windows is refused here, with
        // nothing built.
        let cells = windows.as_ref().map_or(0, |(starts, _)| {
            starts.len().saturating_mul(self.nodes.len() + 1)
        });
        let groups_with_data = groups.values().filter(|d| has_data(d)).count();
        self.budget
            .charge_points(groups_with_data.saturating_mul(cells))
            .map_err(budget_error)?;
        let mut out = Vec::new();
        for (tags, data) in &groups {
            if let Some(series) = self.group_series(measurement, tags, data, windows.as_ref())? {
                out.push(series);
            }
            // A group's windows are computed synchronously: between two, the request
            // may be dropped (its client gone).
            self.budget.progress(cells);
            checkpoint(store, self.budget).await;
        }
        Ok(out)
    }

    /// Reads one field for every group: the store's windows when every aggregate of it
    /// can be merged from them, raw points otherwise (and for raw selections).
    async fn read_field<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        field: &str,
        aggs: &[Agg],
        group_by: &GroupBy,
        groups: &mut Groups,
    ) -> Result<(), String> {
        let selector = self.condition.selector(measurement, Some(field));
        let range = self.condition.range;
        let windowed = match self.window {
            // The store's windows are UTC's: a zone's are computed from raw points.
            Some((interval, 0))
                if self.condition.field.is_none() && self.zone.is_none() && !aggs.is_empty() =>
            {
                let parts: Option<Vec<_>> = aggs.iter().map(|a| a.stored_parts()).collect();
                parts.map(|p| (interval, p))
            }
            _ => None,
        };
        if let Some((interval, parts)) = windowed {
            // One series per group (Grafana's usual query: one host, or GROUP BY every tag
            // that differs): each aggregate is the store's own, one read instead of two
            // for `mean`. The index lookup is cheap beside a read.
            let series = store.series(&selector).await.map_err(|e| e.in_select())?;
            let mut per_key: BTreeMap<Vec<(String, String)>, usize> = BTreeMap::new();
            for key in series.iter().filter(|key| self.condition.matches(key)) {
                *per_key.entry(group_by.key(key)).or_default() += 1;
            }
            let direct: Option<Vec<Aggregate>> = match per_key.values().all(|n| *n <= 1) {
                true => aggs.iter().map(|a| a.stored_aggregate()).collect(),
                false => None,
            };
            let mut wanted: Vec<Aggregate> = match direct {
                Some(direct) => direct,
                None => parts.iter().flat_map(|(a, _)| a.iter().copied()).collect(),
            };
            wanted.sort_by_key(|a| a.name());
            wanted.dedup();
            let mergeable = parts.iter().all(|(_, m)| *m);
            let mut per_group: Groups = Groups::new();
            for agg in wanted {
                let read = Read {
                    windows: Some((interval, agg)),
                    ..Read::raw(selector.clone(), range.start, range.end)
                };
                let answers = store.read(read, self.budget).await;
                for answer in answers.map_err(|e| e.in_select())? {
                    if !self.condition.matches(&answer.key) {
                        continue;
                    }
                    let data = per_group.entry(group_by.key(&answer.key)).or_default();
                    let entry = data.entry(field.to_string()).or_default();
                    entry.windows.entry(agg).or_default().push(answer.points);
                }
            }
            let single = per_group
                .values()
                .all(|d| d.values().all(|f| f.windows.values().all(|w| w.len() <= 1)));
            if mergeable || single {
                for (key, data) in per_group {
                    groups.entry(key).or_default().extend(data);
                }
                return Ok(());
            }
        }
        let field_rows = self.field_rows(store, measurement).await?;
        let read = Read::raw(selector, range.start, range.end);
        let answers = store.read(read, self.budget).await;
        for answer in answers.map_err(|e| e.in_select())? {
            if !self.condition.matches(&answer.key) {
                continue;
            }
            let mut points = answer.points;
            points.retain(|p| field_rows.keep(&answer.key.tags, p.time));
            let data = groups.entry(group_by.key(&answer.key)).or_default();
            let raw = data
                .entry(field.to_string())
                .or_default()
                .raw
                .get_or_insert_with(Vec::new);
            raw.extend(points);
        }
        for data in groups.values_mut() {
            if let Some(raw) = data.get_mut(field).and_then(|f| f.raw.as_mut()) {
                raw.sort_by_key(|p| p.time);
            }
        }
        Ok(())
    }

    /// `GROUP BY time()`'s window starts over the range, and the interval.
    fn windows(&self) -> Result<Option<(Vec<i64>, i64)>, String> {
        let Some((interval, offset)) = self.window else {
            return Ok(None);
        };
        let range = self.condition.range;
        let starts = window_starts(range.start, range.end, interval, offset, self.zone)?;
        Ok(Some((starts, interval)))
    }

    fn group_series(
        &self,
        measurement: &str,
        tags: &[(String, String)],
        data: &HashMap<String, FieldData>,
        windows: Option<&(Vec<i64>, i64)>,
    ) -> Result<Option<Series>, String> {
        if !has_data(data) {
            return Ok(None);
        }
        // The rows were charged for every group ([`Plan::measurement`]); this checks
        // that the client is still there.
        self.budget.check().map_err(budget_error)?;
        let ctx = Eval {
            fill: self.select.fill.clone().unwrap_or(Fill::Null),
            range: self.condition.range,
            alone: super::naming::single_selector(&self.select.fields),
            descending: self.select.descending,
            data,
            windows,
        };
        let mut columns: Vec<Column> = Vec::new();
        for n in &self.nodes {
            match ctx.eval(n) {
                Value::Column(c) => columns.push(c),
                Value::Scalar(_) => return Err("a selected expression needs a field".into()),
            }
        }
        let mut rows = join(&columns);
        // count() answers integers, as InfluxDB's JSON shows them.
        for (i, n) in self.nodes.iter().enumerate() {
            if let Node::Agg { agg, .. } = n {
                if !agg.counts() {
                    continue;
                }
                for row in rows.iter_mut() {
                    if let Some(Cell::Float(x)) = row.get(i + 1) {
                        row[i + 1] = Cell::Integer(*x as i64);
                    }
                }
            }
        }
        let values = self.paged(rows);
        if values.is_empty() {
            return Ok(None);
        }
        let mut names = vec!["time".to_string()];
        names.extend(self.columns.iter().cloned());
        let tags = match &self.group_by {
            GroupBy::Keys(keys) if keys.is_empty() => Vec::new(),
            _ => tags.to_vec(),
        };
        Ok(Some(Series {
            name: measurement.to_string(),
            tags,
            columns: names,
            values,
        }))
    }
}

/// Whether a group read anything to compute.
fn has_data(data: &HashMap<String, FieldData>) -> bool {
    data.values().any(|f| {
        f.raw.as_ref().is_some_and(|r| !r.is_empty())
            || f.windows.values().any(|w| w.iter().any(|p| !p.is_empty()))
    })
}

/// A budget's refusal as a statement's error. Never shown: a refused charge stays
/// recorded in the budget, and the server answers the whole request with it, naming the
/// limit and the option that sets it.
pub(super) fn budget_error(e: Exhausted) -> String {
    e.to_string()
}
