//! The write-ahead log: every acknowledged write, framed and checksummed, fsynced before
//! the writer answers. Its byte layout is in `docs/format/embedded.md`.
//!
//! The log is a folder of files named by the sequence number (LSN) of their first frame,
//! `wal/00000000000000000001.wal`. The writer appends one group's frames with one
//! `write` and one `fdatasync`, and starts a new file whenever it freezes the head; once
//! the frozen head is in part files (a *checkpoint*), the files before the new one are
//! deleted. Frames:
//!
//! ```text
//! length u32 LE (of lsn + payload) · crc32 u32 LE (of lsn + payload) · lsn u64 LE · payload
//! ```
//!
//! Invariant: LSNs increase by one from frame to frame across files. A crash can leave a
//! torn frame only at the end of the last file; opening cuts the file there. A bad frame
//! anywhere else is corruption, reported with its file and offset, never skipped.

use crate::faults::IoFaults;
use crate::writer::storage;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use tickertape_backend::{BackendError, Result};

/// The folder inside the store directory.
pub const WAL_DIR: &str = "wal";
const SUFFIX: &str = ".wal";
/// Frame header: length and crc.
const HEADER: usize = 8;
/// A frame longer than this is not one the writer makes (a group's records stay far
/// below it): its length field is garbage.
const MAX_FRAME: usize = 1 << 31;

/// One decoded frame.
pub struct Frame {
    pub lsn: u64,
    pub payload: Vec<u8>,
}

/// The open log: the file frames are appended to.
pub struct Wal {
    dir: PathBuf,
    file: File,
    /// The LSN the next frame gets.
    next_lsn: u64,
    /// Tests only: fail writes and syncs on a countdown.
    faults: Option<IoFaults>,
}

impl Wal {
    /// Reads every frame after `checkpoint` (the LSN up to which everything is in part
    /// files), cutting a torn tail off the last file, and opens a new file for appends.
    pub fn open(store: &Path, checkpoint: u64) -> Result<(Self, Vec<Frame>)> {
        let dir = store.join(WAL_DIR);
        fs::create_dir_all(&dir)
            .map_err(|e| storage(format!("cannot create {}: {e}", dir.display())))?;
        let files = wal_files(&dir)?;
        let mut frames = Vec::new();
        let mut next_lsn = checkpoint + 1;
        for (i, (first, path)) in files.iter().enumerate() {
            let last_file = i + 1 == files.len();
            let read = read_file(path, last_file)?;
            for frame in read {
                if frame.lsn <= checkpoint {
                    continue;
                }
                if frame.lsn != next_lsn {
                    return Err(BackendError::Corrupt(format!(
                        "write-ahead log {}: frame {} follows frame {} (file starts at {first})",
                        path.display(),
                        frame.lsn,
                        next_lsn - 1
                    )));
                }
                next_lsn += 1;
                frames.push(frame);
            }
        }
        let file = create_file(&dir, next_lsn)?;
        Ok((
            Self {
                dir,
                file,
                next_lsn,
                faults: None,
            },
            frames,
        ))
    }

    /// Puts the log's writes behind a fault switch (tests).
    pub fn with_faults(mut self, faults: Option<IoFaults>) -> Self {
        self.faults = faults;
        self
    }

    /// The LSN the next frame will get.
    pub fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// Appends one frame per payload, in order, and makes them durable (`fdatasync`).
    /// Returns the LSN of the last. On `Err` the file may hold part of the frames: the
    /// caller must stop writing (a reopen cuts the torn tail).
    pub fn append(&mut self, payloads: &[Vec<u8>]) -> Result<u64> {
        let size: usize = payloads.iter().map(|p| HEADER + 8 + p.len()).sum();
        let mut buf = Vec::with_capacity(size);
        for payload in payloads {
            let lsn = self.next_lsn;
            self.next_lsn += 1;
            let start = buf.len();
            buf.extend_from_slice(&[0; HEADER]);
            buf.extend_from_slice(&lsn.to_le_bytes());
            buf.extend_from_slice(payload);
            let body = &buf[start + HEADER..];
            let len = body.len() as u32;
            let crc = crc32fast::hash(body);
            buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
            buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        }
        let check = |what: &str| match &self.faults {
            Some(faults) => faults.check(what),
            None => Ok(()),
        };
        check("log write")
            .and_then(|()| self.file.write_all(&buf))
            .and_then(|()| check("log fsync"))
            .and_then(|()| self.file.sync_data())
            .map_err(|e| storage(format!("write-ahead log: {e}")))?;
        Ok(self.next_lsn - 1)
    }

    /// Starts a new file: frames from now on go there. Called when the head is frozen,
    /// so that the files before hold only frames the next checkpoint covers.
    pub fn rotate(&mut self) -> Result<()> {
        self.file = create_file(&self.dir, self.next_lsn)?;
        Ok(())
    }

    /// Deletes the files whose frames are all at or before `checkpoint`.
    pub fn remove_through(store: &Path, checkpoint: u64) -> Result<()> {
        let dir = store.join(WAL_DIR);
        let files = wal_files(&dir)?;
        // A file holds the frames from its first LSN to the next file's first LSN - 1.
        for pair in files.windows(2) {
            if pair[1].0 <= checkpoint + 1 {
                fs::remove_file(&pair[0].1)
                    .map_err(|e| storage(format!("cannot remove {}: {e}", pair[0].1.display())))?;
            }
        }
        Ok(())
    }
}

/// The log's files by first LSN.
fn wal_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut files = Vec::new();
    let entries =
        fs::read_dir(dir).map_err(|e| storage(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(|e| storage(format!("cannot list {}: {e}", dir.display())))?;
        let name = entry.file_name();
        let Some(first) = name
            .to_str()
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        files.push((first, entry.path()));
    }
    files.sort();
    Ok(files)
}

fn create_file(dir: &Path, first_lsn: u64) -> Result<File> {
    let path = dir.join(format!("{first_lsn:020}{SUFFIX}"));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| storage(format!("cannot create {}: {e}", path.display())))?;
    // The new name must survive a crash before the first frame in it counts.
    sync_dir(dir)?;
    Ok(file)
}

/// Makes a folder's entries (created, renamed, removed files) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| storage(format!("cannot sync folder {}: {e}", dir.display())))
}

/// The frames of one file. In the last file a torn or bad frame ends the log: the file is
/// cut there. Anywhere else it is corruption.
fn read_file(path: &Path, last_file: bool) -> Result<Vec<Frame>> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| storage(format!("cannot read {}: {e}", path.display())))?;
    let mut frames = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match decode_frame(&bytes[at..]) {
            Some((frame, used)) => {
                frames.push(frame);
                at += used;
            }
            None if last_file => {
                tracing::warn!(
                    file = %path.display(),
                    offset = at,
                    cut = bytes.len() - at,
                    "cutting a torn write-ahead log tail (a write that was never acknowledged)"
                );
                let file = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .and_then(|f| f.set_len(at as u64).and_then(|()| f.sync_all()));
                file.map_err(|e| storage(format!("cannot cut {}: {e}", path.display())))?;
                break;
            }
            None => {
                return Err(BackendError::Corrupt(format!(
                    "write-ahead log {} has a bad frame at offset {at}; it is not the last \
                     file, so this is not a torn write",
                    path.display()
                )))
            }
        }
    }
    Ok(frames)
}

/// One frame from the start of `bytes` and its size, or `None` if it is torn or bad.
fn decode_frame(bytes: &[u8]) -> Option<(Frame, usize)> {
    let len = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
    if !(8..=MAX_FRAME).contains(&len) {
        return None;
    }
    let body = bytes.get(HEADER..HEADER + len)?;
    if crc32fast::hash(body) != crc {
        return None;
    }
    let lsn = u64::from_le_bytes(body[..8].try_into().ok()?);
    Some((
        Frame {
            lsn,
            payload: body[8..].to_vec(),
        },
        HEADER + len,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| vec![i as u8; i + 1]).collect()
    }

    #[test]
    fn frames_come_back_after_reopen_and_checkpointed_ones_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, old) = Wal::open(dir.path(), 0).unwrap();
        assert!(old.is_empty());
        assert_eq!(wal.append(&payloads(3)).unwrap(), 3);
        wal.rotate().unwrap();
        assert_eq!(wal.append(&payloads(2)).unwrap(), 5);
        drop(wal);
        let (wal, frames) = Wal::open(dir.path(), 2).unwrap();
        let lsns: Vec<u64> = frames.iter().map(|f| f.lsn).collect();
        assert_eq!(lsns, vec![3, 4, 5]);
        assert_eq!(frames[0].payload, vec![2, 2, 2]);
        assert_eq!(wal.next_lsn(), 6);
    }

    #[test]
    fn a_torn_tail_is_cut_at_the_last_good_frame() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 0).unwrap();
        wal.append(&payloads(4)).unwrap();
        drop(wal);
        let (_, path) = wal_files(&dir.path().join(WAL_DIR)).unwrap().remove(0);
        let full = fs::metadata(&path).unwrap().len();
        // Every cut inside the last frame loses that frame only.
        for cut in 1..(HEADER as u64 + 8 + 4) {
            let copy = tempfile::tempdir().unwrap();
            fs::create_dir_all(copy.path().join(WAL_DIR)).unwrap();
            let target = copy.path().join(WAL_DIR).join(path.file_name().unwrap());
            fs::copy(&path, &target).unwrap();
            OpenOptions::new()
                .write(true)
                .open(&target)
                .unwrap()
                .set_len(full - cut)
                .unwrap();
            let (wal, frames) = Wal::open(copy.path(), 0).unwrap();
            assert_eq!(frames.len(), 3, "cut {cut}");
            assert_eq!(wal.next_lsn(), 4);
        }
    }

    #[test]
    fn a_bad_frame_before_the_last_file_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 0).unwrap();
        wal.append(&payloads(2)).unwrap();
        wal.rotate().unwrap();
        wal.append(&payloads(1)).unwrap();
        drop(wal);
        let (_, first) = wal_files(&dir.path().join(WAL_DIR)).unwrap().remove(0);
        let mut bytes = fs::read(&first).unwrap();
        bytes[HEADER + 8] ^= 0xff;
        fs::write(&first, bytes).unwrap();
        let err = Wal::open(dir.path(), 0).err().unwrap();
        assert!(err.to_string().contains("bad frame at offset 0"), "{err}");
    }

    #[test]
    fn checkpointed_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path(), 0).unwrap();
        wal.append(&payloads(2)).unwrap();
        wal.rotate().unwrap();
        wal.append(&payloads(2)).unwrap();
        Wal::remove_through(dir.path(), 2).unwrap();
        let files = wal_files(&dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, 3);
    }
}
