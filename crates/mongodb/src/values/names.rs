//! Which value and rollup collections a read or a pass looks at: named from the range
//! (`naming::periods_between`), or, for a range of more than `MAX_NAMED_COLLECTIONS`
//! periods, picked from one `listCollections`. A `find` on a collection that does not
//! exist returns nothing, so naming one too many costs a round trip, never an answer.

use mongodb::bson::doc;
use tickertape_backend::Result;

use crate::error::map_err;
use crate::naming::{periods_between, MAX_NAMED_COLLECTIONS};
pub(crate) use crate::naming::{rollup_collection, value_collection, PartitionName};
use crate::Shared;

impl Shared {
    /// The value and rollup collections that exist, sorted by kind (values first) and
    /// start. One `listCollections`.
    pub(crate) async fn partitions(&self) -> Result<Vec<PartitionName>> {
        let names = self
            .db
            .list_collection_names()
            .filter(doc! { "name": { "$regex": "^s[vr]\\." } })
            .await
            .map_err(|e| map_err("list partitions", e))?;
        let mut out: Vec<PartitionName> = names
            .iter()
            .filter_map(|n| PartitionName::parse(n))
            .collect();
        out.sort();
        Ok(out)
    }

    /// A view of the collections for one call: the named ones from the range, the
    /// listing (one `listCollections`) fetched at most once, when a range is too long.
    pub(crate) fn catalog(&self) -> Catalog<'_> {
        Catalog {
            shared: self,
            listed: None,
        }
    }
}

/// See [`Shared::catalog`].
pub(crate) struct Catalog<'a> {
    shared: &'a Shared,
    listed: Option<Vec<PartitionName>>,
}

impl Catalog<'_> {
    /// The starts of the value collections that may hold points in `[first, last]`
    /// (inclusive), ascending.
    pub(crate) async fn values_between(&mut self, first: i64, last: i64) -> Result<Vec<i64>> {
        self.between(None, first, last).await
    }

    /// The starts of the rollup collections of `resolution` that may hold slices in
    /// `[first, last]` (inclusive), ascending.
    pub(crate) async fn rollups_between(
        &mut self,
        resolution: i64,
        first: i64,
        last: i64,
    ) -> Result<Vec<i64>> {
        self.between(Some(resolution), first, last).await
    }

    async fn between(
        &mut self,
        resolution: Option<i64>,
        first: i64,
        last: i64,
    ) -> Result<Vec<i64>> {
        let periods = self.shared.layout.periods;
        let by = match resolution {
            None => periods.values(),
            Some(_) => periods.rollups(),
        };
        if let Some(named) = periods_between(by, first, last, MAX_NAMED_COLLECTIONS) {
            return Ok(named);
        }
        if last < first {
            return Ok(Vec::new());
        }
        let listed = match &self.listed {
            Some(listed) => listed,
            None => self.listed.insert(self.shared.partitions().await?),
        };
        let (lo, hi) = (by.start_of(first), by.start_of(last));
        Ok(listed
            .iter()
            .filter(|p| p.resolution == resolution && p.start >= lo && p.start <= hi)
            .map(|p| p.start)
            .collect())
    }
}
