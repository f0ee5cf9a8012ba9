//! Series a write group registers before its transaction commits: what the writer writes
//! in that transaction ([`crate::series_keys::write`], one row per job) and adds to the [`Catalog`] once
//! it committed. A group that fails drops it, so the catalog never holds a series the
//! store does not.

use super::Catalog;
use std::collections::HashMap;
use tickertape_backend::{BackendError, Result};
use tickertape_core::{SeriesId, SeriesKey};

#[derive(Default)]
pub struct Pending {
    /// The catalog's string count when the group began: the first new string's token.
    /// Only the writer adds to the catalog, after its group, so it cannot move meanwhile.
    base: Option<u32>,
    /// New strings, tokens `base..` in order.
    strings: Vec<String>,
    string_tokens: HashMap<String, u32>,
    series: Vec<(SeriesId, Vec<u32>)>,
    by_record: HashMap<Vec<u32>, SeriesId>,
    /// Strings and series already written by earlier jobs of the group.
    written_strings: usize,
    written_series: usize,
}

/// What one job writes: the strings and series registered since the previous job.
pub struct Unwritten<'a> {
    pub first_token: u32,
    pub strings: &'a [String],
    pub series: &'a [(SeriesId, Vec<u32>)],
}

impl Pending {
    /// The id of each key: the catalog's, this group's, or a new one from `next_id`
    /// (which moves past it), in the order keys first appear.
    pub fn register(
        &mut self,
        catalog: &Catalog,
        keys: &[SeriesKey],
        next_id: &mut u64,
    ) -> Result<Vec<SeriesId>> {
        let committed = catalog.ids_of(keys);
        let mut out = Vec::with_capacity(keys.len());
        for (key, id) in keys.iter().zip(committed) {
            if let Some(id) = id {
                out.push(id);
                continue;
            }
            let record = self.record(catalog, key)?;
            let id = match self.by_record.get(&record) {
                Some(&id) => id,
                None => {
                    let id = SeriesId(*next_id);
                    if u32::try_from(id.0).is_err() {
                        return Err(BackendError::Invalid(
                            "this store holds 2^32 series ids already; no more can be registered"
                                .into(),
                        ));
                    }
                    *next_id += 1;
                    self.insert(record, id);
                    id
                }
            };
            out.push(id);
        }
        Ok(out)
    }

    /// Adds `key` under an id issued before (migrating an older catalog).
    pub fn insert_with_id(
        &mut self,
        catalog: &Catalog,
        key: &SeriesKey,
        id: SeriesId,
    ) -> Result<()> {
        let record = self.record(catalog, key)?;
        self.insert(record, id);
        Ok(())
    }

    fn insert(&mut self, record: Vec<u32>, id: SeriesId) {
        self.by_record.insert(record.clone(), id);
        self.series.push((id, record));
    }

    /// `key` as tokens (`[measurement, field, tag key, tag value, …]`), issuing tokens
    /// after the catalog's for strings it lacks.
    fn record(&mut self, catalog: &Catalog, key: &SeriesKey) -> Result<Vec<u32>> {
        let inner = catalog.read();
        let base = *self.base.get_or_insert(inner.strings.len() as u32);
        let mut token = |s: &str| -> Result<u32> {
            if let Some(t) = inner
                .strings
                .token(s)
                .or_else(|| self.string_tokens.get(s).copied())
            {
                return Ok(t);
            }
            let t = u32::try_from(self.strings.len())
                .ok()
                .and_then(|n| base.checked_add(n))
                .ok_or_else(|| {
                    BackendError::Invalid("no string tokens left in the catalog".into())
                })?;
            self.strings.push(s.to_owned());
            self.string_tokens.insert(s.to_owned(), t);
            Ok(t)
        };
        let mut record = Vec::with_capacity(2 + 2 * key.tags.len());
        record.push(token(&key.measurement)?);
        record.push(token(&key.field)?);
        for (k, v) in &key.tags {
            record.push(token(k)?);
            record.push(token(v)?);
        }
        Ok(record)
    }

    /// The strings and series registered since the last call.
    pub fn unwritten(&mut self) -> Unwritten<'_> {
        let base = self.base.unwrap_or(0);
        let (s, n) = (self.written_strings, self.written_series);
        self.written_strings = self.strings.len();
        self.written_series = self.series.len();
        Unwritten {
            first_token: base + s as u32,
            strings: &self.strings[s..],
            series: &self.series[n..],
        }
    }

    /// Adds everything registered to `catalog`: call only once the group committed.
    pub fn commit_to(self, catalog: &Catalog) -> Result<()> {
        catalog.add(&self.strings, &self.series)
    }
}
