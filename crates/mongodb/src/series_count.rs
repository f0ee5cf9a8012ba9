//! What a writer checks its series limits with: keys looked up without registering them,
//! the number of series, in all and per measurement, and the (measurement, field) pairs,
//! all of them or, for the dashboard's pickers, those starting with what was typed.

use futures::stream::{self, StreamExt, TryStreamExt};
use mongodb::bson::{doc, Bson};
use tickertape_backend::{BackendError, NameQuery, Result, SeriesCount};
use tickertape_core::{SeriesId, SeriesKey};

use crate::error::map_err;
use crate::layout::{canonical_key, SERIES};
use crate::selector::prefix_range;
use crate::Shared;

/// `distinct` commands in flight at once when listing every measurement's fields.
const CONCURRENT_DISTINCTS: usize = 16;

/// The strings of a `distinct` answer (a field holding another type is no name).
fn distinct_strings(values: Vec<Bson>) -> Vec<String> {
    values
        .into_iter()
        .filter_map(|v| match v {
            Bson::String(s) => Some(s),
            _ => None,
        })
        .collect()
}

impl Shared {
    pub(crate) async fn lookup(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>> {
        let canonical: Vec<String> = keys.iter().map(canonical_key).collect();
        let ids = self.ids_of(&canonical).await?;
        Ok(canonical.iter().map(|ck| ids.get(ck).copied()).collect())
    }

    /// The total from the collection's metadata (no scan; exact after a clean shutdown,
    /// which is all a limit needs), each measurement's by an indexed count on `k.m`.
    pub(crate) async fn count(&self, measurements: &[String]) -> Result<SeriesCount> {
        let series = self.collection(SERIES);
        let total = series
            .estimated_document_count()
            .await
            .map_err(|e| map_err("count series", e))?;
        let mut per_measurement = Vec::with_capacity(measurements.len());
        for m in measurements {
            let n = series
                .count_documents(doc! { "k.m": m })
                .await
                .map_err(|e| map_err("count the series of a measurement", e))?;
            per_measurement.push(n);
        }
        Ok(SeriesCount {
            total,
            per_measurement,
        })
    }

    /// Every (measurement, field) pair: `distinct` measurements, then each one's fields
    /// (both answered from the index on `k.m`), `CONCURRENT_DISTINCTS` at a time: PromQL
    /// asks this for every selector, and Prometheus data has a measurement per metric name.
    pub(crate) async fn fields(&self) -> Result<Vec<(String, String)>> {
        let series = self.collection(SERIES);
        let measurements = series
            .distinct("k.m", doc! {})
            .await
            .map_err(|e| map_err("list measurements", e))?;
        let per_measurement = stream::iter(distinct_strings(measurements))
            .map(|m| {
                let series = series.clone();
                async move {
                    let fields = series
                        .distinct("k.f", doc! { "k.m": &m })
                        .await
                        .map_err(|e| map_err("list the fields of a measurement", e))?;
                    Ok::<_, BackendError>((m, distinct_strings(fields)))
                }
            })
            .buffer_unordered(CONCURRENT_DISTINCTS);
        let fields_of: Vec<(String, Vec<String>)> = per_measurement.try_collect().await?;
        let mut pairs: Vec<(String, String)> = fields_of
            .into_iter()
            .flat_map(|(m, fields)| fields.into_iter().map(move |f| (m.clone(), f)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        Ok(pairs)
    }

    /// The measurements starting with the prefix: one `distinct` over an index range of
    /// `k.m`, however many measurements there are.
    pub(crate) async fn measurements(&self, query: &NameQuery) -> Result<Vec<String>> {
        let filter = doc! { "k.m": prefix_range(query.prefix()) };
        let names = self
            .collection(SERIES)
            .distinct("k.m", filter)
            .await
            .map_err(|e| map_err("list measurements", e))?;
        Ok(query.first_of(names.iter().filter_map(Bson::as_str)))
    }

    /// The fields of one measurement starting with the prefix: one `distinct` over an index
    /// range of `{k.m, k.f}`.
    pub(crate) async fn fields_of(
        &self,
        measurement: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>> {
        let filter = doc! { "k.m": measurement, "k.f": prefix_range(query.prefix()) };
        let names = self
            .collection(SERIES)
            .distinct("k.f", filter)
            .await
            .map_err(|e| map_err("list the fields of a measurement", e))?;
        Ok(query.first_of(names.iter().filter_map(Bson::as_str)))
    }
}
