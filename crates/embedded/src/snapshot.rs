//! Online snapshots: a copy of the store, made while it serves, that opens as a store
//! holding every write acknowledged before the snapshot began (`docs/format/embedded.md`,
//! "Snapshots").
//!
//! Runs on the background thread (`Task::Snapshot`), which is the only thread that adds,
//! merges or deletes part files, moves the checkpoint or deletes log files. While it runs
//! a snapshot none of that happens, so:
//!
//! 1. The parts the manifest names are hard-linked into the snapshot (copied where the
//!    file system cannot link). Part files are immutable: written whole, fsynced, renamed,
//!    never written again; a merge or retention writes new files and unlinks old names,
//!    which leaves the snapshot's links whole.
//! 2. Then, holding a redb write transaction — redb lets one exist at a time, and the
//!    writer appends log frames only inside its own, so the writer waits — the redb file
//!    and every log file are copied; the transaction is dropped uncommitted (changes
//!    nothing) and the writer goes on.
//!
//! Why the copy is consistent: at that instant the files are what a `kill -9` would leave.
//! redb's header names its last durable commit (a non-durable commit changes the header
//! in memory only, and never overwrites the pages a durable one uses), so the copied file
//! opens at that commit; every part, registration, token and checkpoint is committed
//! durably, and the bucket writes of non-durable commits are in log frames after the
//! copied file's `applied_lsn`, which the log replay applies again. The log holds every
//! frame after the checkpoint, each fsynced before its write was answered. Opening the
//! snapshot is the recovery a `kill -9` gets. The manifest's parts are read again under
//! the lock and must be the ones linked, or the snapshot fails.
//!
//! Durability: every copied file, every folder the snapshot wrote and the folder holding
//! the snapshot are fsynced before the snapshot is answered, so a `kill -9` or a power
//! loss after the answer keeps it whole. A failed snapshot removes what it wrote.

use crate::values::manifest;
use crate::values::part::PARTS_DIR;
use crate::values::wal::{sync_dir, WAL_DIR};
use crate::DATA_FILE;
use redb::Database;
use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use tickertape_backend::snapshot::claim_new_dir;
use tickertape_backend::{BackendError, Result, SnapshotReport, SnapshotTarget, SNAPSHOTS_DIR};

/// Takes a snapshot of the store in `store` into `target` (see the module docs). Must run
/// on the background thread, between its tasks.
pub fn take(
    db: &Database,
    store: &Path,
    target: &SnapshotTarget,
    now_ns: i64,
) -> Result<SnapshotReport> {
    let (path, claimed) = place(store, target, now_ns)?;
    let mut copy = Copy::new(path.clone());
    match copy_store(db, store, &mut copy) {
        Ok(()) => Ok(copy.report),
        Err(e) => {
            copy.remove_written(claimed);
            Err(e)
        }
    }
}

/// The snapshot's directory, created empty, and whether this snapshot created it (a
/// failed one then removes it). Refuses a place inside the store other than its
/// `snapshots/` folder: the store owns every other name in it.
fn place(store: &Path, target: &SnapshotTarget, now_ns: i64) -> Result<(PathBuf, bool)> {
    let store_snapshots = store.join(SNAPSHOTS_DIR);
    match target {
        SnapshotTarget::InStore => Ok((claim_new_dir(&store_snapshots, now_ns)?, true)),
        SnapshotTarget::Under(dir) => {
            allowed(store, &dir.join("snapshot"))?;
            Ok((claim_new_dir(dir, now_ns)?, true))
        }
        SnapshotTarget::Exact(dir) => {
            allowed(store, dir)?;
            match fs::read_dir(dir) {
                Ok(mut entries) => match entries.next() {
                    None => Ok((dir.clone(), false)),
                    Some(_) => Err(BackendError::Invalid(format!(
                        "snapshot target {} exists and is not empty",
                        dir.display()
                    ))),
                },
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
                    Ok((dir.clone(), true))
                }
                Err(e) => Err(io("read", dir, e)),
            }
        }
    }
}

/// `Err` when `path` lies in the store but not inside its `snapshots/` folder.
fn allowed(store: &Path, path: &Path) -> Result<()> {
    let store = resolved(store)?;
    let path = resolved(path)?;
    let snapshots = store.join(SNAPSHOTS_DIR);
    let inside_snapshots = path.starts_with(&snapshots) && path != snapshots;
    if path.starts_with(&store) && !inside_snapshots {
        return Err(BackendError::Invalid(format!(
            "snapshot target {}: inside the store {} a snapshot may only go under {}",
            path.display(),
            store.display(),
            snapshots.display()
        )));
    }
    Ok(())
}

/// `path` made absolute, with symbolic links resolved and `..` applied, component by
/// component: a `..` after a link goes up from where the link points, as the kernel does.
fn resolved(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path).map_err(|e| io("resolve", path, e))?;
    let mut current = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                current.pop();
            }
            Component::CurDir => {}
            other => {
                current.push(other);
                if let Ok(real) = current.canonicalize() {
                    current = real;
                }
            }
        }
    }
    Ok(current)
}

fn copy_store(db: &Database, store: &Path, copy: &mut Copy) -> Result<()> {
    let parts_dir = store.join(PARTS_DIR);
    copy.make_dir(PARTS_DIR)?;
    copy.make_dir(WAL_DIR)?;
    // 1. Parts (and packs of parts): stable while this thread runs, so linked before the
    // writer is held.
    let parts = manifest::part_files(db, &parts_dir)?;
    for from in &parts {
        copy.link_or_copy(from, &Path::new(PARTS_DIR).join(file_name(from)?))?;
    }
    // 2. redb and the log at one instant: the writer waits on `held` meanwhile.
    {
        let held = db.begin_write().map_err(crate::writer::storage)?;
        let paused = std::time::Instant::now();
        let named = manifest::part_files(db, &parts_dir)?;
        if named != parts {
            return Err(BackendError::Storage(
                "snapshot: the manifest's parts changed while it was taken (a bug: only the \
                 background thread changes them, and it was taking the snapshot)"
                    .into(),
            ));
        }
        copy.copy(&store.join(DATA_FILE), Path::new(DATA_FILE))?;
        for log in log_files(&store.join(WAL_DIR))? {
            copy.copy(&log, &Path::new(WAL_DIR).join(file_name(&log)?))?;
        }
        // Dropped uncommitted: an abort, which writes nothing.
        drop(held);
        copy.report.writes_paused = paused.elapsed();
    }
    // 3. The API tokens, so a restored store keeps its logins: the file is only ever
    // replaced whole (a rename), so the copy is one list or the next, never half of one.
    let tokens = store.join(crate::TOKEN_FILE);
    if tokens.exists() {
        copy.copy(&tokens, Path::new(crate::TOKEN_FILE))?;
    }
    copy.sync()
}

/// The log's files (named `<first lsn>.wal`); an empty one the writer is creating right
/// now may or may not be among them, which changes nothing.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io("list", dir, e))? {
        let path = entry.map_err(|e| io("list", dir, e))?.path();
        if path.extension().is_some_and(|e| e == "wal") {
            files.push(path);
        }
    }
    Ok(files)
}

fn file_name(path: &Path) -> Result<&std::ffi::OsStr> {
    path.file_name().ok_or_else(|| {
        BackendError::Storage(format!("snapshot: no file name in {}", path.display()))
    })
}

fn io(what: &str, path: &Path, e: std::io::Error) -> BackendError {
    BackendError::Storage(format!("snapshot: cannot {what} {}: {e}", path.display()))
}

/// The snapshot being written: what it holds so far, so that it can be fsynced, reported
/// and, on failure, removed.
struct Copy {
    root: PathBuf,
    report: SnapshotReport,
    /// Files written, relative to `root`, to fsync.
    copied: Vec<PathBuf>,
    /// Folders made, relative to `root`.
    dirs: Vec<PathBuf>,
}

impl Copy {
    fn new(root: PathBuf) -> Self {
        Self {
            report: SnapshotReport {
                // Absolute: the answer goes to clients that do not share the working folder.
                path: std::path::absolute(&root).unwrap_or_else(|_| root.clone()),
                ..SnapshotReport::default()
            },
            root,
            copied: Vec::new(),
            dirs: Vec::new(),
        }
    }

    fn make_dir(&mut self, name: &str) -> Result<()> {
        let path = self.root.join(name);
        fs::create_dir(&path).map_err(|e| io("create", &path, e))?;
        self.dirs.push(PathBuf::from(name));
        Ok(())
    }

    /// Hard-links `from` (an immutable file) as `to`; copies it where the file system
    /// cannot link (another file system, no hard links, too many links, not allowed).
    fn link_or_copy(&mut self, from: &Path, to: &Path) -> Result<()> {
        self.link_or_copy_with(from, to, |from, to| fs::hard_link(from, to))
    }

    fn link_or_copy_with(
        &mut self,
        from: &Path,
        to: &Path,
        link: impl Fn(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<()> {
        let target = self.root.join(to);
        match link(from, &target) {
            Ok(()) => {
                self.report.files_linked += 1;
                Ok(())
            }
            Err(e) if cannot_link(&e) => {
                tracing::debug!(file = %from.display(), error = %e, "cannot hard-link into the snapshot; copying");
                self.copy(from, to)
            }
            Err(e) => Err(io("link", &target, e)),
        }
    }

    fn copy(&mut self, from: &Path, to: &Path) -> Result<()> {
        let target = self.root.join(to);
        let bytes = fs::copy(from, &target).map_err(|e| io("copy", from, e))?;
        self.copied.push(to.to_path_buf());
        self.report.files_copied += 1;
        self.report.bytes_copied += bytes;
        Ok(())
    }

    /// fsyncs the copied files, then the folders that name them, then the folder that
    /// names the snapshot. (A linked part's data was fsynced by the store before any
    /// manifest named it; its new name is made durable by its folder's fsync.)
    fn sync(&self) -> Result<()> {
        for file in &self.copied {
            let path = self.root.join(file);
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| io("fsync", &path, e))?;
        }
        for dir in &self.dirs {
            sync_dir(&self.root.join(dir))?;
        }
        sync_dir(&self.root)?;
        match self.root.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
            _ => sync_dir(Path::new(".")),
        }
    }

    /// Removes what this snapshot wrote (never anything of the live store: only names
    /// under its own root), and the root too when it made it.
    fn remove_written(&self, remove_root: bool) {
        let removed = match remove_root {
            true => fs::remove_dir_all(&self.root),
            false => self
                .dirs
                .iter()
                .map(|d| fs::remove_dir_all(self.root.join(d)))
                .chain(
                    self.copied
                        .iter()
                        .filter(|f| f.components().count() == 1)
                        .map(|f| fs::remove_file(self.root.join(f))),
                )
                .collect(),
        };
        if let Err(e) = removed {
            tracing::warn!(path = %self.root.display(), error = %e, "cannot remove a failed snapshot");
        }
    }
}

/// Errors after which a copy does what the link could not.
fn cannot_link(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::CrossesDevices
            | ErrorKind::Unsupported
            | ErrorKind::TooManyLinks
            | ErrorKind::PermissionDenied
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_linked_across_file_systems_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("a.part");
        fs::write(&from, b"immutable").unwrap();
        let root = dir.path().join("snap");
        fs::create_dir(&root).unwrap();
        let mut copy = Copy::new(root.clone());
        let exdev = |_: &Path, _: &Path| Err(std::io::Error::from(ErrorKind::CrossesDevices));
        copy.link_or_copy_with(&from, Path::new("a.part"), exdev)
            .unwrap();
        assert_eq!(fs::read(root.join("a.part")).unwrap(), b"immutable");
        assert_eq!((copy.report.files_linked, copy.report.files_copied), (0, 1));
        assert_eq!(copy.report.bytes_copied, 9);
        let other = |_: &Path, _: &Path| Err(std::io::Error::from(ErrorKind::NotFound));
        assert!(copy
            .link_or_copy_with(&from, Path::new("b.part"), other)
            .is_err());
    }

    #[test]
    fn only_the_snapshots_folder_of_a_store_takes_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        fs::create_dir_all(store.join("parts")).unwrap();
        for bad in [
            store.clone(),
            store.join("parts"),
            store.join("parts/x"),
            store.join(SNAPSHOTS_DIR),
        ] {
            assert!(allowed(&store, &bad).is_err(), "{}", bad.display());
        }
        let dotted = store.join("snapshots/../parts/x");
        assert!(allowed(&store, &dotted).is_err());
        assert!(allowed(&store, &store.join("snapshots/x")).is_ok());
        assert!(allowed(&store, &dir.path().join("elsewhere/x")).is_ok());
    }
}
