//! A label set as relabeling and target building see it: names unique, sorted, no empty
//! value (setting a label to `""` removes it, as Prometheus' label builder does).

/// The metric name's label.
pub const METRIC_NAME: &str = "__name__";
pub const ADDRESS: &str = "__address__";
pub const SCHEME: &str = "__scheme__";
pub const METRICS_PATH: &str = "__metrics_path__";
pub const SCRAPE_INTERVAL: &str = "__scrape_interval__";
pub const SCRAPE_TIMEOUT: &str = "__scrape_timeout__";
pub const PARAM_PREFIX: &str = "__param_";
/// Labels of this prefix are dropped once relabeling has decided a target.
pub const META_PREFIX: &str = "__meta_";
/// Labels of this prefix are never stored.
pub const RESERVED_PREFIX: &str = "__";
pub const JOB: &str = "job";
pub const INSTANCE: &str = "instance";

/// `[a-zA-Z_][a-zA-Z0-9_]*`, Prometheus 2.x's label names.
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Sorted by name, names unique, values never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Vec<(String, String)>);

impl Labels {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `name`, `""` when it has none.
    pub fn get(&self, name: &str) -> &str {
        match self.find(name) {
            Ok(i) => &self.0[i].1,
            Err(_) => "",
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name` to `value`; an empty value removes it.
    pub fn set(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            self.remove(name);
            return;
        }
        match self.find(name) {
            Ok(i) => value.clone_into(&mut self.0[i].1),
            Err(i) => self.0.insert(i, (name.to_owned(), value.to_owned())),
        }
    }

    pub fn remove(&mut self, name: &str) {
        if let Ok(i) = self.find(name) {
            self.0.remove(i);
        }
    }

    /// Keeps the labels for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.0.retain(|(k, v)| keep(k, v));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    /// A later pair of the same name wins; empty values are left out.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let mut labels = Labels::new();
        for (k, v) in pairs {
            labels.set(k.as_ref(), v.as_ref());
        }
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_prometheus_2_takes_them() {
        for ok in ["a", "_", "__name__", "a1_B"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a.b", "é"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn sorted_unique_and_empty_removes() {
        let mut labels: Labels = [("b", "2"), ("a", "1"), ("b", "3")].into_iter().collect();
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "3")]);
        labels.set("a", "");
        assert!(!labels.has("a"));
        assert_eq!(labels.get("a"), "");
    }
}
