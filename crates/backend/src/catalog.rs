//! The series catalog: which series exist, by key and by tags, and the names the pickers
//! list. Seed 000's series documents; the embedded store's catalog.

use async_trait::async_trait;
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

use crate::{NameQuery, Result, SeriesCount, SeriesInfo};

#[async_trait]
/// Registering series and finding them again. Every method reads or registers keys only:
/// no point is touched.
pub trait SeriesCatalog: Send + Sync {
    /// The id of each key, registering the keys not seen before. Ids are stable forever:
    /// the same key gets the same id from every client, across restarts, also when
    /// several writers register it at once.
    async fn resolve_series(&self, keys: &[SeriesKey]) -> Result<Vec<SeriesId>>;

    /// The id of each key already registered, `None` for the others. Registers nothing:
    /// what a writer checks its series limits with before it registers.
    async fn lookup_series(&self, keys: &[SeriesKey]) -> Result<Vec<Option<SeriesId>>>;

    /// How many series are registered, in all and in each of `measurements`.
    async fn count_series(&self, measurements: &[String]) -> Result<SeriesCount>;

    /// Every registered series the selector matches, in id order.
    async fn find_series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesInfo>>;

    /// Every (measurement, field) pair some registered series has, sorted, each once:
    /// what Prometheus' metric names are made of (`tickertape_prometheus::mapping`).
    async fn list_fields(&self) -> Result<Vec<(String, String)>>;

    /// The measurements of registered series that `query` accepts: sorted, each once, at
    /// most `query.limit()` (the dashboard's measurement picker). The default filters
    /// [`list_fields`](Self::list_fields); a backend where that costs a round trip per
    /// measurement answers it in one.
    async fn list_measurements(&self, query: &NameQuery) -> Result<Vec<String>> {
        let pairs = self.list_fields().await?;
        Ok(query.first_of(pairs.iter().map(|(m, _)| m.as_str())))
    }

    /// The fields of `measurement`'s registered series that `query` accepts: sorted, each
    /// once, at most `query.limit()`. The default filters [`list_fields`](Self::list_fields).
    async fn list_fields_of(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>> {
        let pairs = self.list_fields().await?;
        let fields = pairs
            .iter()
            .filter(|(m, _)| m == measurement)
            .map(|(_, f)| f.as_str());
        Ok(query.first_of(fields))
    }

    /// The tag keys of `measurement`'s registered series that `query` accepts: sorted,
    /// each once, at most `query.limit()` (the dashboard's search-as-you-type).
    async fn list_tag_keys(&self, measurement: &str, query: &NameQuery) -> Result<Vec<String>>;

    /// The values tag `key` takes among `measurement`'s registered series that `query`
    /// accepts: sorted, each once, at most `query.limit()`. Must stay cheap at a million
    /// series, so never a read of every series: the embedded store passes over the key's
    /// distinct values in memory, MongoDB reads a range of its `tag_values` collection.
    async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Vec<String>>;
}
