//! Part files: immutable, one time partition of every measurement written in it, one
//! compressed column block per series (all its points of the partition, thousands of
//! them, with the segment codec of `tickertape_core::codec`), and beside it one rollup
//! block per rollup resolution the series' measurement keeps (`summary.rs`), computed
//! from exactly those points. Layout in `docs/format/embedded.md`:
//!
//! ```text
//! "TTPART04" · block · block · … · index · footer (64 bytes)
//! index entry (60 bytes): series u64 · kind u64 · measurement u64 · count u32 · min i64
//!                         · max i64 · offset u64 · len u32 · crc32 u32
//! footer: index offset u64 · entries u32 · index crc32 u32 · u64::MAX (any measurement)
//!         · partition start i64 · partition end i64 · max lsn u64 · part id u64 · "TTPARTND"
//! ```
//!
//! `kind` is 0 for a series' raw block and the resolution in ns for a rollup block; the
//! index is sorted by (series, kind). All integers little endian. A part is written to
//! `<id>.part.tmp`, fsynced, renamed to `<id>.part` and the folder fsynced before the
//! manifest names it, so a part the manifest names is always whole. Blocks are read with
//! positioned reads (`pread`) through the store's bounded cache of open files
//! (`files.rs`); the index stays in the file, with one key in 32 in memory
//! (`part_index.rs`). Parts of versions 2 and 3 (`TTPART02`, `TTPART03`) hold one
//! measurement, named in the footer, and entries without it; version 2 lays out its rollup
//! blocks differently ([`summary::Layout`]). They are read as they are, and a rewrite keeps
//! their version with their blocks; a merge writes version 4.

use super::files::OpenFiles;
use super::pack::Pack;
pub use super::part_index::Version;
use super::part_index::{PartIndex, RAW};
use super::summary;
use crate::values::wal::sync_dir;
use crate::writer::storage;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tickertape_backend::{BackendError, Result};
use tickertape_core::codec;
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId};

/// The folder of part files inside the store directory.
pub const PARTS_DIR: &str = "parts";
/// The magic of the parts this version writes.
const MAGIC: &[u8; 8] = b"TTPART04";
/// Parts of one measurement, rollup blocks in columns, still read.
const MAGIC_V3: &[u8; 8] = b"TTPART03";
/// Parts written before rollup blocks were laid out in columns, still read.
const MAGIC_V2: &[u8; 8] = b"TTPART02";
const END_MAGIC: &[u8; 8] = b"TTPARTND";
const FOOTER_LEN: usize = 64;
/// The footer's measurement in a part of version 4: its entries name theirs.
const ANY_MEASUREMENT: u64 = u64::MAX;

/// What a part holds, beside its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartMeta {
    pub id: u64,
    /// The time partition `[start, end)`; every point of the part lies in it.
    pub start: i64,
    pub end: i64,
    /// The newest write-ahead log frame whose points the part holds. Of two parts with a
    /// point at the same time, the one with the larger `max_lsn` holds the later write.
    pub max_lsn: u64,
}

pub use super::part_index::Entry;

/// What a new part holds of one series.
pub struct SeriesBlocks {
    pub series: SeriesId,
    /// Its measurement, by number (`manifest::MEASUREMENTS`).
    pub measurement: u64,
    /// Its points in the partition, sorted by time, one per time; may be empty.
    pub points: Vec<Point>,
    /// The rollups its measurement keeps (resolutions that divide the partition): a block
    /// of each is computed from `points`.
    pub rollups: Arc<[Resolution]>,
    /// Rollup blocks kept as they were, without raw points (retention dropped those):
    /// the entry they had and their slots. Only when `points` is empty.
    pub kept: Vec<(Entry, Vec<(i64, Summary)>)>,
}

/// An open part: a file of its own, or a range of a pack file (`pack.rs`).
pub struct Part {
    pub meta: PartMeta,
    /// The file holding the part.
    path: PathBuf,
    /// Where the part starts in that file and how many bytes it has: every offset inside
    /// the part (blocks, index) is relative to `base`.
    base: u64,
    len: u64,
    /// The pack holding the part, kept alive while the part is; `None` for a part with a
    /// file of its own.
    pack: Option<Arc<Pack>>,
    /// The store's open files: this part's is opened there when a read needs it.
    files: Arc<OpenFiles>,
    index: PartIndex,
    /// Set once the manifest no longer names the part: its file is deleted when the last
    /// reader lets go of it.
    retired: AtomicBool,
}

fn magic_of(version: Version) -> &'static [u8; 8] {
    match version {
        Version::V4 => MAGIC,
        Version::V3 => MAGIC_V3,
        Version::V2 => MAGIC_V2,
    }
}

fn layout_of(version: Version) -> summary::Layout {
    match version {
        Version::V2 => summary::Layout::Blocks,
        Version::V3 | Version::V4 => summary::Layout::Columns,
    }
}

pub fn part_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.part"))
}

impl Part {
    /// Writes a part holding `blocks` (series ascending, each with its points sorted by
    /// time, one per time, all inside the partition, and its rollups) and opens it.
    /// Durable when this returns: data and name fsynced. Blocks are taken one at a time,
    /// so a merge never holds more than one series' points.
    pub fn write(
        dir: &Path,
        files: &Arc<OpenFiles>,
        meta: PartMeta,
        blocks: impl IntoIterator<Item = Result<SeriesBlocks>>,
    ) -> Result<Part> {
        Self::write_version(dir, files, meta, (Version::V4, ANY_MEASUREMENT), blocks)
    }

    /// A part of version 3 of `measurement` (what stores wrote before parts held several
    /// measurements), for the tests that older parts are still read.
    #[cfg(test)]
    pub fn write_v3(
        dir: &Path,
        files: &Arc<OpenFiles>,
        meta: PartMeta,
        measurement: u64,
        blocks: impl IntoIterator<Item = Result<SeriesBlocks>>,
    ) -> Result<Part> {
        Self::write_version(dir, files, meta, (Version::V3, measurement), blocks)
    }

    /// [`write`](Self::write) in version 4, or 3 (whose footer names `measurement`).
    fn write_version(
        dir: &Path,
        files: &Arc<OpenFiles>,
        meta: PartMeta,
        (version, measurement): (Version, u64),
        blocks: impl IntoIterator<Item = Result<SeriesBlocks>>,
    ) -> Result<Part> {
        let tmp = part_path(dir, meta.id).with_extension("part.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let file = File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(magic_of(version)).map_err(io)?;
        let mut offset = MAGIC.len() as u64;
        let mut index = Vec::new();
        let mut put = |template: Entry, block: Vec<u8>| {
            out.write_all(&block).map_err(io)?;
            index.push(Entry {
                offset,
                len: block.len() as u32,
                crc: crc32fast::hash(&block),
                ..template
            });
            offset += block.len() as u64;
            Ok::<(), BackendError>(())
        };
        for block in blocks {
            let block = block?;
            let template = |kind, count: usize, (min, max)| Entry {
                series: block.series,
                kind,
                measurement: block.measurement,
                count: count as u32,
                min,
                max,
                offset: 0,
                len: 0,
                crc: 0,
            };
            let points = &block.points;
            let (Some(first), Some(last)) = (points.first(), points.last()) else {
                for (entry, slots) in &block.kept {
                    let span = (entry.min, entry.max);
                    put(
                        template(entry.kind, slots.len(), span),
                        summary::encode(slots),
                    )?;
                }
                continue;
            };
            let span = (first.time, last.time);
            put(
                template(RAW, points.len(), span),
                codec::encode_block(points),
            )?;
            for r in block.rollups.iter() {
                let slots = summarize_slots(points, meta.start, meta.end, *r);
                let kind = r.nanos() as u64;
                put(template(kind, slots.len(), span), summary::encode(&slots))?;
            }
        }
        finish(
            dir,
            files,
            (&meta, measurement, version),
            out,
            offset,
            &index,
        )
    }

    /// Writes a part with id `id` holding the blocks of this one that `keep` keeps,
    /// copied as they are, and opens it; `None` when it would hold no block. Durable when
    /// this returns.
    pub fn rewrite(
        &self,
        dir: &Path,
        id: u64,
        keep: impl Fn(&Entry) -> bool,
    ) -> Result<Option<Part>> {
        let mut kept = self.entries()?;
        kept.retain(|e| keep(e));
        if kept.is_empty() {
            return Ok(None);
        }
        let meta = PartMeta { id, ..self.meta };
        let tmp = part_path(dir, id).with_extension("part.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        // The blocks are copied as they are, so the copy keeps this part's version.
        let version = self.index.version();
        out.write_all(magic_of(version)).map_err(io)?;
        let mut offset = MAGIC.len() as u64;
        let mut index = Vec::with_capacity(kept.len());
        for entry in kept {
            let block = self.block(&entry)?;
            out.write_all(&block).map_err(io)?;
            index.push(Entry { offset, ..entry });
            offset += block.len() as u64;
        }
        let measurement = match version {
            Version::V4 => ANY_MEASUREMENT,
            Version::V2 | Version::V3 => self.index.measurements().first().copied().unwrap_or(0),
        };
        finish(
            dir,
            &self.files,
            (&meta, measurement, version),
            out,
            offset,
            &index,
        )
        .map(Some)
    }

    /// Opens a part and checks its index. `Corrupt` names the file when it is not a whole
    /// part.
    pub fn open(path: &Path, files: &Arc<OpenFiles>) -> Result<Part> {
        Self::open_listing(path, files, |_| {})
    }

    /// [`open`](Self::open), calling `each_series` once per series the part holds a block
    /// of, ascending, as the index is checked.
    pub fn open_listing(
        path: &Path,
        files: &Arc<OpenFiles>,
        each_series: impl FnMut(SeriesId),
    ) -> Result<Part> {
        let file = File::open(path)
            .map_err(|e| storage(format!("cannot open {}: {e}", path.display())))?;
        let bytes = file
            .metadata()
            .map_err(|e| storage(format!("cannot stat {}: {e}", path.display())))?
            .len();
        Self::open_in(Arc::new(file), path, (0, bytes), None, files, each_series)
    }

    /// Opens the part of `len` bytes at `base` in `pack`'s file (open as `file`).
    pub fn open_packed(
        file: Arc<File>,
        pack: &Arc<Pack>,
        (base, len): (u64, u64),
        files: &Arc<OpenFiles>,
    ) -> Result<Part> {
        Self::open_in(
            file,
            pack.path(),
            (base, len),
            Some(pack.clone()),
            files,
            |_| {},
        )
    }

    /// Opens the part of `len` bytes at `base` in `file` (at `path`) and checks its index.
    fn open_in(
        file: Arc<File>,
        path: &Path,
        (base, bytes): (u64, u64),
        pack: Option<Arc<Pack>>,
        files: &Arc<OpenFiles>,
        each_series: impl FnMut(SeriesId),
    ) -> Result<Part> {
        let bad = |what: &str| match base {
            0 => BackendError::Corrupt(format!("part file {}: {what}", path.display())),
            _ => BackendError::Corrupt(format!(
                "part at byte {base} of pack file {}: {what}",
                path.display()
            )),
        };
        if bytes < (MAGIC.len() + FOOTER_LEN) as u64 {
            return Err(bad("shorter than a part's header and footer"));
        }
        let mut magic = [0u8; MAGIC.len()];
        read_exact_at(&file, path, &mut magic, base)?;
        let version = match &magic {
            MAGIC => Version::V4,
            MAGIC_V3 => Version::V3,
            MAGIC_V2 => Version::V2,
            _ => {
                return Err(bad(&format!(
                    "starts with {:?}, not {:?}, {:?} or {:?} (not a part file this version reads)",
                    String::from_utf8_lossy(&magic),
                    String::from_utf8_lossy(MAGIC),
                    String::from_utf8_lossy(MAGIC_V3),
                    String::from_utf8_lossy(MAGIC_V2)
                )))
            }
        };
        let mut footer = [0u8; FOOTER_LEN];
        read_exact_at(&file, path, &mut footer, base + bytes - FOOTER_LEN as u64)?;
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
        let measurement = word(16);
        let meta = PartMeta {
            start: word(24) as i64,
            end: word(32) as i64,
            max_lsn: word(40),
            id: word(48),
        };
        let index_len = entries.saturating_mul(version.entry_len()) as u64;
        if index_offset.checked_add(index_len) != Some(bytes - FOOTER_LEN as u64) {
            return Err(bad("the index does not end where the footer starts"));
        }
        let index = PartIndex::load(
            &file,
            path,
            (base, index_offset, entries, index_crc),
            (version, measurement),
            bad,
            each_series,
        )?;
        let part = Part {
            meta,
            path: path.to_path_buf(),
            base,
            len: bytes,
            pack,
            files: files.clone(),
            index,
            retired: AtomicBool::new(false),
        };
        files.keep(part.file_id(), file);
        Ok(part)
    }

    /// Marks the part as no longer named by the manifest: its file is deleted once no
    /// reader holds the part (see `files.rs`); a packed part's bytes stay in its pack,
    /// deleted with the last of its parts (`pack.rs`).
    pub fn retire(&self) {
        let was = self.retired.swap(true, Ordering::AcqRel);
        if let (false, Some(pack)) = (was, &self.pack) {
            pack.release(self.len);
        }
    }

    /// The key of the part's file in the store's cache of open files: its own id, or its
    /// pack's (part and pack ids are drawn from one sequence).
    fn file_id(&self) -> u64 {
        self.pack.as_ref().map_or(self.meta.id, |p| p.id)
    }

    /// The open file, from the store's cache of open files.
    fn file(&self) -> Result<Arc<File>> {
        self.files.get(self.file_id(), &self.path)
    }

    /// The part's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The pack holding the part, if it is in one.
    pub fn pack(&self) -> Option<&Arc<Pack>> {
        self.pack.as_ref()
    }

    /// Appends the part's bytes, as they are, to `out`.
    pub fn copy_to(&self, out: &mut impl Write) -> Result<()> {
        const CHUNK: u64 = 1 << 20;
        let file = self.file()?;
        let mut buf = vec![0u8; CHUNK.min(self.len) as usize];
        let mut at = 0;
        while at < self.len {
            let n = CHUNK.min(self.len - at) as usize;
            read_exact_at(&file, &self.path, &mut buf[..n], self.base + at)?;
            out.write_all(&buf[..n])
                .map_err(|e| storage(format!("cannot copy part {}: {e}", self.meta.id)))?;
            at += n as u64;
        }
        Ok(())
    }

    /// The version of the file (how its entries and rollup blocks are laid out).
    #[cfg(test)]
    pub fn version(&self) -> Version {
        self.index.version()
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

    /// Whether the part may hold any block of `series`, raw or rollup (an index that
    /// cannot be read counts as yes, as in [`may_hold`](Self::may_hold)).
    pub fn may_hold_series(&self, series: SeriesId) -> bool {
        self.file()
            .and_then(|file| self.index.holds_series(&file, &self.path, series))
            .unwrap_or(true)
    }

    fn find(&self, series: SeriesId, kind: u64) -> Result<Option<Entry>> {
        self.index.find(&*self.file()?, &self.path, series, kind)
    }

    /// Every entry, by (series, kind): read from the file.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.index
            .walk(&*self.file()?, &self.path, |e| entries.push(e))?;
        Ok(entries)
    }

    /// The raw block entries, by series: read from the file.
    pub fn raw_entries(&self) -> Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.index.walk(&*self.file()?, &self.path, |e| {
            entries.extend(Some(e).filter(Entry::is_raw))
        })?;
        Ok(entries)
    }

    /// The number of blocks, raw and rollup.
    pub fn blocks(&self) -> usize {
        self.index.len()
    }

    /// The number of raw blocks (series with points in the part).
    pub fn raw_blocks(&self) -> usize {
        self.index.raw_blocks()
    }

    /// Every series the part holds a block of, raw or rollup, ascending: read from the file.
    #[cfg(test)]
    pub fn series(&self) -> Result<Vec<SeriesId>> {
        let mut series: Vec<SeriesId> = Vec::new();
        self.index.walk(&*self.file()?, &self.path, |e| {
            if series.last() != Some(&e.series) {
                series.push(e.series);
            }
        })?;
        Ok(series)
    }

    /// Whether the part holds a block of this kind (`None`: raw).
    #[cfg(test)]
    pub fn holds(&self, kind: Option<Resolution>) -> bool {
        self.index.holds(kind_of(kind))
    }

    /// Whether the part holds a block of this kind (`None`: raw) of a series of
    /// `measurement` (by number).
    pub fn holds_of(&self, measurement: u64, kind: Option<Resolution>) -> bool {
        self.index.holds_of(measurement, kind_of(kind))
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
        self.read_rollup_entry(&entry).map(Some)
    }

    /// The slots of a rollup block entry of this part.
    pub fn read_rollup_entry(&self, entry: &Entry) -> Result<Vec<(i64, Summary)>> {
        let block = self.block(entry)?;
        summary::decode(&block, layout_of(self.index.version()))
            .map_err(|e| self.bad(entry, e.to_string()))
    }

    /// A block's bytes, checked against its checksum.
    fn block(&self, entry: &Entry) -> Result<Vec<u8>> {
        let mut block = vec![0u8; entry.len as usize];
        read_exact_at(
            &*self.file()?,
            &self.path,
            &mut block,
            self.base + entry.offset,
        )?;
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

impl Drop for Part {
    /// A retired part's file goes with its last holder; a file that cannot be deleted now
    /// is deleted at the next open (no manifest entry names it).
    fn drop(&mut self) {
        // A packed part's bytes go with its pack (`Pack`'s `Drop`).
        if !self.retired.load(Ordering::Acquire) || self.pack.is_some() {
            return;
        }
        self.files.forget(self.meta.id);
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(file = %self.path.display(), error = %e, "cannot delete a part file no longer in use");
        }
    }
}

fn kind_of(kind: Option<Resolution>) -> u64 {
    kind.map_or(RAW, |r| r.nanos() as u64)
}

/// Writes the index and footer after the blocks, makes the part durable under its name
/// and opens it.
fn finish(
    dir: &Path,
    files: &Arc<OpenFiles>,
    (meta, measurement, version): (&PartMeta, u64, Version),
    mut out: BufWriter<File>,
    index_offset: u64,
    index: &[Entry],
) -> Result<Part> {
    let path = part_path(dir, meta.id);
    let tmp = path.with_extension("part.tmp");
    let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
    let encoded = encode_index(index, version);
    out.write_all(&encoded).map_err(io)?;
    let footer = encode_footer(meta, measurement, index_offset, index.len(), &encoded);
    out.write_all(&footer).map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    fs::rename(&tmp, &path)
        .map_err(|e| storage(format!("cannot rename {}: {e}", tmp.display())))?;
    sync_dir(dir)?;
    Part::open(&path, files)
}

fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    file.read_exact_at(buf, offset)
        .map_err(|e| storage(format!("cannot read {}: {e}", path.display())))
}

fn encode_index(index: &[Entry], version: Version) -> Vec<u8> {
    let mut out = Vec::with_capacity(index.len() * version.entry_len());
    for e in index {
        e.encode(version, &mut out);
    }
    out
}

fn encode_footer(
    meta: &PartMeta,
    measurement: u64,
    index_offset: u64,
    entries: usize,
    index: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(FOOTER_LEN);
    out.extend_from_slice(&index_offset.to_le_bytes());
    out.extend_from_slice(&(entries as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(index).to_le_bytes());
    out.extend_from_slice(&measurement.to_le_bytes());
    out.extend_from_slice(&meta.start.to_le_bytes());
    out.extend_from_slice(&meta.end.to_le_bytes());
    out.extend_from_slice(&meta.max_lsn.to_le_bytes());
    out.extend_from_slice(&meta.id.to_le_bytes());
    out.extend_from_slice(END_MAGIC);
    out
}

#[cfg(test)]
pub(super) mod tests;
