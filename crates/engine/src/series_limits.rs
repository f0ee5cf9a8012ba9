//! Limits on how many series a store registers (`tickertape serve --max-series`,
//! `--max-series-per-database` and `--max-series-per-measurement`, a measurement of one
//! database): a line that would create a series past a limit is refused, naming the limit;
//! lines of series already registered are stored as usual.
//!
//! The engine checks before it registers, against the backend's count, so two bodies
//! written at the same moment may together pass a limit by what each registers.

use std::collections::HashMap;
use tickertape_backend::SeriesCount;

/// 0 means no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesLimits {
    pub max_series: u64,
    pub max_series_per_database: u64,
    pub max_series_per_measurement: u64,
}

/// The database a write registers series in, and how many it holds (counted only when
/// `max_series_per_database` is set).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DatabaseCount<'a> {
    pub(crate) name: &'a str,
    pub(crate) series: u64,
}

impl SeriesLimits {
    /// About 5 GB of memory on the embedded store at ~1 KB a series.
    pub const DEFAULT_MAX_SERIES: u64 = 5_000_000;
    pub const DEFAULT_MAX_SERIES_PER_MEASUREMENT: u64 = 2_000_000;
    pub const NONE: Self = Self {
        max_series: 0,
        max_series_per_database: 0,
        max_series_per_measurement: 0,
    };

    pub fn is_none(&self) -> bool {
        *self == Self::NONE
    }

    pub(crate) fn database(name: &str, series: u64) -> DatabaseCount<'_> {
        DatabaseCount { name, series }
    }
}

impl Default for SeriesLimits {
    fn default() -> Self {
        Self {
            max_series: Self::DEFAULT_MAX_SERIES,
            max_series_per_database: 0,
            max_series_per_measurement: Self::DEFAULT_MAX_SERIES_PER_MEASUREMENT,
        }
    }
}

/// For each new series (by its measurement, in the order they would be registered): `Ok`
/// if it fits under every limit counting the ones admitted before it, else why not.
/// `count.per_measurement` is aligned with `measurements`.
pub(crate) fn admit(
    limits: SeriesLimits,
    count: &SeriesCount,
    mut database: DatabaseCount<'_>,
    measurements: &[String],
    new: &[&str],
) -> Vec<Result<(), String>> {
    let mut total = count.total;
    let mut per: HashMap<&str, u64> = measurements
        .iter()
        .map(String::as_str)
        .zip(count.per_measurement.iter().copied())
        .collect();
    new.iter()
        .map(|&m| {
            let in_m = per.get(m).copied().unwrap_or(0);
            if limits.max_series > 0 && total >= limits.max_series {
                return Err(format!(
                    "series limit reached: the store holds {total} series and --max-series is {}; \
                     this write would add a new series",
                    limits.max_series
                ));
            }
            if limits.max_series_per_database > 0
                && database.series >= limits.max_series_per_database
            {
                return Err(format!(
                    "series limit reached: database {:?} holds {} series and \
                     --max-series-per-database is {}; this write would add a new series",
                    database.name, database.series, limits.max_series_per_database
                ));
            }
            if limits.max_series_per_measurement > 0 && in_m >= limits.max_series_per_measurement {
                return Err(format!(
                    "series limit reached: measurement {m:?} holds {in_m} series and \
                     --max-series-per-measurement is {}; this write would add a new series",
                    limits.max_series_per_measurement
                ));
            }
            total += 1;
            database.series += 1;
            per.insert(m, in_m + 1);
            Ok(())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_in_order_until_a_limit_is_reached() {
        let limits = SeriesLimits {
            max_series: 5,
            max_series_per_database: 0,
            max_series_per_measurement: 2,
        };
        let db = SeriesLimits::database("tickertape", 0);
        let count = SeriesCount {
            total: 2,
            per_measurement: vec![1, 0],
        };
        let measurements = ["cpu".to_string(), "mem".to_string()];
        let got = admit(
            limits,
            &count,
            db,
            &measurements,
            &["cpu", "cpu", "mem", "mem", "mem"],
        );
        assert!(got[0].is_ok());
        let e = got[1].as_ref().unwrap_err();
        assert!(
            e.contains("limit") && e.contains("--max-series-per-measurement is 2"),
            "{e}"
        );
        assert!(got[2].is_ok() && got[3].is_ok());
        let e = got[4].as_ref().unwrap_err();
        assert!(
            e.contains("--max-series is 5") && e.contains("holds 5 series"),
            "{e}"
        );
        let none = admit(SeriesLimits::NONE, &count, db, &measurements, &["cpu"; 3]);
        assert!(none.iter().all(Result::is_ok));
        let per_database = SeriesLimits {
            max_series_per_database: 3,
            ..SeriesLimits::NONE
        };
        let app = SeriesLimits::database("app", 2);
        let got = admit(per_database, &count, app, &measurements, &["cpu", "mem"]);
        assert!(got[0].is_ok());
        let e = got[1].as_ref().unwrap_err();
        assert!(
            e.contains("database \"app\" holds 3 series")
                && e.contains("--max-series-per-database is 3"),
            "{e}"
        );
    }
}
