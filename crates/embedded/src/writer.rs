//! The single writer thread and its group commit.
//!
//! Every change to the store goes through one thread that owns redb's write transaction.
//! It takes every job waiting in its queue, applies them all in one transaction and
//! commits once, durably, before answering any of them: concurrent requests share the
//! cost of the fsync instead of trading durability for speed.
//!
//! The transaction rule: a group commits whole or not at all. Any error while applying
//! any job of the group — whatever its kind — aborts the transaction (it is dropped
//! uncommitted), drops the cached active segments (they may hold the aborted changes) and
//! answers every job of the group with an error: the job that failed with its own, the
//! others with a retryable "not stored". Nothing of an aborted group is ever readable.
//!
//! When redb itself cannot begin or commit a transaction, the writer is *poisoned*
//! (redb's sticky-failure habit): it refuses every later job until the store is reopened,
//! because what the file holds after a failed write is known only to redb's recovery.

use crate::buckets::{self, Target, ValidWrite};
use crate::catalog::Catalog;
use crate::names;
use crate::tables::{self, Head, HEADS, META, NEXT_SERIES_ID, SEGMENTS, SERIES_IDS, SERIES_KEYS};
use redb::{Database, ReadableTable, WriteTransaction};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use tickertape_backend::{
    AppendOutcome, BackendError, BucketWriteOutcome, DeriveRollups, NameSpace, RawOutcome, Result,
    SeriesAppend,
};
use tickertape_core::segment::{NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId, SeriesKey};
use tokio::sync::{mpsc, oneshot};

/// Upper bound on the points applied in one transaction, so a burst of requests cannot
/// make one commit (and the latency of everyone waiting on it) arbitrarily large.
const MAX_POINTS_PER_COMMIT: usize = 2_000_000;

/// One request to the writer. Every variant is answered only after the transaction that
/// applied it committed durably (or with the error that stopped it).
pub enum Job {
    Append {
        appends: Vec<SeriesAppend>,
        reply: oneshot::Sender<Result<Vec<AppendOutcome>>>,
    },
    Register {
        keys: Vec<SeriesKey>,
        reply: oneshot::Sender<Result<Vec<SeriesId>>>,
    },
    WriteBuckets {
        writes: Vec<ValidWrite>,
        reply: oneshot::Sender<Result<Vec<BucketWriteOutcome>>>,
    },
    /// Raw points and the rollups derived from what they stored, in one transaction.
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
        namespace: NameSpace,
        /// Names a read found missing, each once, in the order first seen.
        names: Vec<String>,
        reply: oneshot::Sender<Result<Vec<u64>>>,
    },
}

impl Job {
    /// The job's weight against [`MAX_POINTS_PER_COMMIT`]: roughly, records it writes.
    fn points(&self) -> usize {
        match self {
            Job::Append { appends, .. } => appends.iter().map(|a| a.points().len()).sum(),
            Job::Register { keys, .. } => keys.len(),
            Job::WriteBuckets { writes, .. } => writes.len(),
            Job::WriteWithRollups {
                appends, buckets, ..
            } => appends.iter().map(|a| a.points().len()).sum::<usize>() + buckets.len(),
            Job::Preallocate { targets, .. } => targets.len(),
            Job::DropPartition { .. } => 1,
            Job::Tokenize { names, .. } => names.len(),
        }
    }

    /// Answers the job with `error` at once.
    fn fail(self, error: BackendError) {
        self.unanswered().fail(error)
    }

    /// The answer of a job that was not applied: it can only fail.
    fn unanswered(self) -> Answer {
        match self {
            Job::Append { reply, .. } => Answer::unapplied(reply),
            Job::Register { reply, .. } => Answer::unapplied(reply),
            Job::WriteBuckets { reply, .. } => Answer::unapplied(reply),
            Job::WriteWithRollups { reply, .. } => Answer::unapplied(reply),
            Job::Preallocate { reply, .. } => Answer::unapplied(reply),
            Job::DropPartition { reply, .. } => Answer::unapplied(reply),
            Job::Tokenize { reply, .. } => Answer::unapplied(reply),
        }
    }
}

/// The active segment of a series as the writer keeps it between transactions.
struct Active {
    last: Option<Point>,
    count: u64,
    prev_end: i64,
    points: Vec<Point>,
    dirty: bool,
}

pub struct Writer {
    db: Arc<Database>,
    catalog: Arc<Catalog>,
    capacity: usize,
    active: HashMap<SeriesId, Active>,
    /// Series whose active segment changed in the current transaction.
    dirty: Vec<SeriesId>,
    poisoned: Option<String>,
}

/// What a job produced, held until the commit succeeds: a reply channel and its result,
/// type-erased so that every kind of job waits in one list.
struct Answer(Box<dyn FnOnce(Option<BackendError>) + Send>);

impl Answer {
    fn new<T: Send + 'static>(reply: oneshot::Sender<Result<T>>, result: Result<T>) -> Self {
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
    fn unapplied<T: Send + 'static>(reply: oneshot::Sender<Result<T>>) -> Self {
        Self(Box::new(move |failure| {
            let error =
                failure.unwrap_or_else(|| BackendError::Unavailable("write not applied".into()));
            drop(reply.send(Err(error)))
        }))
    }

    /// Sends the job's own result (after a durable commit).
    fn deliver(self) {
        (self.0)(None)
    }

    /// The group was not committed: sends the job's own error if it had one, else `error`.
    fn fail(self, error: BackendError) {
        (self.0)(Some(error))
    }
}

/// Why a group was not committed.
struct Aborted {
    error: BackendError,
    /// redb could not begin or commit: the writer must refuse writes until reopened.
    poison: bool,
    answers: Vec<Answer>,
}

impl Writer {
    pub fn new(db: Arc<Database>, catalog: Arc<Catalog>, capacity: usize) -> Self {
        Self {
            db,
            catalog,
            capacity,
            active: HashMap::new(),
            dirty: Vec::new(),
            poisoned: None,
        }
    }

    /// Runs until every sender is dropped.
    pub fn run(mut self, mut queue: mpsc::Receiver<Job>) {
        while let Some(first) = queue.blocking_recv() {
            let mut group = vec![first];
            let mut points = group[0].points();
            while points < MAX_POINTS_PER_COMMIT {
                match queue.try_recv() {
                    Ok(job) => {
                        points += job.points();
                        group.push(job);
                    }
                    Err(_) => break,
                }
            }
            self.commit_group(group);
        }
    }

    fn commit_group(&mut self, group: Vec<Job>) {
        if let Some(reason) = &self.poisoned {
            let msg = format!("the store refused writes after an earlier failure ({reason}); restart to reopen it");
            for job in group {
                job.fail(BackendError::Storage(msg.clone()));
            }
            return;
        }
        let mut registered = Vec::new();
        match self.apply_group(group, &mut registered) {
            Ok(answers) => {
                self.catalog.insert_all(registered);
                for answer in answers {
                    answer.deliver();
                }
            }
            Err(aborted) => self.abort(aborted),
        }
    }

    /// Forgets what the aborted group changed and tells every caller.
    fn abort(&mut self, aborted: Aborted) {
        let Aborted {
            error,
            poison,
            answers,
        } = aborted;
        self.active.clear();
        self.dirty.clear();
        let told = if poison {
            tracing::error!(%error, "write transaction failed; refusing further writes");
            self.poisoned = Some(error.to_string());
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

    /// Applies every job in one transaction and commits it, or aborts at the first job
    /// that fails (see the module docs for the rule).
    fn apply_group(
        &mut self,
        group: Vec<Job>,
        registered: &mut Vec<(SeriesKey, SeriesId)>,
    ) -> std::result::Result<Vec<Answer>, Aborted> {
        let mut answers = Vec::with_capacity(group.len());
        let txn = match self.db.begin_write() {
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
                // The transaction is lost already: the rest of the group is not applied.
                answers.push(job.unanswered());
                continue;
            }
            let (answer, error) = self.apply_job(&txn, job, registered);
            answers.push(answer);
            failure = error;
        }
        let failure = failure.or_else(|| self.flush_active(&txn).err());
        if let Some(error) = failure {
            // Dropping `txn` uncommitted leaves the file as it was.
            return Err(Aborted {
                error,
                poison: false,
                answers,
            });
        }
        match txn.commit() {
            Ok(()) => Ok(answers),
            Err(e) => Err(Aborted {
                error: storage(e),
                poison: true,
                answers,
            }),
        }
    }

    /// Applies one job in `txn`: its answer, and its error when it failed (which aborts
    /// the group, whatever the error).
    fn apply_job(
        &mut self,
        txn: &WriteTransaction,
        job: Job,
        registered: &mut Vec<(SeriesKey, SeriesId)>,
    ) -> (Answer, Option<BackendError>) {
        fn answered<T: Send + 'static>(
            reply: oneshot::Sender<Result<T>>,
            result: Result<T>,
        ) -> (Answer, Option<BackendError>) {
            let error = result.as_ref().err().cloned();
            (Answer::new(reply, result), error)
        }
        match job {
            Job::Append { appends, reply } => answered(reply, self.append_all(txn, &appends)),
            Job::Register { keys, reply } => answered(reply, self.register(txn, &keys, registered)),
            Job::WriteBuckets { writes, reply } => {
                answered(reply, buckets::apply_writes(txn, &writes))
            }
            Job::WriteWithRollups {
                appends,
                buckets,
                derive,
                reply,
            } => answered(
                reply,
                self.write_with_rollups(txn, &appends, &buckets, derive),
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
        }
    }

    fn register(
        &mut self,
        txn: &WriteTransaction,
        keys: &[SeriesKey],
        registered: &mut Vec<(SeriesKey, SeriesId)>,
    ) -> Result<Vec<SeriesId>> {
        let mut ids_table = txn.open_table(SERIES_IDS).map_err(storage)?;
        let mut keys_table = txn.open_table(SERIES_KEYS).map_err(storage)?;
        let mut meta = txn.open_table(META).map_err(storage)?;
        let mut ids = Vec::with_capacity(keys.len());
        for key in keys {
            let encoded = tables::encode_key(key);
            if let Some(id) = ids_table.get(encoded.as_slice()).map_err(storage)? {
                ids.push(SeriesId(id.value()));
                continue;
            }
            let next = meta
                .get(NEXT_SERIES_ID)
                .map_err(storage)?
                .map_or(1, |v| v.value());
            meta.insert(NEXT_SERIES_ID, next + 1).map_err(storage)?;
            ids_table
                .insert(encoded.as_slice(), next)
                .map_err(storage)?;
            keys_table
                .insert(next, encoded.as_slice())
                .map_err(storage)?;
            registered.push((key.clone(), SeriesId(next)));
            ids.push(SeriesId(next));
        }
        Ok(ids)
    }

    /// Raw writes, then the rollups `derive` computes from their outcome, in `txn`. Any
    /// error aborts the group (module docs), so raw points are never committed without
    /// their rollups.
    fn write_with_rollups(
        &mut self,
        txn: &WriteTransaction,
        appends: &[SeriesAppend],
        raw_buckets: &[ValidWrite],
        derive: DeriveRollups,
    ) -> Result<RawOutcome> {
        let appends = match appends.is_empty() {
            true => Vec::new(),
            false => self.append_all(txn, appends)?,
        };
        let raw = match raw_buckets.is_empty() {
            true => Vec::new(),
            false => buckets::apply_writes(txn, raw_buckets)?,
        };
        let outcome = RawOutcome {
            appends,
            buckets: raw,
        };
        let rollups = buckets::targets(derive(&outcome)?);
        if !rollups.is_empty() {
            buckets::apply_writes(txn, &rollups)?;
        }
        Ok(outcome)
    }

    fn append_all(
        &mut self,
        txn: &WriteTransaction,
        appends: &[SeriesAppend],
    ) -> Result<Vec<AppendOutcome>> {
        let mut segments = txn.open_table(SEGMENTS).map_err(storage)?;
        let heads = txn.open_table(HEADS).map_err(storage)?;
        let mut outcomes = Vec::with_capacity(appends.len());
        for a in appends {
            let active = match self.active.entry(a.series()) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(load_active(&heads, &segments, a.series())?),
            };
            let stored_last = active.last.map(|p| p.time);
            let refused = match active.last {
                Some(last) => a.points().partition_point(|p| p.time <= last.time),
                None => 0,
            };
            if refused < a.points().len() && !active.dirty {
                active.dirty = true;
                self.dirty.push(a.series());
            }
            for &p in &a.points()[refused..] {
                if active.points.len() >= self.capacity {
                    seal(&mut segments, a.series(), active, p.time)?;
                }
                active.points.push(p);
                active.last = Some(p);
                active.count += 1;
            }
            outcomes.push(AppendOutcome {
                refused,
                last_time: if refused > 0 { stored_last } else { None },
            });
        }
        Ok(outcomes)
    }

    /// Writes every changed active segment and head once per transaction.
    fn flush_active(&mut self, txn: &WriteTransaction) -> Result<()> {
        let mut segments = txn.open_table(SEGMENTS).map_err(storage)?;
        let mut heads = txn.open_table(HEADS).map_err(storage)?;
        for series in self.dirty.drain(..) {
            let Some(active) = self.active.get_mut(&series) else {
                continue;
            };
            let Some(last) = active.last else { continue };
            let bytes = tables::encode_segment(NO_NEXT, &active.points);
            segments
                .insert((series.0, active.prev_end), bytes.as_slice())
                .map_err(storage)?;
            let head = Head {
                last,
                count: active.count,
                active_prev_end: active.prev_end,
            };
            heads
                .insert(series.0, head.encode().as_slice())
                .map_err(storage)?;
            active.dirty = false;
        }
        Ok(())
    }
}

/// Seals the full active segment (its `next_start` becomes `next_time`) and starts the
/// next one after it.
fn seal(
    segments: &mut redb::Table<(u64, i64), &[u8]>,
    series: SeriesId,
    active: &mut Active,
    next_time: i64,
) -> Result<()> {
    let bytes = tables::encode_segment(next_time, &active.points);
    segments
        .insert((series.0, active.prev_end), bytes.as_slice())
        .map_err(storage)?;
    if let Some(last) = active.last {
        active.prev_end = last.time;
    }
    active.points.clear();
    Ok(())
}

fn load_active(
    heads: &redb::Table<u64, &[u8]>,
    segments: &redb::Table<(u64, i64), &[u8]>,
    series: SeriesId,
) -> Result<Active> {
    let Some(raw) = heads.get(series.0).map_err(storage)? else {
        return Ok(Active {
            last: None,
            count: 0,
            prev_end: NO_PREVIOUS,
            points: Vec::new(),
            dirty: false,
        });
    };
    let head = Head::decode(raw.value())
        .ok_or_else(|| BackendError::Corrupt(format!("head of series {series} is malformed")))?;
    let points = match segments
        .get((series.0, head.active_prev_end))
        .map_err(storage)?
    {
        Some(bytes) => {
            let bytes = bytes.value();
            let block = bytes.get(8..).unwrap_or_default();
            tickertape_core::codec::decode_block(block).map_err(|e| {
                BackendError::Corrupt(format!("active segment of series {series}: {e}"))
            })?
        }
        None => Vec::new(),
    };
    Ok(Active {
        last: Some(head.last),
        count: head.count,
        prev_end: head.active_prev_end,
        points,
        dirty: false,
    })
}

pub fn storage(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}
