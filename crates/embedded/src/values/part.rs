//! Part files: immutable, one time partition of one measurement, one compressed column
//! block per series (all its points of the partition, thousands of them, with the
//! segment codec of `tickertape_core::codec`), and beside it one rollup block per rollup
//! resolution the measurement keeps (`summary.rs`), computed from exactly those points.
//! Layout in `docs/format/embedded.md`:
//!
//! ```text
//! "TTPART03" · block · block · … · index · footer (64 bytes)
//! index entry (52 bytes): series u64 · kind u64 · count u32 · min i64 · max i64 · offset u64 · len u32 · crc32 u32
//! footer: index offset u64 · entries u32 · index crc32 u32 · measurement number u64
//!         · partition start i64 · partition end i64 · max lsn u64 · part id u64 · "TTPARTND"
//! ```
//!
//! `kind` is 0 for a series' raw block and the resolution in ns for a rollup block; the
//! index is sorted by (series, kind). All integers little endian. A part is written to
//! `<id>.part.tmp`, fsynced, renamed to `<id>.part` and the folder fsynced before the
//! manifest names it, so a part the manifest names is always whole. Blocks are read with
//! positioned reads (`pread`); the index stays in the file, with one key in 32 in memory
//! (`part_index.rs`). Parts of version 2
//! (`TTPART02`) differ only in the layout of their rollup blocks ([`summary::Layout`]):
//! they are read, and a rewrite keeps their version with their blocks.

use super::part_index::{PartIndex, ENTRY_LEN, RAW};
use super::summary;
use crate::values::wal::sync_dir;
use crate::writer::storage;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId};

/// The folder of part files inside the store directory.
pub const PARTS_DIR: &str = "parts";
/// The magic of the parts this version writes.
const MAGIC: &[u8; 8] = b"TTPART03";
/// Parts written before rollup blocks were laid out in columns, still read.
const MAGIC_V2: &[u8; 8] = b"TTPART02";
const END_MAGIC: &[u8; 8] = b"TTPARTND";
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

pub use super::part_index::Entry;

/// An open part file.
pub struct Part {
    pub meta: PartMeta,
    file: File,
    path: PathBuf,
    index: PartIndex,
    /// How its rollup blocks are laid out, from its magic.
    rollup_layout: summary::Layout,
}

fn magic_of(layout: summary::Layout) -> &'static [u8; 8] {
    match layout {
        summary::Layout::Columns => MAGIC,
        summary::Layout::Blocks => MAGIC_V2,
    }
}

pub fn part_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.part"))
}

impl Part {
    /// Writes a part holding `blocks` (series ascending, each with its points sorted by
    /// time, one per time, all inside the partition) and, for each series, its rollup
    /// slots at each of `rollups` (resolutions that divide the partition), and opens it.
    /// Durable when this returns: data and name fsynced. Blocks are taken one at a time,
    /// so a merge never holds more than one series' points.
    pub fn write(
        dir: &Path,
        meta: PartMeta,
        rollups: &[Resolution],
        blocks: impl IntoIterator<Item = Result<(SeriesId, Vec<Point>)>>,
    ) -> Result<Part> {
        let tmp = part_path(dir, meta.id).with_extension("part.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let file = File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC).map_err(io)?;
        let mut offset = MAGIC.len() as u64;
        let mut index = Vec::new();
        let mut put = |series, kind, count: usize, span: (i64, i64), block: Vec<u8>| {
            out.write_all(&block).map_err(io)?;
            index.push(Entry {
                series,
                kind,
                count: count as u32,
                min: span.0,
                max: span.1,
                offset,
                len: block.len() as u32,
                crc: crc32fast::hash(&block),
            });
            offset += block.len() as u64;
            Ok::<(), BackendError>(())
        };
        for block in blocks {
            let (series, points) = block?;
            let (Some(first), Some(last)) = (points.first(), points.last()) else {
                continue;
            };
            let span = (first.time, last.time);
            put(
                series,
                RAW,
                points.len(),
                span,
                codec::encode_block(&points),
            )?;
            for r in rollups {
                let slots = summarize_slots(&points, meta.start, meta.end, *r);
                let kind = r.nanos() as u64;
                put(series, kind, slots.len(), span, summary::encode(&slots))?;
            }
        }
        finish(dir, &meta, out, offset, &index)
    }

    /// Writes a part with id `id` holding the blocks of this one that `keep` keeps (by
    /// kind: `None` for raw, the resolution for a rollup block), copied as they are, and
    /// opens it; `None` when it would hold no block. Durable when this returns.
    pub fn rewrite(
        &self,
        dir: &Path,
        id: u64,
        keep: impl Fn(Option<Resolution>) -> bool,
    ) -> Result<Option<Part>> {
        let mut kept = self.entries()?;
        kept.retain(|e| keep(e.resolution()));
        if kept.is_empty() {
            return Ok(None);
        }
        let meta = PartMeta { id, ..self.meta };
        let tmp = part_path(dir, id).with_extension("part.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        // The blocks are copied as they are, so the copy keeps this part's version.
        out.write_all(magic_of(self.rollup_layout)).map_err(io)?;
        let mut offset = MAGIC.len() as u64;
        let mut index = Vec::with_capacity(kept.len());
        for entry in kept {
            let block = self.block(&entry)?;
            out.write_all(&block).map_err(io)?;
            index.push(Entry { offset, ..entry });
            offset += block.len() as u64;
        }
        finish(dir, &meta, out, offset, &index).map(Some)
    }

    /// Opens a part and checks its index. `Corrupt` names the file when it is not a whole
    /// part.
    pub fn open(path: &Path) -> Result<Part> {
        Self::open_listing(path, |_| {})
    }

    /// [`open`](Self::open), calling `each_series` once per series the part holds a block
    /// of, ascending, as the index is checked (a store's open lists them without reading
    /// the index twice).
    pub fn open_listing(path: &Path, each_series: impl FnMut(SeriesId)) -> Result<Part> {
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
        let mut magic = [0u8; MAGIC.len()];
        read_exact_at(&file, path, &mut magic, 0)?;
        let rollup_layout = match &magic {
            MAGIC => summary::Layout::Columns,
            MAGIC_V2 => summary::Layout::Blocks,
            _ => {
                return Err(bad(&format!(
                    "starts with {:?}, not {:?} or {:?} (not a part file this version reads)",
                    String::from_utf8_lossy(&magic),
                    String::from_utf8_lossy(MAGIC),
                    String::from_utf8_lossy(MAGIC_V2)
                )))
            }
        };
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
        let index = PartIndex::load(
            &file,
            path,
            (index_offset, entries, index_crc),
            bad,
            each_series,
        )?;
        Ok(Part {
            meta,
            file,
            path: path.to_path_buf(),
            index,
            rollup_layout,
        })
    }

    /// The raw block entry of `series`, if the part holds any of its points.
    pub fn entry(&self, series: SeriesId) -> Result<Option<Entry>> {
        self.find(series, RAW)
    }

    /// Whether the part may hold a raw block of `series` for which `test` holds: for
    /// filters that cannot return an error, an index that cannot be read counts as yes,
    /// so that the read that follows reports the error.
    pub fn may_hold(&self, series: SeriesId, test: impl Fn(&Entry) -> bool) -> bool {
        self.entry(series)
            .map_or(true, |entry| entry.is_some_and(|e| test(&e)))
    }

    fn find(&self, series: SeriesId, kind: u64) -> Result<Option<Entry>> {
        self.index.find(&self.file, &self.path, series, kind)
    }

    /// Every entry, by (series, kind): read from the file.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.index
            .walk(&self.file, &self.path, |e| entries.push(e))?;
        Ok(entries)
    }

    /// The raw block entries, by series: read from the file.
    pub fn raw_entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.index.walk(&self.file, &self.path, |e| {
            entries.extend(Some(e).filter(Entry::is_raw))
        })?;
        Ok(entries)
    }

    /// The number of raw blocks (series with points in the part).
    pub fn raw_blocks(&self) -> usize {
        self.index.raw_blocks()
    }

    /// Every series the part holds a block of, raw or rollup, ascending: read from the file.
    pub fn series(&self) -> Result<Vec<SeriesId>> {
        let mut series: Vec<SeriesId> = Vec::new();
        self.index.walk(&self.file, &self.path, |e| {
            if series.last() != Some(&e.series) {
                series.push(e.series);
            }
        })?;
        Ok(series)
    }

    /// Whether the part holds a block of this kind (`None`: raw).
    pub fn holds(&self, kind: Option<Resolution>) -> bool {
        self.index.holds(kind.map_or(RAW, |r| r.nanos() as u64))
    }

    /// Whether the part may hold rollup slots of `series` at `resolution` (an index that
    /// cannot be read counts as yes, as in [`may_hold`](Self::may_hold)).
    pub fn has_rollup(&self, series: SeriesId, resolution: Resolution) -> bool {
        self.find(series, resolution.nanos() as u64)
            .map_or(true, |entry| entry.is_some())
    }

    /// The points of `series` in this part, sorted by time (empty when it has none).
    pub fn read(&self, series: SeriesId) -> Result<Vec<Point>> {
        match self.entry(series)? {
            Some(entry) => self.read_entry(&entry),
            None => Ok(Vec::new()),
        }
    }

    /// The points of a raw block entry of this part.
    pub fn read_entry(&self, entry: &Entry) -> Result<Vec<Point>> {
        let block = self.block(entry)?;
        codec::decode_block(&block).map_err(|e| self.bad(entry, e.to_string()))
    }

    /// The rollup slots of `series` at `resolution`, by time; `None` when the part holds
    /// none (the measurement did not keep that rollup when the part was written).
    pub fn read_rollup(
        &self,
        series: SeriesId,
        resolution: Resolution,
    ) -> Result<Option<Vec<(i64, Summary)>>> {
        let Some(entry) = self.find(series, resolution.nanos() as u64)? else {
            return Ok(None);
        };
        let block = self.block(&entry)?;
        summary::decode(&block, self.rollup_layout)
            .map(Some)
            .map_err(|e| self.bad(&entry, e.to_string()))
    }

    /// A block's bytes, checked against its checksum.
    fn block(&self, entry: &Entry) -> Result<Vec<u8>> {
        let mut block = vec![0u8; entry.len as usize];
        read_exact_at(&self.file, &self.path, &mut block, entry.offset)?;
        if crc32fast::hash(&block) != entry.crc {
            return Err(self.bad(entry, "checksum mismatch".into()));
        }
        Ok(block)
    }

    fn bad(&self, entry: &Entry, what: String) -> BackendError {
        let block = match entry.kind {
            RAW => "block".to_string(),
            ns => format!("rollup block ({ns} ns)"),
        };
        BackendError::Corrupt(format!(
            "part file {}, {block} of series {}: {what}",
            self.path.display(),
            entry.series
        ))
    }

    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes the index and footer after the blocks, makes the part durable under its name
/// and opens it.
fn finish(
    dir: &Path,
    meta: &PartMeta,
    mut out: BufWriter<File>,
    index_offset: u64,
    index: &[Entry],
) -> Result<Part> {
    let path = part_path(dir, meta.id);
    let tmp = path.with_extension("part.tmp");
    let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
    let encoded = encode_index(index);
    out.write_all(&encoded).map_err(io)?;
    out.write_all(&encode_footer(meta, index_offset, index.len(), &encoded))
        .map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    fs::rename(&tmp, &path)
        .map_err(|e| storage(format!("cannot rename {}: {e}", tmp.display())))?;
    sync_dir(dir)?;
    Part::open(&path)
}

fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    file.read_exact_at(buf, offset)
        .map_err(|e| storage(format!("cannot read {}: {e}", path.display())))
}

fn encode_index(index: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(index.len() * ENTRY_LEN);
    for e in index {
        e.encode(&mut out);
    }
    out
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
        let _written = Part::write(dir.path(), meta(), &[], blocks.into_iter().map(Ok)).unwrap();
        let reopened = Part::open(&part_path(dir.path(), 7)).unwrap();
        assert_eq!(reopened.meta, meta());
        assert_eq!(reopened.read(SeriesId(2)).unwrap(), a);
        assert!(reopened.read(SeriesId(9)).unwrap()[0].value.is_nan());
        assert!(reopened.read(SeriesId(3)).unwrap().is_empty());
        assert_eq!(
            reopened.entry(SeriesId(9)).unwrap().map(|e| (e.min, e.max)),
            Some((999, 999))
        );
        assert!(!dir.path().join("00000000000000000007.part.tmp").exists());
    }

    #[test]
    fn rollup_blocks_sit_beside_raw_blocks_and_outlive_them_in_a_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let points: Vec<Point> = (0..100)
            .map(|t| Point::new(t * 9, t as f64 * 0.3))
            .collect();
        let rollups = [Resolution::new(100).unwrap(), Resolution::new(250).unwrap()];
        let blocks = vec![(SeriesId(4), points.clone())];
        let part = Part::write(dir.path(), meta(), &rollups, blocks.into_iter().map(Ok)).unwrap();
        let bits = |v: Vec<(i64, Summary)>| -> Vec<(i64, [u64; 8])> {
            v.into_iter().map(|(t, s)| (t, s.to_bits())).collect()
        };
        for r in rollups {
            let want = summarize_slots(&points, 0, 1_000, r);
            let got = part.read_rollup(SeriesId(4), r).unwrap().unwrap();
            assert_eq!(bits(got), bits(want), "{r}");
        }
        assert!(part
            .read_rollup(SeriesId(4), Resolution::new(50).unwrap())
            .unwrap()
            .is_none());
        // Without its raw block, the part keeps the rollups, copied as they were.
        let stripped = part
            .rewrite(dir.path(), 8, |kind| kind.is_some())
            .unwrap()
            .unwrap();
        assert!(stripped.read(SeriesId(4)).unwrap().is_empty());
        assert!(!stripped.holds(None));
        assert_eq!(stripped.series().unwrap(), vec![SeriesId(4)]);
        let reopened = Part::open(&part_path(dir.path(), 8)).unwrap();
        assert_eq!(
            bits(
                reopened
                    .read_rollup(SeriesId(4), rollups[1])
                    .unwrap()
                    .unwrap()
            ),
            bits(summarize_slots(&points, 0, 1_000, rollups[1]))
        );
        // Nothing kept: no part.
        assert!(part.rewrite(dir.path(), 9, |_| false).unwrap().is_none());
    }

    #[test]
    fn a_damaged_part_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocks = vec![(SeriesId(1), vec![Point::new(1, 1.0), Point::new(2, 2.0)])];
        let part = Part::write(dir.path(), meta(), &[], blocks.into_iter().map(Ok)).unwrap();
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
