//! Ingest of series already decoded (Prometheus remote write): each series is a key and
//! its points, values possibly NaN — the stale marker among them, stored like any value.
//! After the times are converted, the points take the line-protocol body's pipeline
//! (`Engine::store_pending`): series cache, series limits, schema, grouping under the
//! append rule, change-only filter, rollups.

use crate::write::{refuse_for_schema, report, Errors, Origin, Pending, WriteMode, WriteReport};
use crate::{Engine, EngineError};
use std::fmt::Write;
use tickertape_core::time::Precision;
use tickertape_core::{Point, SeriesKey};

/// One series of a request and its points, times in the request's precision.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSamples {
    pub key: SeriesKey,
    pub points: Vec<Point>,
}

/// A series of the request as the pipeline sees it: its number and its cache text.
struct SampleOrigin<'a> {
    number: usize,
    key: &'a SeriesKey,
    text: String,
}

impl Origin for SampleOrigin<'_> {
    fn number(&self) -> usize {
        self.number
    }

    fn measurement(&self) -> &str {
        &self.key.measurement
    }

    fn series_text(&self) -> &str {
        &self.text
    }

    fn series_key(&self, field: &str) -> SeriesKey {
        match field == self.key.field {
            true => self.key.clone(),
            false => SeriesKey {
                field: field.to_string(),
                ..self.key.clone()
            },
        }
    }
}

/// The text the series cache knows a decoded series by: a `'\n'`, which no line
/// protocol series text holds (a line ends there), so the two kinds never collide; then
/// the measurement and each tag key and value, each as `<length>:<bytes>`, so that no
/// two keys give one text whatever characters their names hold.
pub(crate) fn cache_text(key: &SeriesKey) -> String {
    let mut text = String::with_capacity(
        8 + key.measurement.len()
            + key
                .tags
                .iter()
                .map(|(k, v)| 8 + k.len() + v.len())
                .sum::<usize>(),
    );
    text.push('\n');
    let mut put = |s: &str| {
        // Writing to a String cannot fail.
        let _ = write!(text, "{}:{s}", s.len());
    };
    put(&key.measurement);
    for (k, v) in &key.tags {
        put(k);
        put(v);
    }
    text
}

impl Engine {
    /// Stores decoded series: each series' points, times in `precision` (Prometheus
    /// sends milliseconds), values stored bit for bit (NaN and the stale marker too).
    ///
    /// Refusals are reported per series, numbered from 1 in the order of `series`: a
    /// time that does not fit in nanoseconds, a series past a series limit or refused by
    /// its measurement's schema (all its points), a point refused by the append rule
    /// (that point). The other series are stored. Returns `Err` only when the store
    /// failed, in which case no point may be counted as stored.
    pub async fn write_samples(
        &self,
        series: &[SeriesSamples],
        precision: Precision,
    ) -> Result<WriteReport, EngineError> {
        let mut errors = Errors::new();
        let origins: Vec<SampleOrigin> = series
            .iter()
            .enumerate()
            .map(|(i, s)| SampleOrigin {
                number: i + 1,
                key: &s.key,
                text: cache_text(&s.key),
            })
            .collect();
        let total: usize = series.iter().map(|s| s.points.len()).sum();
        let mut pending = Vec::with_capacity(total);
        for (origin, s) in origins.iter().zip(series) {
            match self.pending_of(origin, &s.points, precision) {
                Ok(points) => pending.extend(points),
                Err(message) => errors.entry(origin.number).or_default().push(message),
            }
        }
        let points_written = self
            .store_pending(pending, WriteMode::Set, &mut errors)
            .await?;
        Ok(report(
            series.len() - errors.len(),
            total,
            points_written,
            errors,
        ))
    }

    /// The pending points of one series, times in nanoseconds; or why the whole series
    /// is refused.
    fn pending_of<'l>(
        &self,
        origin: &'l SampleOrigin<'l>,
        points: &[Point],
        precision: Precision,
    ) -> Result<Vec<Pending<'l, SampleOrigin<'l>>>, String> {
        let key = origin.key;
        let converted = points
            .iter()
            .map(|p| match precision.to_nanos(p.time) {
                Some(time) => Ok(Pending {
                    source: origin,
                    field: &key.field,
                    point: Point::new(time, p.value),
                }),
                None => Err(format!(
                    "series {key}: timestamp {} ({precision:?}) is out of range: nanoseconds \
                     since the epoch must fit in 64 bits (1677-09-21 to 2262-04-11)",
                    p.time
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let Some(earliest) = converted.iter().map(|p| p.point.time).min() else {
            return Ok(converted);
        };
        match refuse_for_schema(self.schema(), &key.measurement, earliest, WriteMode::Set) {
            Some(message) => Err(format!("series {key}: {message}")),
            None => Ok(converted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_texts_tell_apart_keys_that_print_alike() {
        let key = |m: &str, tags: &[(&str, &str)]| {
            SeriesKey::new(
                m,
                tags.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                "value",
            )
        };
        // `a{b=c,d=e}` either way when printed.
        let one = key("a", &[("b", "c,d=e")]);
        let two = key("a", &[("b", "c"), ("d", "e")]);
        assert_eq!(one.to_string(), two.to_string());
        assert_ne!(cache_text(&one), cache_text(&two));
        assert_ne!(
            cache_text(&key("ab", &[])),
            cache_text(&key("a", &[("b", "")]))
        );
        assert!(cache_text(&one).starts_with('\n'));
    }
}
