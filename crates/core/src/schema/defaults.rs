//! The `[defaults]` table and the `--retention` flag: the schema of every measurement the
//! config does not list, so that a store fed by Prometheus or Telegraf — hundreds of
//! metric names, each a measurement — bounds its disk with one line:
//!
//! ```toml
//! [defaults]
//! rollups = ["1h", "1d"]                     # the built-in default
//! retention = { raw = "30d", "1h" = "1y" }   # absent: kept forever
//! change_only = false
//! ```
//!
//! or `serve --retention raw=30d,1h=1y` (which replaces the table's `retention`). Only the
//! keys of value segments: a default describes measurements nobody described, which are
//! value segments; `layout`, `interval`, `kind` and `preallocate` are refused here with
//! their key. A listed value-segment measurement takes from the defaults what its own
//! table leaves out: `rollups`, `change_only`, and the retention of raw points and of the
//! rollups it keeps (a `retention` in its table replaces the defaults' whole). A bucket
//! measurement takes nothing from them.

use super::{invalid, key_path, MeasurementSchema, RawMeasurement, SchemaError};
use crate::rollup::{Resolution, ResolutionOrRaw};
use std::collections::BTreeMap;

/// The table's name, and the flag's, in error messages.
const TABLE: &str = "defaults";
const FLAG: &str = "--retention";

/// The defaults from the config's `[defaults]` table (`None`: not there) and the
/// `--retention` flag, checked as a measurement's table is.
pub(super) fn from_config(
    table: Option<toml::Value>,
    retention_flag: Option<&str>,
) -> Result<MeasurementSchema, SchemaError> {
    let mut raw = match table {
        None => RawMeasurement::default(),
        Some(toml::Value::Table(table)) => RawMeasurement::from_table(table, TABLE)?,
        Some(_) => return Err(invalid(TABLE, "expected a table")),
    };
    let per_measurement = [
        ("layout", raw.layout.is_some()),
        ("interval", raw.interval.is_some()),
        ("kind", raw.kind.is_some()),
        ("preallocate", raw.preallocate.is_some()),
    ];
    if let Some((key, _)) = per_measurement.iter().find(|(_, set)| *set) {
        return Err(invalid(
            &key_path(&[TABLE], key),
            "only in a measurement's own table (the defaults are for value-segment \
             measurements nobody listed)",
        ));
    }
    // The defaults' retention is the store's default by definition: a database's
    // retention policy takes its place.
    let from_defaults = |mut schema: MeasurementSchema| {
        schema.raw_retention_from_defaults = true;
        schema
    };
    let Some(flag) = retention_flag else {
        return raw
            .validate(TABLE, &MeasurementSchema::default())
            .map(from_defaults);
    };
    raw.retention = Some(parse_flag(flag)?);
    // The flag's entries are checked as the table's: name the flag, not the table.
    raw.validate(TABLE, &MeasurementSchema::default())
        .map(from_defaults)
        .map_err(|e| match e {
            SchemaError::Invalid { path, message } => {
                let prefix = key_path(&[TABLE], "retention");
                let key = path.strip_prefix(&prefix).unwrap_or(&path).to_string();
                invalid(&format!("{FLAG}{key}"), message)
            }
            other => other,
        })
}

/// The defaults' retention of the levels a measurement keeping `rollups` has: raw points,
/// and each of its rollups the defaults give a retention.
pub(super) fn retention_for(
    defaults: &MeasurementSchema,
    rollups: &[Resolution],
) -> BTreeMap<ResolutionOrRaw, i64> {
    defaults
        .retention
        .iter()
        .filter(|(level, _)| match level {
            ResolutionOrRaw::Raw => true,
            ResolutionOrRaw::Rollup(r) => rollups.contains(r),
        })
        .map(|(level, ns)| (*level, *ns))
        .collect()
}

/// `raw=30d,1h=1y` as the table's `retention` would hold it.
fn parse_flag(text: &str) -> Result<BTreeMap<String, String>, SchemaError> {
    let mut out = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((level, keep)) = entry.split_once('=') else {
            return Err(invalid(
                FLAG,
                format!("{entry:?}: expected LEVEL=DURATION, such as raw=30d or 1h=1y"),
            ));
        };
        let level = level.trim().to_string();
        if out.insert(level.clone(), keep.trim().to_string()).is_some() {
            return Err(invalid(
                &format!("{FLAG}.{level}"),
                format!("{level} is given twice"),
            ));
        }
    }
    if out.is_empty() {
        return Err(invalid(
            FLAG,
            "empty: give LEVEL=DURATION pairs, such as raw=30d,1h=1y",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Schema;
    use crate::rollup::{Resolution, ResolutionOrRaw};

    const DAY: i64 = 86_400_000_000_000;

    fn err(text: &str, flag: Option<&str>) -> String {
        Schema::from_toml_with_retention(text, flag)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn unlisted_measurements_get_the_defaults() {
        let schema = Schema::from_toml(
            "[defaults]\nrollups = [\"1h\"]\nretention = { raw = \"30d\", \"1h\" = \"1y\" }\n",
        )
        .unwrap();
        let m = schema.for_measurement("node_cpu_seconds_total");
        assert_eq!(m.rollups, vec![Resolution::HOUR]);
        assert_eq!(m.retention_ns(ResolutionOrRaw::Raw), Some(30 * DAY));
        assert_eq!(
            m.retention_ns(ResolutionOrRaw::Rollup(Resolution::HOUR)),
            Some(365 * DAY)
        );
    }

    #[test]
    fn listed_measurements_take_what_they_leave_out() {
        let config = "[defaults]\nretention = { raw = \"30d\", \"1d\" = \"2y\" }\n\
                      [measurements.cpu]\nrollups = [\"1h\"]\n\
                      [measurements.mem]\nretention = { raw = \"7d\" }\n\
                      [measurements.hits]\nlayout = \"buckets\"\ninterval = \"1m\"\n";
        let schema = Schema::from_toml(config).unwrap();
        let cpu = schema.for_measurement("cpu");
        // cpu keeps no 1d rollup: it inherits the raw retention alone.
        assert_eq!(cpu.retention.len(), 1);
        assert_eq!(cpu.retention_ns(ResolutionOrRaw::Raw), Some(30 * DAY));
        let mem = schema.for_measurement("mem");
        assert_eq!(mem.rollups, schema.defaults.rollups);
        assert_eq!(
            mem.retention.len(),
            1,
            "its own retention replaces the defaults'"
        );
        assert_eq!(mem.retention_ns(ResolutionOrRaw::Raw), Some(7 * DAY));
        assert!(schema.for_measurement("hits").retention.is_empty());
    }

    #[test]
    fn the_flag_replaces_the_tables_retention() {
        let schema = Schema::from_toml_with_retention(
            "[defaults]\nretention = { raw = \"30d\" }\n",
            Some("raw=2d, 1d=1y"),
        )
        .unwrap();
        let d = &schema.defaults;
        assert_eq!(d.retention_ns(ResolutionOrRaw::Raw), Some(2 * DAY));
        assert_eq!(
            d.retention_ns(ResolutionOrRaw::Rollup(Resolution::DAY)),
            Some(365 * DAY)
        );
        let listed =
            Schema::from_toml_with_retention("[measurements.cpu]\n", Some("raw=2d")).unwrap();
        assert_eq!(
            listed
                .for_measurement("cpu")
                .retention_ns(ResolutionOrRaw::Raw),
            Some(2 * DAY)
        );
    }

    /// The one rule of precedence for raw retention: a measurement's own `retention`,
    /// then the database's default retention policy, then the defaults.
    #[test]
    fn a_databases_policy_takes_the_defaults_place() {
        use crate::retention_policy::PolicyRetention::{Keep, Unset};
        let config = "[defaults]\nretention = { raw = \"30d\", \"1h\" = \"1y\" }\n\
                      [measurements.own]\nretention = { raw = \"365d\" }\n\
                      [measurements.listed]\nrollups = [\"1h\"]\n\
                      [measurements.hits]\nlayout = \"buckets\"\ninterval = \"1m\"\n";
        let schema = Schema::from_toml(config).unwrap();
        let raw = |m: &str, policy| schema.for_measurement(m).raw_retention_ns_under(policy);
        for m in ["unlisted", "listed"] {
            assert_eq!(raw(m, Unset), Some(30 * DAY), "{m}");
            assert_eq!(raw(m, Keep(Some(7 * DAY))), Some(7 * DAY), "{m}");
            assert_eq!(raw(m, Keep(None)), None, "{m}: the policy keeps forever");
        }
        assert_eq!(raw("own", Keep(Some(7 * DAY))), Some(365 * DAY));
        // The schema a database shows says the same.
        let shown = schema.under_policy(Keep(Some(7 * DAY)));
        let shown_raw = |m: &str| shown.for_measurement(m).retention_ns(ResolutionOrRaw::Raw);
        assert_eq!(shown_raw("unlisted"), Some(7 * DAY));
        assert_eq!(shown_raw("listed"), Some(7 * DAY));
        assert_eq!(shown_raw("own"), Some(365 * DAY));
        assert_eq!(shown_raw("hits"), None);
        let forever = schema.under_policy(Keep(None));
        assert_eq!(
            forever
                .for_measurement("unlisted")
                .retention_ns(ResolutionOrRaw::Raw),
            None
        );
        assert_eq!(
            schema.under_policy(Unset),
            schema,
            "no policy: the config's schema"
        );
        assert_eq!(
            raw("hits", Keep(Some(7 * DAY))),
            None,
            "buckets take their own"
        );
        let hour = ResolutionOrRaw::Rollup(Resolution::HOUR);
        assert_eq!(
            schema
                .for_measurement("listed")
                .retention_ns_under(hour, Keep(Some(7 * DAY))),
            Some(365 * DAY),
            "rollups keep the config's retention"
        );
    }

    #[test]
    fn bad_defaults_are_refused_with_their_key() {
        assert!(err("[defaults]\nlayout = \"buckets\"\n", None).starts_with("defaults.layout: "));
        assert!(err("defaults = 3\n", None).starts_with("defaults: expected a table"));
        assert!(err("[defaults]\nretention = { \"5m\" = \"1d\" }\n", None)
            .starts_with("defaults.retention.5m: 5m is not one of the rollups"));
        assert!(err("", Some("raw")).starts_with("--retention: \"raw\": expected LEVEL=DURATION"));
        assert!(err("", Some("5m=1d")).starts_with("--retention.5m: 5m is not one of the rollups"));
        assert!(err("", Some("raw=soon")).starts_with("--retention.raw: invalid duration"));
        assert!(err("", Some("raw=1d,raw=2d")).starts_with("--retention.raw: raw is given twice"));
        assert!(err("", Some(" , ")).starts_with("--retention: empty"));
    }
}
