//! Bounds on what one line and one series may be (`tickertape serve --max-line-bytes`,
//! `--max-tags`, `--max-name-bytes`, `--max-tag-value-bytes`): without them, a 70,000-byte
//! tag value or a line of 5,000 tags is stored, and every query touching the series pays
//! for it.
//!
//! The line bound is checked as a body is split into lines (a longer line is refused
//! before it is scanned); the series bounds when a series would be registered, for line
//! protocol and remote write alike (`Engine::series_ids`), so a series already stored
//! keeps being written whatever the limits are now. A refusal names the limit's flag.

use tickertape_core::SeriesKey;

/// 0 means no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLimits {
    /// Longest line of line protocol, in bytes.
    pub max_line_bytes: usize,
    /// Most tags (labels, `__name__` aside) one series may have.
    pub max_tags: usize,
    /// Longest measurement, tag key or field key, in bytes.
    pub max_name_bytes: usize,
    /// Longest tag value, in bytes.
    pub max_tag_value_bytes: usize,
}

impl KeyLimits {
    /// VictoriaMetrics' bound on an InfluxDB line (`-influx.maxLineSize`).
    pub const DEFAULT_MAX_LINE_BYTES: usize = 256 * 1024;
    /// Twice what Telegraf's and Kubernetes' richest series carry.
    pub const DEFAULT_MAX_TAGS: usize = 128;
    pub const DEFAULT_MAX_NAME_BYTES: usize = 256;
    /// Room for a URL or a query text as a tag; a longer value is a document, not a name.
    pub const DEFAULT_MAX_TAG_VALUE_BYTES: usize = 4096;
    pub const NONE: Self = Self {
        max_line_bytes: 0,
        max_tags: 0,
        max_name_bytes: 0,
        max_tag_value_bytes: 0,
    };

    /// The line bound for the parser (no limit: `usize::MAX`).
    pub fn line_bytes(&self) -> usize {
        match self.max_line_bytes {
            0 => usize::MAX,
            n => n,
        }
    }

    /// Why `key` may not become a new series, if it may not.
    pub fn refuse(&self, key: &SeriesKey) -> Option<String> {
        let over = |limit: usize, len: usize| limit > 0 && len > limit;
        if over(self.max_tags, key.tags.len()) {
            return Some(format!(
                "the series has {} tags, over the limit of {} (--max-tags)",
                key.tags.len(),
                self.max_tags
            ));
        }
        let names = std::iter::once(("measurement", key.measurement.as_str()))
            .chain(key.tags.iter().map(|(k, _)| ("tag key", k.as_str())))
            .chain(std::iter::once(("field key", key.field.as_str())));
        for (what, name) in names {
            if over(self.max_name_bytes, name.len()) {
                return Some(format!(
                    "{what} {:?}… is {} bytes long, over the limit of {} (--max-name-bytes)",
                    excerpt(name),
                    name.len(),
                    self.max_name_bytes
                ));
            }
        }
        for (k, v) in &key.tags {
            if over(self.max_tag_value_bytes, v.len()) {
                return Some(format!(
                    "the value of tag {:?} is {} bytes long, over the limit of {} (--max-tag-value-bytes)",
                    excerpt(k),
                    v.len(),
                    self.max_tag_value_bytes
                ));
            }
        }
        None
    }
}

impl Default for KeyLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            max_tags: Self::DEFAULT_MAX_TAGS,
            max_name_bytes: Self::DEFAULT_MAX_NAME_BYTES,
            max_tag_value_bytes: Self::DEFAULT_MAX_TAG_VALUE_BYTES,
        }
    }
}

/// The first 32 characters, so a huge name makes a short message.
fn excerpt(text: &str) -> String {
    text.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(measurement: &str, tags: usize, value_len: usize) -> SeriesKey {
        let tags = (0..tags)
            .map(|i| (format!("k{i}"), "v".repeat(value_len)))
            .collect();
        SeriesKey::new(measurement, tags, "f")
    }

    #[test]
    fn each_bound_names_its_flag_and_zero_turns_it_off() {
        let limits = KeyLimits {
            max_line_bytes: 0,
            max_tags: 3,
            max_name_bytes: 8,
            max_tag_value_bytes: 10,
        };
        assert_eq!(limits.refuse(&key("cpu", 3, 10)), None);
        let refusal = |k: SeriesKey| limits.refuse(&k).unwrap_or_default();
        assert!(refusal(key("cpu", 4, 1)).contains("4 tags, over the limit of 3 (--max-tags)"));
        assert!(
            refusal(key("a_long_name", 1, 1)).contains("measurement \"a_long_name\"… is 11 bytes")
        );
        assert!(refusal(key("cpu", 1, 11)).contains("(--max-tag-value-bytes)"));
        let long_field = SeriesKey::new("m", vec![], "field_name");
        assert!(refusal(long_field).contains("field key"));
        assert_eq!(
            KeyLimits::NONE.refuse(&key(&"m".repeat(1000), 5000, 70_000)),
            None
        );
        assert_eq!(KeyLimits::NONE.line_bytes(), usize::MAX);
    }
}
