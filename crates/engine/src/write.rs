//! Ingest: a line-protocol body becomes one append per series, and every refusal is
//! reported with the line it came from. A bad line never costs the good ones.

use crate::{Engine, EngineError};
use std::collections::{BTreeMap, HashMap};
use tickertape_backend::SeriesAppend;
use tickertape_core::lineproto::{self, FieldValue, Line};
use tickertape_core::time::Precision;
use tickertape_core::{Point, SeriesId, SeriesKey};

/// Integers beyond ±2^53 have no exact f64; storing them would silently change them.
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// One refused line: its 1-based number in the body and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

/// The outcome of one body. Counts are of lines: a line is accepted when every one of its
/// points was stored, rejected otherwise (its error says which fields, if only some).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteReport {
    pub accepted: usize,
    pub rejected: usize,
    pub points_written: u64,
    pub points_rejected: u64,
    /// Sorted by line number, one entry per rejected line.
    pub errors: Vec<LineError>,
}

/// A parsed line whose fields all convert to f64.
struct Parsed<'a> {
    number: usize,
    line: Line<'a>,
    values: Vec<f64>,
}

/// One point on its way to a series, with the line it came from.
struct Pending<'l, 'a> {
    source: &'l Parsed<'a>,
    field: &'l str,
    point: Point,
}

/// The points of one series in this body, in line order.
struct Group {
    series: SeriesId,
    points: Vec<Point>,
    /// For each point, the index of the pending point it came from.
    origins: Vec<usize>,
}

type Errors = BTreeMap<usize, Vec<String>>;

impl Engine {
    /// Stores a line-protocol body. Timestamps are in `precision`; lines without one get
    /// the engine clock's "now". Returns `Err` only when the store failed, in which case no
    /// point of the body may be counted as stored.
    pub async fn write_lines(
        &self,
        body: &str,
        precision: Precision,
    ) -> Result<WriteReport, EngineError> {
        let now = self.clock.now_nanos();
        let mut errors = Errors::new();
        let mut parsed = Vec::new();
        for (number, result) in lineproto::parse_body(body, precision, now) {
            let result = result.map_err(|e| e.to_string()).and_then(|line| {
                Ok(Parsed {
                    number,
                    values: numeric_values(&line)?,
                    line,
                })
            });
            match result {
                Ok(p) => parsed.push(p),
                Err(message) => errors.entry(number).or_default().push(message),
            }
        }
        let pending: Vec<Pending> = parsed
            .iter()
            .flat_map(|p| {
                p.line
                    .fields
                    .iter()
                    .zip(&p.values)
                    .map(move |((name, _), &value)| Pending {
                        source: p,
                        field: name.as_ref(),
                        point: Point::new(p.line.timestamp, value),
                    })
            })
            .collect();
        let ids = self.series_ids(&pending).await?;
        let mut groups = group_by_series(&pending, &ids, &mut errors);
        let unchanged = self.drop_unchanged(&mut groups, &pending).await?;
        groups.retain(|g| !g.points.is_empty());
        let appends = groups
            .iter_mut()
            .map(|g| SeriesAppend {
                series: g.series,
                points: std::mem::take(&mut g.points),
            })
            .collect();
        let outcomes = self.backend.append(appends).await?;
        // Points skipped by the change-only filter count as stored: the series already
        // holds their value (see `drop_unchanged`).
        let mut points_written = unchanged;
        for (group, outcome) in groups.iter().zip(&outcomes) {
            points_written += (group.origins.len() - outcome.refused) as u64;
            for &origin in group.origins.iter().take(outcome.refused) {
                let last = outcome.last_time.map_or(String::new(), |t| format!(" {t}"));
                let p = &pending[origin];
                errors.entry(p.source.number).or_default().push(format!(
                    "field {:?}: time {} is not after the series' last stored time{last} (out-of-order points are refused)",
                    p.field, p.point.time
                ));
            }
        }
        let rejected_parsed = parsed
            .iter()
            .filter(|p| errors.contains_key(&p.number))
            .count();
        Ok(WriteReport {
            accepted: parsed.len() - rejected_parsed,
            rejected: errors.len(),
            points_written,
            points_rejected: pending.len() as u64 - points_written,
            errors: errors
                .into_iter()
                .map(|(line, messages)| LineError {
                    line,
                    message: messages.join("; "),
                })
                .collect(),
        })
    }

    /// Seed 000's change-only filter, for measurements whose schema asks for it: drops a
    /// point whose value equals (bit for bit) the value before it in its series — the last
    /// stored one or the previous point of this body. Returns how many were dropped.
    ///
    /// A point that is not after the stored last time is kept, so the backend refuses it
    /// as out of order exactly as without the filter. Readers see the value hold until the
    /// next stored point; `neighbors=true` returns the point that carries it into a range.
    async fn drop_unchanged(
        &self,
        groups: &mut [Group],
        pending: &[Pending<'_, '_>],
    ) -> Result<u64, EngineError> {
        let filtered: Vec<usize> = (0..groups.len())
            .filter(|&g| {
                let measurement = &pending[groups[g].origins[0]].source.line.measurement;
                self.schema.for_measurement(measurement).change_only
            })
            .collect();
        if filtered.is_empty() {
            return Ok(0);
        }
        let ids: Vec<SeriesId> = filtered.iter().map(|&g| groups[g].series).collect();
        let heads = self.backend.heads(&ids).await?;
        let mut dropped = 0u64;
        for (&g, head) in filtered.iter().zip(heads) {
            let group = &mut groups[g];
            let mut previous = head.map(|h| h.last);
            let mut kept = 0;
            for i in 0..group.points.len() {
                let point = group.points[i];
                let after_last = previous.is_none_or(|p| point.time > p.time);
                let same = previous.is_some_and(|p| p.value.to_bits() == point.value.to_bits());
                if after_last && same {
                    dropped += 1;
                    continue;
                }
                if after_last {
                    previous = Some(point);
                }
                group.points[kept] = point;
                group.origins[kept] = group.origins[i];
                kept += 1;
            }
            group.points.truncate(kept);
            group.origins.truncate(kept);
        }
        Ok(dropped)
    }

    /// The series id of every pending point, resolving unknown series in one backend call.
    async fn series_ids(&self, pending: &[Pending<'_, '_>]) -> Result<Vec<SeriesId>, EngineError> {
        let mut ids = self
            .cache
            .lookup_many(pending.iter().map(|p| (p.source.line.series_text, p.field)));
        // New series are registered in the order they first appear in the body, so ids
        // are deterministic for a given history of bodies.
        let mut missing: HashMap<SeriesKey, usize> = HashMap::new();
        let mut keys: Vec<SeriesKey> = Vec::new();
        let mut users: Vec<Vec<usize>> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if id.is_none() {
                let key = series_key(&pending[i]);
                let slot = *missing.entry(key.clone()).or_insert_with(|| {
                    keys.push(key);
                    users.push(Vec::new());
                    keys.len() - 1
                });
                users[slot].push(i);
            }
        }
        if !keys.is_empty() {
            let resolved = self.backend.resolve_series(&keys).await?;
            for (id, users) in resolved.into_iter().zip(users) {
                for i in users {
                    self.cache
                        .insert(pending[i].source.line.series_text, pending[i].field, id);
                    ids[i] = Some(id);
                }
            }
        }
        Ok(ids.into_iter().flatten().collect())
    }
}

fn series_key(p: &Pending<'_, '_>) -> SeriesKey {
    let line = &p.source.line;
    SeriesKey::new(
        line.measurement.as_ref(),
        line.tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        p.field,
    )
}

/// Every field of a line as an f64, or why the line cannot be stored exactly.
fn numeric_values(line: &Line<'_>) -> Result<Vec<f64>, String> {
    line.fields
        .iter()
        .map(|(name, value)| match value {
            FieldValue::Float(f) => Ok(*f),
            FieldValue::Integer(i) if i.unsigned_abs() <= MAX_EXACT_INTEGER => Ok(*i as f64),
            FieldValue::Unsigned(u) if *u <= MAX_EXACT_INTEGER => Ok(*u as f64),
            FieldValue::Integer(i) => Err(format!(
                "field {name:?}: integer {i} has no exact float64, and tickertape stores float64 values"
            )),
            FieldValue::Unsigned(u) => Err(format!(
                "field {name:?}: integer {u} has no exact float64, and tickertape stores float64 values"
            )),
            FieldValue::Boolean(b) => Ok(f64::from(u8::from(*b))),
            FieldValue::String(_) => Err(format!(
                "field {name:?} is a string; tickertape stores numbers and booleans only"
            )),
        })
        .collect()
}

/// Groups pending points by series in line order, refusing a point whose time does not
/// follow the previous point of its series in this body.
fn group_by_series(
    pending: &[Pending<'_, '_>],
    ids: &[SeriesId],
    errors: &mut Errors,
) -> Vec<Group> {
    let mut index: HashMap<SeriesId, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for (i, (p, &series)) in pending.iter().zip(ids).enumerate() {
        let g = *index.entry(series).or_insert_with(|| {
            groups.push(Group {
                series,
                points: Vec::new(),
                origins: Vec::new(),
            });
            groups.len() - 1
        });
        let group = &mut groups[g];
        if let (Some(prev), Some(&prev_origin)) = (group.points.last(), group.origins.last()) {
            if p.point.time <= prev.time {
                errors.entry(p.source.number).or_default().push(format!(
                    "field {:?}: time {} is not after time {} of the same series on line {} (out-of-order points are refused)",
                    p.field, p.point.time, prev.time, pending[prev_origin].source.number
                ));
                continue;
            }
        }
        group.points.push(p.point);
        group.origins.push(i);
    }
    groups
}
