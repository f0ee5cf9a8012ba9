//! Bytes on disk, the way `du` counts them: allocated blocks, not file lengths, so sparse
//! and preallocated files count for what they really take.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A directory tree bigger than this is not a benchmark store; stop rather than walk it.
const MAX_ENTRIES: usize = 1_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Sum of `st_blocks × 512` over every file (what `du -B1` reports).
    pub allocated: u64,
    /// Sum of file lengths.
    pub apparent: u64,
    pub files: u64,
}

/// Walks `root` without following symbolic links.
pub fn usage(root: &Path) -> Result<DiskUsage> {
    let mut total = DiskUsage::default();
    let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(path) = stack.pop() {
        seen += 1;
        if seen > MAX_ENTRIES {
            bail!("{} holds more than {MAX_ENTRIES} entries", root.display());
        }
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        total.allocated += allocated(&meta);
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)
                .with_context(|| format!("cannot list {}", path.display()))?
            {
                stack.push(entry?.path());
            }
        } else if meta.is_file() {
            total.apparent += meta.len();
            total.files += 1;
        }
    }
    Ok(total)
}

#[cfg(unix)]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // st_blocks is in 512-byte units whatever the file system's block size.
    if meta.is_dir() {
        0
    } else {
        meta.blocks() * 512
    }
}

#[cfg(not(unix))]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    if meta.is_dir() {
        0
    } else {
        meta.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_in_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![1u8; 5]).unwrap();
        let u = usage(dir.path()).unwrap();
        assert_eq!((u.files, u.apparent), (2, 10_005));
        assert!(u.allocated >= 10_005 || cfg!(not(unix)), "{u:?}");
    }
}
