//! A remote-write series' labels as the stored series they name, borrowed from the
//! request: [`mapping::series_key_of`]'s rule without building a `SeriesKey` (a `String`
//! per name and value) for every series of every request — the store needs one only for
//! a series it has not seen. A property test holds the two to the same answers.

use crate::mapping::{MappingError, METRIC_NAME};

/// A series' measurement and tags (sorted by name, names unique), borrowed.
pub type BorrowedSeries<'a> = (&'a str, Vec<(&'a str, &'a str)>);

/// The measurement (`__name__`) and tags (the other labels, empty values dropped, sorted
/// by name, a name given twice keeping its last value) of a label set, as
/// [`series_key_of`](crate::mapping::series_key_of) makes them; the field is
/// [`VALUE_FIELD`](crate::mapping::VALUE_FIELD).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::{series_key_of, VALUE_FIELD};
    use proptest::prelude::*;
    use tickertape_core::SeriesKey;

    proptest! {
        /// The same series as `mapping::series_key_of`, whatever the labels: unsorted,
        /// repeated names, empty values, several or no `__name__`.
        #[test]
        fn names_the_series_series_key_of_names(
            labels in prop::collection::vec(
                (prop::sample::select(vec!["__name__", "a", "b", "job", "z", ""]), "[xy]{0,2}"),
                0..8,
            )
        ) {
            let borrowed: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let want = series_key_of(borrowed.iter().copied());
            let got = series_of(borrowed.iter().copied());
            match (got, want) {
                (Ok((name, tags)), Ok(key)) => {
                    let owned: Vec<(String, String)> =
                        tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    prop_assert_eq!(&owned, &key.tags, "sorted and unique as given");
                    prop_assert_eq!(SeriesKey::new(name, owned, VALUE_FIELD), key);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (got, want) => prop_assert!(false, "{:?} vs {:?}", got, want),
            }
        }
    }
}
