//! Decoded raw blocks of part files, kept for the next read: dashboards ask for the same
//! recent hours every few seconds, and decoding a day block (8,640 points) is most of a
//! short query's time on the server.
//!
//! Keyed by (part id, series). Part files never change and part ids are never reused,
//! so an entry is never stale; entries of parts merged away or dropped are simply never
//! asked for again and age out. Bounded by bytes ([`quick_cache`]'s weighted eviction).

use quick_cache::sync::Cache;
use quick_cache::Weighter;
use std::sync::Arc;
use tickertape_core::{Point, SeriesId};

/// What the cache holds by default: ~470 day blocks of 10 s points.
pub const DEFAULT_BLOCK_CACHE_BYTES: u64 = 64 << 20;

/// Entries smaller than this are not worth a cache slot's bookkeeping either way.
const ENTRY_OVERHEAD_BYTES: u64 = 64;

/// (part id, series) → the series' decoded raw block in that part.
type Blocks = Cache<(u64, SeriesId), Arc<Vec<Point>>, ByBytes>;

pub struct BlockCache {
    blocks: Option<Blocks>,
}

#[derive(Clone)]
struct ByBytes;

impl Weighter<(u64, SeriesId), Arc<Vec<Point>>> for ByBytes {
    fn weight(&self, _key: &(u64, SeriesId), points: &Arc<Vec<Point>>) -> u64 {
        ENTRY_OVERHEAD_BYTES + (points.len() * std::mem::size_of::<Point>()) as u64
    }
}

impl BlockCache {
    /// A cache of at most `bytes` of decoded points; 0 turns it off.
    pub fn new(bytes: u64) -> Self {
        let blocks = (bytes > 0).then(|| {
            // quick_cache sizes its tables from an estimate of the number of entries.
            let estimated_items = (bytes / (64 << 10)).max(16) as usize;
            Cache::with_weighter(estimated_items, bytes, ByBytes)
        });
        Self { blocks }
    }

    /// The block of `series` in part `part`, decoded by `decode` on a miss.
    pub fn get_or_decode<E>(
        &self,
        part: u64,
        series: SeriesId,
        decode: impl FnOnce() -> Result<Vec<Point>, E>,
    ) -> Result<Arc<Vec<Point>>, E> {
        match &self.blocks {
            Some(cache) => cache.get_or_insert_with(&(part, series), || decode().map(Arc::new)),
            None => decode().map(Arc::new),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_does_not_decode_and_the_budget_evicts() {
        let cache = BlockCache::new(4 << 10);
        let block = |n: usize| move || Ok::<_, ()>(vec![Point::new(0, 1.0); n]);
        let first = cache.get_or_decode(1, SeriesId(1), block(100)).unwrap();
        let again = cache
            .get_or_decode(1, SeriesId(1), || Err::<Vec<Point>, ()>(()))
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // 100 blocks of 1.6 KB cannot all stay within 4 KB.
        for s in 2..100 {
            cache.get_or_decode(1, SeriesId(s), block(100)).unwrap();
        }
        let misses = (1..100)
            .filter(|&s| {
                cache
                    .get_or_decode(1, SeriesId(s), || Err::<Vec<Point>, ()>(()))
                    .is_err()
            })
            .count();
        assert!(misses >= 95, "{misses} misses");
        let off = BlockCache::new(0);
        off.get_or_decode(1, SeriesId(1), block(1)).unwrap();
        assert!(off
            .get_or_decode(1, SeriesId(1), || Err::<Vec<Point>, ()>(()))
            .is_err());
    }
}
