//! A part file's index, kept sparse in memory: one key in [`SAMPLE_EVERY`] entries, so a
//! store of a million series and thirty daily partitions holds a few megabytes of index
//! instead of gigabytes. A lookup reads the one run of entries its key falls in from the
//! file (`pread`; the page cache keeps the hot ones).
//!
//! An entry (52 bytes) is `series u64 · kind u64 · count u32 · min i64 · max i64 · offset
//! u64 · len u32 · crc32 u32`, little endian; entries are sorted by (series, kind). The
//! whole index is checked once, when the part is opened: its checksum, its order, and every
//! block inside the file. The file never changes after that (parts are immutable), and a
//! lookup still refuses an entry whose block would lie outside the blocks' area.

use crate::writer::storage;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tickertape_backend::{BackendError, Result};
use tickertape_core::rollup::Resolution;
use tickertape_core::SeriesId;

pub(super) const ENTRY_LEN: usize = 52;
/// The `kind` of a raw block.
pub(super) const RAW: u64 = 0;
/// Entries per key kept in memory: a lookup reads at most this many (1,664 bytes).
const SAMPLE_EVERY: usize = 32;
/// Entries read per `pread` when the whole index is walked (about 3 MiB).
const WALK_CHUNK: usize = 65_536;
/// Where blocks start: after the part's magic.
const BLOCKS_START: u64 = 8;

/// Where one block of a series is: its raw points, or a rollup's slots.
///
/// A rollup block's `min`/`max` are those of the raw block it was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub series: SeriesId,
    /// [`RAW`], or the resolution of a rollup block in ns.
    pub(super) kind: u64,
    /// Points (raw) or slots (rollup).
    pub count: u32,
    pub min: i64,
    pub max: i64,
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) crc: u32,
}

impl Entry {
    /// `None` for a raw block, else the rollup's resolution.
    pub(super) fn resolution(&self) -> Option<Resolution> {
        match self.kind {
            RAW => None,
            ns => Resolution::new(i64::try_from(ns).ok()?),
        }
    }

    pub fn is_raw(&self) -> bool {
        self.kind == RAW
    }

    fn key(&self) -> (SeriesId, u64) {
        (self.series, self.kind)
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.series.0.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.min.to_le_bytes());
        out.extend_from_slice(&self.max.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// `bytes` is exactly [`ENTRY_LEN`] long.
    fn decode(bytes: &[u8]) -> Entry {
        let w = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
        let h = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        Entry {
            series: SeriesId(w(0)),
            kind: w(8),
            count: h(16),
            min: w(20) as i64,
            max: w(28) as i64,
            offset: w(36),
            len: h(44),
            crc: h(48),
        }
    }

    /// Its block lies between the magic and the index.
    fn inside(&self, index_offset: u64) -> bool {
        self.offset >= BLOCKS_START
            && self
                .offset
                .checked_add(u64::from(self.len))
                .is_some_and(|end| end <= index_offset)
    }
}

/// The index of one open part: where it is in the file and every [`SAMPLE_EVERY`]th key.
pub(super) struct PartIndex {
    offset: u64,
    entries: usize,
    /// The key of entry `i * SAMPLE_EVERY`, for every `i`.
    samples: Vec<(SeriesId, u64)>,
    /// The kinds of block the part holds, ascending, each once.
    kinds: Vec<u64>,
    raw_blocks: usize,
    /// The run of entries read last: a query reads series in key order and asks each for
    /// several kinds, so the next lookup most often falls in the same run.
    last_run: Mutex<Option<(usize, Arc<[u8]>)>>,
}

impl PartIndex {
    /// Reads and checks the index of `entries` entries at `offset` (its checksum `crc`),
    /// calling `each_series` once per series, ascending. `Corrupt` (through `bad`) when
    /// the checksum, the order or a block's place is wrong.
    pub(super) fn load(
        file: &File,
        path: &Path,
        (offset, entries, crc): (u64, usize, u32),
        bad: impl Fn(&str) -> BackendError,
        mut each_series: impl FnMut(SeriesId),
    ) -> Result<PartIndex> {
        let mut index = PartIndex {
            offset,
            entries,
            samples: Vec::with_capacity(entries.div_ceil(SAMPLE_EVERY)),
            kinds: Vec::new(),
            raw_blocks: 0,
            last_run: Mutex::new(None),
        };
        let mut hasher = crc32fast::Hasher::new();
        let mut last: Option<(SeriesId, u64)> = None;
        let mut at = 0;
        while at < entries {
            let n = WALK_CHUNK.min(entries - at);
            let raw = index.read_run(file, path, at, n)?;
            hasher.update(&raw);
            for (i, bytes) in raw.chunks_exact(ENTRY_LEN).enumerate() {
                let e = Entry::decode(bytes);
                let kind_known = e.kind == RAW || e.resolution().is_some();
                let sorted = last.is_none_or(|k| k < e.key());
                if !e.inside(offset) || !sorted || !kind_known || e.min > e.max {
                    return Err(bad("malformed index"));
                }
                if last.is_none_or(|(s, _)| s != e.series) {
                    each_series(e.series);
                }
                if (at + i) % SAMPLE_EVERY == 0 {
                    index.samples.push(e.key());
                }
                if let Err(place) = index.kinds.binary_search(&e.kind) {
                    index.kinds.insert(place, e.kind);
                }
                index.raw_blocks += usize::from(e.kind == RAW);
                last = Some(e.key());
            }
            at += n;
        }
        if hasher.finalize() != crc {
            return Err(bad("index checksum mismatch"));
        }
        Ok(index)
    }

    /// The entry of (`series`, `kind`), read from the one run of entries it can be in.
    pub(super) fn find(
        &self,
        file: &File,
        path: &Path,
        series: SeriesId,
        kind: u64,
    ) -> Result<Option<Entry>> {
        let key = (series, kind);
        let run = self.samples.partition_point(|sample| *sample <= key);
        let Some(run) = run.checked_sub(1) else {
            return Ok(None);
        };
        let raw = self.run(file, path, run)?;
        let found = raw
            .chunks_exact(ENTRY_LEN)
            .map(Entry::decode)
            .find(|e| e.key() == key);
        self.checked(path, found)
    }

    /// Calls `each` with every entry, in order, reading [`WALK_CHUNK`] entries at a time
    /// (a merge, a rewrite or a listing of the series walks them all).
    pub(super) fn walk(&self, file: &File, path: &Path, mut each: impl FnMut(Entry)) -> Result<()> {
        let mut at = 0;
        while at < self.entries {
            let n = WALK_CHUNK.min(self.entries - at);
            for bytes in self.read_run(file, path, at, n)?.chunks_exact(ENTRY_LEN) {
                if let Some(entry) = self.checked(path, Some(Entry::decode(bytes)))? {
                    each(entry);
                }
            }
            at += n;
        }
        Ok(())
    }

    /// Whether the part holds a block of this kind.
    pub(super) fn holds(&self, kind: u64) -> bool {
        self.kinds.binary_search(&kind).is_ok()
    }

    pub(super) fn raw_blocks(&self) -> usize {
        self.raw_blocks
    }

    /// The entries of run `run` (from entry `run * SAMPLE_EVERY`), as bytes: the last run
    /// read, or read now. The lock is not held while reading.
    fn run(&self, file: &File, path: &Path, run: usize) -> Result<Arc<[u8]>> {
        let cached = |slot: &Option<(usize, Arc<[u8]>)>| {
            slot.as_ref()
                .filter(|(n, _)| *n == run)
                .map(|(_, raw)| raw.clone())
        };
        if let Some(raw) = cached(&self.last_run.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(raw);
        }
        let first = run * SAMPLE_EVERY;
        let raw: Arc<[u8]> = self
            .read_run(file, path, first, SAMPLE_EVERY.min(self.entries - first))?
            .into();
        *self.last_run.lock().unwrap_or_else(|e| e.into_inner()) = Some((run, raw.clone()));
        Ok(raw)
    }

    /// `n` entries from entry `first`, as bytes.
    fn read_run(&self, file: &File, path: &Path, first: usize, n: usize) -> Result<Vec<u8>> {
        let mut raw = vec![0u8; n * ENTRY_LEN];
        let at = self.offset + (first * ENTRY_LEN) as u64;
        file.read_exact_at(&mut raw, at)
            .map_err(|e| storage(format!("cannot read {}: {e}", path.display())))?;
        Ok(raw)
    }

    /// An entry read after the open, refused if its block is not where blocks are (the
    /// file was changed by something else): a wrong length must not become an allocation.
    fn checked(&self, path: &Path, entry: Option<Entry>) -> Result<Option<Entry>> {
        match entry {
            Some(e) if !e.inside(self.offset) => Err(BackendError::Corrupt(format!(
                "part file {}: an index entry of series {} points outside the blocks (the \
                 file changed after it was opened)",
                path.display(),
                e.series
            ))),
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::part::{part_path, Part, PartMeta};
    use super::*;
    use tickertape_core::Point;

    /// Every series of a part larger than many runs is found, with the entry written for
    /// it; series between, before and after them are not; walks list them all once.
    #[test]
    fn a_sparse_index_finds_every_entry_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let meta = PartMeta {
            id: 1,
            measurement: 0,
            start: 0,
            end: 1_000,
            max_lsn: 1,
        };
        let rollups = [Resolution::new(100).unwrap(), Resolution::new(500).unwrap()];
        // Odd ids only, so that the even ones between them are absent; 3 entries each.
        let ids: Vec<SeriesId> = (0..1000u64).map(|i| SeriesId(2 * i + 1)).collect();
        let blocks = ids.iter().map(|&s| {
            let points = vec![Point::new(s.0 as i64 % 900, 1.0), Point::new(950, 2.0)];
            Ok((s, points))
        });
        let written = Part::write(dir.path(), meta, &rollups, blocks).unwrap();
        let mut listed = Vec::new();
        let part = Part::open_listing(&part_path(dir.path(), 1), |s| listed.push(s)).unwrap();
        assert_eq!(listed, ids);
        assert_eq!(part.series().unwrap(), ids);
        assert_eq!(part.raw_blocks(), ids.len());
        let entries = part.entries().unwrap();
        assert_eq!(entries, written.entries().unwrap());
        assert_eq!(entries.len(), 3 * ids.len());
        let raw = part.raw_entries().unwrap();
        assert_eq!(raw.iter().map(|e| e.series).collect::<Vec<_>>(), ids);
        for &s in &ids {
            let entry = part.entry(s).unwrap().expect("a raw entry");
            assert_eq!(
                (entry.series, entry.min, entry.max),
                (s, s.0 as i64 % 900, 950)
            );
            assert_eq!(part.read(s).unwrap().len(), 2);
            assert!(rollups.iter().all(|&r| part.has_rollup(s, r)));
            assert!(!part.has_rollup(s, Resolution::new(250).unwrap()));
        }
        for absent in [0, 2, 64, 1000, 2001, 5000, u64::MAX] {
            assert_eq!(part.entry(SeriesId(absent)).unwrap(), None, "{absent}");
        }
        assert!(part.holds(None) && part.holds(Some(rollups[1])));
        assert!(!part.holds(Some(Resolution::new(250).unwrap())));
    }

    /// A flipped byte in the index is found when the part is opened.
    #[test]
    fn a_damaged_index_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let meta = PartMeta {
            id: 2,
            measurement: 0,
            start: 0,
            end: 1_000,
            max_lsn: 1,
        };
        let blocks = (1..100u64).map(|s| Ok((SeriesId(s), vec![Point::new(1, 1.0)])));
        let part = Part::write(dir.path(), meta, &[], blocks).unwrap();
        let path = part_path(dir.path(), 2);
        drop(part);
        let mut bytes = std::fs::read(&path).unwrap();
        // The footer is 64 bytes; the index ends where it starts.
        let in_index = bytes.len() - 64 - ENTRY_LEN * 10 + 9;
        bytes[in_index] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = Part::open(&path).err().expect("refused").to_string();
        assert!(err.contains("00000000000000000002.part"), "{err}");
    }
}
