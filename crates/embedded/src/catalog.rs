//! The in-memory copy of the series catalog, loaded at open and extended after each
//! commit that registers series. Readers never touch the write path to resolve a key.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;
use tickertape_backend::SeriesInfo;
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

#[derive(Default)]
pub struct Catalog {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    ids: HashMap<SeriesKey, SeriesId>,
    keys: BTreeMap<SeriesId, SeriesKey>,
}

impl Catalog {
    /// Only committed registrations may be inserted: readers trust what they find here.
    pub fn insert_all(&self, entries: impl IntoIterator<Item = (SeriesKey, SeriesId)>) {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        for (key, id) in entries {
            inner.keys.insert(id, key.clone());
            inner.ids.insert(key, id);
        }
    }

    /// The ids of `keys`, or `None` when at least one is not registered yet.
    pub fn lookup(&self, keys: &[SeriesKey]) -> Option<Vec<SeriesId>> {
        self.ids_of(keys).into_iter().collect()
    }

    /// The id of each of `keys`, `None` for those not registered.
    pub fn ids_of(&self, keys: &[SeriesKey]) -> Vec<Option<SeriesId>> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        keys.iter().map(|k| inner.ids.get(k).copied()).collect()
    }

    /// The first of `ids` that is not registered, if any (one lock for the whole batch).
    pub fn first_unknown(&self, ids: impl IntoIterator<Item = SeriesId>) -> Option<SeriesId> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        ids.into_iter().find(|id| !inner.keys.contains_key(id))
    }

    pub fn matching(&self, selector: &SeriesSelector) -> Vec<SeriesInfo> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner
            .keys
            .iter()
            .filter(|(_, k)| selector.matches(k))
            .map(|(id, k)| SeriesInfo {
                id: *id,
                key: k.clone(),
            })
            .collect()
    }

    /// The measurement of each series (`None` for an id never registered).
    pub fn measurements_of(&self, ids: &[SeriesId]) -> Vec<Option<String>> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        ids.iter()
            .map(|id| inner.keys.get(id).map(|k| k.measurement.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys
            .len()
    }
}
