//! What makes the series count: series per measurement and per field, distinct values
//! per tag key, series per tag pair — the cardinality view (`/api/v1/status/cardinality`,
//! Prometheus' `/status/tsdb`), so a user can see which measurement or label grows.
//!
//! One pass over every registered series' key: O(series) time and memory for the
//! distinct tag pairs (a million series of unique values: about a second and ~100 MB on
//! the embedded store, whose keys are in memory; on MongoDB a read of the `series`
//! collection, measurement by measurement). Meant for a person looking, not a scrape.

use crate::{Engine, EngineError};
use std::collections::{BTreeSet, HashMap, HashSet};
use tickertape_core::database::split_stored;
use tickertape_core::{SeriesKey, SeriesSelector};

/// The counts of one database, each list the `limit` largest, largest first (ties by
/// name), and the series of every database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cardinality {
    /// The database counted.
    pub database: String,
    /// Registered series of the database.
    pub series: u64,
    /// Registered series of every database.
    pub series_in_all_databases: u64,
    /// Series per database, every database that holds any, largest first.
    pub series_by_database: Vec<(String, u64)>,
    /// Distinct measurements, (measurement, field) pairs and tag pairs in all.
    pub measurements: u64,
    pub fields: u64,
    pub tag_pairs: u64,
    pub series_by_measurement: Vec<(String, u64)>,
    /// Series per (measurement, field): Prometheus' metric names.
    pub series_by_field: Vec<((String, String), u64)>,
    pub values_by_tag_key: Vec<(String, u64)>,
    pub series_by_tag_pair: Vec<((String, String), u64)>,
}

/// Counts keys one at a time; [`Counter::top`] ends it.
#[derive(Default)]
pub struct Counter {
    series: u64,
    by_measurement: HashMap<String, u64>,
    by_field: HashMap<(String, String), u64>,
    values: HashMap<String, HashSet<String>>,
    by_pair: HashMap<(String, String), u64>,
}

impl Counter {
    pub fn add(&mut self, key: &SeriesKey) {
        self.series += 1;
        *self
            .by_measurement
            .entry(key.measurement.clone())
            .or_default() += 1;
        *self
            .by_field
            .entry((key.measurement.clone(), key.field.clone()))
            .or_default() += 1;
        for (k, v) in &key.tags {
            if !self.values.get(k).is_some_and(|values| values.contains(v)) {
                self.values.entry(k.clone()).or_default().insert(v.clone());
            }
            *self.by_pair.entry((k.clone(), v.clone())).or_default() += 1;
        }
    }

    pub fn top(self, limit: usize) -> Cardinality {
        Cardinality {
            series: self.series,
            series_in_all_databases: self.series,
            database: String::new(),
            series_by_database: Vec::new(),
            measurements: self.by_measurement.len() as u64,
            fields: self.by_field.len() as u64,
            tag_pairs: self.by_pair.len() as u64,
            series_by_measurement: largest(self.by_measurement, limit),
            series_by_field: largest(self.by_field, limit),
            values_by_tag_key: largest(
                self.values
                    .into_iter()
                    .map(|(k, values)| (k, values.len() as u64)),
                limit,
            ),
            series_by_tag_pair: largest(self.by_pair, limit),
        }
    }
}

/// The `limit` largest counts, largest first, ties in name order.
fn largest<K: Ord>(counts: impl IntoIterator<Item = (K, u64)>, limit: usize) -> Vec<(K, u64)> {
    let mut all: Vec<(K, u64)> = counts.into_iter().collect();
    all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(limit);
    all
}

impl Engine {
    /// The counts of this database's registered series, each list cut to `limit`, and
    /// how many series each database holds.
    pub async fn cardinality(&self, limit: usize) -> Result<Cardinality, EngineError> {
        let mut counter = Counter::default();
        let fields = self.list_fields().await?;
        let measurements: BTreeSet<String> = fields.into_iter().map(|(m, _)| m).collect();
        for measurement in measurements {
            let selector = SeriesSelector {
                measurement,
                ..SeriesSelector::default()
            };
            for series in self.find_stored(&selector).await? {
                counter.add(&series.key);
            }
        }
        let by_database = self.series_by_database().await?;
        let mut cardinality = counter.top(limit);
        cardinality.database = self.database_name().to_string();
        cardinality.series_in_all_databases = by_database.iter().map(|(_, n)| n).sum();
        cardinality.series_by_database = largest(by_database, usize::MAX);
        Ok(cardinality)
    }

    /// Series per database, from the backend's counts per stored measurement.
    async fn series_by_database(&self) -> Result<Vec<(String, u64)>, EngineError> {
        let stored: BTreeSet<String> = self
            .backend
            .list_fields()
            .await?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        let stored: Vec<String> = stored.into_iter().collect();
        let counts = self.backend.count_series(&stored).await?;
        let mut by_database: HashMap<String, u64> = HashMap::new();
        for (measurement, count) in stored.iter().zip(counts.per_measurement) {
            let database = match split_stored(measurement).0 {
                Some(name) => name.to_string(),
                None => self.default_database().to_string(),
            };
            *by_database.entry(database).or_default() += count;
        }
        Ok(by_database.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: &str, tags: &[(&str, &str)], f: &str) -> SeriesKey {
        let tags = tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SeriesKey::new(m, tags, f)
    }

    #[test]
    fn counts_and_cuts_largest_first_ties_by_name() {
        let mut counter = Counter::default();
        for host in ["a", "b", "c"] {
            for f in ["user", "idle"] {
                counter.add(&key("cpu", &[("host", host), ("dc", "x")], f));
            }
        }
        counter.add(&key("mem", &[("host", "a")], "used"));
        let c = counter.top(2);
        assert_eq!((c.series, c.series_in_all_databases), (7, 7));
        assert_eq!((c.measurements, c.fields, c.tag_pairs), (2, 3, 4));
        assert_eq!(
            c.series_by_measurement,
            [("cpu".into(), 6), ("mem".into(), 1)]
        );
        assert_eq!(
            c.series_by_field,
            [
                (("cpu".into(), "idle".into()), 3),
                (("cpu".into(), "user".into()), 3)
            ]
        );
        assert_eq!(c.values_by_tag_key, [("host".into(), 3), ("dc".into(), 1)]);
        assert_eq!(
            c.series_by_tag_pair,
            [
                (("dc".into(), "x".into()), 6),
                (("host".into(), "a".into()), 3)
            ]
        );
        assert_eq!(Counter::default().top(10), Cardinality::default());
    }
}
