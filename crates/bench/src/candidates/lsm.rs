//! The same blocks as values of a compressing LSM tree (fjall, lz4 on every level).
//!
//! Key: series id u64 BE · first time of the block i64 BE (for a day block, the day's
//! start), so one series' blocks sort together in time order. The timed write is the
//! encoding and the inserts with fjall's journal left to the OS (`manual_journal_persist`,
//! nothing fsynced while the clock runs); then, untimed, the memtable is flushed, a major
//! compaction rewrites everything into the last level, the journal is synced and the
//! database closed. Measured: the tables' bytes, and the directory as `du` counts it.

use super::codecs::Codec;
use crate::disk;
use anyhow::{ensure, Context, Result};
use fjall::config::CompressionPolicy;
use fjall::{CompressionType, Database, KeyspaceCreateOptions, PersistMode};
use std::path::Path;
use std::time::{Duration, Instant};
use tickertape_core::Point;

/// How a block becomes the stored value.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// Encoded with a codec of `codecs.rs`.
    Encoded(Codec),
    /// Plain arrays (times i64 LE, then values f64 LE): what lz4 alone makes of the data.
    Plain,
}

impl Value {
    fn encode(self, points: &[Point]) -> Result<Vec<u8>> {
        match self {
            Value::Encoded(codec) => codec.encode(points),
            Value::Plain => {
                let mut out = Vec::with_capacity(points.len() * 16);
                out.extend(points.iter().flat_map(|p| p.time.to_le_bytes()));
                out.extend(points.iter().flat_map(|p| p.value.to_bits().to_le_bytes()));
                Ok(out)
            }
        }
    }

    fn decode(self, bytes: &[u8]) -> Result<Vec<Point>> {
        match self {
            Value::Encoded(codec) => codec.decode(bytes),
            Value::Plain => {
                ensure!(
                    bytes.len().is_multiple_of(16),
                    "plain value of {} bytes",
                    bytes.len()
                );
                let (times, values) = bytes.split_at(bytes.len() / 2);
                Ok(times
                    .chunks_exact(8)
                    .zip(values.chunks_exact(8))
                    .map(|(t, v)| {
                        let word = |b: &[u8]| {
                            let mut w = [0; 8];
                            w.copy_from_slice(b);
                            w
                        };
                        Point::new(i64::from_le_bytes(word(t)), f64::from_le_bytes(word(v)))
                    })
                    .collect())
            }
        }
    }
}

/// What one LSM run measured.
pub struct Measured {
    pub blocks: usize,
    /// Bytes of the tree's tables after the major compaction: the data at rest.
    pub tables_bytes: u64,
    /// Allocated bytes of the database directory after close, as `du` counts them: the
    /// tables plus the journal, which fjall keeps after the flush until later writes
    /// rotate it out (it holds every value once more, uncompressed by fjall).
    pub disk_bytes: u64,
    pub write: Duration,
    /// Flush of the memtable, major compaction and journal sync.
    pub settle: Duration,
    pub read: Duration,
    pub columns: Vec<Vec<Point>>,
}

/// Writes `columns` as blocks of at most `block_points` into a new database at `dir`,
/// settles it, reads every block back and measures the directory.
pub fn measure(
    dir: &Path,
    columns: &[Vec<Point>],
    block_points: usize,
    value: Value,
) -> Result<Measured> {
    let db = Database::builder(dir)
        .manual_journal_persist(true)
        .open()
        .context("cannot open fjall")?;
    let lz4 = || {
        KeyspaceCreateOptions::default()
            .data_block_compression_policy(CompressionPolicy::all(CompressionType::Lz4))
    };
    let blocks_tree = db.keyspace("blocks", lz4)?;

    let started = Instant::now();
    let mut blocks = 0;
    for (series, column) in columns.iter().enumerate() {
        for chunk in column.chunks(block_points.max(1)) {
            let first = chunk.first().map_or(0, |p| p.time);
            blocks_tree.insert(key(series as u64, first), value.encode(chunk)?)?;
            blocks += 1;
        }
    }
    let write = started.elapsed();

    let started = Instant::now();
    // Both are doc(hidden) in fjall 3 but are what its own tests use to reach a settled
    // tree; without them the data could still sit in the journal and L0, uncompressed.
    blocks_tree.rotate_memtable_and_wait()?;
    blocks_tree.major_compact()?;
    db.persist(PersistMode::SyncAll)?;
    let settle = started.elapsed();
    let tables_bytes = blocks_tree.disk_space();
    let started = Instant::now();
    let mut read: Vec<Vec<Point>> = Vec::with_capacity(columns.len());
    for item in blocks_tree.iter() {
        let (k, v) = item.into_inner()?;
        let series = usize::try_from(u64::from_be_bytes(field(&k)?))?;
        if read.len() <= series {
            read.resize_with(series + 1, Vec::new);
        }
        read[series].extend(value.decode(&v)?);
    }
    let read_time = started.elapsed();

    drop(blocks_tree);
    drop(db);
    Ok(Measured {
        blocks,
        tables_bytes,
        disk_bytes: disk::usage(dir)?.allocated,
        write,
        settle,
        read: read_time,
        columns: read,
    })
}

fn key(series: u64, first_time: i64) -> [u8; 16] {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&series.to_be_bytes());
    // Flipping the sign bit makes the BE bytes of an i64 sort in numeric order.
    k[8..].copy_from_slice(&((first_time as u64) ^ (1 << 63)).to_be_bytes());
    k
}

fn field(key: &[u8]) -> Result<[u8; 8]> {
    let mut out = [0; 8];
    out.copy_from_slice(key.get(..8).context("key shorter than a series id")?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_series_then_time() {
        let mut keys = [
            key(2, -5),
            key(1, 10),
            key(1, -10),
            key(2, i64::MIN),
            key(1, 0),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                key(1, -10),
                key(1, 0),
                key(1, 10),
                key(2, i64::MIN),
                key(2, -5)
            ]
        );
    }

    #[test]
    fn fjall_gives_back_the_columns() {
        let dir = tempfile::tempdir().unwrap();
        let columns: Vec<Vec<Point>> = (0..4)
            .map(|s| {
                (0..300)
                    .map(|i| Point::new(i * 10, (s * 1000 + i) as f64 * 0.01))
                    .collect()
            })
            .collect();
        for value in [Value::Plain, Value::Encoded(Codec::Own)] {
            let path = dir.path().join(format!("{value:?}"));
            let m = measure(&path, &columns, 160, value).unwrap();
            assert_eq!(m.blocks, 4 * 2);
            assert_eq!(m.columns, columns);
            assert!(m.tables_bytes > 0 && m.disk_bytes >= m.tables_bytes);
        }
    }
}
