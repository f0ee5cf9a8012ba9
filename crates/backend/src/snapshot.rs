//! Online snapshots ([`Backend::snapshot`](crate::Backend::snapshot)): where one goes and
//! what it copied. Naming a new snapshot lives here, once, below the backends.

use crate::{BackendError, Result};
use std::path::{Path, PathBuf};

/// The folder inside an embedded store where snapshots go unless told otherwise. The
/// store reads nothing in it, copies nothing of it into a snapshot and counts none of its
/// bytes.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// Where a snapshot is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotTarget {
    /// A new directory named by the UTC time under the store's own [`SNAPSHOTS_DIR`].
    InStore,
    /// A new directory named by the UTC time under this folder (`serve --snapshot-dir`).
    Under(PathBuf),
    /// Exactly this directory, which must not exist or be empty (`admin snapshot --out`).
    Exact(PathBuf),
}

/// What a snapshot made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotReport {
    /// The snapshot's directory: a store of its own (`serve --store PATH` opens it).
    pub path: PathBuf,
    /// Immutable files shared with the live store through a hard link (no bytes copied).
    pub files_linked: u64,
    /// Files copied byte by byte (the mutable ones, and immutable ones on another file
    /// system than the store's).
    pub files_copied: u64,
    /// Bytes of the copied files.
    pub bytes_copied: u64,
    /// How long writes waited while the snapshot copied what changes (the embedded
    /// store's redb file and log); the rest of it ran beside them.
    pub writes_paused: std::time::Duration,
}

/// Creates a new, empty directory under `parent` (and `parent` if missing) named by the
/// UTC second of `now_ns`, `20261126T130102Z`, or `20261126T130102Z-2`, `-3`, … when that
/// name is taken: the name is claimed by creating it (`mkdir` fails on an existing
/// name), so two snapshots in the same second never share a directory.
pub fn claim_new_dir(parent: &Path, now_ns: i64) -> Result<PathBuf> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        BackendError::Storage(format!("snapshot: cannot {what} {}: {e}", path.display()))
    };
    std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
    let stamp = utc_stamp(now_ns);
    for n in 1..=1000u32 {
        let name = match n {
            1 => stamp.clone(),
            n => format!("{stamp}-{n}"),
        };
        let path = parent.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io("create", &path, e)),
        }
    }
    Err(BackendError::Storage(format!(
        "snapshot: 1000 directories named {stamp} already exist in {}",
        parent.display()
    )))
}

/// `20261126T130102Z`: the UTC second of `ns` in RFC 3339's basic form, which sorts by
/// time and holds no `:` (not allowed in file names everywhere).
fn utc_stamp(ns: i64) -> String {
    let second = ns.div_euclid(1_000_000_000) * 1_000_000_000;
    tickertape_core::time::format_rfc3339(second).replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_utc_second_and_never_collide() {
        assert_eq!(utc_stamp(1_795_698_062_999_999_999), "20261126T130102Z");
        let dir = std::env::temp_dir().join(format!("tt-claim-{}", std::process::id()));
        let now = 1_795_698_062_000_000_000;
        let first = claim_new_dir(&dir, now).unwrap();
        let second = claim_new_dir(&dir, now).unwrap();
        let third = claim_new_dir(&dir, now + 1).unwrap();
        let names: Vec<_> = [&first, &second, &third]
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            names,
            [
                "20261126T130102Z",
                "20261126T130102Z-2",
                "20261126T130102Z-3"
            ]
        );
    }
}
