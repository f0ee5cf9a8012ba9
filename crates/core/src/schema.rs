//! The per-measurement schema: how each measurement is stored — value segments
//! or periodic time buckets — whether it is a gauge or a counter, which rollups it keeps
//! and for how long, and whether repeated values are skipped on write.
//!
//! Read from the `measurements` tables of the TOML config (`--config tickertape.toml`):
//!
//! ```toml
//! [measurements.pageviews]
//! layout = "buckets"        # or "segments", the default
//! interval = "1s"           # sampling interval; required for buckets, refused for segments
//! kind = "counter"          # or "gauge", the default
//! rollups = ["1m", "5m", "1h", "1d"]            # [] keeps none; default below
//! retention = { raw = "7d", "1m" = "90d", "1h" = "2y" }   # absent: kept forever
//! change_only = false       # skip a point equal to its series' last value
//! preallocate = false       # buckets only: write next period's empty documents ahead
//! ```
//!
//! Durations take the units of [`parse_duration`] (`ns us ms s m h d w`); retentions also
//! take years, `y` = 365 days (`2y`, `1y30d`). A measurement not listed gets the
//! `[defaults]` table's schema (`defaults.rs`; without one,
//! [`MeasurementSchema::default`]). Retention is a lower bound: data is dropped a whole
//! time partition at a time, once the newest point a partition can hold is older than the
//! retention.
//!
//! A config that does not make sense is refused whole, with a message that starts with
//! the full key path (`measurements.pageviews.layout: unknown layout "rows" (expected
//! "segments" or "buckets")`), so that a typo fails at start-up rather than silently
//! storing data some other way.

use crate::retention_policy::PolicyRetention;
use crate::rollup::{BucketGeometry, Resolution, ResolutionOrRaw, MAX_RESOLUTION_NS};
use crate::time::{format_duration, parse_duration, TimeError, NANOS_PER_SECOND};
use serde::de::DeserializeOwned;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use thiserror::Error;

const YEAR_NS: i64 = 365 * 86_400 * NANOS_PER_SECOND;

/// The keys a measurement's table may hold, in the order the docs list them.
const MEASUREMENT_KEYS: [&str; 7] = [
    "layout",
    "interval",
    "kind",
    "rollups",
    "retention",
    "change_only",
    "preallocate",
];

/// Why a config was refused.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// Not TOML at all; toml's message names the line and column.
    #[error("invalid TOML: {0}")]
    Syntax(String),
    /// Valid TOML that is not a valid schema; `path` is the full key path
    /// (`measurements.pageviews.retention.1h`).
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

pub(crate) fn invalid(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        path: path.to_string(),
        message: message.into(),
    }
}

/// How a measurement's raw points are stored (`docs/design.md#two-layouts-per-measurement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Value segments: any timestamps, each stored with its point.
    Segments,
    /// Time buckets: one slot per `interval_ns`, the time implied by the
    /// slot; a point's time is rounded down to its slot.
    Buckets { interval_ns: i64 },
}

/// What a measurement's values mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A reading; a write sets the value of its time.
    #[default]
    Gauge,
    /// A count; a write with `mode=inc` adds to the value of its time's slot.
    Counter,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Self::Segments => "segments",
            Self::Buckets { .. } => "buckets",
        }
    }
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Gauge => "gauge",
            Self::Counter => "counter",
        }
    }
}

/// How one measurement is stored.
///
/// Invariants (checked by [`Schema::from_toml`]): `rollups` are distinct, finest first,
/// and for buckets each is a whole multiple of the interval; every `retention` key is
/// `Raw` or one of `rollups`, and its value (ns) is at least the resolution's width (for
/// `Raw`: the interval, for buckets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasurementSchema {
    pub layout: Layout,
    pub kind: Kind,
    pub rollups: Vec<Resolution>,
    /// How long each resolution is kept, ns; a resolution not listed is kept forever.
    pub retention: BTreeMap<ResolutionOrRaw, i64>,
    pub change_only: bool,
    /// Pre-allocate the next period's raw bucket documents (buckets only). Off by
    /// default: measured not to help on either backend (docs/BENCHMARKS.md).
    pub preallocate: bool,
    /// Whether the raw points' retention is the store's default (`[defaults]`,
    /// `--retention`) rather than the measurement's own table's: true for a measurement
    /// not listed, or listed as value segments without a `retention`. Where it is, a
    /// database's default retention policy replaces it ([`Self::raw_retention_ns_under`]).
    pub raw_retention_from_defaults: bool,
}

/// The rollups a value-segment measurement keeps unless its config says otherwise: 1h and
/// 1d. A 30-day chart (`max_points=1000`, a 1h step) still reads a rollup, and shorter
/// ranges read raw points, which the embedded store keeps in day-long compressed blocks.
/// The finer 1m and 5m rollups cost more than the raw points themselves: one slot per 6
/// and per 30 points of a 10 s series, and a merge per body (docs/BENCHMARKS.md, "The
/// rebuilt embedded engine against VictoriaMetrics").
pub const SEGMENT_ROLLUPS: [Resolution; 2] = [Resolution::HOUR, Resolution::DAY];

impl Default for MeasurementSchema {
    /// Segments, gauge, rollups 1h/1d ([`SEGMENT_ROLLUPS`]), everything kept forever,
    /// every point stored.
    fn default() -> Self {
        Self {
            layout: Layout::Segments,
            kind: Kind::Gauge,
            rollups: SEGMENT_ROLLUPS.to_vec(),
            retention: BTreeMap::new(),
            change_only: false,
            preallocate: false,
            raw_retention_from_defaults: true,
        }
    }
}

impl MeasurementSchema {
    /// The sampling interval of a bucket layout, ns.
    pub fn interval_ns(&self) -> Option<i64> {
        match self.layout {
            Layout::Segments => None,
            Layout::Buckets { interval_ns } => Some(interval_ns),
        }
    }

    /// The shape of the raw bucket documents of a bucket layout.
    pub fn raw_geometry(&self) -> Option<BucketGeometry> {
        self.interval_ns().and_then(BucketGeometry::for_slot)
    }

    /// How long `level` is kept, ns; `None`: forever.
    pub fn retention_ns(&self, level: ResolutionOrRaw) -> Option<i64> {
        self.retention.get(&level).copied()
    }

    /// How long this measurement's raw points are kept in a database whose retention
    /// policies say `policy`, ns; `None`: forever. The one rule of precedence: a
    /// measurement's own `retention` in the config comes first, then the database's
    /// default policy, then the store's defaults (`[defaults]`, `--retention`).
    pub fn raw_retention_ns_under(&self, policy: PolicyRetention) -> Option<i64> {
        match policy {
            PolicyRetention::Keep(duration) if self.raw_retention_from_defaults => duration,
            _ => self.retention_ns(ResolutionOrRaw::Raw),
        }
    }

    /// This schema as it holds in a database whose policies say `policy`: the raw
    /// retention resolved by [`Self::raw_retention_ns_under`], the rest unchanged.
    pub fn under_policy(&self, policy: PolicyRetention) -> MeasurementSchema {
        let mut schema = self.clone();
        match self.raw_retention_ns_under(policy) {
            Some(ns) => schema.retention.insert(ResolutionOrRaw::Raw, ns),
            None => schema.retention.remove(&ResolutionOrRaw::Raw),
        };
        schema
    }

    /// How long `level` is kept in a database whose policies say `policy`: the raw
    /// points as [`Self::raw_retention_ns_under`] says, rollups by the config alone.
    pub fn retention_ns_under(
        &self,
        level: ResolutionOrRaw,
        policy: PolicyRetention,
    ) -> Option<i64> {
        match level {
            ResolutionOrRaw::Raw => self.raw_retention_ns_under(policy),
            rollup => self.retention_ns(rollup),
        }
    }
}

/// Every measurement's schema. Measurements not listed get `defaults`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    pub measurements: BTreeMap<String, MeasurementSchema>,
    /// The schema of every measurement the config does not list: value segments with the
    /// `[defaults]` table's rollups, retention and `change_only` (or the built-in
    /// [`MeasurementSchema::default`]); a listed value-segment measurement takes from it
    /// what its own table leaves out (`defaults.rs`).
    pub defaults: MeasurementSchema,
}

impl Schema {
    /// The schema of `measurement`: its own if the config lists it, else the defaults.
    pub fn for_measurement(&self, measurement: &str) -> &MeasurementSchema {
        self.measurements.get(measurement).unwrap_or(&self.defaults)
    }

    /// The schema in force in a database whose policies say `policy`: every measurement's
    /// and the defaults' raw retention as that database keeps it
    /// ([`MeasurementSchema::under_policy`]). What `GET /api/v1/schema` shows.
    pub fn under_policy(&self, policy: PolicyRetention) -> Schema {
        Schema {
            measurements: self
                .measurements
                .iter()
                .map(|(name, schema)| (name.clone(), schema.under_policy(policy)))
                .collect(),
            defaults: self.defaults.under_policy(policy),
        }
    }

    /// Reads and checks the `defaults` and `measurements` tables of a TOML config. Any
    /// other top-level key, any unknown key in a measurement, and every rule in the
    /// module docs is an error naming its key path; nothing of a refused config is used.
    pub fn from_toml(text: &str) -> Result<Schema, SchemaError> {
        Self::from_toml_with_retention(text, None)
    }

    /// [`from_toml`](Self::from_toml), with `retention` (the `--retention` flag,
    /// `raw=30d,1h=1y`) in place of the `[defaults]` table's `retention`.
    pub fn from_toml_with_retention(
        text: &str,
        retention: Option<&str>,
    ) -> Result<Schema, SchemaError> {
        let mut root: toml::Table =
            toml::from_str(text).map_err(|e| SchemaError::Syntax(e.to_string()))?;
        let mut schema = Schema {
            defaults: defaults::from_config(root.remove("defaults"), retention)?,
            ..Schema::default()
        };
        for (key, value) in root {
            if key != "measurements" {
                return Err(invalid(
                    &key_path(&[], &key),
                    "unknown key (expected defaults or measurements)",
                ));
            }
            let toml::Value::Table(measurements) = value else {
                return Err(invalid("measurements", "expected a table of measurements"));
            };
            for (name, value) in measurements {
                let path = key_path(&["measurements"], &name);
                let toml::Value::Table(table) = value else {
                    return Err(invalid(&path, "expected a table"));
                };
                let raw = RawMeasurement::from_table(table, &path)?;
                let validated = raw.validate(&path, &schema.defaults)?;
                schema.measurements.insert(name, validated);
            }
        }
        Ok(schema)
    }
}

/// A measurement's table as written, every key optional and every value still text.
#[derive(Debug, Default)]
pub(crate) struct RawMeasurement {
    layout: Option<String>,
    interval: Option<String>,
    kind: Option<String>,
    rollups: Option<Vec<String>>,
    retention: Option<BTreeMap<String, String>>,
    change_only: Option<bool>,
    preallocate: Option<bool>,
}

impl RawMeasurement {
    /// Deserialises key by key, so that an unknown key or a value of the wrong type is
    /// reported with its own path rather than the measurement's.
    pub(crate) fn from_table(table: toml::Table, path: &str) -> Result<Self, SchemaError> {
        fn field<T: DeserializeOwned>(value: toml::Value, path: &str) -> Result<T, SchemaError> {
            value
                .try_into()
                .map_err(|e: toml::de::Error| invalid(path, e.message().trim()))
        }
        let mut raw = RawMeasurement::default();
        for (key, value) in table {
            let p = key_path(&[path], &key);
            match key.as_str() {
                "layout" => raw.layout = Some(field(value, &p)?),
                "interval" => raw.interval = Some(field(value, &p)?),
                "kind" => raw.kind = Some(field(value, &p)?),
                "rollups" => raw.rollups = Some(field(value, &p)?),
                "retention" => raw.retention = Some(field(value, &p)?),
                "change_only" => raw.change_only = Some(field(value, &p)?),
                "preallocate" => raw.preallocate = Some(field(value, &p)?),
                _ => {
                    return Err(invalid(
                        &p,
                        format!(
                            "unknown key (expected one of {})",
                            MEASUREMENT_KEYS.join(", ")
                        ),
                    ))
                }
            }
        }
        Ok(raw)
    }

    /// The measurement's schema, checked; a value-segment measurement takes the keys its
    /// table leaves out from `defaults` (rollups, change_only, and the retention of the
    /// levels it keeps).
    pub(crate) fn validate(
        self,
        path: &str,
        defaults: &MeasurementSchema,
    ) -> Result<MeasurementSchema, SchemaError> {
        let at = |key: &str| key_path(&[path], key);

        let interval = match &self.interval {
            None => None,
            Some(text) => {
                let p = at("interval");
                let ns = parse_duration(text).map_err(|e| invalid(&p, e.to_string()))?;
                if ns > MAX_RESOLUTION_NS {
                    return Err(invalid(
                        &p,
                        format!("{text} is longer than the longest supported, 364d"),
                    ));
                }
                Some(ns)
            }
        };
        let layout = match self.layout.as_deref() {
            None | Some("segments") => {
                if interval.is_some() {
                    return Err(invalid(
                        &at("interval"),
                        "only layout = \"buckets\" has an interval (segments store each point's time)",
                    ));
                }
                Layout::Segments
            }
            Some("buckets") => Layout::Buckets {
                interval_ns: interval.ok_or_else(|| {
                    invalid(&at("interval"), "required with layout = \"buckets\"")
                })?,
            },
            Some(other) => {
                return Err(invalid(
                    &at("layout"),
                    format!("unknown layout {other:?} (expected \"segments\" or \"buckets\")"),
                ))
            }
        };
        let kind = match self.kind.as_deref() {
            None | Some("gauge") => Kind::Gauge,
            Some("counter") => Kind::Counter,
            Some(other) => {
                return Err(invalid(
                    &at("kind"),
                    format!("unknown kind {other:?} (expected \"gauge\" or \"counter\")"),
                ))
            }
        };
        if kind == Kind::Counter && layout == Layout::Segments {
            return Err(invalid(
                &at("kind"),
                "a counter needs layout = \"buckets\" (increments add into the slot of their time)",
            ));
        }
        if self.change_only == Some(true) && layout != Layout::Segments {
            return Err(invalid(
                &at("change_only"),
                "only layout = \"segments\" can skip unchanged values (a bucket slot that \
                 was never written reads as absent, not as the value before it)",
            ));
        }
        if self.preallocate == Some(true) && layout == Layout::Segments {
            return Err(invalid(
                &at("preallocate"),
                "only layout = \"buckets\" has documents to pre-allocate",
            ));
        }

        let rollups = match self.rollups {
            // Buckets: the standard rollups their interval can feed (a rollup slot must
            // hold whole raw slots; a weekly interval gets none). Segments: the default's.
            None => match interval {
                Some(i) => Resolution::STANDARD
                    .into_iter()
                    .filter(|r| r.nanos() % i == 0)
                    .collect(),
                None => defaults.rollups.clone(),
            },
            Some(texts) => {
                let mut rollups: Vec<Resolution> = Vec::with_capacity(texts.len());
                for (i, text) in texts.iter().enumerate() {
                    let p = format!("{}[{i}]", at("rollups"));
                    let r = Resolution::parse(text).map_err(|e| invalid(&p, e.to_string()))?;
                    if let Some(interval) = interval {
                        if r.nanos() % interval != 0 {
                            return Err(invalid(
                                &p,
                                format!(
                                    "{r} is not a whole multiple of the interval {}",
                                    format_duration(interval)
                                ),
                            ));
                        }
                    }
                    if rollups.contains(&r) {
                        return Err(invalid(&p, format!("{r} is listed twice")));
                    }
                    rollups.push(r);
                }
                rollups.sort();
                rollups
            }
        };

        let inherited = self.retention.is_none() && layout == Layout::Segments;
        let mut retention = BTreeMap::new();
        if inherited {
            retention = defaults::retention_for(defaults, &rollups);
        }
        for (key, text) in self.retention.unwrap_or_default() {
            let p = key_path(&[&at("retention")], &key);
            let level = ResolutionOrRaw::parse(&key).map_err(|_| {
                invalid(
                    &p,
                    "unknown key (expected raw or one of the rollups, such as 1m)",
                )
            })?;
            let keep = parse_retention(&text).map_err(|e| invalid(&p, e))?;
            let (width, what) = match level {
                // Value segments: the store drops whole time partitions of raw points
                // (where it has them: the embedded store; MongoDB refuses at start-up).
                ResolutionOrRaw::Raw => (interval, "the interval"),
                ResolutionOrRaw::Rollup(r) => {
                    if !rollups.contains(&r) {
                        return Err(invalid(
                            &p,
                            format!("{r} is not one of the rollups in {}", at("rollups")),
                        ));
                    }
                    (Some(r.nanos()), "the resolution")
                }
            };
            if let Some(width) = width.filter(|&w| keep < w) {
                return Err(invalid(
                    &p,
                    format!("{text} is shorter than {what} {}", format_duration(width)),
                ));
            }
            if retention.insert(level, keep).is_some() {
                return Err(invalid(&p, format!("{level} is given twice")));
            }
        }

        Ok(MeasurementSchema {
            layout,
            kind,
            rollups,
            retention,
            change_only: self
                .change_only
                .unwrap_or(defaults.change_only && layout == Layout::Segments),
            preallocate: self.preallocate.unwrap_or(false),
            raw_retention_from_defaults: inherited,
        })
    }
}

/// A retention: a duration as [`parse_duration`], optionally led by whole years
/// (`2y`, `1y30d`; `y` = 365 days).
pub(crate) fn parse_retention(text: &str) -> Result<i64, String> {
    let trimmed = text.trim();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let (years, rest) = match trimmed[digits..].strip_prefix('y') {
        Some(rest) if digits > 0 => (&trimmed[..digits], rest),
        _ => ("0", trimmed),
    };
    let bad = || {
        format!(
            "invalid duration {text:?}: expected a number and a unit, such as 7d, 90d, 2y \
             (units: ns, us, ms, s, m, h, d, w, y)"
        )
    };
    let years: i64 = years.parse().map_err(|_| bad())?;
    let rest_ns = match rest {
        "" => 0,
        rest => parse_duration(rest).map_err(|e| match e {
            TimeError::ZeroDuration(_) => e.to_string(),
            _ => bad(),
        })?,
    };
    let total = years
        .checked_mul(YEAR_NS)
        .and_then(|y| y.checked_add(rest_ns))
        .ok_or_else(|| format!("duration {text:?} is too long"))?;
    if total == 0 {
        return Err(TimeError::ZeroDuration(text.to_string()).to_string());
    }
    Ok(total)
}

/// A retention as text: whole years as `Ny`, anything else as [`format_duration`].
fn format_retention(ns: i64) -> String {
    if ns % YEAR_NS == 0 {
        format!("{}y", ns / YEAR_NS)
    } else {
        format_duration(ns)
    }
}

/// `parent.key`, with `key` quoted when it is not a bare TOML key (`measurements."a b"`).
fn key_path(parents: &[&str], key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    parents
        .iter()
        .copied()
        .chain([key.as_str()])
        .collect::<Vec<_>>()
        .join(".")
}

/// `GET /api/v1/schema`: the config's own keys with durations as text, plus the schema
/// unlisted measurements get (`[defaults]`, `--retention`) under `default`.
impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Schema", 2)?;
        s.serialize_field("measurements", &self.measurements)?;
        s.serialize_field("default", &self.defaults)?;
        s.end()
    }
}

/// The keys of the TOML table: `layout`, `interval` (buckets only), `kind`, `rollups`,
/// `retention` (`{"raw": "7d", "1m": "90d"}`), `change_only`, `preallocate`.
impl Serialize for MeasurementSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Retention<'a>(&'a BTreeMap<ResolutionOrRaw, i64>);
        impl Serialize for Retention<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (level, ns) in self.0 {
                    map.serialize_entry(&level.to_string(), &format_retention(*ns))?;
                }
                map.end()
            }
        }
        let mut s = serializer.serialize_struct("MeasurementSchema", 7)?;
        s.serialize_field("layout", self.layout.name())?;
        match self.layout {
            Layout::Segments => s.skip_field("interval")?,
            Layout::Buckets { interval_ns } => {
                s.serialize_field("interval", &format_duration(interval_ns))?
            }
        }
        s.serialize_field("kind", self.kind.name())?;
        s.serialize_field("rollups", &self.rollups)?;
        s.serialize_field("retention", &Retention(&self.retention))?;
        s.serialize_field("change_only", &self.change_only)?;
        s.serialize_field("preallocate", &self.preallocate)?;
        s.end()
    }
}

mod defaults;

#[cfg(test)]
mod tests;
