//! Bucket reads over ranges (the `BucketStore` contract): a read of `[start, end)` returns every document
//! whose period overlaps it, by start, however far apart their partitions are — far
//! before and after the epoch, more partitions than a read addresses by name — and
//! nothing for an empty range, a range beyond the data, or a series or family never
//! written.

use crate::buckets::{raw, read, rollup, set, write, D, H};
use crate::StoreFactory;
use tickertape_backend::partitions::MAX_NAMED_PARTITIONS;
use tickertape_backend::BucketRange;
use tickertape_backend::BucketRead;
use tickertape_core::rollup::Resolution;
use tickertape_core::SeriesId;

/// Documents one hour long at these starts: far before the epoch, around it, one a day
/// for 40 days (more partitions than a read names), far after it.
fn document_starts() -> Vec<i64> {
    let mut starts = vec![-1_000 * D, -2 * D + H, -H, 0];
    starts.extend((1..=40).map(|day| day * D + H));
    starts.push(400 * D);
    starts
}

/// Every read sees the documents overlapping its range, and only those.
pub async fn bucket_reads_select_documents_overlapping_the_range(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let s = SeriesId(1);
    let starts = document_starts();
    let writes = starts.iter().map(|&t| set(s, t, 1, t as f64)).collect();
    write(&*b, writes).await;
    let wide = (0, 41 * D);
    assert!(
        i128::from(wide.1 - wide.0) / i128::from(D) > MAX_NAMED_PARTITIONS,
        "a range over more partitions than a read names"
    );
    let ranges = [
        (i64::MIN, i64::MAX),
        wide,
        // A document overlapping the start is in; one starting at the end is not.
        (-1, 400 * D),
        (D + H + 1, 3 * D + H + 1),
        (-1_001 * D, -999 * D),
        (i64::MIN, -1_000 * D),
        (400 * D + H, i64::MAX),
        (400 * D + H - 1, 400 * D + H),
        (5, 5),
        (10, 5),
        (i64::MAX - 1, i64::MAX),
    ];
    for (start, end) in ranges {
        let want: Vec<i64> = starts
            .iter()
            .copied()
            .filter(|&t| start < end && t < end && t + H > start)
            .collect();
        for part in [BucketRead::Full, BucketRead::TotalsOnly] {
            let got: Vec<i64> = b
                .read_buckets(
                    BucketRange {
                        family: raw(),
                        series: s,
                        start,
                        end,
                    },
                    part,
                )
                .await
                .expect("read_buckets")
                .iter()
                .map(|d| d.bucket_start)
                .collect();
            assert_eq!(got, want, "[{start}, {end}) {part:?}");
        }
    }
    let far = read(&*b, raw(), s, -1_000 * D, -1_000 * D + 1).await;
    assert_eq!(far[0].slots.len(), 1, "the far document keeps its slot");
    assert!(read(&*b, raw(), SeriesId(2), i64::MIN, i64::MAX)
        .await
        .is_empty());
    assert!(read(&*b, rollup(Resolution::MINUTE), s, i64::MIN, i64::MAX)
        .await
        .is_empty());
}
