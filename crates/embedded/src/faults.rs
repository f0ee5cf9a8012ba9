//! Fault injection: a redb storage backend and a write-ahead log that fail on a countdown,
//! as redb's own fuzzer tests itself. It exists so that tests can drive the writer into
//! its sticky failure with a real I/O error (`tests/sticky_failure.rs`); a store opened
//! without
//! [`EmbeddedOptions::io_faults`](crate::EmbeddedOptions::io_faults) never goes through it.

use redb::backends::FileBackend;
use redb::StorageBackend;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A switch shared between a test and the store it opened: once armed, the next `budget`
/// writes, syncs and resizes of the data file and the log succeed and every later one
/// fails, until healed.
#[derive(Clone, Debug, Default)]
pub struct IoFaults {
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    armed: AtomicBool,
    budget: AtomicU64,
}

impl IoFaults {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `budget` more changes of the file through, then fails every one after.
    pub fn fail_after(&self, budget: u64) {
        self.state.budget.store(budget, Ordering::SeqCst);
        self.state.armed.store(true, Ordering::SeqCst);
    }

    /// Lets every change through again (the disk came back).
    pub fn heal(&self) {
        self.state.armed.store(false, Ordering::SeqCst);
    }

    pub(crate) fn check(&self, what: &str) -> io::Result<()> {
        if !self.state.armed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let spent = self
            .state
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1));
        match spent {
            Ok(_) => Ok(()),
            Err(_) => Err(io::Error::other(format!("injected fault: {what} failed"))),
        }
    }
}

/// redb's file backend with [`IoFaults`] in front of every change; reads always work.
#[derive(Debug)]
pub(crate) struct FaultyFile {
    file: FileBackend,
    faults: IoFaults,
}

impl FaultyFile {
    pub(crate) fn new(file: FileBackend, faults: IoFaults) -> Self {
        Self { file, faults }
    }
}

impl StorageBackend for FaultyFile {
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn read(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.file.read(offset, len)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.faults.check("resize")?;
        self.file.set_len(len)
    }

    fn sync_data(&self, eventual: bool) -> io::Result<()> {
        self.faults.check("fsync")?;
        self.file.sync_data(eventual)
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.faults.check("write")?;
        self.file.write(offset, data)
    }
}
