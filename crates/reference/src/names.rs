//! The name store (`docs/design.md#the-name-store`): names ↔ tokens, numbered per namespace.

use std::collections::BTreeMap;
use tickertape_backend::NameKind;

/// Each namespace's names in the order their tokens were issued: a name's token is its
/// index. That is what the MongoDB name store's capped documents give (a document's `lv`
/// plus the index in its `l`, documents filled one after the other from `lv = 0`), and what
/// the embedded and MongoDB backends issue: from 0 upward, in the order names were first
/// seen, never reused.
#[derive(Clone, Debug, Default)]
pub struct Names {
    issued: BTreeMap<NameKind, Vec<String>>,
}

impl Names {
    /// "The token of each name in `namespace`, issuing tokens for names not seen before"
    /// (`Backend::tokenize`); a name repeated in one call is issued once.
    pub fn tokenize(&mut self, namespace: NameKind, names: &[String]) -> Vec<u64> {
        let issued = self.issued.entry(namespace).or_default();
        names
            .iter()
            .map(|name| {
                let index = match issued.iter().position(|n| n == name) {
                    Some(index) => index,
                    None => {
                        issued.push(name.clone());
                        issued.len() - 1
                    }
                };
                index as u64
            })
            .collect()
    }

    /// "The names of tokens issued in `namespace` (`None` for a token never issued)."
    pub fn names_of(&self, namespace: NameKind, tokens: &[u64]) -> Vec<Option<String>> {
        let issued = self.issued.get(&namespace).map_or(&[][..], Vec::as_slice);
        tokens
            .iter()
            .map(|&t| usize::try_from(t).ok().and_then(|i| issued.get(i)).cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_count_from_zero_per_namespace_in_first_seen_order() {
        let mut names = Names::default();
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            names.tokenize(NameKind::Field, &words(&["b", "a", "b"])),
            vec![0, 1, 0]
        );
        assert_eq!(names.tokenize(NameKind::TagKey, &words(&["a"])), vec![0]);
        assert_eq!(
            names.tokenize(NameKind::Field, &words(&["c", "a"])),
            vec![2, 1]
        );
        assert_eq!(
            names.names_of(NameKind::Field, &[1, 3, u64::MAX]),
            vec![Some("a".to_string()), None, None]
        );
    }
}
