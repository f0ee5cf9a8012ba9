//! Bucket writes (`write_buckets`): upserts sent as one ordered `update` command per
//! partition collection (`docs/format/mongodb.md`, "Time buckets").
//!
//! - `Set` is the bucket document's in-place update — `$set` of the slot, `$inc` of `n` and `sum`, `$min`/`$max`
//!   — with the filter `{_id, "v.M.S": null}`, which matches a document whose slot is
//!   missing or pre-allocated (`null`). When the slot holds a value the filter misses, the
//!   upsert tries to insert the existing `_id` and fails with a duplicate key: the write
//!   is refused (`SlotTaken`), atomically, with any number of concurrent writers.
//! - `Add` and `Merge` are pipeline updates (MongoDB 4.2): `$inc` cannot add to the
//!   `null` of a pre-allocated slot, and a rollup merge needs "take the summary as it is
//!   if the slot is unwritten, else merge", which only `$cond` can say in one update.
//!
//! - A run of consecutive `Add`s or `Merge`s to one document is one statement: their
//!   pipelines one after the other ([`multi_slot_update`]). A pipeline stage sees what
//!   the stages before it wrote, so the slots change exactly as with one statement each,
//!   at the cost of one statement instead of one per slot (a body of 50 points per series
//!   makes about 13 rollup merges per series, in 4 documents).
//!
//! Writes of one call apply in the caller's order per collection (an ordered command):
//! a document's `sum` is its values added in write order, and two changes of one slot
//! must not swap. Different collections hold different documents, so they go out at once.

use std::collections::{BTreeMap, HashSet};

use futures::future::try_join_all;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{BackendError, BucketWrite, BucketWriteOutcome, Result, SlotChange};
use tickertape_core::query::Summary;

use crate::bucket_layout::{bucket_id, collection_name, slot_path, summary_doc};
use crate::bulk;
use crate::error::DUPLICATE_KEY;
use crate::find::find_all;
use crate::layout::sid;
use crate::Shared;

/// Values added per pipeline stage of a merge. The sum is a chain of two-operand `$add`s
/// (`$add` of many operands may add them in any way it likes; two doubles have one IEEE
/// sum), and each stage nests one level per value: 32 stays far below the server's BSON
/// nesting limit (100 levels for documents) whatever the slot's number of points.
const VALUES_PER_STAGE: usize = 32;

/// A temporary top-level field of a multi-stage merge: whether the slot held a summary
/// before the update. Removed by the pipeline's last stage.
const WAS_WRITTEN: &str = "_w";

/// Attempts per statement that failed with a duplicate key without its slot being seen
/// taken: the only cause is another writer inserting the document between our filter
/// missing and our insert, which cannot repeat once the document exists.
const MAX_ATTEMPTS: u32 = 5;

/// Pipeline stages per grouped statement. A statement that would grow past it starts a
/// new one (one merge of many values can still exceed it on its own, as before grouping).
/// 100 stays far below the server's pipeline length limit (1000 stages since 5.0), and
/// keeps a statement about as large as one long merge: 100 stages of at most 32 values.
const MAX_STAGES_PER_STATEMENT: usize = 100;

/// One bucket write, planned: its document and what it does there.
struct Planned {
    id: Document,
    change: PlannedChange,
}

enum PlannedChange {
    /// A conditional update of one slot (`Set`): always a statement of its own.
    Set {
        /// The slot's path (`v.M.S`) that must be unwritten.
        path: String,
        q: Document,
        u: Bson,
    },
    /// The stages of a pipeline update (`Add`, `Merge`): joins the pipelines of the
    /// writes before and after it to the same document.
    Pipeline(Vec<Bson>),
}

/// One statement of an `update` command, carrying one or more writes of the call.
struct Statement {
    /// `{q, u, upsert: true, multi: false}`.
    update: Document,
    id: Document,
    /// `Set` only: the slot's path (`v.M.S`) that must be unwritten.
    set_path: Option<String>,
    /// The indices (in the call) of the writes it carries, in order; one for a `Set`.
    writes: Vec<usize>,
}

impl Shared {
    pub(crate) async fn write_bucket_batch(
        &self,
        writes: Vec<BucketWrite>,
    ) -> Result<Vec<BucketWriteOutcome>> {
        let mut by_collection: BTreeMap<String, Vec<(usize, Planned)>> = BTreeMap::new();
        for (i, write) in writes.iter().enumerate() {
            let (collection, planned) =
                plan(write).map_err(|e| prefix_invalid(e, &format!("bucket write {i}")))?;
            by_collection
                .entry(collection)
                .or_default()
                .push((i, planned));
        }
        let by_collection: Vec<(String, Vec<Statement>)> = by_collection
            .into_iter()
            .map(|(collection, planned)| (collection, group_by_document(planned)))
            .collect();
        let mut outcomes = vec![BucketWriteOutcome::Applied; writes.len()];
        let done = try_join_all(
            by_collection
                .iter()
                .map(|(collection, statements)| self.apply_in_order(collection, statements)),
        )
        .await?;
        for ((_, statements), results) in by_collection.iter().zip(done) {
            for (statement, outcome) in statements.iter().zip(results) {
                for &i in &statement.writes {
                    outcomes[i] = outcome;
                }
            }
        }
        Ok(outcomes)
    }

    /// Runs `statements` in order on `collection`, resuming after each refused `Set`.
    ///
    /// A duplicate key on a `Set` means its slot was taken — or that its document was
    /// inserted by another writer in between. One read of the documents tells the two
    /// apart and also finds every later `Set` of this call whose slot is already taken
    /// (slots are never emptied), so a replayed batch costs three round trips, not one
    /// per slot.
    async fn apply_in_order(
        &self,
        collection: &str,
        statements: &[Statement],
    ) -> Result<Vec<BucketWriteOutcome>> {
        let mut outcomes = vec![BucketWriteOutcome::Applied; statements.len()];
        let mut skip = vec![false; statements.len()];
        let mut attempts = vec![0_u32; statements.len()];
        let mut pos = 0;
        while pos < statements.len() {
            let pending: Vec<usize> = (pos..statements.len()).filter(|&j| !skip[j]).collect();
            let Some(&first) = pending.first() else {
                break;
            };
            let updates = pending
                .iter()
                .map(|&j| statements[j].update.clone())
                .collect();
            let failure =
                bulk::update_ordered(&self.db, &self.write_concern, collection, updates).await?;
            let Some((k, code, message)) = failure else {
                break;
            };
            let failed = pending.get(k).copied().unwrap_or(first);
            if code != DUPLICATE_KEY {
                return Err(bulk::statement_error(collection, code, message));
            }
            attempts[failed] += 1;
            if attempts[failed] > MAX_ATTEMPTS {
                return Err(BackendError::Storage(format!(
                    "mongodb: bucket write to {collection} kept failing with a duplicate key: \
                     {message}"
                )));
            }
            if statements[failed].set_path.is_some() {
                let later: Vec<usize> = pending.iter().copied().filter(|&j| j >= failed).collect();
                for j in self.taken_slots(collection, statements, &later).await? {
                    skip[j] = true;
                    outcomes[j] = BucketWriteOutcome::SlotTaken;
                }
            }
            pos = failed;
        }
        Ok(outcomes)
    }

    /// Which of the `Set` statements `candidates` target a slot that holds a value now.
    async fn taken_slots(
        &self,
        collection: &str,
        statements: &[Statement],
        candidates: &[usize],
    ) -> Result<Vec<usize>> {
        let sets: Vec<(usize, &Document, &str)> = candidates
            .iter()
            .filter_map(|&j| {
                let s = &statements[j];
                s.set_path.as_deref().map(|p| (j, &s.id, p))
            })
            .collect();
        let mut ids: Vec<Bson> = Vec::new();
        let mut series: Vec<Bson> = Vec::new();
        let mut seen = HashSet::new();
        for (_, id, _) in &sets {
            if seen.insert(id.to_string()) {
                ids.push(Bson::Document((*id).clone()));
                series.extend(id.get("s").cloned());
            }
        }
        let docs = find_all(
            self.db
                .collection::<Document>(collection)
                .find(doc! { "_id": { "$in": ids }, "s": { "$in": series } })
                .projection(doc! { "v": 1 }),
            "read taken slots",
        )
        .await?;
        let by_id: BTreeMap<String, &Document> = docs
            .iter()
            .filter_map(|d| d.get_document("_id").ok().map(|id| (id.to_string(), d)))
            .collect();
        Ok(sets
            .into_iter()
            .filter(|(_, id, path)| {
                by_id
                    .get(&id.to_string())
                    .is_some_and(|d| !matches!(lookup(d, path), None | Some(Bson::Null)))
            })
            .map(|(j, _, _)| j)
            .collect())
    }
}

/// The value at a dotted path of embedded documents.
fn lookup<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let mut value = doc.get(parts.next()?)?;
    for part in parts {
        value = value.as_document()?.get(part)?;
    }
    Some(value)
}

/// The collection and the planned change of one write (checked when it was built:
/// [`BucketWrite::new`]).
fn plan(write: &BucketWrite) -> Result<(String, Planned)> {
    let collection = collection_name(write.partition());
    let id = bucket_id(sid(write.series())?, write.bucket_start());
    let slot = slot_path(write.slot());
    let change = match write.change() {
        SlotChange::Set(v) => {
            let path = format!("v.{slot}");
            let (q, u) = set_update(&id, &path, *v);
            PlannedChange::Set { path, q, u }
        }
        SlotChange::Add(v) => PlannedChange::Pipeline(add_update(&format!("v.{slot}"), *v)),
        SlotChange::Merge { summary, values } => {
            PlannedChange::Pipeline(merge_update(&format!("r.{slot}"), summary, values)?)
        }
    };
    Ok((collection, Planned { id, change }))
}

/// The statements of one collection's writes, in the call's order: a `Set` alone, and
/// each run of consecutive pipeline writes to one document as one statement (up to
/// [`MAX_STAGES_PER_STATEMENT`] stages), so their slots change in the call's order.
/// Only consecutive writes join: a `Set` or another document in between ends a run,
/// which keeps the order of the statements the order of the call.
fn group_by_document(planned: Vec<(usize, Planned)>) -> Vec<Statement> {
    let mut statements = Vec::new();
    // The run being built: its document, the writes' indices, and their pipelines.
    let mut run: Option<(Document, Vec<usize>, Vec<Vec<Bson>>)> = None;
    let mut stages_in_run = 0;
    for (i, Planned { id, change }) in planned {
        match change {
            PlannedChange::Set { path, q, u } => {
                statements.extend(run.take().map(pipeline_statement));
                statements.push(Statement {
                    update: doc! { "q": q, "u": u, "upsert": true, "multi": false },
                    id,
                    set_path: Some(path),
                    writes: vec![i],
                });
            }
            PlannedChange::Pipeline(stages) => {
                let joins = run.as_ref().is_some_and(|(run_id, _, _)| *run_id == id)
                    && stages_in_run + stages.len() <= MAX_STAGES_PER_STATEMENT;
                if !joins {
                    statements.extend(run.take().map(pipeline_statement));
                    stages_in_run = 0;
                }
                stages_in_run += stages.len();
                let (_, writes, pipelines) =
                    run.get_or_insert_with(|| (id, Vec::new(), Vec::new()));
                writes.push(i);
                pipelines.push(stages);
            }
        }
    }
    statements.extend(run.map(pipeline_statement));
    statements
}

/// The statement of a run of pipeline writes to the document `id`.
fn pipeline_statement(
    (id, writes, pipelines): (Document, Vec<usize>, Vec<Vec<Bson>>),
) -> Statement {
    Statement {
        update: doc! {
            "q": with_series(&id),
            "u": multi_slot_update(pipelines),
            "upsert": true,
            "multi": false,
        },
        id,
        set_path: None,
        writes,
    }
}

/// One pipeline update doing the pipelines of several writes to one document, in order:
/// their stages one after the other. Each stage reads the document as the stages before
/// it left it, so every write sees what the writes before it did, as it would as its own
/// statement — bit for bit, since every stage is the one its write would send alone. A
/// long merge's temporary field is set by its own first stage and removed by its own last,
/// so it never leaks into another write's stages.
fn multi_slot_update(pipelines: Vec<Vec<Bson>>) -> Bson {
    Bson::Array(pipelines.into_iter().flatten().collect())
}

fn prefix_invalid(e: BackendError, context: &str) -> BackendError {
    match e {
        BackendError::Invalid(m) => BackendError::Invalid(format!("{context}: {m}")),
        other => other,
    }
}

/// The filter of one bucket document: its `_id` and its series `s` (the shard key, which
/// a sharded upsert must name; an upsert copies it into the document it creates).
fn with_series(id: &Document) -> Document {
    let mut q = doc! { "_id": id.clone() };
    if let Some(s) = id.get("s") {
        q.insert("s", s.clone());
    }
    q
}

/// `Set`: the in-place update's operators, on the condition that the slot holds no value.
fn set_update(id: &Document, path: &str, v: f64) -> (Document, Bson) {
    let mut q = with_series(id);
    q.insert(path, Bson::Null);
    let u = doc! {
        "$set": { path: v },
        "$inc": { "n": 1_i64, "sum": v },
        "$min": { "mn": v },
        "$max": { "mx": v },
    };
    (q, Bson::Document(u))
}

/// `Add`: the slot (absent or `null` counting as 0) and `sum` grow by `v`, `n` by one.
/// The stages of a pipeline update.
fn add_update(path: &str, v: f64) -> Vec<Bson> {
    let field = format!("${path}");
    let stage = doc! { "$set": {
        path: { "$add": [{ "$ifNull": [field, 0.0_f64] }, v] },
        "n": { "$add": [{ "$ifNull": ["$n", 0_i64] }, 1_i64] },
        // -0.0 is the additive identity: a fresh document's sum is exactly `v`, as `$inc`
        // on a missing field and a shell's `sum: -0.0` give.
        "sum": { "$add": [{ "$ifNull": ["$sum", -0.0_f64] }, v] },
        "mn": keep_unless(v, "$lt", "$mn"),
        "mx": keep_unless(v, "$gt", "$mx"),
    }};
    vec![Bson::Document(stage)]
}

/// `new` if `new <op> stored` (or nothing is stored), else the stored value: the tie keeps
/// what is stored, as the `$min`/`$max` update operators and `Summary::merge` do.
fn keep_unless(new: impl Into<Bson>, op: &str, stored: &str) -> Document {
    let new = new.into();
    let current = doc! { "$ifNull": [stored, new.clone()] };
    doc! { "$cond": [{ op: [new.clone(), current.clone()] }, new, current] }
}

/// `Merge`: [`RollupUpdate::apply_to`](tickertape_core::rollup::RollupUpdate::apply_to) as a
/// pipeline. An unwritten slot (missing or `null`) takes `summary` as it is (`$literal`,
/// so a first value of -0.0 stays -0.0); a written one merges count, min, max, first and
/// last as `Summary::merge` and continues its sum with `values`, one `$add` at a time.
/// The stages of a pipeline update.
fn merge_update(path: &str, summary: &Summary, values: &[f64]) -> Result<Vec<Bson>> {
    let slot = format!("${path}");
    let fresh = summary_doc(summary)?;
    let count = fresh.get("c").cloned().unwrap_or(Bson::Int64(0));
    let unwritten = doc! { "$eq": [{ "$ifNull": [&slot, Bson::Null] }, Bson::Null] };
    let mut chunks = values.chunks(VALUES_PER_STAGE);
    let first_chunk = chunks.next().unwrap_or(&[]);
    let field = |name: &str| format!("{slot}.{name}");
    let first_if = doc! { "$lt": [summary.first.time, field("ft")] };
    let last_if = doc! { "$gte": [summary.last.time, field("lt")] };
    let merged = doc! {
        "c": { "$add": [field("c"), count] },
        "s": add_chain(field("s"), first_chunk),
        "mn": keep_unless(summary.min, "$lt", &field("mn")),
        "mx": keep_unless(summary.max, "$gt", &field("mx")),
        "ft": { "$cond": [first_if.clone(), summary.first.time, field("ft")] },
        "fv": { "$cond": [first_if, summary.first.value, field("fv")] },
        "lt": { "$cond": [last_if.clone(), summary.last.time, field("lt")] },
        "lv": { "$cond": [last_if, summary.last.value, field("lv")] },
    };
    let mut first_stage = doc! {
        path: { "$cond": [unwritten.clone(), { "$literal": fresh }, merged] },
    };
    let rest: Vec<&[f64]> = chunks.collect();
    if rest.is_empty() {
        return Ok(vec![Bson::Document(doc! { "$set": first_stage })]);
    }
    // More values than one stage nests: the next stages continue the sum, but only when
    // the slot was written before this update (the first stage already wrote it).
    first_stage.insert(WAS_WRITTEN, doc! { "$not": [unwritten] });
    let mut stages = vec![Bson::Document(doc! { "$set": first_stage })];
    let sum_path = format!("{path}.s");
    for chunk in rest {
        let chained = add_chain(field("s"), chunk);
        stages.push(Bson::Document(doc! { "$set": {
            &sum_path: { "$cond": [format!("${WAS_WRITTEN}"), chained, field("s")] },
        }}));
    }
    stages.push(Bson::Document(doc! { "$unset": WAS_WRITTEN }));
    Ok(stages)
}

/// `((start + v₁) + v₂) …` as nested two-operand `$add`s.
fn add_chain(start: String, values: &[f64]) -> Bson {
    values.iter().fold(Bson::String(start), |acc, v| {
        Bson::Document(doc! { "$add": [acc, *v] })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_backend::{BucketFamily, SlotKind};

    #[test]
    fn add_chain_nests_left_to_right() {
        let chain = add_chain("$r.0.1.s".into(), &[1.0, 2.0]);
        assert_eq!(
            chain,
            Bson::Document(doc! { "$add": [{ "$add": ["$r.0.1.s", 1.0] }, 2.0] })
        );
    }

    #[test]
    fn long_merges_split_into_stages() {
        let summary = Summary::of(tickertape_core::Point::new(0, 1.0));
        let values = vec![1.0; VALUES_PER_STAGE * 2 + 1];
        let stages = merge_update("r.0.0", &summary, &values).unwrap();
        // The first stage, two more for the sum, and the `$unset`.
        assert_eq!(stages.len(), 4);
        assert_eq!(merge_update("r.0.0", &summary, &[1.0]).unwrap().len(), 1);
    }

    fn write(series: u64, family: BucketFamily, start: i64, slot: u32) -> BucketWrite {
        let change = match family.slots() {
            SlotKind::Raw { .. } => SlotChange::Add(f64::from(slot)),
            SlotKind::Rollup(_) => SlotChange::Merge {
                summary: Summary::of(tickertape_core::Point::new(start, 1.0)),
                values: vec![1.0],
            },
        };
        BucketWrite::new(
            family,
            tickertape_core::SeriesId(series),
            start,
            slot,
            change,
        )
        .unwrap()
    }

    /// The writes each statement carries, for writes all in one collection.
    fn grouped(writes: &[BucketWrite]) -> Vec<Vec<usize>> {
        let planned = writes
            .iter()
            .enumerate()
            .map(|(i, w)| (i, plan(w).unwrap().1))
            .collect();
        group_by_document(planned)
            .into_iter()
            .map(|s| s.writes)
            .collect()
    }

    #[test]
    fn consecutive_pipeline_writes_to_one_document_share_a_statement() {
        let minute = BucketFamily::rollup(1, tickertape_core::rollup::Resolution::MINUTE);
        let period = minute.geometry().period_ns();
        // A body's merges as the engine orders them: nine slots of one document, then
        // two of the next document of the same series, then another series.
        let mut writes: Vec<BucketWrite> = (51..60).map(|s| write(1, minute, 0, s)).collect();
        writes.extend((0..2).map(|s| write(1, minute, period, s)));
        writes.push(write(2, minute, 0, 51));
        assert_eq!(
            grouped(&writes),
            vec![(0..9).collect(), vec![9, 10], vec![11]]
        );
        // Interleaved documents join only where they are consecutive.
        let interleaved = [
            write(1, minute, 0, 0),
            write(1, minute, 0, 1),
            write(2, minute, 0, 0),
            write(1, minute, 0, 2),
        ];
        assert_eq!(grouped(&interleaved), vec![vec![0, 1], vec![2], vec![3]]);
        // The pipeline is the writes' stages in order.
        let planned = interleaved[..2]
            .iter()
            .enumerate()
            .map(|(i, w)| (i, plan(w).unwrap().1))
            .collect();
        let statement = group_by_document(planned).remove(0);
        let Ok(Bson::Array(stages)) = statement.update.get("u").cloned().ok_or(()) else {
            panic!("a pipeline");
        };
        let one = |w: &BucketWrite| match plan(w).unwrap().1.change {
            PlannedChange::Pipeline(stages) => stages,
            PlannedChange::Set { .. } => panic!("a pipeline write"),
        };
        let mut want = one(&interleaved[0]);
        want.extend(one(&interleaved[1]));
        assert_eq!(stages, want);
    }

    #[test]
    fn sets_stand_alone_and_split_runs() {
        let raw = BucketFamily::raw(1, 1_000_000_000).unwrap();
        let set = |slot: u32| {
            BucketWrite::new(
                raw,
                tickertape_core::SeriesId(1),
                0,
                slot,
                SlotChange::Set(1.0),
            )
            .unwrap()
        };
        let writes = [
            write(1, raw, 0, 0),
            write(1, raw, 0, 0),
            set(1),
            set(2),
            write(1, raw, 0, 0),
        ];
        assert_eq!(
            grouped(&writes),
            vec![vec![0, 1], vec![2], vec![3], vec![4]]
        );
    }

    #[test]
    fn long_runs_split_at_the_stage_limit() {
        let minute = BucketFamily::rollup(1, tickertape_core::rollup::Resolution::MINUTE);
        let writes: Vec<BucketWrite> = (0..(MAX_STAGES_PER_STATEMENT + 1) as u32)
            .map(|slot| write(1, minute, 0, slot % 60))
            .collect();
        let sizes: Vec<usize> = grouped(&writes).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![MAX_STAGES_PER_STATEMENT, 1]);
    }

    #[test]
    fn lookup_follows_dotted_paths() {
        let d = doc! { "v": { "1": { "2": 3.0, "4": Bson::Null } } };
        assert_eq!(lookup(&d, "v.1.2"), Some(&Bson::Double(3.0)));
        assert_eq!(lookup(&d, "v.1.4"), Some(&Bson::Null));
        assert_eq!(lookup(&d, "v.1.5"), None);
        assert_eq!(lookup(&d, "v.9.9"), None);
    }
}
