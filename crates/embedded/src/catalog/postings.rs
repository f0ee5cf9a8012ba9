//! The inverted index of one measurement: which series have a field, which have a tag
//! value (postings, as Prometheus' index and VictoriaMetrics' indexdb keep them).
//!
//! Invariant: every list is strictly increasing, because ids are issued in increasing
//! order and each series is added once, after every series of a smaller id (a removal
//! takes an id out and keeps the order).

use super::strings::Strings;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use tickertape_core::TagMatcher;

/// The series ids of one (field) or (tag key, value), increasing. Most tag values of a
/// high-cardinality tag (a host name, a user id) belong to one series: kept inline.
enum Postings {
    One(u32),
    Many(Vec<u32>),
}

impl Postings {
    fn push(&mut self, id: u32) {
        match self {
            Postings::One(first) => *self = Postings::Many(vec![*first, id]),
            Postings::Many(ids) => ids.push(id),
        }
    }

    /// Removes `id`; returns whether the list is empty now.
    fn remove(&mut self, id: u32) -> bool {
        match self {
            Postings::One(only) => *only == id,
            Postings::Many(ids) => {
                if let Ok(at) = ids.binary_search(&id) {
                    ids.remove(at);
                }
                ids.is_empty()
            }
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Postings::One(id) => std::slice::from_ref(id),
            Postings::Many(ids) => ids,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Postings::One(_) => 0,
            Postings::Many(ids) => ids.capacity() * 4,
        }
    }
}

/// Removes `id` from the postings of `token`, and the token once no series is left.
fn remove(map: &mut FxHashMap<u32, Postings>, token: u32, id: u32) {
    if map.get_mut(&token).is_some_and(|p| p.remove(id)) {
        map.remove(&token);
    }
}

fn add(map: &mut FxHashMap<u32, Postings>, token: u32, id: u32) {
    map.entry(token)
        .and_modify(|p| p.push(id))
        .or_insert(Postings::One(id));
}

#[derive(Default)]
pub struct MeasurementIndex {
    all: Vec<u32>,
    by_field: FxHashMap<u32, Postings>,
    /// tag key → tag value → series.
    by_tag: FxHashMap<u32, FxHashMap<u32, Postings>>,
}

impl MeasurementIndex {
    /// The tokens of the fields the measurement's series have.
    pub fn fields(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_field.keys().copied()
    }

    /// The tokens of the tag keys the measurement's series have.
    pub fn tag_keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_tag.keys().copied()
    }

    /// The tokens of the values tag `key` takes, each once.
    pub fn tag_values(&self, key: u32) -> impl Iterator<Item = u32> + '_ {
        self.by_tag
            .get(&key)
            .into_iter()
            .flat_map(|values| values.keys().copied())
    }
}

/// What a selector asks of the index, its names already tokens.
pub struct Wanted<'a> {
    pub field: Option<u32>,
    /// (tag key, tag value): the series has exactly this tag.
    pub equal: Vec<(u32, u32)>,
    /// Matchers that select only series having their tag, with the key's token.
    pub requiring: Vec<(u32, &'a TagMatcher)>,
}

impl MeasurementIndex {
    /// Adds series `id`, greater than every id added before.
    pub fn add(&mut self, id: u32, field: u32, tags: &[u32]) {
        self.all.push(id);
        add(&mut self.by_field, field, id);
        for pair in tags.chunks_exact(2) {
            add(self.by_tag.entry(pair[0]).or_default(), pair[1], id);
        }
    }

    /// Removes series `id` (added with `field` and `tags`): a field or tag value no
    /// series has any more is no longer listed. Lists stay increasing.
    pub fn remove(&mut self, id: u32, field: u32, tags: &[u32]) {
        if let Ok(at) = self.all.binary_search(&id) {
            self.all.remove(at);
        }
        remove(&mut self.by_field, field, id);
        for pair in tags.chunks_exact(2) {
            if let Some(values) = self.by_tag.get_mut(&pair[0]) {
                remove(values, pair[1], id);
                if values.is_empty() {
                    self.by_tag.remove(&pair[0]);
                }
            }
        }
    }

    /// The series that satisfy `wanted`, increasing: the intersection of the postings of
    /// each condition (a regex: the union of the postings of the values it matches), or
    /// every series of the measurement when there is no condition.
    pub fn select(&self, strings: &Strings, wanted: &Wanted<'_>) -> Vec<u32> {
        let mut lists: Vec<Cow<'_, [u32]>> = Vec::new();
        let none = Vec::new();
        if let Some(field) = wanted.field {
            lists.push(
                self.field_postings(field)
                    .map_or(Cow::Borrowed(&none[..]), Cow::Borrowed),
            );
        }
        for &(key, value) in &wanted.equal {
            let list = self
                .by_tag
                .get(&key)
                .and_then(|values| values.get(&value))
                .map_or(&none[..], Postings::as_slice);
            lists.push(Cow::Borrowed(list));
        }
        for &(key, matcher) in &wanted.requiring {
            lists.push(Cow::Owned(self.matching_values(strings, key, matcher)));
        }
        intersect(lists).unwrap_or_else(|| self.all.clone())
    }

    /// How many series the measurement has.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    fn field_postings(&self, field: u32) -> Option<&[u32]> {
        self.by_field.get(&field).map(Postings::as_slice)
    }

    /// The series whose tag `key` has a value `matcher` accepts.
    fn matching_values(&self, strings: &Strings, key: u32, matcher: &TagMatcher) -> Vec<u32> {
        let Some(values) = self.by_tag.get(&key) else {
            return Vec::new();
        };
        let mut ids: Vec<u32> = values
            .iter()
            .filter(|(&value, _)| matcher.matches(strings.get(value)))
            .flat_map(|(_, p)| p.as_slice().iter().copied())
            .collect();
        // A series has one value per key, so the lists are disjoint: sorting suffices.
        ids.sort_unstable();
        ids
    }

    /// Heap bytes held, for `/metrics` (hash tables counted at their capacity).
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(u32, Postings)>() + 1;
        let map = |m: &FxHashMap<u32, Postings>| {
            m.capacity() * entry + m.values().map(Postings::heap_bytes).sum::<usize>()
        };
        self.all.capacity() * 4
            + map(&self.by_field)
            + self.by_tag.capacity() * (std::mem::size_of::<(u32, FxHashMap<u32, Postings>)>() + 1)
            + self.by_tag.values().map(map).sum::<usize>()
    }
}

/// The ids in every list, increasing; `None` when there are no lists. Starts from the
/// shortest, so a selective condition makes the whole intersection cheap.
fn intersect(mut lists: Vec<Cow<'_, [u32]>>) -> Option<Vec<u32>> {
    lists.sort_by_key(|l| l.len());
    let mut lists = lists.into_iter();
    let mut out = lists.next()?.into_owned();
    for list in lists {
        if out.is_empty() {
            break;
        }
        out.retain(|id| list.binary_search(id).is_ok());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::MatchOp;

    #[test]
    fn selects_by_field_tags_and_regex() {
        let mut strings = Strings::default();
        let [f, host, dc, a, b, d1] =
            ["v", "host", "dc", "a", "b", "d1"].map(|s| strings.push(s).unwrap());
        let mut index = MeasurementIndex::default();
        index.add(1, f, &[dc, d1, host, a]);
        index.add(2, f, &[dc, d1, host, b]);
        index.add(3, f, &[host, a]);
        let all = Wanted {
            field: None,
            equal: vec![],
            requiring: vec![],
        };
        assert_eq!(index.select(&strings, &all), vec![1, 2, 3]);
        let dc1 = Wanted {
            field: Some(f),
            equal: vec![(dc, d1)],
            requiring: vec![],
        };
        assert_eq!(index.select(&strings, &dc1), vec![1, 2]);
        let re = TagMatcher::new("host", MatchOp::Regex, "a|c").unwrap();
        let both = Wanted {
            field: None,
            equal: vec![(dc, d1)],
            requiring: vec![(host, &re)],
        };
        assert_eq!(index.select(&strings, &both), vec![1]);
        let none = Wanted {
            field: Some(host),
            equal: vec![],
            requiring: vec![],
        };
        assert!(index.select(&strings, &none).is_empty());

        index.remove(1, f, &[dc, d1, host, a]);
        index.remove(2, f, &[dc, d1, host, b]);
        assert_eq!(index.select(&strings, &all), vec![3]);
        assert_eq!(index.tag_keys().collect::<Vec<_>>(), vec![host]);
        assert_eq!(index.tag_values(host).collect::<Vec<_>>(), vec![a]);
        index.remove(3, f, &[host, a]);
        assert_eq!(index.len(), 0);
        assert_eq!(index.fields().count(), 0);
    }
}
