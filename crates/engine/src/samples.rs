//! Ingest of series already decoded (Prometheus remote write): each series is a key and
//! its points, values possibly NaN — the stale marker among them, stored like any value.
//! After the times are converted, the points take the line-protocol body's pipeline
//! (`Engine::store_pending`): series cache, series limits, schema, grouping under the
//! append rule, change-only filter, rollups.

use crate::write::{refuse_for_schema, report, Errors, Origin, Pending, WriteMode, WriteReport};
use crate::{Engine, EngineError};
use tickertape_core::time::Precision;
use tickertape_core::{Point, SeriesKey};

/// A series named by borrowed parts, as a decoded request holds them: no `String` is
/// made for it unless the store has not seen it yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesRef<'a> {
    pub measurement: &'a str,
    /// Sorted by key, keys unique (the invariant of [`SeriesKey`]).
    pub tags: Vec<(&'a str, &'a str)>,
    pub field: &'a str,
}

impl SeriesRef<'_> {
    pub fn to_key(&self) -> SeriesKey {
        SeriesKey::new(
            self.measurement,
            self.tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            self.field,
        )
    }
}

/// One series of a request and its points, times in the request's precision.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSamples<'a> {
    pub series: SeriesRef<'a>,
    pub points: &'a [Point],
}

/// A series of the request as the pipeline sees it: its number and its cache text.
struct SampleOrigin<'a> {
    number: usize,
    series: &'a SeriesRef<'a>,
    text: String,
}

impl Origin for SampleOrigin<'_> {
    fn number(&self) -> usize {
        self.number
    }

    fn measurement(&self) -> &str {
        self.series.measurement
    }

    fn series_text(&self) -> &str {
        &self.text
    }

    fn series_key(&self, field: &str) -> SeriesKey {
        let mut key = self.series.to_key();
        if field != key.field {
            key.field = field.to_string();
        }
        key
    }
}

/// The text the series cache knows a decoded series by: a `'\n'`, which no line
/// protocol series text holds (a line ends there), so the two kinds never collide; then
/// the measurement and each tag key and value, each as `<length>:<bytes>`, so that no
/// two series give one text whatever characters their names hold.
pub(crate) fn cache_text(series: &SeriesRef<'_>) -> String {
    let parts = 1 + 2 * series.tags.len();
    let bytes: usize = series.measurement.len()
        + series
            .tags
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
    let mut text = String::with_capacity(1 + bytes + 4 * parts);
    text.push('\n');
    put(&mut text, series.measurement);
    for (k, v) in &series.tags {
        put(&mut text, k);
        put(&mut text, v);
    }
    text
}

/// Appends `<length>:<s>`, the length in decimal (written by hand: `write!` costs a
/// formatter per part, and this runs for every series of every request).
fn put(text: &mut String, s: &str) {
    let n = s.len();
    if n < 10 {
        text.push(char::from(b'0' + n as u8));
    } else {
        let mut digits = [0u8; 20];
        let (mut n, mut i) = (n, digits.len());
        while n > 0 {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        digits[i..].iter().for_each(|&d| text.push(char::from(d)));
    }
    text.push(':');
    text.push_str(s);
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
        series: &[SeriesSamples<'_>],
        precision: Precision,
    ) -> Result<WriteReport, EngineError> {
        let mut errors = Errors::new();
        let origins: Vec<SampleOrigin> = series
            .iter()
            .enumerate()
            .map(|(i, s)| SampleOrigin {
                number: i + 1,
                series: &s.series,
                text: cache_text(&s.series),
            })
            .collect();
        let total: usize = series.iter().map(|s| s.points.len()).sum();
        let mut pending = Vec::with_capacity(total);
        for (origin, s) in origins.iter().zip(series) {
            match self.pending_of(origin, s.points, precision) {
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
        let series = origin.series;
        let converted = points
            .iter()
            .map(|p| match precision.to_nanos(p.time) {
                Some(time) => Ok(Pending {
                    source: origin,
                    field: series.field,
                    point: Point::new(time, p.value),
                }),
                None => Err(format!(
                    "series {}: timestamp {} ({precision:?}) is out of range: nanoseconds \
                     since the epoch must fit in 64 bits (1677-09-21 to 2262-04-11)",
                    series.to_key(),
                    p.time
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let Some(earliest) = converted.iter().map(|p| p.point.time).min() else {
            return Ok(converted);
        };
        match refuse_for_schema(self.schema(), series.measurement, earliest, WriteMode::Set) {
            Some(message) => Err(format!("series {}: {message}", series.to_key())),
            None => Ok(converted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series<'a>(m: &'a str, tags: &[(&'a str, &'a str)]) -> SeriesRef<'a> {
        SeriesRef {
            measurement: m,
            tags: tags.to_vec(),
            field: "value",
        }
    }

    #[test]
    fn cache_texts_tell_apart_series_that_print_alike() {
        // `a{b=c,d=e}` either way when printed.
        let one = series("a", &[("b", "c,d=e")]);
        let two = series("a", &[("b", "c"), ("d", "e")]);
        assert_eq!(one.to_key().to_string(), two.to_key().to_string());
        assert_ne!(cache_text(&one), cache_text(&two));
        assert_ne!(
            cache_text(&series("ab", &[])),
            cache_text(&series("a", &[("b", "")]))
        );
        assert_eq!(cache_text(&two), "\n1:a1:b1:c1:d1:e");
        let long = "x".repeat(1234);
        assert_eq!(cache_text(&series(&long, &[])), format!("\n1234:{long}"));
        assert_eq!(cache_text(&series("", &[])), "\n0:");
    }
}
