//! What the writer is asked to do, and how each job is answered once its group is
//! durable or aborted.

use crate::buckets::{Target, ValidWrite};
use crate::databases::DatabaseChange;
use tickertape_backend::{
    BackendError, BucketWriteOutcome, DeleteRange, DeriveRollups, DroppedPartitions, Expiry,
    NameKind, RawOutcome, Result, SeriesAppend, SnapshotReport, SnapshotTarget,
};
use tickertape_core::{SeriesId, SeriesKey};
use tokio::sync::oneshot;

/// Upper bound on the points applied in one group, so a burst of requests cannot make
/// one commit (and the latency of everyone waiting on it) arbitrarily large.
pub const MAX_POINTS_PER_COMMIT: usize = 2_000_000;

/// One request to the writer. Every write is answered only after the group that applied
/// it is durable (or with the error that stopped it).
pub enum Job {
    Append {
        appends: Vec<SeriesAppend>,
        reply: oneshot::Sender<Result<()>>,
    },
    Register {
        keys: Vec<SeriesKey>,
        reply: oneshot::Sender<Result<Vec<SeriesId>>>,
    },
    WriteBuckets {
        writes: Vec<ValidWrite>,
        reply: oneshot::Sender<Result<Vec<BucketWriteOutcome>>>,
    },
    /// Raw points and the rollups derived from what they stored, in one group and one
    /// log frame.
    WriteWithRollups {
        appends: Vec<SeriesAppend>,
        buckets: Vec<ValidWrite>,
        derive: DeriveRollups,
        reply: oneshot::Sender<Result<RawOutcome>>,
    },
    Preallocate {
        targets: Vec<Target>,
        reply: oneshot::Sender<Result<u64>>,
    },
    DropPartition {
        /// The partition's table name.
        table: String,
        reply: oneshot::Sender<Result<()>>,
    },
    Tokenize {
        namespace: NameKind,
        /// Names a read found missing, each once, in the order first seen.
        names: Vec<String>,
        reply: oneshot::Sender<Result<Vec<u64>>>,
    },
    /// A database created or dropped (`DatabaseCatalog`); answers whether the list changed.
    Database {
        change: DatabaseChange,
        reply: oneshot::Sender<Result<bool>>,
    },
    /// Not a write: freeze the head and have the background thread flush and merge
    /// everything; answered when it has.
    Compact { reply: oneshot::Sender<Result<()>> },
    /// Not a write: have the background thread drop the raw points or rollups of old
    /// partitions that `expiries` name (`values/retention.rs`).
    DropExpired {
        expiries: Vec<Expiry>,
        dry_run: bool,
        reply: oneshot::Sender<Result<Vec<DroppedPartitions>>>,
    },
    /// Not a write: delete points of `series` in `range` (`values/delete.rs`).
    Delete {
        series: Vec<SeriesId>,
        range: DeleteRange,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Not a write: remove series from the catalog, durably.
    RemoveSeries {
        series: Vec<SeriesId>,
        reply: oneshot::Sender<Result<u64>>,
    },
    /// Not a write: have the background thread copy the store into a snapshot
    /// (`snapshot.rs`), after the writes before it.
    Snapshot {
        target: SnapshotTarget,
        /// The UTC time that names a new snapshot directory.
        now_ns: i64,
        reply: oneshot::Sender<Result<SnapshotReport>>,
    },
}

impl Job {
    /// The job's weight against [`MAX_POINTS_PER_COMMIT`]: roughly, records it writes.
    pub fn points(&self) -> usize {
        match self {
            Job::Append { appends, .. } => appends.iter().map(|a| a.points().len()).sum(),
            Job::Register { keys, .. } => keys.len(),
            Job::WriteBuckets { writes, .. } => writes.len(),
            Job::WriteWithRollups {
                appends, buckets, ..
            } => appends.iter().map(|a| a.points().len()).sum::<usize>() + buckets.len(),
            Job::Preallocate { targets, .. } => targets.len(),
            Job::Tokenize { names, .. } => names.len(),
            Job::Database { .. } => 1,
            Job::DropPartition { .. }
            | Job::Compact { .. }
            | Job::DropExpired { .. }
            | Job::Delete { .. }
            | Job::RemoveSeries { .. }
            | Job::Snapshot { .. } => 1,
        }
    }

    /// Whether the job is background work rather than a change to apply in a group.
    pub fn is_control(&self) -> bool {
        matches!(
            self,
            Job::Compact { .. }
                | Job::DropExpired { .. }
                | Job::Delete { .. }
                | Job::RemoveSeries { .. }
                | Job::Snapshot { .. }
        )
    }

    /// Answers the job with `error` at once.
    pub fn fail(self, error: BackendError) {
        self.unanswered().fail(error)
    }

    /// The answer of a job that was not applied: it can only fail.
    pub fn unanswered(self) -> Answer {
        match self {
            Job::Append { reply, .. } => Answer::unapplied(reply),
            Job::Register { reply, .. } => Answer::unapplied(reply),
            Job::WriteBuckets { reply, .. } => Answer::unapplied(reply),
            Job::WriteWithRollups { reply, .. } => Answer::unapplied(reply),
            Job::Preallocate { reply, .. } => Answer::unapplied(reply),
            Job::DropPartition { reply, .. } => Answer::unapplied(reply),
            Job::Tokenize { reply, .. } => Answer::unapplied(reply),
            Job::Database { reply, .. } => Answer::unapplied(reply),
            Job::Compact { reply } => Answer::unapplied(reply),
            Job::DropExpired { reply, .. } => Answer::unapplied(reply),
            Job::Delete { reply, .. } => Answer::unapplied(reply),
            Job::RemoveSeries { reply, .. } => Answer::unapplied(reply),
            Job::Snapshot { reply, .. } => Answer::unapplied(reply),
        }
    }
}

/// What a job produced, held until the commit succeeds: a reply channel and its result,
/// type-erased so that every kind of job waits in one list.
pub struct Answer(Box<dyn FnOnce(Option<BackendError>) + Send>);

impl Answer {
    pub fn new<T: Send + 'static>(reply: oneshot::Sender<Result<T>>, result: Result<T>) -> Self {
        Self(Box::new(move |failure| {
            // A dropped receiver means the caller went away; nothing to tell.
            drop(reply.send(match (failure, result) {
                (None, result) => result,
                // The job's own error says best what went wrong with it.
                (Some(_), Err(own)) => Err(own),
                (Some(group), Ok(_)) => Err(group),
            }))
        }))
    }

    /// The answer of a job that was never applied.
    pub fn unapplied<T: Send + 'static>(reply: oneshot::Sender<Result<T>>) -> Self {
        Self(Box::new(move |failure| {
            let error =
                failure.unwrap_or_else(|| BackendError::Unavailable("write not applied".into()));
            drop(reply.send(Err(error)))
        }))
    }

    /// Sends the job's own result (after a durable commit).
    pub fn deliver(self) {
        (self.0)(None)
    }

    /// The group was not committed: sends the job's own error if it had one, else `error`.
    pub fn fail(self, error: BackendError) {
        (self.0)(Some(error))
    }
}

/// Why a group was not committed.
pub struct Aborted {
    pub error: BackendError,
    /// redb could not begin or commit: the writer must refuse writes until reopened.
    pub poison: bool,
    pub answers: Vec<Answer>,
}
