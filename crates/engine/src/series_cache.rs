//! Series ids cached by the raw text that names them in a line: the measurement and tag
//! set exactly as written (escapes kept), then the field name.
//!
//! Two lines with byte-identical prefixes name the same series, so a hit needs no
//! unescaping, sorting or allocation. Different spellings of one series (tags in another
//! order) miss here, are resolved by the backend to the same id, and get their own entry.
//! Ids never change once issued, so entries go stale only when a delete removes series
//! from the catalog: the engine then clears the cache.
//!
//! Bounded: past [`MAX_ENTRIES`] series texts the cache starts over empty, so its memory
//! follows the series written lately, not every series ever written (a miss costs one
//! batched lookup in the backend's catalog).

use std::collections::HashMap;
use std::sync::RwLock;
use tickertape_core::SeriesId;

/// Series texts held before the cache starts over (~130 bytes each).
pub const MAX_ENTRIES: usize = 1 << 21;

/// The ids of one series text's fields; a line has few fields, so a short vector.
type FieldIds = Vec<(Box<str>, SeriesId)>;

#[derive(Default)]
pub struct SeriesCache {
    by_text: RwLock<HashMap<Box<str>, FieldIds>>,
}

impl SeriesCache {
    /// Looks up many (series text, field) pairs under one lock. Consecutive pairs from the
    /// same line share the same `&str`, so the text is hashed once per line, not per field.
    pub fn lookup_many<'a>(
        &self,
        wanted: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Vec<Option<SeriesId>> {
        let map = self.by_text.read().unwrap_or_else(|p| p.into_inner());
        let mut previous: Option<(&str, Option<&FieldIds>)> = None;
        wanted
            .map(|(text, field)| {
                let fields = match previous {
                    Some((p, fields)) if std::ptr::eq(p, text) => fields,
                    _ => {
                        let fields = map.get(text);
                        previous = Some((text, fields));
                        fields
                    }
                };
                fields
                    .and_then(|fields| fields.iter().find(|(f, _)| &**f == field))
                    .map(|(_, id)| *id)
            })
            .collect()
    }

    /// Forgets every entry (series were removed: their ids must not be written again).
    pub fn clear(&self) {
        *self.by_text.write().unwrap_or_else(|p| p.into_inner()) = HashMap::new();
    }

    pub fn insert(&self, text: &str, field: &str, id: SeriesId) {
        let mut map = self.by_text.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_ENTRIES && !map.contains_key(text) {
            *map = HashMap::new();
        }
        let fields = map.entry(text.into()).or_default();
        if !fields.iter().any(|(f, _)| &**f == field) {
            fields.push((field.into(), id));
        }
    }
}
