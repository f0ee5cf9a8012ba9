//! The single writer thread and its group commit.
//!
//! Every change to the store goes through one thread. It takes every job waiting in its
//! queue and applies them all as one group: points are staged (`values::stage`), bucket
//! writes go into one redb write transaction, and each write job becomes one write-ahead
//! log frame carrying its points and its bucket writes (rollups included). Then, in this
//! order: the frames are appended and fsynced, the transaction commits, the staged points
//! become readable, and every job is answered. Concurrent requests share one fsync.
//!
//! The redb commit is durable only when the group holds a change that is not in the log
//! (a registration, a token, a pre-allocation, a partition drop); otherwise the log is
//! what makes the group durable, and `meta.wal.applied_lsn`, committed with the bucket
//! writes, tells a replay which frames' bucket writes redb already holds.
//!
//! The transaction rule: a group commits whole or not at all. Any error while applying
//! any job of the group — whatever its kind — aborts it before anything is written (the
//! transaction is dropped, the stage discarded) and answers every job of the group with
//! an error: the job that failed with its own, the others with a retryable "not stored".
//! Nothing of an aborted group is ever readable.
//!
//! When the log or redb itself fails to write, the writer is *poisoned*: it refuses every
//! later job until the store is reopened, because what the files hold after a failed
//! write is known only to recovery (the log's torn tail is cut, redb rolls back).

mod job;

pub use job::Job;

use crate::buckets::{self, ValidWrite};
use crate::catalog::{Catalog, Pending};
use crate::databases;
use crate::names;
use crate::series_keys;
use crate::tables::{META, NEXT_SERIES_ID};
use crate::values::background::Task;
use crate::values::manifest::{self, APPLIED_LSN};
use crate::values::record;
use crate::values::stage::Stage;
use crate::values::wal::{Frame, Wal};
use crate::values::{Frozen, Values};
use job::{Aborted, Answer, MAX_POINTS_PER_COMMIT};
use redb::{Database, Durability, ReadableTable, WriteTransaction};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use tickertape_backend::{BackendError, DeriveRollups, RawOutcome, Result, SeriesAppend};
use tickertape_core::SeriesId;
use tickertape_core::SeriesKey;
use tokio::sync::{mpsc, oneshot};

/// What the writer needs besides its queue.
pub struct WriterParts {
    pub db: Arc<Database>,
    pub catalog: Arc<Catalog>,
    pub values: Arc<Values>,
    pub wal: Wal,
    /// Freeze the head when it holds this many points.
    pub head_limit: usize,
    /// The head is frozen once its first point is this old.
    pub head_age: std::time::Duration,
    pub background: SyncSender<Task>,
    /// Set by the background thread when its work failed.
    pub background_failed: Arc<Mutex<Option<String>>>,
}

pub struct Writer {
    parts: WriterParts,
    /// The current group's points, published once the group is durable.
    stage: Stage,
    /// The current group's log frames, one per write job.
    frames: Vec<Vec<u8>>,
    /// The current group wrote to the redb transaction.
    redb_dirty: bool,
    /// The current group holds a redb change that is not in the log.
    needs_durable_commit: bool,
    /// When the head's first point was seen (`None` while the head is empty).
    head_started: Option<std::time::Instant>,
    /// Non-durable redb commits since the last durable one.
    lazy_commits: u32,
    poisoned: Option<String>,
}

/// redb frees the pages a commit replaced only at a durable commit: after this many
/// non-durable ones the next commit is durable (one fsync), or the file grows without
/// bound under a steady stream of rollup merges (measured on 8.64M points with the 1h
/// and 1d rollups: never durable 1.8 GB; every 16th 100.6 MB; see docs/BENCHMARKS.md).
const LAZY_COMMITS: u32 = 4;

impl Writer {
    pub fn new(parts: WriterParts) -> Self {
        Self {
            parts,
            stage: Stage::default(),
            frames: Vec::new(),
            redb_dirty: false,
            needs_durable_commit: false,
            head_started: None,
            lazy_commits: 0,
            poisoned: None,
        }
    }

    /// Replays the log frames after the checkpoint: their points into the head, their
    /// bucket writes into redb where `applied_lsn` says redb lacks them. Called once, at
    /// open, before any job.
    pub fn replay(&mut self, frames: Vec<Frame>) -> Result<()> {
        let Some(last) = frames.last().map(|f| f.lsn) else {
            return Ok(());
        };
        let applied = manifest::meta(&self.parts.db, APPLIED_LSN)?.unwrap_or(0);
        let txn = self.parts.db.begin_write().map_err(storage)?;
        let mut points = 0usize;
        for frame in &frames {
            let record = record::decode(frame.lsn, &frame.payload)?;
            {
                let view = self.parts.values.view();
                for (series, batch) in &record.appends {
                    points += batch.len();
                    self.stage.append(&view, *series, batch);
                }
            }
            if frame.lsn > applied && !record.writes.is_empty() {
                buckets::apply_writes(&txn, &record.writes)?;
            }
        }
        manifest::set_meta(&txn, APPLIED_LSN, last.max(applied))?;
        txn.commit().map_err(storage)?;
        std::mem::take(&mut self.stage).publish(&mut self.parts.values.view_mut());
        tracing::info!(
            frames = frames.len(),
            points,
            "replayed the write-ahead log"
        );
        Ok(())
    }

    /// Runs until every sender is dropped; then freezes the head so that the background
    /// thread checkpoints it (a clean shutdown leaves nothing to replay).
    pub fn run(mut self, mut queue: mpsc::Receiver<Job>) {
        let mut pending_control = None;
        loop {
            let first = match pending_control.take() {
                Some(job) => job,
                None => match queue.blocking_recv() {
                    Some(job) => job,
                    None => break,
                },
            };
            if first.is_control() {
                self.control(first);
                continue;
            }
            let mut group = vec![first];
            let mut points = group[0].points();
            while points < MAX_POINTS_PER_COMMIT {
                match queue.try_recv() {
                    Ok(job) if job.is_control() => {
                        pending_control = Some(job);
                        break;
                    }
                    Ok(job) => {
                        points += job.points();
                        group.push(job);
                    }
                    Err(_) => break,
                }
            }
            self.commit_group(group);
            self.freeze_if_full();
        }
        if self.poisoned.is_none() {
            if let Err(e) = self.freeze() {
                tracing::warn!(error = %e, "cannot checkpoint the head at shutdown; the log keeps it");
            }
        }
    }

    /// Background work, in order after the writes before it.
    fn control(&mut self, job: Job) {
        if let Some(reason) = self.refusal() {
            return job.fail(BackendError::Storage(reason));
        }
        match job {
            Job::Compact { reply } => {
                if let Err(e) = self.freeze() {
                    self.poison(&e);
                    return drop(reply.send(Err(e)));
                }
                self.send(Task::Compact(reply));
            }
            Job::DropExpired {
                expiries,
                dry_run,
                reply,
            } => self.send(Task::DropExpired {
                expiries,
                dry_run,
                reply,
            }),
            Job::Delete {
                series,
                range,
                reply,
            } => {
                // The heads first, so that every head frozen from now on records them.
                let heads =
                    crate::values::delete::retreat_heads(&self.parts.values, &series, range);
                let heads = match heads {
                    Ok(heads) => heads,
                    Err(e) => return drop(reply.send(Err(e))),
                };
                // Every acknowledged point goes to parts, which the delete rewrites.
                if let Err(e) = self.freeze() {
                    self.poison(&e);
                    return drop(reply.send(Err(e)));
                }
                self.send(Task::Delete {
                    series,
                    range,
                    heads,
                    reply,
                });
            }
            Job::RemoveSeries { series, reply } => {
                let result = series_keys::remove(&self.parts.db, &self.parts.catalog, &series);
                drop(reply.send(result));
            }
            Job::Snapshot {
                target,
                now_ns,
                reply,
            } => self.send(Task::Snapshot {
                target,
                now_ns,
                reply,
            }),
            other => other.fail(BackendError::Storage("not a control job".into())),
        }
    }

    /// Hands a task to the background thread, waiting while it is behind (backpressure).
    fn send(&self, task: Task) {
        if let Err(std::sync::mpsc::SendError(task)) = self.parts.background.send(task) {
            task.fail(BackendError::Storage(
                "the background thread has stopped".into(),
            ));
        }
    }

    /// Freezes the head when it holds `head_limit` points or its first is `head_age` old.
    fn freeze_if_full(&mut self) {
        let points = self.parts.values.view().head.len();
        let started = match (points, self.head_started) {
            (0, _) => None,
            (_, None) => Some(std::time::Instant::now()),
            (_, started) => started,
        };
        self.head_started = started;
        let old = started.is_some_and(|t| t.elapsed() >= self.parts.head_age);
        let full = points >= self.parts.head_limit || old;
        if full && self.poisoned.is_none() {
            if let Err(e) = self.freeze() {
                self.poison(&e);
            }
        }
    }

    /// Moves the head to the frozen list, starts a new log file and asks the background
    /// thread to flush it. The head's points stay readable throughout.
    fn freeze(&mut self) -> Result<()> {
        let frozen = {
            let mut view = self.parts.values.view_mut();
            if view.head.is_empty() {
                return Ok(());
            }
            let frozen = Arc::new(Frozen {
                head: std::mem::take(&mut view.head),
                lsn: self.parts.wal.next_lsn() - 1,
                latest: view.latest.clone(),
            });
            view.frozen.push(frozen.clone());
            frozen
        };
        self.parts.wal.rotate()?;
        self.send(Task::Flush(frozen));
        Ok(())
    }

    /// Why writes are refused, if they are.
    fn refusal(&self) -> Option<String> {
        if let Some(reason) = &self.poisoned {
            return Some(format!("the store refused writes after an earlier failure ({reason}); restart to reopen it"));
        }
        let failed = self
            .parts
            .background_failed
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        failed.as_ref().map(|reason| {
            format!("the store refused writes after a background flush failed ({reason}); restart to reopen it")
        })
    }

    fn poison(&mut self, error: &BackendError) {
        tracing::error!(%error, "a write failed; refusing further writes");
        self.poisoned = Some(error.to_string());
    }

    fn commit_group(&mut self, group: Vec<Job>) {
        if let Some(reason) = self.refusal() {
            for job in group {
                job.fail(BackendError::Storage(reason.clone()));
            }
            return;
        }
        let mut registered = Pending::default();
        match self.apply_group(group, &mut registered) {
            Ok(answers) => {
                if let Err(error) = registered.commit_to(&self.parts.catalog) {
                    // Committed but not in memory: the catalog no longer mirrors the file.
                    self.poison(&error);
                }
                std::mem::take(&mut self.stage).publish(&mut self.parts.values.view_mut());
                for answer in answers {
                    answer.deliver();
                }
            }
            Err(aborted) => self.abort(aborted),
        }
        self.frames.clear();
        self.redb_dirty = false;
        self.needs_durable_commit = false;
    }

    /// Forgets what the aborted group changed and tells every caller.
    fn abort(&mut self, aborted: Aborted) {
        let Aborted {
            error,
            poison,
            answers,
        } = aborted;
        self.stage = Stage::default();
        let told = if poison {
            self.poison(&error);
            BackendError::Storage(format!("write not stored: {error}"))
        } else {
            tracing::warn!(%error, "a write group was aborted; nothing of it was stored");
            BackendError::Unavailable(format!(
                "write not stored: a request in the same transaction failed ({error}); retry"
            ))
        };
        for answer in answers {
            answer.fail(told.clone());
        }
    }

    /// Applies every job, then makes the group durable: log frames fsynced, then the redb
    /// transaction committed. Aborts at the first job that fails (module docs).
    fn apply_group(
        &mut self,
        group: Vec<Job>,
        registered: &mut Pending,
    ) -> std::result::Result<Vec<Answer>, Aborted> {
        let mut answers = Vec::with_capacity(group.len());
        let mut txn = match self.parts.db.begin_write() {
            Ok(txn) => txn,
            Err(e) => {
                answers.extend(group.into_iter().map(Job::unanswered));
                return Err(Aborted {
                    error: storage(e),
                    poison: true,
                    answers,
                });
            }
        };
        let mut failure = None;
        for job in group {
            if failure.is_some() {
                // The group is lost already: the rest of it is not applied.
                answers.push(job.unanswered());
                continue;
            }
            let (answer, error) = self.apply_job(&txn, job, registered);
            answers.push(answer);
            failure = error;
        }
        let last_lsn = self.parts.wal.next_lsn() + self.frames.len() as u64 - 1;
        if failure.is_none() && self.redb_dirty && !self.frames.is_empty() {
            failure = manifest::set_meta(&txn, APPLIED_LSN, last_lsn).err();
        }
        if let Some(error) = failure {
            // Dropping `txn` uncommitted leaves the file as it was; nothing was logged.
            return Err(Aborted {
                error,
                poison: false,
                answers,
            });
        }
        let durable = |result: Result<()>, answers: Vec<Answer>| match result {
            Ok(()) => Ok(answers),
            Err(error) => Err(Aborted {
                error,
                poison: true,
                answers,
            }),
        };
        if !self.frames.is_empty() {
            let logged = self.parts.wal.append(&self.frames).map(drop);
            if logged.is_err() {
                return durable(logged, answers);
            }
        }
        if !self.redb_dirty && !self.needs_durable_commit {
            // Nothing in redb to commit; dropping the transaction is its cheap abort.
            return Ok(answers);
        }
        let sync = self.needs_durable_commit || self.lazy_commits >= LAZY_COMMITS;
        self.lazy_commits = if sync { 0 } else { self.lazy_commits + 1 };
        txn.set_durability(match sync {
            true => Durability::Immediate,
            false => Durability::None,
        });
        durable(txn.commit().map_err(storage), answers)
    }

    /// Applies one job: its answer, and its error when it failed (which aborts the group,
    /// whatever the error).
    fn apply_job(
        &mut self,
        txn: &WriteTransaction,
        job: Job,
        registered: &mut Pending,
    ) -> (Answer, Option<BackendError>) {
        fn answered<T: Send + 'static>(
            reply: oneshot::Sender<Result<T>>,
            result: Result<T>,
        ) -> (Answer, Option<BackendError>) {
            let error = result.as_ref().err().cloned();
            (Answer::new(reply, result), error)
        }
        if !matches!(
            job,
            Job::Append { .. } | Job::WriteBuckets { .. } | Job::WriteWithRollups { .. }
        ) {
            self.needs_durable_commit = true;
        }
        match job {
            Job::Append { appends, reply } => {
                self.stage_appends(&appends);
                self.frames.push(record::encode(&appends, &[]));
                answered(reply, Ok(()))
            }
            Job::Register { keys, reply } => answered(reply, self.register(txn, &keys, registered)),
            Job::WriteBuckets { writes, reply } => {
                self.redb_dirty = true;
                let result = buckets::apply_writes(txn, &writes);
                if result.is_ok() {
                    self.frames.push(record::encode(&[], &writes));
                }
                answered(reply, result)
            }
            Job::WriteWithRollups {
                appends,
                buckets,
                derive,
                reply,
            } => answered(
                reply,
                self.write_with_rollups(txn, &appends, buckets, derive),
            ),
            Job::Preallocate { targets, reply } => {
                answered(reply, buckets::preallocate(txn, &targets))
            }
            Job::DropPartition { table, reply } => {
                answered(reply, buckets::drop_partition(txn, &table))
            }
            Job::Tokenize {
                namespace,
                names,
                reply,
            } => answered(reply, names::issue(txn, namespace, &names)),
            Job::Database { change, reply } => answered(reply, databases::apply(txn, &change)),
            job @ (Job::Compact { .. }
            | Job::DropExpired { .. }
            | Job::Delete { .. }
            | Job::RemoveSeries { .. }
            | Job::Snapshot { .. }) => {
                let error = BackendError::Storage("a control job reached a write group".into());
                (job.unanswered(), Some(error))
            }
        }
    }

    fn stage_appends(&mut self, appends: &[SeriesAppend]) {
        let view = self.parts.values.view();
        for a in appends {
            self.stage.append(&view, a.series(), a.points());
        }
    }

    /// The ids of `keys`, registering those never seen: ids from the `next_series_id`
    /// counter, records written in one batch ([`series_keys::write`]). Keys registered
    /// earlier in this group are in `registered`, not yet in the catalog.
    fn register(
        &mut self,
        txn: &WriteTransaction,
        keys: &[SeriesKey],
        registered: &mut Pending,
    ) -> Result<Vec<SeriesId>> {
        if let Some(ids) = self.parts.catalog.lookup(keys) {
            return Ok(ids);
        }
        let mut meta = txn.open_table(META).map_err(storage)?;
        let mut next = meta
            .get(NEXT_SERIES_ID)
            .map_err(storage)?
            .map_or(1, |v| v.value());
        let ids = registered.register(&self.parts.catalog, keys, &mut next)?;
        meta.insert(NEXT_SERIES_ID, next).map_err(storage)?;
        // The name store opens `meta` too: a redb table is open once per transaction.
        drop(meta);
        series_keys::write(txn, registered.unwritten())?;
        Ok(ids)
    }

    /// Raw writes, then the rollups `derive` computes from their outcome; one log frame
    /// carries them all, so a replay restores points and rollups together. Any error
    /// aborts the group (module docs), so raw points never become durable without their
    /// rollups.
    fn write_with_rollups(
        &mut self,
        txn: &WriteTransaction,
        appends: &[SeriesAppend],
        raw_buckets: Vec<ValidWrite>,
        derive: DeriveRollups,
    ) -> Result<RawOutcome> {
        self.stage_appends(appends);
        let raw = match raw_buckets.is_empty() {
            true => Vec::new(),
            false => {
                self.redb_dirty = true;
                buckets::apply_writes(txn, &raw_buckets)?
            }
        };
        let outcome = RawOutcome { buckets: raw };
        let rollups = buckets::targets(derive(&outcome)?);
        if !rollups.is_empty() {
            self.redb_dirty = true;
            buckets::apply_writes(txn, &rollups)?;
        }
        let mut writes = raw_buckets;
        writes.extend(rollups);
        self.frames.push(record::encode(appends, &writes));
        Ok(outcome)
    }
}

pub fn storage(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}
