//! Time buckets (`docs/design.md#bucket-documents-and-in-place-updates`): documents of
//! slots per series and period, in time partitions that retention drops whole.

use async_trait::async_trait;
use tickertape_core::SeriesId;

use crate::{
    BucketRange, BucketRead, BucketWrite, BucketWriteOutcome, DocumentStart, Partition, Result,
    StoredBucket,
};

#[async_trait]
/// Bucket documents: slot writes, reads by range, pre-allocation and partitions.
pub trait BucketStore: Send + Sync {
    /// Applies bucket writes, creating documents as needed, each in its family's partition
    /// of its start. Returns one outcome per write, in order. Writes to the same slot in
    /// one call are applied in order. When this returns `Ok`, every applied write is
    /// durable; on `Err` some may have been applied.
    async fn write_buckets(&self, writes: Vec<BucketWrite>) -> Result<Vec<BucketWriteOutcome>>;

    /// The documents of `range.series` in `range.family` whose period overlaps
    /// `[range.start, range.end)`, by start ascending. Documents never written are absent.
    async fn read_buckets(&self, range: BucketRange, part: BucketRead)
        -> Result<Vec<StoredBucket>>;

    /// Writes empty shell documents for `series` at `bucket_start` in `family` (every slot
    /// present but unwritten), so that later slot writes update a document in place rather
    /// than grow it. A document that exists already is left as it is. Returns how many
    /// shells were created.
    async fn preallocate(&self, document: DocumentStart, series: &[SeriesId]) -> Result<u64>;

    /// Every partition holding at least one document (pre-allocated ones included), by
    /// family, then start.
    async fn list_partitions(&self) -> Result<Vec<Partition>>;

    /// Drops a whole partition: every document of it at once (a collection or table
    /// drop, never document by document). Dropping a missing partition is not an error.
    async fn drop_partition(&self, partition: Partition) -> Result<()>;
}
