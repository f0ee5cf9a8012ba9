//! A part file's index, kept sparse in memory: one key in [`SAMPLE_EVERY`] entries, so a
//! store of a million series and thirty daily partitions holds a few megabytes of index
//! instead of gigabytes. A lookup reads the one run of entries its key falls in from the
//! file (`pread`; the page cache keeps the hot ones).
//!
//! An entry of a version 4 part (60 bytes) is `series u64 · kind u64 · measurement u64 ·
//! count u32 · min i64 · max i64 · offset u64 · len u32 · crc32 u32`, little endian;
//! versions 2 and 3 (52 bytes) have no measurement (the footer names the part's one
//! measurement). Entries are sorted by (series, kind). The whole index is checked once,
//! when the part is opened: its checksum, its order, and every block inside the file. The
//! file never changes after that (parts are immutable), and a lookup still refuses an
//! entry whose block would lie outside the blocks' area.

use crate::writer::storage;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tickertape_backend::{BackendError, Result};
use tickertape_core::rollup::Resolution;
use tickertape_core::SeriesId;

/// The version of a part file, from its magic: how its entries and rollup blocks are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `TTPART02`: one measurement; rollup blocks as six segment blocks.
    V2,
    /// `TTPART03`: one measurement; rollup blocks in columns.
    V3,
    /// `TTPART04`: any number of measurements, each entry naming its series' one.
    V4,
}

impl Version {
    pub(super) fn entry_len(self) -> usize {
        match self {
            Version::V4 => 60,
            Version::V2 | Version::V3 => 52,
        }
    }
}

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
    /// The series' measurement, by its number in `manifest::MEASUREMENTS`.
    pub measurement: u64,
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

    pub(super) fn encode(&self, version: Version, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.series.0.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        if version == Version::V4 {
            out.extend_from_slice(&self.measurement.to_le_bytes());
        }
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.min.to_le_bytes());
        out.extend_from_slice(&self.max.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// `bytes` is exactly one entry of `version` long; `measurement` is the part's one
    /// measurement for versions without it in the entry.
    fn decode(bytes: &[u8], version: Version, measurement: u64) -> Entry {
        let w = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
        let h = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        let (measurement, at) = match version {
            Version::V4 => (w(16), 24),
            Version::V2 | Version::V3 => (measurement, 16),
        };
        Entry {
            series: SeriesId(w(0)),
            kind: w(8),
            measurement,
            count: h(at),
            min: w(at + 4) as i64,
            max: w(at + 12) as i64,
            offset: w(at + 20),
            len: h(at + 28),
            crc: h(at + 32),
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
    /// Where the part starts in its file (0, or its place in a pack): every offset the
    /// part's bytes name is relative to it.
    base: u64,
    offset: u64,
    entries: usize,
    version: Version,
    /// The measurement of every entry of a part of version 2 or 3.
    measurement: u64,
    /// The key of entry `i * SAMPLE_EVERY`, for every `i`.
    samples: Vec<(SeriesId, u64)>,
    /// The series of the last entry: a series after it is in no run.
    last_series: SeriesId,
    /// (measurement, kind) of every block the part holds, ascending, each once: which
    /// measurements a retention drop rewrites the part for.
    held: Vec<(u64, u64)>,
    raw_blocks: usize,
    /// The run of entries read last: a query reads series in key order and asks each for
    /// several kinds, so the next lookup most often falls in the same run.
    last_run: Mutex<Option<(usize, Arc<[u8]>)>>,
}

impl PartIndex {
    /// Reads and checks the index of `entries` entries at `offset` (its checksum `crc`)
    /// of a part of `version` (whose footer names `measurement`) that starts at `base` in
    /// its file, calling `each_series` once per series, ascending. `Corrupt` (through
    /// `bad`) when the checksum, the order or a block's place is wrong.
    pub(super) fn load(
        file: &File,
        path: &Path,
        (base, offset, entries, crc): (u64, u64, usize, u32),
        (version, measurement): (Version, u64),
        bad: impl Fn(&str) -> BackendError,
        mut each_series: impl FnMut(SeriesId),
    ) -> Result<PartIndex> {
        let mut index = PartIndex {
            base,
            offset,
            entries,
            version,
            measurement,
            samples: Vec::with_capacity(entries.div_ceil(SAMPLE_EVERY)),
            last_series: SeriesId(0),
            held: Vec::new(),
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
            for (i, bytes) in raw.chunks_exact(version.entry_len()).enumerate() {
                let e = Entry::decode(bytes, version, measurement);
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
                if let Err(place) = index.held.binary_search(&(e.measurement, e.kind)) {
                    index.held.insert(place, (e.measurement, e.kind));
                }
                index.raw_blocks += usize::from(e.kind == RAW);
                last = Some(e.key());
            }
            at += n;
        }
        index.last_series = last.map_or(SeriesId(0), |(s, _)| s);
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
        let Some(run) = self.run_of(key) else {
            return Ok(None);
        };
        let raw = self.run(file, path, run)?;
        let found = self.decoded(&raw).find(|e| e.key() == key);
        self.checked(path, found)
    }

    /// Whether the part holds any block of `series`, raw or rollup.
    pub(super) fn holds_series(&self, file: &File, path: &Path, series: SeriesId) -> Result<bool> {
        let Some(run) = self.run_of((series, 0)) else {
            // Before the first entry: only if the first entry is one of its.
            return Ok(self.samples.first().is_some_and(|s| s.0 == series));
        };
        // The series' first entry is in this run or starts the next one.
        if self.samples.get(run + 1).is_some_and(|s| s.0 == series) {
            return Ok(true);
        }
        let raw = self.run(file, path, run)?;
        let found = self.decoded(&raw).any(|e| e.series == series);
        Ok(found)
    }

    /// The run a key would be in: none before the first entry or after the last series.
    fn run_of(&self, key: (SeriesId, u64)) -> Option<usize> {
        if key.0 > self.last_series {
            return None;
        }
        self.samples
            .partition_point(|sample| *sample <= key)
            .checked_sub(1)
    }

    fn decoded<'a>(&self, raw: &'a [u8]) -> impl Iterator<Item = Entry> + 'a {
        let (version, measurement) = (self.version, self.measurement);
        raw.chunks_exact(version.entry_len())
            .map(move |bytes| Entry::decode(bytes, version, measurement))
    }

    /// Calls `each` with every entry, in order, reading [`WALK_CHUNK`] entries at a time
    /// (a merge, a rewrite or a listing of the series walks them all).
    pub(super) fn walk(&self, file: &File, path: &Path, mut each: impl FnMut(Entry)) -> Result<()> {
        let mut at = 0;
        while at < self.entries {
            let n = WALK_CHUNK.min(self.entries - at);
            for entry in self.decoded(&self.read_run(file, path, at, n)?) {
                if let Some(entry) = self.checked(path, Some(entry))? {
                    each(entry);
                }
            }
            at += n;
        }
        Ok(())
    }

    /// Whether the part holds a block of this kind.
    #[cfg(test)]
    pub(super) fn holds(&self, kind: u64) -> bool {
        self.held.iter().any(|(_, k)| *k == kind)
    }

    /// Whether the part holds a block of this kind of a series of `measurement`.
    pub(super) fn holds_of(&self, measurement: u64, kind: u64) -> bool {
        self.held.binary_search(&(measurement, kind)).is_ok()
    }

    /// The measurements the part holds blocks of, ascending, each once.
    pub(super) fn measurements(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.held.iter().map(|(m, _)| *m).collect();
        out.dedup();
        out
    }

    pub(super) fn version(&self) -> Version {
        self.version
    }

    pub(super) fn len(&self) -> usize {
        self.entries
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
        let len = self.version.entry_len();
        let mut raw = vec![0u8; n * len];
        let at = self.base + self.offset + (first * len) as u64;
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
    use super::super::files::OpenFiles;
    use super::super::part::tests::blocks;
    use super::super::part::{part_path, Part, PartMeta};
    use super::*;
    use tickertape_core::Point;

    /// Every series of a part larger than many runs is found, with the entry written for
    /// it; series between, before and after them are not; walks list them all once.
    #[test]
    fn a_sparse_index_finds_every_entry_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(OpenFiles::new(2));
        let meta = PartMeta {
            id: 1,
            start: 0,
            end: 1_000,
            max_lsn: 1,
        };
        let rollups = [Resolution::new(100).unwrap(), Resolution::new(500).unwrap()];
        // Odd ids only, so that the even ones between them are absent; 3 entries each.
        let ids: Vec<SeriesId> = (0..1000u64).map(|i| SeriesId(2 * i + 1)).collect();
        let written = ids.iter().map(|&s| {
            let points = vec![Point::new(s.0 as i64 % 900, 1.0), Point::new(950, 2.0)];
            blocks(s.0, s.0 % 7, points, &rollups)
        });
        let written = Part::write(dir.path(), &files, meta, written).unwrap();
        let mut listed = Vec::new();
        let part =
            Part::open_listing(&part_path(dir.path(), 1), &files, |s| listed.push(s)).unwrap();
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
                (entry.series, entry.min, entry.max, entry.measurement),
                (s, s.0 as i64 % 900, 950, s.0 % 7)
            );
            assert_eq!(part.read(s).unwrap().len(), 2);
            assert!(rollups.iter().all(|&r| part.has_rollup(s, r)));
            assert!(!part.has_rollup(s, Resolution::new(250).unwrap()));
            assert!(part.may_hold_series(s));
        }
        for absent in [0, 2, 64, 1000, 2001, 5000, u64::MAX] {
            assert_eq!(part.entry(SeriesId(absent)).unwrap(), None, "{absent}");
            assert!(!part.may_hold_series(SeriesId(absent)), "{absent}");
        }
        assert!(part.holds(None) && part.holds(Some(rollups[1])));
        assert!(!part.holds(Some(Resolution::new(250).unwrap())));
        assert!((0..7).all(|m| part.holds_of(m, Some(rollups[0]))));
        assert!(!part.holds_of(7, None));
    }

    /// A flipped byte in the index is found when the part is opened.
    #[test]
    fn a_damaged_index_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(OpenFiles::new(2));
        let meta = PartMeta {
            id: 2,
            start: 0,
            end: 1_000,
            max_lsn: 1,
        };
        let written = (1..100u64).map(|s| blocks(s, 0, vec![Point::new(1, 1.0)], &[]));
        let part = Part::write(dir.path(), &files, meta, written).unwrap();
        let path = part_path(dir.path(), 2);
        drop(part);
        let mut bytes = std::fs::read(&path).unwrap();
        // The footer is 64 bytes; the index ends where it starts.
        let in_index = bytes.len() - 64 - Version::V4.entry_len() * 10 + 9;
        bytes[in_index] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = Part::open(&path, &files)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("00000000000000000002.part"), "{err}");
    }
}
