//! The series catalog in memory: every registered series' key, the key → id lookup the
//! writer registers with, and the inverted index queries select series with. Loaded
//! whole at open from the records on disk ([`crate::series_keys`]), extended after each
//! commit that registers series; readers never touch the write path.
//!
//! Memory is what decides how many series one machine holds, so nothing here is a
//! `String` per series: a key is a run of string tokens ([`strings`]) in one buffer
//! (`[measurement, field, tag key, tag value, …]`, tags in key order), the lookup is a
//! hash table of ids over those runs, and postings are `u32` lists ([`postings`]). Ids
//! are below 2^32 (the writer refuses to issue more).

mod pending;
mod postings;
mod strings;

pub use pending::{Pending, Unwritten};

use hashbrown::HashTable;
use postings::{MeasurementIndex, Wanted};
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;
use std::sync::{RwLock, RwLockReadGuard};
use strings::Strings;
use tickertape_backend::{BackendError, NameQuery, Result, SeriesInfo};
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

#[derive(Default)]
pub struct Catalog {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    strings: Strings,
    records: Records,
    by_key: HashTable<u32>,
    measurements: FxHashMap<u32, MeasurementIndex>,
    count: usize,
}

/// Each series' key as tokens, by id. `starts[id]..starts[id + 1]` is the record of `id`;
/// an empty one means no such series (ids below the largest that were never issued), and
/// so does an id in `removed` (`SeriesCatalog::remove_series`; its tokens stay behind).
struct Records {
    starts: Vec<u32>,
    tokens: Vec<u32>,
    removed: rustc_hash::FxHashSet<u32>,
}

impl Default for Records {
    fn default() -> Self {
        Self {
            starts: vec![0],
            tokens: Vec::new(),
            removed: Default::default(),
        }
    }
}

impl Records {
    fn get(&self, id: u32) -> Option<&[u32]> {
        if self.removed.contains(&id) {
            return None;
        }
        let id = id as usize;
        let (start, end) = (*self.starts.get(id)?, *self.starts.get(id + 1)?);
        (end > start).then(|| &self.tokens[start as usize..end as usize])
    }

    /// Appends the record of `id`, which must exceed every id held.
    fn push(&mut self, id: u32, record: &[u32]) -> Result<()> {
        let covered = self.starts.len() - 1;
        if (id as usize) < covered {
            return Err(BackendError::Storage(format!(
                "series {id} registered after a larger id (catalog out of order)"
            )));
        }
        let end = u32::try_from(self.tokens.len() + record.len()).map_err(|_| {
            BackendError::Invalid("the series catalog is full (2^32 tokens)".into())
        })?;
        let gap_start = self.tokens.len() as u32;
        self.starts.resize(id as usize + 1, gap_start);
        self.tokens.extend_from_slice(record);
        self.starts.push(end);
        Ok(())
    }
}

fn hash(record: &[u32]) -> u64 {
    FxBuildHasher.hash_one(record)
}

/// The id as the catalog holds it.
fn small_id(id: SeriesId) -> Option<u32> {
    u32::try_from(id.0).ok()
}

impl Inner {
    /// `key` as tokens, `None` if one of its strings was never registered.
    fn record_of(&self, key: &SeriesKey, out: &mut Vec<u32>) -> Option<()> {
        out.clear();
        out.push(self.strings.token(&key.measurement)?);
        out.push(self.strings.token(&key.field)?);
        for (k, v) in &key.tags {
            out.push(self.strings.token(k)?);
            out.push(self.strings.token(v)?);
        }
        Some(())
    }

    fn id_of_record(&self, record: &[u32]) -> Option<u32> {
        self.by_key
            .find(hash(record), |&id| self.records.get(id) == Some(record))
            .copied()
    }

    fn key_of(&self, id: u32) -> Option<SeriesKey> {
        let record = self.records.get(id)?;
        let s = |t: u32| self.strings.get(t).unwrap_or_default().to_owned();
        let tags = record[2..]
            .chunks_exact(2)
            .map(|pair| (s(pair[0]), s(pair[1])))
            .collect();
        // Tags are stored in key order already; `new` keeps that order.
        Some(SeriesKey::new(s(record[0]), tags, s(record[1])))
    }

    fn add(&mut self, id: u32, record: &[u32]) -> Result<()> {
        self.records.push(id, record)?;
        let Self {
            records, by_key, ..
        } = self;
        by_key.insert_unique(hash(record), id, |&other| {
            hash(records.get(other).unwrap_or_default())
        });
        self.measurements
            .entry(record[0])
            .or_default()
            .add(id, record[1], &record[2..]);
        self.count += 1;
        Ok(())
    }

    /// Removes series `id` from the lookup, the index and the count; whether it was there.
    fn remove(&mut self, id: u32) -> bool {
        let Some(record) = self.records.get(id).map(<[u32]>::to_vec) else {
            return false;
        };
        if let Ok(entry) = self.by_key.find_entry(hash(&record), |&other| other == id) {
            entry.remove();
        }
        if let Some(index) = self.measurements.get_mut(&record[0]) {
            index.remove(id, record[1], &record[2..]);
            if index.len() == 0 {
                self.measurements.remove(&record[0]);
            }
        }
        self.records.removed.insert(id);
        self.count -= 1;
        true
    }

    fn index_of(&self, measurement: &str) -> Option<&MeasurementIndex> {
        self.measurements.get(&self.strings.token(measurement)?)
    }

    /// The ids `selector` selects: the index narrows by measurement, field, equalities
    /// and the matchers that need their tag; the other matchers (`!=`, `!~`, a regex that
    /// accepts "") are checked on each remaining key.
    fn select(&self, selector: &SeriesSelector) -> Vec<u32> {
        let token = |s: &str| self.strings.token(s);
        let Some(index) = token(&selector.measurement).and_then(|m| self.measurements.get(&m))
        else {
            return Vec::new();
        };
        let mut wanted = Wanted {
            field: None,
            equal: Vec::new(),
            requiring: Vec::new(),
        };
        if let Some(field) = &selector.field {
            match token(field) {
                Some(f) => wanted.field = Some(f),
                None => return Vec::new(),
            }
        }
        for (k, v) in &selector.tags {
            match (token(k), token(v)) {
                (Some(k), Some(v)) => wanted.equal.push((k, v)),
                _ => return Vec::new(),
            }
        }
        let mut others = Vec::new();
        for m in &selector.matchers {
            match (token(m.key()), m.requires_tag()) {
                (Some(k), true) => wanted.requiring.push((k, m)),
                (None, true) => return Vec::new(),
                // No series has the tag: every one passes a matcher that accepts "".
                (None, false) => {}
                (Some(k), false) => others.push((k, m)),
            }
        }
        let mut ids = index.select(&self.strings, &wanted);
        if !others.is_empty() {
            ids.retain(|&id| {
                let tags = self.records.get(id).map_or(&[][..], |r| &r[2..]);
                others.iter().all(|(k, m)| {
                    let value = tags
                        .chunks_exact(2)
                        .find(|pair| pair[0] == *k)
                        .and_then(|pair| self.strings.get(pair[1]));
                    m.matches(value)
                })
            });
        }
        ids
    }
}

/// What [`Catalog::load_with`] fills the catalog through.
pub struct Loader<'a> {
    inner: &'a mut Inner,
}

impl Loader<'_> {
    /// Makes room for `series` series and `strings` strings of `bytes` in all, so a large
    /// catalog does not grow its tables step by step.
    pub fn reserve(&mut self, series: usize, strings: usize, bytes: usize) {
        let inner = &mut *self.inner;
        inner.strings.reserve(strings, bytes);
        let Inner {
            records, by_key, ..
        } = inner;
        records.starts.reserve(series);
        by_key.reserve(series, |&id| hash(records.get(id).unwrap_or_default()));
    }

    /// The next string token's string.
    pub fn push_string(&mut self, s: &str) -> Result<()> {
        self.inner
            .strings
            .push(s)
            .map(drop)
            .ok_or_else(|| BackendError::Invalid("no string tokens left".into()))
    }

    pub fn string_count(&self) -> usize {
        self.inner.strings.len()
    }

    /// A series, its id above every one pushed before, its tokens all pushed already.
    pub fn push_series(&mut self, id: SeriesId, record: &[u32]) -> Result<()> {
        let id = small_id(id)
            .ok_or_else(|| BackendError::Invalid(format!("series id {id} above 2^32")))?;
        self.inner.add(id, record)
    }
}

impl Catalog {
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads a catalog under one lock: `fill` pushes strings and series through the
    /// [`Loader`], in token and id order.
    pub fn load_with(&self, fill: impl FnOnce(&mut Loader<'_>) -> Result<()>) -> Result<()> {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        fill(&mut Loader { inner: &mut inner })
    }

    /// Adds committed registrations: the strings they introduce (tokens `strings.len()`
    /// onward, in order) and the series (ids increasing). Only committed registrations
    /// may be added: readers trust what they find here.
    pub fn add(&self, new_strings: &[String], series: &[(SeriesId, Vec<u32>)]) -> Result<()> {
        self.load_with(|loader| {
            for s in new_strings {
                loader.push_string(s)?;
            }
            for (id, record) in series {
                loader.push_series(*id, record)?;
            }
            Ok(())
        })
    }

    /// Removes the series of `ids` that are registered (after their removal is durable);
    /// returns how many were.
    pub fn remove(&self, ids: &[SeriesId]) -> u64 {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        ids.iter()
            .filter_map(|&id| small_id(id))
            .filter(|&id| inner.remove(id))
            .count() as u64
    }

    /// The ids of `keys`, or `None` when at least one is not registered yet.
    pub fn lookup(&self, keys: &[SeriesKey]) -> Option<Vec<SeriesId>> {
        self.ids_of(keys).into_iter().collect()
    }

    /// The id of each of `keys`, `None` for those not registered.
    pub fn ids_of(&self, keys: &[SeriesKey]) -> Vec<Option<SeriesId>> {
        let inner = self.read();
        let mut record = Vec::new();
        keys.iter()
            .map(|k| {
                inner.record_of(k, &mut record)?;
                inner.id_of_record(&record).map(|id| SeriesId(id.into()))
            })
            .collect()
    }

    /// The first of `ids` that is not registered, if any (one lock for the whole batch).
    pub fn first_unknown(&self, ids: impl IntoIterator<Item = SeriesId>) -> Option<SeriesId> {
        let inner = self.read();
        ids.into_iter()
            .find(|&id| small_id(id).and_then(|id| inner.records.get(id)).is_none())
    }

    /// Every series `selector` selects, in id order.
    pub fn matching(&self, selector: &SeriesSelector) -> Vec<SeriesInfo> {
        let inner = self.read();
        inner
            .select(selector)
            .into_iter()
            .filter_map(|id| {
                Some(SeriesInfo {
                    id: SeriesId(id.into()),
                    key: inner.key_of(id)?,
                })
            })
            .collect()
    }

    /// The measurement of each series (`None` for an id never registered).
    pub fn measurements_of(&self, ids: &[SeriesId]) -> Vec<Option<String>> {
        let inner = self.read();
        ids.iter()
            .map(|&id| {
                let record = inner.records.get(small_id(id)?)?;
                inner.strings.get(record[0]).map(str::to_owned)
            })
            .collect()
    }

    /// Every (measurement, field) pair of a registered series, sorted, each once: from the
    /// index's field postings, not the series.
    pub fn fields(&self) -> Vec<(String, String)> {
        let inner = self.read();
        let name = |token: u32| inner.strings.get(token).map(str::to_owned);
        let mut pairs: Vec<(String, String)> = inner
            .measurements
            .iter()
            .flat_map(|(&m, index)| index.fields().map(move |f| (m, f)))
            .filter_map(|(m, f)| Some((name(m)?, name(f)?)))
            .collect();
        pairs.sort_unstable();
        pairs
    }

    /// The tag keys of `measurement` that `query` accepts: from the index, one pass over
    /// the measurement's keys.
    pub fn tag_keys(&self, measurement: &str, query: &NameQuery) -> Vec<String> {
        let inner = self.read();
        let Some(index) = inner.index_of(measurement) else {
            return Vec::new();
        };
        query.first_of(index.tag_keys().filter_map(|t| inner.strings.get(t)))
    }

    /// The values of tag `key` in `measurement` that `query` accepts: one pass over the
    /// key's distinct values, never over the series.
    pub fn tag_values(&self, measurement: &str, key: &str, query: &NameQuery) -> Vec<String> {
        let inner = self.read();
        let (Some(index), Some(key)) = (inner.index_of(measurement), inner.strings.token(key))
        else {
            return Vec::new();
        };
        query.first_of(index.tag_values(key).filter_map(|t| inner.strings.get(t)))
    }

    /// The series of `measurement` registered so far.
    pub fn count_in(&self, measurement: &str) -> usize {
        let inner = self.read();
        inner
            .strings
            .token(measurement)
            .and_then(|m| inner.measurements.get(&m))
            .map_or(0, |index| index.len())
    }

    pub fn len(&self) -> usize {
        self.read().count
    }

    /// Heap bytes of the catalog and its index (hash tables at capacity), for `/metrics`.
    pub fn heap_bytes(&self) -> usize {
        let inner = self.read();
        inner.strings.heap_bytes()
            + inner.records.starts.capacity() * 4
            + inner.records.tokens.capacity() * 4
            + inner.by_key.capacity() * 5
            + inner
                .measurements
                .values()
                .map(MeasurementIndex::heap_bytes)
                .sum::<usize>()
    }
}
