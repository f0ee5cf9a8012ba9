//! One mapping between Prometheus series and tickertape's, both ways.
//!
//! - A Prometheus series `{__name__="N", k="v", …}` is stored as measurement `N`, field
//!   `value`, tags `k=v` (labels with an empty value are absent, as in Prometheus).
//! - A stored series (measurement `M`, field `F`, tags) is shown as the metric `M` when `F`
//!   is `value`, else `M_F`, with its tags as labels. Characters outside Prometheus' name
//!   charsets become `_` in what is shown; the stored names are unchanged.

use thiserror::Error;
use tickertape_core::SeriesKey;

/// The field a Prometheus sample is stored in.
pub const VALUE_FIELD: &str = "value";
/// The label that holds a series' metric name.
pub const METRIC_NAME: &str = "__name__";

/// A label set, sorted by name, names unique.
pub type Labels = Vec<(String, String)>;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MappingError {
    #[error("a series has no metric name (label __name__)")]
    NoMetricName,
    /// Remote write's specification: label names are never empty.
    #[error("invalid label name \"\": a label name is never empty")]
    EmptyLabelName,
    /// Remote write's specification: label names match `[a-zA-Z_][a-zA-Z0-9_]*`.
    #[error("invalid label name {0:?}: a label name matches [a-zA-Z_][a-zA-Z0-9_]*")]
    InvalidLabelName(String),
    /// Remote write's specification: a label set never repeats a name (Prometheus' TSDB
    /// words).
    #[error("label name {0:?} is not unique")]
    DuplicateLabelName(String),
}

impl MappingError {
    /// Whether the series breaks the remote write specification's rules for label sets,
    /// which a receiver answers with 400 (a series without a metric name does not: the
    /// specification only says it should have one).
    pub fn is_invalid_labels(&self) -> bool {
        !matches!(self, Self::NoMetricName)
    }
}

/// Whether `name` may be a label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_valid_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The metric name a stored series is shown with.
pub fn metric_name(measurement: &str, field: &str) -> String {
    match field == VALUE_FIELD {
        true => sanitize_metric_name(measurement),
        false => sanitize_metric_name(&format!("{measurement}_{field}")),
    }
}

/// `name` with every character outside `[a-zA-Z_:][a-zA-Z0-9_:]*` replaced by `_`.
pub fn sanitize_metric_name(name: &str) -> String {
    sanitize(name, |c| c == ':')
}

/// `name` with every character outside `[a-zA-Z_][a-zA-Z0-9_]*` replaced by `_`.
pub fn sanitize_label_name(name: &str) -> String {
    sanitize(name, |_| false)
}

fn sanitize(name: &str, also: impl Fn(char) -> bool) -> String {
    let mut out: String = name
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let ok =
                c.is_ascii_alphabetic() || c == '_' || also(c) || (i > 0 && c.is_ascii_digit());
            if ok {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// The labels a stored series is shown with: `__name__` and its tags, sorted by name.
pub fn labels_of(key: &SeriesKey) -> Labels {
    let mut labels: Labels = Vec::with_capacity(key.tags.len() + 1);
    labels.push((
        METRIC_NAME.to_string(),
        metric_name(&key.measurement, &key.field),
    ));
    for (k, v) in &key.tags {
        let name = sanitize_label_name(k);
        if name != METRIC_NAME && !v.is_empty() {
            labels.push((name, v.clone()));
        }
    }
    labels.sort_by(|a, b| a.0.cmp(&b.0));
    labels.dedup_by(|b, a| a.0 == b.0);
    labels
}

/// A series' measurement and tags (sorted by name, names unique), borrowed from the labels
/// it was named by.
pub type BorrowedSeries<'a> = (&'a str, Vec<(&'a str, &'a str)>);

/// The stored series of a Prometheus label set, borrowed: measurement `__name__`, the other
/// labels as tags (empty values dropped, as in Prometheus; sorted by name); the field is
/// [`VALUE_FIELD`]. Remote write names every series of every request this way and builds
/// a [`SeriesKey`] only for a series the store has not seen.
///
/// A label set the remote write specification forbids is refused: a label name empty,
/// outside `[a-zA-Z_][a-zA-Z0-9_]*` or given twice (`__name__` included). Named: the first
/// label, in the order given, that is empty, invalid or a second `__name__`; else the
/// first repeated name in sorted order.
pub fn series_of<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<BorrowedSeries<'a>, MappingError> {
    let labels = labels.into_iter();
    let mut name = None;
    let mut tags = Vec::with_capacity(labels.size_hint().0);
    // Labels with an empty value are not stored, but their names may repeat another's.
    // Rare: this allocates only when one is seen.
    let mut empty_valued: Vec<&str> = Vec::new();
    let mut previous: Option<&str> = None;
    let mut in_order = true;
    for (k, v) in labels {
        if k.is_empty() {
            return Err(MappingError::EmptyLabelName);
        }
        if k == METRIC_NAME {
            if name.is_some() {
                return Err(MappingError::DuplicateLabelName(k.to_owned()));
            }
            name = Some(v);
        } else if !is_valid_label_name(k) {
            return Err(MappingError::InvalidLabelName(k.to_owned()));
        } else if v.is_empty() {
            empty_valued.push(k);
        } else {
            tags.push((k, v));
        }
        in_order &= previous.is_none_or(|p| p < k);
        previous = Some(k);
    }
    // Prometheus sends labels sorted by name: strictly increasing names repeat none, and
    // the tags are sorted already.
    if !in_order {
        let mut names: Vec<&str> = tags.iter().map(|(k, _)| *k).collect();
        names.extend_from_slice(&empty_valued);
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(MappingError::DuplicateLabelName(w[0].to_owned()));
        }
        tags.sort_unstable_by(|a, b| a.0.cmp(b.0));
    }
    match name {
        Some(name) if !name.is_empty() => Ok((name, tags)),
        _ => Err(MappingError::NoMetricName),
    }
}

/// [`series_of`], owned: the stored series of a Prometheus label set.
pub fn series_key_of<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<SeriesKey, MappingError> {
    let (name, tags) = series_of(labels)?;
    let tags = tags
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ok(SeriesKey::new(name, tags, VALUE_FIELD))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_value_is_the_measurement_itself() {
        assert_eq!(metric_name("up", "value"), "up");
        assert_eq!(metric_name("cpu", "usage_user"), "cpu_usage_user");
    }

    #[test]
    fn names_outside_the_charset_are_shown_with_underscores() {
        assert_eq!(metric_name("disk.io", "read-bytes"), "disk_io_read_bytes");
        assert_eq!(metric_name("1st", "value"), "_st");
        assert_eq!(sanitize_metric_name("a:b"), "a:b");
        assert_eq!(sanitize_label_name("a:b"), "a_b");
        assert_eq!(sanitize_label_name("9x"), "_x");
        assert_eq!(sanitize_label_name(""), "_");
    }

    #[test]
    fn labels_are_sorted_with_the_name_among_them() {
        let key = SeriesKey::new(
            "cpu",
            vec![("zone".into(), "a".into()), ("Host".into(), "h".into())],
            "usage",
        );
        let labels = labels_of(&key);
        let names: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["Host", "__name__", "zone"]);
        assert_eq!(labels[1].1, "cpu_usage");
    }

    #[test]
    fn a_prometheus_series_is_measurement_value_and_tags() {
        let key = series_key_of([("__name__", "up"), ("job", "p"), ("empty", "")]).unwrap();
        assert_eq!(
            key,
            SeriesKey::new("up", vec![("job".into(), "p".into())], "value")
        );
        assert_eq!(
            labels_of(&key),
            vec![("__name__".into(), "up".into()), ("job".into(), "p".into())]
        );
        assert_eq!(
            series_key_of([("job", "p")]),
            Err(MappingError::NoMetricName)
        );
    }

    use proptest::prelude::*;

    #[test]
    fn label_sets_remote_write_forbids_are_refused() {
        for (labels, error) in [
            (
                vec![("__name__", "up"), ("", "x")],
                MappingError::EmptyLabelName,
            ),
            (
                vec![("__name__", "up"), ("", "")],
                MappingError::EmptyLabelName,
            ),
            (
                vec![("__name__", "up"), ("a-b", "x")],
                MappingError::InvalidLabelName("a-b".into()),
            ),
            (
                vec![("__name__", "up"), ("9x", "x")],
                MappingError::InvalidLabelName("9x".into()),
            ),
            (
                vec![("__name__", "up"), ("zone", "a"), ("zone", "b")],
                MappingError::DuplicateLabelName("zone".into()),
            ),
            (
                vec![("zone", "a"), ("__name__", "up"), ("zone", "")],
                MappingError::DuplicateLabelName("zone".into()),
            ),
            (
                vec![("__name__", "up"), ("__name__", "down")],
                MappingError::DuplicateLabelName("__name__".into()),
            ),
        ] {
            assert_eq!(series_of(labels.iter().copied()), Err(error.clone()));
            assert!(error.is_invalid_labels());
        }
        assert!(!MappingError::NoMetricName.is_invalid_labels());
        assert!(is_valid_label_name("_a9") && is_valid_label_name("__reserved"));
        assert!(!is_valid_label_name("a.b") && !is_valid_label_name("é"));
        // Unsorted but valid: tags come out sorted.
        let (name, tags) = series_of([("z", "1"), ("__name__", "up"), ("a", "2")]).unwrap();
        assert_eq!((name, tags), ("up", vec![("a", "2"), ("z", "1")]));
    }

    proptest! {
        /// The series `SeriesKey::new` makes of the same labels (`__name__`, the other
        /// non-empty labels, sorted) whatever their order, and the refusal the rules give
        /// when a name is empty or repeated.
        #[test]
        fn series_of_names_the_series_a_key_would(
            labels in prop::collection::vec(
                (prop::sample::select(vec!["__name__", "a", "b", "job", "z", ""]), "[xy]{0,2}"),
                0..8,
            )
        ) {
            let borrowed: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let got = series_of(borrowed.iter().copied());
            // The first label, in order, that is empty or a second `__name__`.
            let mut names_seen = 0;
            let first_bad = borrowed.iter().find_map(|(k, _)| {
                names_seen += usize::from(*k == METRIC_NAME);
                match *k {
                    "" => Some(MappingError::EmptyLabelName),
                    METRIC_NAME if names_seen > 1 => {
                        Some(MappingError::DuplicateLabelName(METRIC_NAME.into()))
                    }
                    _ => None,
                }
            });
            if let Some(bad) = first_bad {
                prop_assert_eq!(got, Err(bad));
                return Ok(());
            }
            let mut names: Vec<&str> = borrowed.iter().map(|(k, _)| *k).collect();
            names.sort_unstable();
            let repeated = names.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
            if let Some(repeated) = repeated {
                prop_assert_eq!(got, Err(MappingError::DuplicateLabelName(repeated.into())));
                return Ok(());
            }
            let name = borrowed.iter().find(|(k, _)| *k == METRIC_NAME).map(|(_, v)| *v);
            let others: Vec<(String, String)> = borrowed
                .iter()
                .filter(|(k, v)| *k != METRIC_NAME && !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            match (got, name.filter(|n| !n.is_empty())) {
                (Ok((got_name, tags)), Some(name)) => {
                    let owned: Vec<(String, String)> =
                        tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    prop_assert_eq!(got_name, name);
                    prop_assert_eq!(&owned, &SeriesKey::new(name, others, VALUE_FIELD).tags);
                }
                (Err(e), None) => prop_assert_eq!(e, MappingError::NoMetricName),
                (got, want) => prop_assert!(false, "{:?} vs a name of {:?}", got, want),
            }
        }
    }
}
