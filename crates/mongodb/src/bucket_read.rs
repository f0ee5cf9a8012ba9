//! Bucket reads, pre-allocation and partitions: `read_buckets`, `preallocate`,
//! `list_partitions`, `drop_partition` (`docs/format/mongodb.md`, "Time buckets").

use futures::future::try_join_all;
use mongodb::bson::{doc, Document};
use tickertape_backend::{
    BucketRange, BucketRead, DocumentSpan, DocumentStart, Partition, Result, StoredBucket,
};
use tickertape_core::SeriesId;

use crate::bucket_layout::{
    bucket_id, collection_name, parse_bucket, parse_collection_name, shell, BUCKET_PREFIX,
};
use crate::bulk;
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::sid;
use crate::Shared;

impl Shared {
    /// One `find` per partition overlapping the documents of `[start, end)`, on the `_id`
    /// range `{s: series, b: first start} ≤ _id < {s: series, b: end}`.
    ///
    /// Why a range on the whole `_id` rather than `{"_id.s": …, "_id.b": …}`: the built-in
    /// `_id` index keys the whole embedded document, which compares field by field, so the
    /// range is exactly "this series, starts in [lo, end)" and is served by that index;
    /// dotted `_id.s`/`_id.b` conditions would need a second index on every partition.
    pub(crate) async fn read_bucket_range(
        &self,
        range: BucketRange,
        part: BucketRead,
    ) -> Result<Vec<StoredBucket>> {
        let Some(span) = DocumentSpan::of(range) else {
            return Ok(Vec::new());
        };
        let family = range.family;
        let series = sid(range.series)?;
        let filter = doc! {
            "_id": {
                "$gte": bucket_id(series, span.first()),
                "$lt": bucket_id(series, span.end()),
            },
            // The shard key: the read goes to the one shard holding the series.
            "s": series,
        };
        // A find on a collection that does not exist is cheap and returns nothing; past a
        // few partitions, one `listCollections` saves more round trips than it costs.
        let partitions = match span.named_partitions() {
            Some(named) => named,
            None => span.select(self.list_bucket_partitions().await?),
        };
        let with_slots = part == BucketRead::Full;
        let per_partition = try_join_all(partitions.into_iter().map(|p| {
            let filter = filter.clone();
            async move {
                let collection = collection_name(p);
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
        find_all(find, "read buckets").await
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
        self.db
            .collection::<Document>(&collection_name(partition))
            .drop()
            .await
            .map_err(|e| map_err("drop partition", e))
    }

    /// Inserts a shell per series (unordered; a duplicate key means the document exists
    /// and is left as it is). Returns how many were inserted.
    pub(crate) async fn preallocate_shells(
        &self,
        document: DocumentStart,
        series: &[SeriesId],
    ) -> Result<u64> {
        let (family, partition, bucket_start) =
            (document.family(), document.partition(), document.start());
        if series.is_empty() {
            return Ok(0);
        }
        let template = shell(family, family.geometry(), Document::new());
        let documents = series
            .iter()
            .map(|&s| {
                let mut d = template.clone();
                d.insert("_id", bucket_id(sid(s)?, bucket_start));
                d.insert("s", sid(s)?);
                Ok(d)
            })
            .collect::<Result<Vec<_>>>()?;
        let collection = collection_name(partition);
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
