//! Bucket reads, pre-allocation and partitions: `read_buckets`, `preallocate`,
//! `list_partitions`, `drop_partition` (`docs/format/mongodb.md`, "Time buckets").

use futures::future::try_join_all;
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use tickertape_backend::{BackendError, BucketFamily, BucketRead, Partition, Result, StoredBucket};
use tickertape_core::rollup::BucketGeometry;
use tickertape_core::SeriesId;

use crate::bucket_layout::{
    self, bucket_id, collection_name, parse_bucket, parse_collection_name, shell, BUCKET_PREFIX,
};
use crate::bulk;
use crate::error::map_err;
use crate::layout::sid;
use crate::MongoBackend;

/// Partitions a read addresses by name without first listing the collections. A find on
/// a collection that does not exist is cheap and returns nothing; past this many, one
/// `listCollections` saves more round trips than it costs (a read of "everything").
const DIRECT_PARTITIONS: i128 = 16;

impl MongoBackend {
    /// One `find` per partition overlapping the documents of `[start, end)`, on the `_id`
    /// range `{s: series, b: first start} ≤ _id < {s: series, b: end}`.
    ///
    /// Why a range on the whole `_id` rather than `{"_id.s": …, "_id.b": …}`: the built-in
    /// `_id` index keys the whole embedded document, which compares field by field, so the
    /// range is exactly "this series, starts in [lo, end)" and is served by that index;
    /// dotted `_id.s`/`_id.b` conditions would need a second index on every partition.
    pub(crate) async fn read_bucket_range(
        &self,
        family: BucketFamily,
        series: SeriesId,
        start: i64,
        end: i64,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        let geometry = bucket_layout::geometry(family)?;
        let Some(first) = geometry.bucket_starts(start, end).next() else {
            return Ok(Vec::new());
        };
        let series = sid(series)?;
        let filter = doc! { "_id": {
            "$gte": bucket_id(series, first),
            "$lt": bucket_id(series, end),
        }};
        let partitions = self
            .partitions_between(family, geometry, first, end)
            .await?;
        let with_slots = part == BucketRead::Full;
        let per_partition = try_join_all(partitions.into_iter().map(|p| {
            let filter = filter.clone();
            async move {
                let collection = collection_name(family, p);
                self.find_buckets(&collection, filter, with_slots).await
            }
        }))
        .await?;
        per_partition
            .iter()
            .flatten()
            .map(|d| parse_bucket(family, d, with_slots))
            .collect()
    }

    async fn find_buckets(
        &self,
        collection: &str,
        filter: Document,
        with_slots: bool,
    ) -> Result<Vec<Document>> {
        let collection = self.read_db.collection::<Document>(collection);
        let find = collection.find(filter).sort(doc! { "_id": 1 });
        let find = if with_slots {
            find
        } else {
            find.projection(doc! { "n": 1, "sum": 1, "mn": 1, "mx": 1 })
        };
        find.await
            .map_err(|e| map_err("read buckets", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("read buckets", e))
    }

    /// Starts of the partitions holding documents that start in `[first, end)`, ascending.
    async fn partitions_between(
        &self,
        family: BucketFamily,
        geometry: BucketGeometry,
        first: i64,
        end: i64,
    ) -> Result<Vec<i64>> {
        let partition_ns = geometry.partition_ns();
        let lo = geometry.partition_of(first);
        let hi = geometry.partition_of(end - 1);
        let count = (i128::from(hi) - i128::from(lo)) / i128::from(partition_ns) + 1;
        if count <= DIRECT_PARTITIONS {
            return Ok(
                std::iter::successors(Some(lo), |p| p.checked_add(partition_ns))
                    .take_while(|&p| p <= hi)
                    .collect(),
            );
        }
        let mut starts: Vec<i64> = self
            .list_bucket_partitions()
            .await?
            .into_iter()
            .filter(|p| p.family == family && (lo..=hi).contains(&p.start))
            .map(|p| p.start)
            .collect();
        starts.sort_unstable();
        Ok(starts)
    }

    /// Every bucket partition collection, by family, then start.
    ///
    /// A partition is listed once its collection exists: the first upsert or shell into it
    /// creates it, and only `drop_partition` removes it, so every listed one holds a
    /// document (barring a write that created the collection and then failed).
    pub(crate) async fn list_bucket_partitions(&self) -> Result<Vec<Partition>> {
        let names = self
            .db
            .list_collection_names()
            .filter(doc! { "name": { "$regex": format!("^{}", regex_escape(BUCKET_PREFIX)) } })
            .await
            .map_err(|e| map_err("list partitions", e))?;
        let mut partitions: Vec<Partition> = names
            .iter()
            .filter_map(|name| parse_collection_name(name))
            .collect();
        partitions.sort();
        Ok(partitions)
    }

    /// Drops the partition's collection; a missing one is fine (the driver ignores
    /// `NamespaceNotFound`).
    pub(crate) async fn drop_bucket_partition(&self, partition: Partition) -> Result<()> {
        let geometry = bucket_layout::geometry(partition.family)?;
        if geometry.partition_of(partition.start) != partition.start {
            return Err(BackendError::Invalid(format!(
                "{} is not the start of a partition of its family (every {} ns)",
                partition.start,
                geometry.partition_ns()
            )));
        }
        self.db
            .collection::<Document>(&collection_name(partition.family, partition.start))
            .drop()
            .await
            .map_err(|e| map_err("drop partition", e))
    }

    /// Inserts a shell per series (unordered; a duplicate key means the document exists
    /// and is left as it is). Returns how many were inserted.
    pub(crate) async fn preallocate_shells(
        &self,
        family: BucketFamily,
        series: &[SeriesId],
        bucket_start: i64,
    ) -> Result<u64> {
        let geometry = bucket_layout::geometry(family)?;
        if bucket_start.rem_euclid(geometry.period_ns()) != 0 {
            return Err(BackendError::Invalid(format!(
                "bucket start {bucket_start} is not a multiple of the family's period {} ns",
                geometry.period_ns()
            )));
        }
        if series.is_empty() {
            return Ok(0);
        }
        let template = shell(family, geometry, Document::new());
        let documents = series
            .iter()
            .map(|&s| {
                let mut d = template.clone();
                d.insert("_id", bucket_id(sid(s)?, bucket_start));
                Ok(d)
            })
            .collect::<Result<Vec<_>>>()?;
        let collection = collection_name(family, geometry.partition_of(bucket_start));
        let inserted = bulk::insert(&self.db, &self.write_concern, &collection, documents).await?;
        Ok(inserted.into_iter().filter(|&i| i).count() as u64)
    }
}

/// `text` with regular-expression metacharacters escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
