//! The series catalog: which series exist, by key and by tags, and the names the pickers
//! list. MongoDB's `series` collection; the embedded store's catalog.

use async_trait::async_trait;
use tickertape_core::{SeriesId, SeriesKey, SeriesSelector};

use crate::{NameQuery, Result, SeriesCount, SeriesInfo};

#[async_trait]
/// Registering series, finding them again and removing them. Every method reads or
/// registers keys only: no point is touched.
pub trait SeriesCatalog: Send + Sync {
    /// The id of each key, registering the keys not seen before. Ids are stable until the
    /// series is removed ([`remove_series`](Self::remove_series)): the same key gets the
    /// same id from every client, across restarts, also when several writers register it
    /// at once. An id is never issued twice.
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

    // --- Removing series -------------------------------------------------------------

    /// Removes `series` from the catalog, as Prometheus removes a series deleted over its
    /// whole range: they are no longer found, counted or listed (pickers, fields, tag keys
    /// and values that no other series has), and [`resolve_series`](Self::resolve_series)
    /// of the same key later registers it anew under a new id, which holds only the points
    /// written to it. The caller deletes the series' points first
    /// ([`ValueStore::delete_points`](crate::ValueStore::delete_points) over
    /// [`DeleteRange::all`](crate::DeleteRange::all)); a store may keep unreachable
    /// bucket documents of a removed id until retention drops their partitions.
    ///
    /// Returns how many of `series` were registered (and are removed); an unknown id is
    /// skipped. Durable when it returns `Ok`. A writer that resolved an id before the
    /// removal and appends to it afterwards is refused with
    /// [`BackendError::UnknownSeries`](crate::BackendError::UnknownSeries) where the
    /// store checks registration (embedded, reference), and stores points nobody can read
    /// where it does not (MongoDB).
    async fn remove_series(&self, series: &[SeriesId]) -> Result<u64>;
}
