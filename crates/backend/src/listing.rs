//! Listings of names (tag keys, tag values) as a search box asks for them: the names
//! starting with what was typed, in order, the first few. One rule for every backend.

use std::collections::BTreeSet;

/// Which names a listing returns: those starting with `prefix` (case-sensitive), in
/// ascending byte order, each once, at most `limit` of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameQuery {
    prefix: String,
    limit: usize,
}

impl NameQuery {
    pub fn new(prefix: impl Into<String>, limit: usize) -> Self {
        Self {
            prefix: prefix.into(),
            limit,
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn accepts(&self, name: &str) -> bool {
        name.starts_with(&self.prefix)
    }

    /// The answer from `names`, in any order and possibly repeated: the `limit` smallest
    /// accepted ones, sorted, each once.
    pub fn first_of<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut first = self.collector();
        names.into_iter().for_each(|name| first.offer(name));
        first.finish()
    }

    /// [`first_of`](Self::first_of) for names that arrive one at a time (a cursor).
    pub fn collector(&self) -> FirstNames<'_> {
        FirstNames {
            query: self,
            kept: BTreeSet::new(),
        }
    }
}

/// The `limit` smallest accepted names offered so far. Holds at most `limit` names, so a
/// tag with a million values costs one pass and no sort of all of them.
pub struct FirstNames<'q> {
    query: &'q NameQuery,
    kept: BTreeSet<String>,
}

impl FirstNames<'_> {
    pub fn offer(&mut self, name: &str) {
        if !self.query.accepts(name) || self.kept.contains(name) {
            return;
        }
        let full = self.kept.len() >= self.query.limit;
        if full
            && self
                .kept
                .last()
                .is_none_or(|largest| name > largest.as_str())
        {
            return;
        }
        self.kept.insert(name.to_owned());
        if self.kept.len() > self.query.limit {
            self.kept.pop_last();
        }
    }

    /// The names kept, sorted.
    pub fn finish(self) -> Vec<String> {
        self.kept.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_the_smallest_accepted_names_once_each() {
        let q = NameQuery::new("h", 2);
        let names = ["h3", "x1", "h1", "h3", "h2", "h1"];
        assert_eq!(q.first_of(names), vec!["h1", "h2"]);
        assert_eq!(NameQuery::new("", 0).first_of(names), Vec::<String>::new());
        assert_eq!(NameQuery::new("z", 5).first_of(names), Vec::<String>::new());
    }

    proptest! {
        #[test]
        fn equals_filter_sort_dedup_truncate(
            names in proptest::collection::vec("[ab]{0,3}", 0..40),
            prefix in "[ab]{0,2}",
            limit in 0usize..10,
        ) {
            let q = NameQuery::new(prefix.clone(), limit);
            let mut want: Vec<String> =
                names.iter().filter(|n| n.starts_with(&prefix)).cloned().collect();
            want.sort();
            want.dedup();
            want.truncate(limit);
            prop_assert_eq!(q.first_of(names.iter().map(String::as_str)), want);
        }
    }
}
