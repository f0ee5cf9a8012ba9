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

#[derive(Debug, Error, PartialEq, Eq)]
pub enum MappingError {
    #[error("a series has no metric name (label __name__)")]
    NoMetricName,
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

/// The stored series of a Prometheus label set, borrowed: measurement `__name__` (the last
/// one given), the other labels as tags (empty values dropped, sorted by name, a name given
/// twice keeping its last value); the field is [`VALUE_FIELD`]. Remote write names every
/// series of every request this way and builds a [`SeriesKey`] only for a series the
/// store has not seen.
pub fn series_of<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<BorrowedSeries<'a>, MappingError> {
    let labels = labels.into_iter();
    let mut name = None;
    let mut tags = Vec::with_capacity(labels.size_hint().0);
    for (k, v) in labels {
        if k == METRIC_NAME {
            name = Some(v);
        } else if !v.is_empty() {
            tags.push((k, v));
        }
    }
    // Prometheus sends labels sorted by name; sorting is then one pass.
    if !tags.windows(2).all(|w| w[0].0 < w[1].0) {
        // As `SeriesKey::new`: of a name given twice, the last value stays.
        tags.reverse();
        tags.sort_by(|a, b| a.0.cmp(b.0));
        tags.dedup_by(|a, b| a.0 == b.0);
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

    proptest! {
        /// The series `SeriesKey::new` makes of the same labels (the last `__name__`, the
        /// other non-empty labels, sorted, a repeated name's last value), whatever the
        /// labels: unsorted, repeated names, empty values, several or no `__name__`.
        #[test]
        fn series_of_names_the_series_a_key_would(
            labels in prop::collection::vec(
                (prop::sample::select(vec!["__name__", "a", "b", "job", "z", ""]), "[xy]{0,2}"),
                0..8,
            )
        ) {
            let borrowed: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let name = borrowed.iter().rev().find(|(k, _)| *k == METRIC_NAME).map(|(_, v)| *v);
            let others: Vec<(String, String)> = borrowed
                .iter()
                .filter(|(k, v)| *k != METRIC_NAME && !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            match (series_of(borrowed.iter().copied()), name.filter(|n| !n.is_empty())) {
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
