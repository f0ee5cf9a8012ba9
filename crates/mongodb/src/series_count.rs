//! What a writer checks its series limits with: keys looked up without registering them,
//! and the number of series, in all and per measurement.

use mongodb::bson::doc;
use tickertape_backend::{Result, SeriesCount};
use tickertape_core::{SeriesId, SeriesKey};

use crate::error::map_err;
use crate::layout::{canonical_key, SERIES};
use crate::MongoBackend;

impl MongoBackend {
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
}
