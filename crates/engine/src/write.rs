//! Ingest: a line-protocol body (or a remote-write request, `samples.rs`) becomes one
//! append per series, and every refusal is reported with the line (or series) it came
//! from. A bad line never costs the good ones.
//!
//! Both entry points turn their input into [`Pending`] points of some [`Origin`] and hand
//! them to [`Engine::store_pending`], the one pipeline after parsing: series ids through
//! the cache and the series limits, grouping per series (the last write of a time wins),
//! the change-only filter, raw writes and the rollups of bucket measurements.

mod group;

use crate::key_limits::KeyLimits;
use crate::parse::{parse_lines, Parsed};
use crate::rollup_source::{nothing_refused, stored_count, RollupGroup, RollupSource};
use crate::series_limits::{admit, SeriesLimits};
use crate::{Engine, EngineError};
use group::{drop_stale_markers_from_buckets, group_by_series, Group};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tickertape_backend::{
    BackendError, BucketFamily, BucketWrite, BucketWriteOutcome, DeriveRollups, NameKind, RawBatch,
    RawOutcome, SeriesAppend, SlotChange,
};
use tickertape_core::database::{self, Namespace};
use tickertape_core::rollup::{BucketGeometry, MIN_BUCKET_TIME};
use tickertape_core::schema::{Kind, Layout, Schema};
use tickertape_core::time::{format_rfc3339, Precision};
use tickertape_core::{Point, SeriesId, SeriesKey};

/// How a body's values apply: `POST /write` sets points, `POST /write?mode=inc` adds each
/// value to the slot of its time in a counter measurement (a page-view counter's `$inc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    #[default]
    Set,
    Increment,
}

/// One refused line: its 1-based number in the body and why. For
/// [`Engine::write_samples`], the 1-based number of the series in the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

/// The outcome of one body. Counts are of lines (of series for
/// [`Engine::write_samples`]): a line is accepted when every one of its points was
/// stored, rejected otherwise (its error says which fields, if only some). A string field
/// value skipped ([`crate::StringFields::Skip`]) is not a point: a line whose other fields
/// were stored, or that held only strings, is accepted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteReport {
    pub accepted: usize,
    pub rejected: usize,
    pub points_written: u64,
    pub points_rejected: u64,
    /// String field values not stored, of accepted lines.
    pub string_fields_skipped: u64,
    /// Sorted by line number, one entry per rejected line.
    pub errors: Vec<LineError>,
}

/// Where pending points come from: a line of a line-protocol body, or one series of a
/// remote-write request. Refusals are reported under its number; a refusal before
/// grouping (a series limit, the schema) refuses all of its points.
pub(crate) trait Origin: Sync {
    /// 1-based, unique in the request.
    fn number(&self) -> usize;
    fn measurement(&self) -> &str;
    /// The text the series cache knows its series by (with a field name beside it).
    fn series_text(&self) -> &str;
    /// The key of its series with `field`.
    fn series_key(&self, field: &str) -> SeriesKey;
}

impl Origin for Parsed<'_> {
    fn number(&self) -> usize {
        self.number
    }

    fn measurement(&self) -> &str {
        self.line.measurement.as_ref()
    }

    fn series_text(&self) -> &str {
        self.line.series_text
    }

    fn series_key(&self, field: &str) -> SeriesKey {
        SeriesKey::new(
            self.line.measurement.as_ref(),
            self.line
                .tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            field,
        )
    }
}

/// One point on its way to a series, with where it came from.
pub(crate) struct Pending<'l, O> {
    pub(crate) source: &'l O,
    pub(crate) field: &'l str,
    pub(crate) point: Point,
}

/// Turns the raw writes' refusals into line errors: gauge bucket slots already taken
/// (value segments refuse nothing: the last write of a time wins).
fn report_refusals<O: Origin>(
    groups: &[Group<'_>],
    pending: &[Pending<'_, O>],
    source: &RollupSource,
    outcome: &RawOutcome,
    errors: &mut Errors,
) {
    for (&(g, i, slot_time), write) in source.bucket_sources.iter().zip(&outcome.buckets) {
        if *write == BucketWriteOutcome::SlotTaken {
            let p = &pending[groups[g].origins[i]];
            errors.entry(p.source.number()).or_default().push(format!(
                "field {:?}: the slot of time {} ({}) already holds a value (a gauge bucket slot is written once)",
                p.field,
                p.point.time,
                format_rfc3339(slot_time)
            ));
        }
    }
}

/// Refusals by line (or series) number.
pub(crate) type Errors = BTreeMap<usize, Vec<String>>;

/// The report of a request whose `accepted` origins (lines, series) were stored whole,
/// `points` points in all, `points_written` of them stored.
pub(crate) fn report(
    accepted: usize,
    points: usize,
    points_written: u64,
    errors: Errors,
) -> WriteReport {
    WriteReport {
        accepted,
        rejected: errors.len(),
        points_written,
        points_rejected: (points as u64).saturating_sub(points_written),
        string_fields_skipped: 0,
        errors: errors
            .into_iter()
            .map(|(line, messages)| LineError {
                line,
                message: messages.join("; "),
            })
            .collect(),
    }
}

impl Engine {
    /// Stores a line-protocol body. Timestamps are in `precision`; lines without one get
    /// the engine clock's "now". Returns `Err` only when the store failed, in which case no
    /// point of the body may be counted as stored.
    pub async fn write_lines(
        &self,
        body: &str,
        precision: Precision,
    ) -> Result<WriteReport, EngineError> {
        self.write_lines_as(body, precision, WriteMode::Set).await
    }

    /// [`write_lines`](Self::write_lines) with a [`WriteMode`]. A line whose measurement
    /// does not take the mode (an increment to a gauge, a plain write to a counter) is
    /// refused with its line number; the other lines are stored.
    ///
    /// Order of work: raw points first (segments or bucket slots), then the rollups of
    /// bucket measurements of exactly the slots stored, so a refused slot is never rolled
    /// up. The answer waits for both. Rollups of value segments the backend derives.
    pub async fn write_lines_as(
        &self,
        body: &str,
        precision: Precision,
        mode: WriteMode,
    ) -> Result<WriteReport, EngineError> {
        let now = self.clock.now_nanos();
        let mut errors = Errors::new();
        let mut parsed = Vec::new();
        let line_bytes = self.key_limits.line_bytes();
        for (number, result) in parse_lines(body, precision, now, line_bytes, self.string_fields) {
            match result {
                Ok(p) => parsed.push(p),
                Err(message) => errors.entry(number).or_default().push(message),
            }
        }
        // Every point of every parsed line: those of lines refused below count as rejected.
        let parsed_points: usize = parsed.iter().map(|p| p.stored().count()).sum();
        let pending: Vec<Pending<Parsed>> = parsed
            .iter()
            // A line of string values only stores nothing, and is not refused.
            .filter(|p| p.stored().next().is_some())
            .filter(|p| {
                let refusal =
                    refuse_for_schema(&self.schema, p.measurement(), p.line.timestamp, mode);
                match refusal {
                    Some(message) => {
                        errors.entry(p.number).or_default().push(message);
                        false
                    }
                    None => true,
                }
            })
            .flat_map(|p| {
                p.stored().map(move |(field, value)| Pending {
                    source: p,
                    field,
                    point: Point::new(p.line.timestamp, value),
                })
            })
            .collect();
        let points_written = self.store_pending(pending, mode, &mut errors).await?;
        let accepted: Vec<&Parsed> = parsed
            .iter()
            .filter(|p| !errors.contains_key(&p.number))
            .collect();
        let mut report = report(accepted.len(), parsed_points, points_written, errors);
        // Counted and logged once the lines' fate is known: the string values of a line
        // refused for another reason were refused with it, not skipped.
        report.string_fields_skipped = self
            .skipped_strings
            .note(accepted.iter().flat_map(|p| p.skipped()));
        Ok(report)
    }

    /// Stores pending points: the one pipeline after parsing, whatever the input. Refusals
    /// go to `errors` under their origin's number; a refusal before grouping (a series
    /// limit) refuses every point of that origin. Returns the points stored, counting as
    /// stored those the series already held (the change-only filter), those a later point
    /// of the request replaced, and stale markers bucket slots leave out.
    pub(crate) async fn store_pending<O: Origin>(
        &self,
        pending: Vec<Pending<'_, O>>,
        mode: WriteMode,
        errors: &mut Errors,
    ) -> Result<u64, EngineError> {
        let ids = self.series_ids(&pending, errors).await?;
        // A line refused for a series limit is refused whole, the fields of its other
        // series too: a line is stored or refused as one.
        let (pending, ids): (Vec<Pending<O>>, Vec<SeriesId>) = pending
            .into_iter()
            .zip(ids)
            .filter(|(p, _)| !errors.contains_key(&p.source.number()))
            .filter_map(|(p, id)| Some((p, id?)))
            .unzip();
        let (mut groups, superseded) = group_by_series(&self.schema, &pending, &ids);
        let unchanged = self.drop_unchanged(&mut groups).await?;
        let markers = drop_stale_markers_from_buckets(&mut groups);
        groups.retain(|g| !g.points.is_empty());
        let stored = match groups.is_empty() {
            true => 0,
            false => {
                let (batch, source) = self.plan_writes(&groups, mode).await?;
                // Computed here, beside other requests, for the usual outcome (nothing
                // refused); the backend may run `derive` on its single writer thread,
                // where a refusal makes it compute them again from what was stored.
                let expected = source.all_stored();
                let precomputed = source.rollup_writes(&expected);
                let deriver = Arc::clone(&source);
                let derive: DeriveRollups =
                    Box::new(move |outcome| match nothing_refused(outcome) {
                        true => precomputed,
                        false => deriver.rollup_writes(outcome),
                    });
                let outcome = self.backend.write_with_rollups(batch, derive).await?;
                report_refusals(&groups, &pending, &source, &outcome, errors);
                stored_count(&source, &outcome)
            }
        };
        // Points skipped by the change-only filter count as stored: the series already
        // holds their value (see `drop_unchanged`); so do points a later line of the body
        // replaced (`sort_keeping_last`).
        Ok(unchanged + superseded + markers + stored)
    }

    /// The raw writes of `groups` (segment appends, bucket-slot writes) and, owned, what
    /// their rollups are computed from.
    async fn plan_writes(
        &self,
        groups: &[Group<'_>],
        mode: WriteMode,
    ) -> Result<(RawBatch, Arc<RollupSource>), EngineError> {
        let mut batch = RawBatch::default();
        let mut source = RollupSource::default();
        for (g, group) in groups.iter().enumerate() {
            // Rollups of value segments the backend derives: none are written here.
            let rollups = match self.writes_rollups_of(group.schema) {
                true => group.schema.rollups.clone(),
                false => Vec::new(),
            };
            let uses_names = group.schema.layout != Layout::Segments || !rollups.is_empty();
            let measurement = match uses_names {
                true => Some(self.measurement_token(group.measurement).await?),
                false => None,
            };
            source.groups.push(RollupGroup {
                series: group.series,
                measurement,
                rollups,
                points: group.points.clone(),
            });
            let Layout::Buckets { interval_ns } = group.schema.layout else {
                batch.appends.push(
                    SeriesAppend::new(group.series, group.points.clone())
                        .map_err(BackendError::from)?,
                );
                source.append_groups.push(g);
                continue;
            };
            let (Some(geometry), Some(measurement)) =
                (BucketGeometry::for_slot(interval_ns), measurement)
            else {
                continue;
            };
            let family = BucketFamily::raw(measurement, interval_ns)?;
            for (i, point) in group.points.iter().enumerate() {
                // Times before MIN_BUCKET_TIME were refused by `refuse_for_schema`.
                let Some((bucket_start, slot)) = geometry.slot_of(point.time) else {
                    continue;
                };
                let change = match mode {
                    WriteMode::Set => SlotChange::Set(point.value),
                    WriteMode::Increment => SlotChange::Add(point.value),
                };
                batch.buckets.push(BucketWrite::new(
                    family,
                    group.series,
                    bucket_start,
                    slot,
                    change,
                )?);
                source
                    .bucket_sources
                    .push((g, i, geometry.slot_time(bucket_start, slot)));
            }
        }
        Ok((batch, Arc::new(source)))
    }

    /// The name-store token of this database's `measurement` (its stored name's).
    pub(crate) async fn measurement_token(&self, measurement: &str) -> Result<u64, EngineError> {
        let stored = self.stored_measurement(measurement);
        let tokens = self
            .names
            .tokenize(&*self.backend, NameKind::Measurement, &[&stored])
            .await?;
        tokens.first().copied().ok_or_else(|| {
            EngineError::Backend(tickertape_backend::BackendError::Storage(format!(
                "the name store issued no token for measurement {measurement:?}"
            )))
        })
    }

    /// The series id of every pending point, resolving unknown series in one backend call.
    /// A point whose series would be new past a [`SeriesLimits`] limit gets `None`, and its
    /// line an error naming the limit.
    async fn series_ids<O: Origin>(
        &self,
        pending: &[Pending<'_, O>],
        errors: &mut Errors,
    ) -> Result<Vec<Option<SeriesId>>, EngineError> {
        let mut ids = self
            .db
            .cache
            .lookup_many(pending.iter().map(|p| (p.source.series_text(), p.field)));
        // New series are registered in the order they first appear in the body, so ids
        // are deterministic for a given history of bodies.
        let mut missing: HashMap<SeriesKey, usize> = HashMap::new();
        let mut keys: Vec<SeriesKey> = Vec::new();
        let mut users: Vec<Vec<usize>> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if id.is_none() {
                let key = pending[i].source.series_key(pending[i].field);
                let slot = *missing.entry(key.clone()).or_insert_with(|| {
                    keys.push(key);
                    users.push(Vec::new());
                    keys.len() - 1
                });
                users[slot].push(i);
            }
        }
        if keys.is_empty() {
            return Ok(ids);
        }
        let refused = self.over_limits(&keys).await?;
        let (mut admitted, mut admitted_users) = (Vec::new(), Vec::new());
        for ((key, users), refusal) in keys.into_iter().zip(users).zip(refused) {
            match refusal {
                None => {
                    admitted.push(key);
                    admitted_users.push(users);
                }
                Some(message) => {
                    for i in users {
                        let number = pending[i].source.number();
                        errors
                            .entry(number)
                            .or_default()
                            .push(format!("{message} ({})", short_key(&key)));
                    }
                }
            }
        }
        if admitted.is_empty() {
            return Ok(ids);
        }
        let admitted: Vec<SeriesKey> = admitted.into_iter().map(|k| self.stored_key(k)).collect();
        let resolved = self.backend.resolve_series(&admitted).await?;
        for (id, users) in resolved.into_iter().zip(admitted_users) {
            for i in users {
                self.db
                    .cache
                    .insert(pending[i].source.series_text(), pending[i].field, id);
                ids[i] = Some(id);
            }
        }
        Ok(ids)
    }

    /// For each key, why registering it would pass a [`KeyLimits`] or a series limit
    /// (`None`: it may be registered, or is already: a stored series is never refused).
    /// Asks the backend only when limits are set.
    async fn over_limits(&self, keys: &[SeriesKey]) -> Result<Vec<Option<String>>, EngineError> {
        let reserved = keys
            .iter()
            .map(|k| match self.namespace() {
                Namespace::Default => database::refuse_measurement(&k.measurement),
                Namespace::Named { .. } => None,
            })
            .collect::<Vec<_>>();
        if self.series_limits.is_none() && self.key_limits == KeyLimits::NONE {
            return Ok(reserved);
        }
        // The default database stores keys as written (its reserved names are refused
        // above whatever a lookup says): no copy on the common path.
        let stored: Cow<'_, [SeriesKey]> = match self.namespace() {
            Namespace::Default => Cow::Borrowed(keys),
            Namespace::Named { .. } => keys.iter().map(|k| self.stored_key(k.clone())).collect(),
        };
        let mut known: Vec<Option<Result<(), String>>> = self
            .backend
            .lookup_series(&stored)
            .await?
            .into_iter()
            .zip(keys)
            .zip(reserved)
            .map(|((id, key), reserved)| match (id, reserved) {
                (_, Some(refusal)) => Some(Err(refusal)),
                (Some(_), None) => None,
                (None, None) => Some(self.key_limits.refuse(key).map_or(Ok(()), Err)),
            })
            .collect();
        let new: Vec<&str> = keys
            .iter()
            .zip(&known)
            .filter(|(_, verdict)| matches!(verdict, Some(Ok(()))))
            .map(|(k, _)| k.measurement.as_str())
            .collect();
        if self.series_limits.is_none() || new.is_empty() {
            return Ok(known.into_iter().map(|v| v.and_then(Result::err)).collect());
        }
        let mut measurements: Vec<String> = new.iter().map(|m| m.to_string()).collect();
        measurements.sort_unstable();
        measurements.dedup();
        let stored: Vec<String> = measurements
            .iter()
            .map(|m| self.stored_measurement(m).into_owned())
            .collect();
        let count = self.backend.count_series(&stored).await?;
        let in_database = match self.series_limits.max_series_per_database {
            0 => 0,
            _ => self.count_database_series().await?,
        };
        let database = SeriesLimits::database(self.database_name().as_str(), in_database);
        let mut verdicts =
            admit(self.series_limits, &count, database, &measurements, &new).into_iter();
        for verdict in &mut known {
            if matches!(verdict, Some(Ok(()))) {
                *verdict = verdicts.next();
            }
        }
        Ok(known.into_iter().map(|v| v.and_then(Result::err)).collect())
    }
}

impl Engine {
    /// How many series this database holds: the sum over its measurements.
    async fn count_database_series(&self) -> Result<u64, EngineError> {
        let every = tickertape_backend::NameQuery::new("", usize::MAX);
        let measurements: Vec<String> = self
            .list_measurements(&every)
            .await?
            .names
            .iter()
            .map(|m| self.stored_measurement(m).into_owned())
            .collect();
        Ok(self
            .backend
            .count_series(&measurements)
            .await?
            .per_measurement
            .iter()
            .sum())
    }
}

/// A series key for a message, cut at 120 characters: a key refused for its size must
/// not make a message of its size.
fn short_key(key: &SeriesKey) -> String {
    const SHOWN: usize = 120;
    let text = key.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Why a whole line (or series) of `measurement` cannot be stored with `mode`, if it
/// cannot; `earliest` is its earliest time.
pub(crate) fn refuse_for_schema(
    schema: &Schema,
    measurement: &str,
    earliest: i64,
    mode: WriteMode,
) -> Option<String> {
    let m = schema.for_measurement(measurement);
    match (mode, m.kind) {
        (WriteMode::Increment, Kind::Gauge) => {
            return Some(format!(
                "measurement {measurement:?} is a gauge: mode=inc adds to counters only (kind = \"counter\" in the config)"
            ))
        }
        (WriteMode::Set, Kind::Counter) => {
            return Some(format!(
                "measurement {measurement:?} is a counter: write it with mode=inc"
            ))
        }
        _ => {}
    }
    // Bucket documents (and the rollups the engine writes for them) start at multiples of
    // their period, which for the earliest times lies before i64::MIN. Value segments'
    // rollups are derived by the stores with saturating slot starts, so a segment
    // measurement, rollups or not, takes InfluxDB's whole time range.
    let bucketed = matches!(m.layout, Layout::Buckets { .. });
    (bucketed && earliest < MIN_BUCKET_TIME).then(|| {
        format!(
            "time {earliest} is before {MIN_BUCKET_TIME} (1737-07-09), the earliest time a \
             measurement with the bucket layout can hold"
        )
    })
}
