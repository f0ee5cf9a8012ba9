//! The strings of series keys, interned: token ↔ string for the catalog's own namespace
//! of the name store ([`crate::names::CATALOG_CODE`]).
//!
//! Invariant: tokens are dense from 0 (the name store issues them in order), so token `t`
//! is the `t`-th string. The text of every string lives in one buffer: a string costs its
//! bytes, one end offset and one hash-table slot, not an allocation of its own.

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;

#[derive(Default)]
pub struct Strings {
    text: String,
    /// `ends[t]`: where string `t` ends in `text` (it starts where `t - 1` ends).
    ends: Vec<usize>,
    by_text: HashTable<u32>,
}

fn hash(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

/// String `t` of `text` cut at `ends` (a free function, so the hash table can rehash
/// while it is borrowed mutably beside them).
fn slice<'a>(text: &'a str, ends: &[usize], t: u32) -> &'a str {
    let t = t as usize;
    let start = if t == 0 { 0 } else { ends[t - 1] };
    &text[start..ends[t]]
}

impl Strings {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The string of `token`; `None` for a token not issued.
    pub fn get(&self, token: u32) -> Option<&str> {
        ((token as usize) < self.ends.len()).then(|| slice(&self.text, &self.ends, token))
    }

    pub fn token(&self, s: &str) -> Option<u32> {
        self.by_text
            .find(hash(s), |&t| self.get(t) == Some(s))
            .copied()
    }

    /// Room for `more` strings of `bytes` in all.
    pub fn reserve(&mut self, more: usize, bytes: usize) {
        self.text.reserve(bytes);
        self.ends.reserve(more);
        let Self {
            text,
            ends,
            by_text,
        } = self;
        by_text.reserve(more, |&t| hash(slice(text, ends, t)));
    }

    /// Appends `s` as the next token, which the caller knows it is (the name store issued
    /// it). `None` if the token space is exhausted.
    pub fn push(&mut self, s: &str) -> Option<u32> {
        let token = u32::try_from(self.ends.len()).ok()?;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        let Self {
            text,
            ends,
            by_text,
        } = self;
        by_text.insert_unique(hash(s), token, |&t| hash(slice(text, ends, t)));
        Some(token)
    }

    /// Heap bytes held, for `/metrics`.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.by_text.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_dense_and_found_by_text() {
        let mut s = Strings::default();
        assert_eq!(s.push("cpu"), Some(0));
        assert_eq!(s.push(""), Some(1));
        assert_eq!(s.push("host"), Some(2));
        assert_eq!(s.get(0), Some("cpu"));
        assert_eq!(s.get(1), Some(""));
        assert_eq!(s.get(2), Some("host"));
        assert_eq!(s.get(3), None);
        assert_eq!(s.token("host"), Some(2));
        assert_eq!(s.token(""), Some(1));
        assert_eq!(s.token("mem"), None);
    }
}
