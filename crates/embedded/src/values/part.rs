//! Part files: immutable, one time partition of one measurement, one compressed column
//! block per series (all its points of the partition, thousands of them, with the
//! segment codec of `tickertape_core::codec`). Layout in `docs/format/embedded.md`:
//!
//! ```text
//! "TTPART01" · block · block · … · index · footer (64 bytes)
//! index entry (44 bytes): series u64 · count u32 · min i64 · max i64 · offset u64 · len u32 · crc32 u32
//! footer: index offset u64 · entries u32 · index crc32 u32 · measurement number u64
//!         · partition start i64 · partition end i64 · max lsn u64 · part id u64 · "TTPARTND"
//! ```
//!
//! All integers little endian. A part is written to `<id>.part.tmp`, fsynced, renamed to
//! `<id>.part` and the folder fsynced before the manifest names it, so a part the manifest
//! names is always whole. Blocks are read with positioned reads (`pread`); the index stays
//! in memory.

use crate::values::wal::sync_dir;
use crate::writer::storage;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::{Point, SeriesId};

/// The folder of part files inside the store directory.
pub const PARTS_DIR: &str = "parts";
const MAGIC: &[u8; 8] = b"TTPART01";
const END_MAGIC: &[u8; 8] = b"TTPARTND";
const ENTRY_LEN: usize = 44;
const FOOTER_LEN: usize = 64;

/// What a part holds, beside its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartMeta {
    pub id: u64,
    /// The measurement, by its number in `manifest::MEASUREMENTS`.
    pub measurement: u64,
    /// The time partition `[start, end)`; every point of the part lies in it.
    pub start: i64,
    pub end: i64,
    /// The newest write-ahead log frame whose points the part holds. Of two parts with a
    /// point at the same time, the one with the larger `max_lsn` holds the later write.
    pub max_lsn: u64,
}

/// Where one series' block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub series: SeriesId,
    pub count: u32,
    pub min: i64,
    pub max: i64,
    offset: u64,
    len: u32,
    crc: u32,
}

/// An open part file.
pub struct Part {
    pub meta: PartMeta,
    file: File,
    path: PathBuf,
    /// Sorted by series.
    index: Vec<Entry>,
}

pub fn part_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.part"))
}

impl Part {
    /// Writes a part holding `blocks` (series ascending, each with its points sorted by
    /// time, one per time, all inside the partition) and opens it. Durable when this
    /// returns: data and name fsynced. Blocks are taken one at a time, so a merge never
    /// holds more than one series' points.
    pub fn write(
        dir: &Path,
        meta: PartMeta,
        blocks: impl IntoIterator<Item = Result<(SeriesId, Vec<Point>)>>,
    ) -> Result<Part> {
        let path = part_path(dir, meta.id);
        let tmp = path.with_extension("part.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let file = File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC).map_err(io)?;
        let mut offset = MAGIC.len() as u64;
        let mut index = Vec::new();
        for block in blocks {
            let (series, points) = block?;
            let (Some(first), Some(last)) = (points.first(), points.last()) else {
                continue;
            };
            let block = codec::encode_block(&points);
            out.write_all(&block).map_err(io)?;
            index.push(Entry {
                series,
                count: points.len() as u32,
                min: first.time,
                max: last.time,
                offset,
                len: block.len() as u32,
                crc: crc32fast::hash(&block),
            });
            offset += block.len() as u64;
        }
        let encoded = encode_index(&index);
        out.write_all(&encoded).map_err(io)?;
        out.write_all(&encode_footer(&meta, offset, index.len(), &encoded))
            .map_err(io)?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        fs::rename(&tmp, &path)
            .map_err(|e| storage(format!("cannot rename {}: {e}", tmp.display())))?;
        sync_dir(dir)?;
        Part::open(&path)
    }

    /// Opens a part and reads its index. `Corrupt` names the file when it is not a whole
    /// part.
    pub fn open(path: &Path) -> Result<Part> {
        let file = File::open(path)
            .map_err(|e| storage(format!("cannot open {}: {e}", path.display())))?;
        let bytes = file
            .metadata()
            .map_err(|e| storage(format!("cannot stat {}: {e}", path.display())))?
            .len();
        let bad =
            |what: &str| BackendError::Corrupt(format!("part file {}: {what}", path.display()));
        if bytes < (MAGIC.len() + FOOTER_LEN) as u64 {
            return Err(bad("shorter than a part's header and footer"));
        }
        let mut footer = [0u8; FOOTER_LEN];
        read_exact_at(&file, path, &mut footer, bytes - FOOTER_LEN as u64)?;
        if &footer[56..64] != END_MAGIC {
            return Err(bad(
                "no part footer (not a tickertape part file, or cut short)",
            ));
        }
        let word = |i: usize| u64::from_le_bytes(footer[i..i + 8].try_into().unwrap_or_default());
        let half = |i: usize| u32::from_le_bytes(footer[i..i + 4].try_into().unwrap_or_default());
        let index_offset = word(0);
        let entries = half(8) as usize;
        let index_crc = half(12);
        let meta = PartMeta {
            measurement: word(16),
            start: word(24) as i64,
            end: word(32) as i64,
            max_lsn: word(40),
            id: word(48),
        };
        let index_len = entries.saturating_mul(ENTRY_LEN) as u64;
        if index_offset.checked_add(index_len) != Some(bytes - FOOTER_LEN as u64) {
            return Err(bad("the index does not end where the footer starts"));
        }
        let mut raw = vec![0u8; index_len as usize];
        read_exact_at(&file, path, &mut raw, index_offset)?;
        if crc32fast::hash(&raw) != index_crc {
            return Err(bad("index checksum mismatch"));
        }
        let index = decode_index(&raw, index_offset).ok_or_else(|| bad("malformed index"))?;
        Ok(Part {
            meta,
            file,
            path: path.to_path_buf(),
            index,
        })
    }

    /// The block entry of `series`, if the part holds any of its points.
    pub fn entry(&self, series: SeriesId) -> Option<&Entry> {
        let at = self
            .index
            .binary_search_by_key(&series, |e| e.series)
            .ok()?;
        self.index.get(at)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.index
    }

    /// The points of `series` in this part, sorted by time (empty when it has none).
    pub fn read(&self, series: SeriesId) -> Result<Vec<Point>> {
        let Some(entry) = self.entry(series) else {
            return Ok(Vec::new());
        };
        let mut block = vec![0u8; entry.len as usize];
        read_exact_at(&self.file, &self.path, &mut block, entry.offset)?;
        let bad = |what: String| {
            BackendError::Corrupt(format!(
                "part file {}, block of series {series}: {what}",
                self.path.display()
            ))
        };
        if crc32fast::hash(&block) != entry.crc {
            return Err(bad("checksum mismatch".into()));
        }
        codec::decode_block(&block).map_err(|e| bad(e.to_string()))
    }

    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    file.read_exact_at(buf, offset)
        .map_err(|e| storage(format!("cannot read {}: {e}", path.display())))
}

fn encode_index(index: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(index.len() * ENTRY_LEN);
    for e in index {
        out.extend_from_slice(&e.series.0.to_le_bytes());
        out.extend_from_slice(&e.count.to_le_bytes());
        out.extend_from_slice(&e.min.to_le_bytes());
        out.extend_from_slice(&e.max.to_le_bytes());
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
        out.extend_from_slice(&e.crc.to_le_bytes());
    }
    out
}

/// Entries must be sorted by series and their blocks lie between the magic and the index.
fn decode_index(raw: &[u8], index_offset: u64) -> Option<Vec<Entry>> {
    let mut index: Vec<Entry> = Vec::with_capacity(raw.len() / ENTRY_LEN);
    for chunk in raw.chunks_exact(ENTRY_LEN) {
        let w = |i: usize| u64::from_le_bytes(chunk[i..i + 8].try_into().unwrap_or_default());
        let h = |i: usize| u32::from_le_bytes(chunk[i..i + 4].try_into().unwrap_or_default());
        let e = Entry {
            series: SeriesId(w(0)),
            count: h(8),
            min: w(12) as i64,
            max: w(20) as i64,
            offset: w(28),
            len: h(36),
            crc: h(40),
        };
        let inside = e.offset >= MAGIC.len() as u64
            && e.offset.checked_add(u64::from(e.len))? <= index_offset;
        let sorted = index.last().is_none_or(|p| p.series < e.series);
        if !inside || !sorted || e.min > e.max {
            return None;
        }
        index.push(e);
    }
    Some(index)
}

fn encode_footer(meta: &PartMeta, index_offset: u64, entries: usize, index: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FOOTER_LEN);
    out.extend_from_slice(&index_offset.to_le_bytes());
    out.extend_from_slice(&(entries as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(index).to_le_bytes());
    out.extend_from_slice(&meta.measurement.to_le_bytes());
    out.extend_from_slice(&meta.start.to_le_bytes());
    out.extend_from_slice(&meta.end.to_le_bytes());
    out.extend_from_slice(&meta.max_lsn.to_le_bytes());
    out.extend_from_slice(&meta.id.to_le_bytes());
    out.extend_from_slice(END_MAGIC);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> PartMeta {
        PartMeta {
            id: 7,
            measurement: 3,
            start: 0,
            end: 1_000,
            max_lsn: 42,
        }
    }

    #[test]
    fn blocks_come_back_and_the_footer_names_the_part() {
        let dir = tempfile::tempdir().unwrap();
        let a: Vec<Point> = (0..5000)
            .map(|t| Point::new(t / 5, t as f64 * 0.1))
            .collect();
        let a: Vec<Point> = a.chunk_by(|x, y| x.time == y.time).map(|c| c[0]).collect();
        let b = vec![Point::new(999, f64::NAN)];
        let blocks = vec![(SeriesId(2), a.clone()), (SeriesId(9), b)];
        let _written = Part::write(dir.path(), meta(), blocks.into_iter().map(Ok)).unwrap();
        let reopened = Part::open(&part_path(dir.path(), 7)).unwrap();
        assert_eq!(reopened.meta, meta());
        assert_eq!(reopened.read(SeriesId(2)).unwrap(), a);
        assert!(reopened.read(SeriesId(9)).unwrap()[0].value.is_nan());
        assert!(reopened.read(SeriesId(3)).unwrap().is_empty());
        assert_eq!(
            reopened.entry(SeriesId(9)).map(|e| (e.min, e.max)),
            Some((999, 999))
        );
        assert!(!dir.path().join("00000000000000000007.part.tmp").exists());
    }

    #[test]
    fn a_damaged_part_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocks = vec![(SeriesId(1), vec![Point::new(1, 1.0), Point::new(2, 2.0)])];
        let part = Part::write(dir.path(), meta(), blocks.into_iter().map(Ok)).unwrap();
        let path = part.path().to_path_buf();
        let full = fs::read(&path).unwrap();
        // Cut short: no footer.
        fs::write(&path, &full[..full.len() - 1]).unwrap();
        let err = Part::open(&path).err().unwrap().to_string();
        assert!(err.contains("00000000000000000007.part"), "{err}");
        // A flipped block byte: the part opens, the block read says where.
        let mut flipped = full.clone();
        flipped[MAGIC.len() + 1] ^= 0x40;
        fs::write(&path, &flipped).unwrap();
        let err = Part::open(&path).unwrap().read(SeriesId(1)).err().unwrap();
        assert!(err.to_string().contains("checksum"), "{err}");
    }
}
