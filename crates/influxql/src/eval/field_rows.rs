//! Field conditions as InfluxDB 1.x applies them: to rows — the points of one series at
//! one time — so `count("a") … WHERE "b" < 30` counts the points of `a` whose series has
//! `b` below 30 at the same time.

use std::collections::{BTreeMap, HashMap};

use super::condition::Filter;
use super::select::Plan;
use super::store::{Read, Store};
use tickertape_core::{Point, SeriesKey};

/// Each field's values by time.
type FieldValues = HashMap<String, BTreeMap<i64, f64>>;

/// The values of the fields a condition names, per series (its tags) and time.
pub(super) struct FieldRows<'f> {
    filter: Option<&'f Filter>,
    values: HashMap<Vec<(String, String)>, FieldValues>,
}

impl FieldRows<'_> {
    /// Whether the point of the series `tags` at `time` is in a row that passes.
    pub fn keep(&self, tags: &[(String, String)], time: i64) -> bool {
        let Some(filter) = self.filter else {
            return true;
        };
        let series = self.values.get(tags);
        let value_of = |field: &str| -> Option<f64> {
            series
                .and_then(|s| s.get(field))
                .and_then(|v| v.get(&time))
                .copied()
        };
        filter.matches_row(&value_of)
    }
}

impl Plan<'_> {
    /// Each selected series' raw points of `field` in the statement's range: the series
    /// the tag conditions keep, each point only if its row passes `rows`.
    pub(super) async fn kept_points<S: Store>(
        &self,
        store: &S,
        measurement: &str,
        field: &str,
        rows: &FieldRows<'_>,
    ) -> Result<Vec<(SeriesKey, Vec<Point>)>, String> {
        let range = self.condition.range;
        let selector = self.condition.selector(measurement, Some(field));
        let read = Read::raw(selector, range.start, range.end);
        let answers = store.read(read, self.budget).await;
        let mut out = Vec::new();
        for answer in answers.map_err(|e| e.in_select())? {
            if !self.condition.matches(&answer.key) {
                continue;
            }
            let mut points = answer.points;
            points.retain(|p| rows.keep(&answer.key.tags, p.time));
            out.push((answer.key, points));
        }
        Ok(out)
    }

    /// The condition's fields read for `measurement` (nothing when it names none).
    pub(super) async fn field_rows<S: Store>(
        &self,
        store: &S,
        measurement: &str,
    ) -> Result<FieldRows<'_>, String> {
        let mut out = FieldRows {
            filter: self.condition.field.as_ref(),
            values: HashMap::new(),
        };
        let Some(filter) = out.filter else {
            return Ok(out);
        };
        let mut names = Vec::new();
        filter.field_names(&mut names);
        let range = self.condition.range;
        for field in names {
            let selector = self.condition.selector(measurement, Some(&field));
            let read = Read::raw(selector, range.start, range.end);
            let answers = store.read(read, self.budget).await;
            for answer in answers.map_err(|e| e.in_select())? {
                if !self.condition.matches(&answer.key) {
                    continue;
                }
                out.values
                    .entry(answer.key.tags.clone())
                    .or_default()
                    .entry(field.clone())
                    .or_default()
                    .extend(answer.points.iter().map(|p| (p.time, p.value)));
            }
        }
        Ok(out)
    }
}
