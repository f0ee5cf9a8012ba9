//! The series registry: keys ↔ ids.

use std::collections::BTreeMap;
use tickertape_backend::{NameQuery, SeriesCount};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

/// Every registered series, both ways.
///
/// Ids are issued from 1 upward in the order keys are first seen, as the embedded store
/// issues them. The trait promises only that ids are stable and distinct
/// ([`Backend::resolve_series`](tickertape_backend::Backend::resolve_series)), so the
/// conformance suite compares ids between backends through a mapping, never by value.
#[derive(Clone, Debug)]
pub struct Registry {
    ids: BTreeMap<SeriesKey, SeriesId>,
    keys: BTreeMap<SeriesId, SeriesKey>,
    next: u64,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            ids: BTreeMap::new(),
            keys: BTreeMap::new(),
            next: 1,
        }
    }
}

impl Registry {
    /// The id of each key, registering the keys not seen before: "Ids are stable forever:
    /// the same key gets the same id" (`resolve_series`).
    pub fn resolve(&mut self, keys: &[SeriesKey]) -> Vec<SeriesId> {
        keys.iter().map(|key| self.resolve_one(key)).collect()
    }

    fn resolve_one(&mut self, key: &SeriesKey) -> SeriesId {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = SeriesId(self.next);
        self.next += 1;
        self.ids.insert(key.clone(), id);
        self.keys.insert(id, key.clone());
        id
    }

    /// "The id of each key already registered" (`lookup_series`).
    pub fn lookup(&self, keys: &[SeriesKey]) -> Vec<Option<SeriesId>> {
        keys.iter().map(|k| self.ids.get(k).copied()).collect()
    }

    /// "How many series are registered, in all and in each of `measurements`".
    pub fn count(&self, measurements: &[String]) -> SeriesCount {
        SeriesCount {
            total: self.keys.len() as u64,
            per_measurement: measurements
                .iter()
                .map(|m| self.keys.values().filter(|k| k.measurement == *m).count() as u64)
                .collect(),
        }
    }

    /// Every (measurement, field) pair of a registered series, sorted, each once.
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = self
            .keys
            .values()
            .map(|k| (k.measurement.clone(), k.field.clone()))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// "The tag keys of `measurement`'s registered series that `query` accepts"
    /// (`list_tag_keys`).
    pub fn tag_keys(&self, measurement: &str, query: &NameQuery) -> Vec<String> {
        query.first_of(
            self.of_measurement(measurement)
                .flat_map(|k| k.tags.iter().map(|(key, _)| key.as_str())),
        )
    }

    /// "The values tag `key` takes among `measurement`'s registered series that `query`
    /// accepts" (`list_tag_values`).
    pub fn tag_values(&self, measurement: &str, key: &str, query: &NameQuery) -> Vec<String> {
        query.first_of(self.of_measurement(measurement).filter_map(|k| {
            k.tags
                .iter()
                .find(|(tag, _)| tag == key)
                .map(|(_, value)| value.as_str())
        }))
    }

    fn of_measurement<'a>(&'a self, measurement: &'a str) -> impl Iterator<Item = &'a SeriesKey> {
        self.keys
            .values()
            .filter(move |k| k.measurement == measurement)
    }

    /// "Every registered series the selector matches, in id order" (`find_series`).
    pub fn matching(&self, selector: &SeriesSelector) -> Vec<(SeriesId, SeriesKey)> {
        self.keys
            .iter()
            .filter(|(_, key)| selector.matches(key))
            .map(|(id, key)| (*id, key.clone()))
            .collect()
    }

    /// The ids of `measurement`'s series.
    pub fn ids_of(&self, measurement: &str) -> Vec<SeriesId> {
        self.keys
            .iter()
            .filter(|(_, k)| k.measurement == measurement)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Forgets the keys of `ids`; returns how many were registered. `next` stays: "an id
    /// is never issued twice", so the key registered again gets a new one.
    pub fn remove(&mut self, ids: &[SeriesId]) -> u64 {
        let mut removed = 0;
        for id in ids {
            if let Some(key) = self.keys.remove(id) {
                self.ids.remove(&key);
                removed += 1;
            }
        }
        removed
    }

    pub fn is_registered(&self, id: SeriesId) -> bool {
        self.keys.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }
}
