//! Pack files: several parts of one period (a week or four), their bytes copied one after
//! another into one file, so that a store keeps a few files per month however many days
//! it holds. A packed part is read exactly as before, at its place in the pack; nothing
//! else about it changes (its id, its partition, its blocks, its precedence), so packing
//! is invisible to reads, merges, deletes and retention — only the number of files
//! changes. The manifest says where each packed part is (`manifest::PACKED`).
//!
//! A pack is immutable, like a part. When one of its parts is replaced (a merge, a
//! delete, a retention drop writes a new part of its own), the old bytes stay in the pack
//! as dead space until the pack is packed again (`packing.rs`) or every part in it is
//! gone; then its file is deleted, when the last reader lets go of it.
//!
//! Crash safety: a pack is written whole (`<id>.pack.tmp`, fsync, rename, folder fsync)
//! before one durable transaction records its parts' new places; only then are their old
//! files deleted. A pack the manifest does not name is the leftover of a crash and is
//! deleted at open, as is a part file of a part the manifest places in a pack.

use super::files::OpenFiles;
use super::part::Part;
use crate::values::wal::sync_dir;
use crate::writer::storage;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tickertape_backend::Result;

/// The magic a pack file starts with: its parts follow, each whole with its own magic.
const MAGIC: &[u8; 8] = b"TTPACK01";

/// A pack file and how much of it is still in use.
pub struct Pack {
    /// Drawn from the part ids' sequence: the pack's key in the cache of open files.
    pub id: u64,
    path: PathBuf,
    files: Arc<OpenFiles>,
    /// The parts of the pack the manifest still names, and their bytes.
    live_parts: AtomicUsize,
    live_bytes: AtomicU64,
    /// The size of the file.
    bytes: u64,
}

/// The place of a part in a pack: `(part id, base, len)`.
pub type Placement = (u64, u64, u64);

pub fn pack_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.pack"))
}

impl Pack {
    /// A pack file of `bytes` bytes of which `live` (part count, bytes) are named.
    pub fn new(
        dir: &Path,
        id: u64,
        files: &Arc<OpenFiles>,
        bytes: u64,
        (parts, live): (usize, u64),
    ) -> Arc<Pack> {
        Arc::new(Pack {
            id,
            path: pack_path(dir, id),
            files: files.clone(),
            live_parts: AtomicUsize::new(parts),
            live_bytes: AtomicU64::new(live),
            bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One of its parts (of `len` bytes) is no longer named by the manifest.
    pub fn release(&self, len: u64) {
        self.live_parts.fetch_sub(1, Ordering::AcqRel);
        self.live_bytes.fetch_sub(len, Ordering::AcqRel);
    }

    /// The bytes of the file no named part uses.
    pub fn dead_bytes(&self) -> u64 {
        self.bytes
            .saturating_sub(self.live_bytes.load(Ordering::Acquire))
    }

    /// The bytes the named parts use.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes.load(Ordering::Acquire)
    }

    /// Writes `parts` (copied whole, in order) into a new pack `id` in `dir`, durably, and
    /// opens them there. The caller records the placements, then swaps the parts.
    pub fn write(
        dir: &Path,
        id: u64,
        files: &Arc<OpenFiles>,
        parts: &[Arc<Part>],
    ) -> Result<(Vec<Placement>, Vec<Arc<Part>>)> {
        let path = pack_path(dir, id);
        let tmp = path.with_extension("pack.tmp");
        let io = |e: std::io::Error| storage(format!("cannot write {}: {e}", tmp.display()));
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        out.write_all(MAGIC).map_err(io)?;
        let mut base = MAGIC.len() as u64;
        let mut placed = Vec::with_capacity(parts.len());
        for part in parts {
            part.copy_to(&mut out)?;
            placed.push((part.meta.id, base, part.len()));
            base += part.len();
        }
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        fs::rename(&tmp, &path)
            .map_err(|e| storage(format!("cannot rename {}: {e}", tmp.display())))?;
        sync_dir(dir)?;
        let live = placed.iter().map(|p| p.2).sum();
        let pack = Pack::new(dir, id, files, base, (placed.len(), live));
        let opened = Pack::open_parts(&pack, &placed)?;
        Ok((placed, opened))
    }

    /// Opens the parts at `placed` in `pack`.
    pub fn open_parts(pack: &Arc<Pack>, placed: &[Placement]) -> Result<Vec<Arc<Part>>> {
        let file = Arc::new(
            File::open(&pack.path)
                .map_err(|e| storage(format!("cannot open {}: {e}", pack.path.display())))?,
        );
        placed
            .iter()
            .map(|&(_, base, len)| {
                Part::open_packed(file.clone(), pack, (base, len), &pack.files).map(Arc::new)
            })
            .collect()
    }
}

impl Drop for Pack {
    /// The file goes with the last of its parts once none is named; a file that cannot be
    /// deleted now is deleted at the next open (no manifest entry names it).
    fn drop(&mut self) {
        if self.live_parts.load(Ordering::Acquire) > 0 {
            return;
        }
        self.files.forget(self.id);
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(file = %self.path.display(), error = %e, "cannot delete a pack file no longer in use");
        }
    }
}
