//! A part file as the embedded engine would write it: every series' points cut into
//! blocks of at most `block_points`, each block encoded alone, all written back to back in
//! one sequential pass, then a small index and a footer.
//!
//! ```text
//! block* · index entry* · footer
//! index entry (40 bytes, LE): series u64 · min time i64 · max time i64 · offset u64 ·
//!                             len u32 · crc32 of the block u32
//! footer (16 bytes, LE):      index offset u64 · entries u32 · b"TTPF"
//! ```
//!
//! Only for measuring: the writer does not fsync (the time is the encoding and the copy
//! into the page cache), and the reader reads the whole file at once.

use super::codecs::Codec;
use anyhow::{ensure, Context, Result};
use std::io::{BufWriter, Write};
use std::path::Path;
use tickertape_core::Point;

const ENTRY_BYTES: usize = 40;
const FOOTER_BYTES: usize = 16;
const MAGIC: &[u8; 4] = b"TTPF";

struct Entry {
    series: u64,
    min: i64,
    max: i64,
    offset: u64,
    len: u32,
    crc: u32,
}

impl Entry {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.series.to_le_bytes());
        out.extend_from_slice(&self.min.to_le_bytes());
        out.extend_from_slice(&self.max.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    fn read(bytes: &[u8; ENTRY_BYTES]) -> Self {
        let u64_at = |i: usize| u64::from_le_bytes(field(bytes, i));
        let u32_at = |i: usize| u32::from_le_bytes(field(bytes, i));
        Self {
            series: u64_at(0),
            min: u64_at(8) as i64,
            max: u64_at(16) as i64,
            offset: u64_at(24),
            len: u32_at(32),
            crc: u32_at(36),
        }
    }
}

/// `N` bytes of `bytes` from `at`; the callers' offsets are constants inside the slice.
fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// What writing a part file produced.
pub struct Written {
    pub blocks: usize,
    pub bytes: u64,
}

/// Writes `columns` (series id = index; each column in time order) to a new file at `path`.
pub fn write(
    path: &Path,
    columns: &[Vec<Point>],
    block_points: usize,
    codec: Codec,
) -> Result<Written> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut index = Vec::new();
    let mut offset = 0u64;
    let mut blocks = 0;
    for (series, column) in columns.iter().enumerate() {
        for chunk in column.chunks(block_points.max(1)) {
            let block = codec.encode(chunk)?;
            out.write_all(&block)?;
            Entry {
                series: series as u64,
                min: chunk.iter().map(|p| p.time).min().unwrap_or(0),
                max: chunk.iter().map(|p| p.time).max().unwrap_or(0),
                offset,
                len: u32::try_from(block.len()).context("block over 4 GiB")?,
                crc: crc32fast::hash(&block),
            }
            .write(&mut index);
            offset += block.len() as u64;
            blocks += 1;
        }
    }
    index.extend_from_slice(&offset.to_le_bytes());
    index.extend_from_slice(&u32::try_from(blocks)?.to_le_bytes());
    index.extend_from_slice(MAGIC);
    out.write_all(&index)?;
    out.into_inner().map_err(|e| e.into_error())?;
    Ok(Written {
        blocks,
        bytes: offset + index.len() as u64,
    })
}

/// Reads the file back: checks every block's crc and decodes it; returns the columns.
pub fn read(path: &Path, codec: Codec) -> Result<Vec<Vec<Point>>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    ensure!(
        bytes.len() >= FOOTER_BYTES,
        "part file shorter than its footer"
    );
    let footer = &bytes[bytes.len() - FOOTER_BYTES..];
    ensure!(&footer[12..] == MAGIC, "not a part file");
    let index_at = usize::try_from(u64::from_le_bytes(field(footer, 0)))?;
    let entries = u32::from_le_bytes(field(footer, 8)) as usize;
    let index = bytes
        .get(index_at..bytes.len() - FOOTER_BYTES)
        .filter(|i| i.len() == entries * ENTRY_BYTES)
        .context("part file index does not match its footer")?;
    let mut columns: Vec<Vec<Point>> = Vec::new();
    for raw in index.chunks_exact(ENTRY_BYTES) {
        let entry = Entry::read(&field(raw, 0));
        let blocks = &bytes[..index_at];
        let block = usize::try_from(entry.offset)
            .ok()
            .and_then(|at| blocks.get(at..at.checked_add(entry.len as usize)?))
            .context("index entry points outside the blocks")?;
        ensure!(crc32fast::hash(block) == entry.crc, "block crc mismatch");
        let points = codec.decode(block)?;
        ensure!(
            points.first().map(|p| p.time) == Some(entry.min)
                && points.last().map(|p| p.time) == Some(entry.max),
            "block times disagree with the index"
        );
        let series = usize::try_from(entry.series)?;
        if columns.len() <= series {
            columns.resize_with(series + 1, Vec::new);
        }
        columns[series].extend(points);
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_file_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part");
        let columns: Vec<Vec<Point>> = (0..3)
            .map(|s| {
                (0..50)
                    .map(|i| Point::new(i * 10, (s * 100 + i) as f64 / 4.0))
                    .collect()
            })
            .collect();
        let written = write(&path, &columns, 16, Codec::Own).unwrap();
        assert_eq!(written.blocks, 3 * 4);
        assert_eq!(
            written.bytes,
            std::fs::metadata(&path).unwrap().len(),
            "reported size is the file's"
        );
        let back = read(&path, Codec::Own).unwrap();
        assert_eq!(back, columns);
    }

    #[test]
    fn a_flipped_byte_fails_the_crc() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part");
        let columns = vec![(0..40).map(|i| Point::new(i, i as f64)).collect::<Vec<_>>()];
        write(&path, &columns, 100, Codec::Own).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3] ^= 0x10;
        std::fs::write(&path, bytes).unwrap();
        let err = read(&path, Codec::Own).unwrap_err().to_string();
        assert!(err.contains("crc"), "{err}");
    }
}
