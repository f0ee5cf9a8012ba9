//! The open part files: a bounded cache of descriptors, so that a store of any number of
//! parts runs within the process's file limit. A part is opened when a read or a merge
//! needs it and closed when the cache evicts it (least recently used first, roughly:
//! `quick_cache`'s CLOCK-PRO); a read holding the file keeps it open until it is done.
//!
//! A part file the store no longer names may still be read by a reader that took it from
//! the view before the swap: its file is deleted only when the last holder lets go of the
//! part (`Part`'s `Drop` after [`retire`](crate::values::part::Part::retire)), so an
//! evicted descriptor can always be opened again while the part is in use.

use crate::writer::storage;
use quick_cache::sync::Cache;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use tickertape_backend::Result;

/// Part files kept open by default. With the server's connections, the budget of the
/// process's descriptor limit (`RLIMIT_NOFILE`) the server works out at start.
pub const DEFAULT_OPEN_PARTS: usize = 256;

/// Part id → its open file.
pub struct OpenFiles {
    files: Cache<u64, Arc<File>>,
    capacity: usize,
}

impl OpenFiles {
    /// A cache keeping at most `capacity` part files open (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            files: Cache::new(capacity),
            capacity,
        }
    }

    /// The most part files it keeps open.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The file of part `id` at `path`: the open one, or opened now.
    pub fn get(&self, id: u64, path: &Path) -> Result<Arc<File>> {
        self.files.get_or_insert_with(&id, || {
            File::open(path)
                .map(Arc::new)
                .map_err(|e| storage(format!("cannot open {}: {e}", path.display())))
        })
    }

    /// Keeps `file`, just opened for part `id`, for the reads that follow.
    pub fn keep(&self, id: u64, file: Arc<File>) {
        self.files.insert(id, file);
    }

    /// Closes part `id`'s file (its part is gone), unless a read still holds it.
    pub fn forget(&self, id: u64) {
        self.files.remove(&id);
    }

    /// Part files open now (held by the cache).
    #[cfg(test)]
    pub fn open_now(&self) -> usize {
        self.files.len()
    }
}

impl Default for OpenFiles {
    fn default() -> Self {
        Self::new(DEFAULT_OPEN_PARTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many more files than the cache holds: it never keeps more than its capacity, and an
    /// evicted file opens again.
    #[test]
    fn the_cache_keeps_at_most_its_capacity_open() {
        let dir = tempfile::tempdir().unwrap();
        let files = OpenFiles::new(8);
        let path = |i: u64| dir.path().join(format!("{i}"));
        for i in 0..100 {
            std::fs::write(path(i), b"x").unwrap();
            files.get(i, &path(i)).unwrap();
            assert!(files.open_now() <= 8, "{} open", files.open_now());
        }
        for i in 0..100 {
            assert_eq!(files.get(i, &path(i)).unwrap().metadata().unwrap().len(), 1);
        }
        assert!(files.open_now() <= 8);
        let missing = files.get(1_000, &path(1_000)).err().unwrap().to_string();
        assert!(missing.contains("1000"), "{missing}");
    }
}
