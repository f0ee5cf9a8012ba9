//! Bucket writes (`write_buckets`): one upsert per slot change, sent as one ordered
//! `update` command per partition collection (`docs/format/mongodb.md`, "Time buckets").
//!
//! - `Set` is seed 001's update — `$set` of the slot, `$inc` of `n` and `sum`, `$min`/`$max`
//!   — with the filter `{_id, "v.M.S": null}`, which matches a document whose slot is
//!   missing or pre-allocated (`null`). When the slot holds a value the filter misses, the
//!   upsert tries to insert the existing `_id` and fails with a duplicate key: the write
//!   is refused (`SlotTaken`), atomically, with any number of concurrent writers.
//! - `Add` and `Merge` are pipeline updates (MongoDB 4.2): `$inc` cannot add to the
//!   `null` of a pre-allocated slot, and a rollup merge needs "take the summary as it is
//!   if the slot is unwritten, else merge", which only `$cond` can say in one update.
//!
//! Writes of one call apply in the caller's order per collection (an ordered command):
//! a document's `sum` is its values added in write order, and two changes of one slot
//! must not swap. Different collections hold different documents, so they go out at once.

use std::collections::{BTreeMap, HashSet};

use futures::future::try_join_all;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{
    BackendError, BucketFamily, BucketWrite, BucketWriteOutcome, Result, SlotChange, SlotKind,
};
use tickertape_core::query::Summary;

use crate::bucket_layout::{self, bucket_id, collection_name, slot_path, summary_doc};
use crate::bulk;
use crate::error::{map_err, DUPLICATE_KEY};
use crate::layout::sid;
use crate::MongoBackend;

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

/// One bucket write as a statement of an `update` command.
struct Statement {
    /// `{q, u, upsert: true, multi: false}`.
    update: Document,
    id: Document,
    /// `Set` only: the slot's path (`v.M.S`) that must be unwritten.
    set_path: Option<String>,
}

impl MongoBackend {
    pub(crate) async fn write_bucket_batch(
        &self,
        writes: Vec<BucketWrite>,
    ) -> Result<Vec<BucketWriteOutcome>> {
        let mut by_collection: BTreeMap<String, Vec<(usize, Statement)>> = BTreeMap::new();
        for (i, write) in writes.iter().enumerate() {
            let (collection, statement) =
                plan(write).map_err(|e| prefix_invalid(e, &format!("bucket write {i}")))?;
            by_collection
                .entry(collection)
                .or_default()
                .push((i, statement));
        }
        let mut outcomes = vec![BucketWriteOutcome::Applied; writes.len()];
        let done = try_join_all(
            by_collection
                .iter()
                .map(|(collection, statements)| self.apply_in_order(collection, statements)),
        )
        .await?;
        for (statements, results) in by_collection.values().zip(done) {
            for ((i, _), outcome) in statements.iter().zip(results) {
                outcomes[*i] = outcome;
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
        statements: &[(usize, Statement)],
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
                .map(|&j| statements[j].1.update.clone())
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
            if statements[failed].1.set_path.is_some() {
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
        statements: &[(usize, Statement)],
        candidates: &[usize],
    ) -> Result<Vec<usize>> {
        let sets: Vec<(usize, &Document, &str)> = candidates
            .iter()
            .filter_map(|&j| {
                let s = &statements[j].1;
                s.set_path.as_deref().map(|p| (j, &s.id, p))
            })
            .collect();
        let mut ids: Vec<Bson> = Vec::new();
        let mut seen = HashSet::new();
        for (_, id, _) in &sets {
            if seen.insert(id.to_string()) {
                ids.push(Bson::Document((*id).clone()));
            }
        }
        let docs: Vec<Document> = self
            .db
            .collection::<Document>(collection)
            .find(doc! { "_id": { "$in": ids } })
            .projection(doc! { "v": 1 })
            .await
            .map_err(|e| map_err("read taken slots", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("read taken slots", e))?;
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

/// The collection and the statement of one write, after checking it against its family.
fn plan(write: &BucketWrite) -> Result<(String, Statement)> {
    let geometry = bucket_layout::geometry(write.family)?;
    let period = geometry.period_ns();
    if write.bucket_start.rem_euclid(period) != 0 {
        return Err(BackendError::Invalid(format!(
            "bucket start {} is not a multiple of the family's period {period} ns",
            write.bucket_start
        )));
    }
    if write.slot >= geometry.slots() {
        return Err(BackendError::Invalid(format!(
            "slot {} is beyond the {} slots of the family's documents",
            write.slot,
            geometry.slots()
        )));
    }
    let collection = collection_name(write.family, geometry.partition_of(write.bucket_start));
    let id = bucket_id(sid(write.series)?, write.bucket_start);
    let slot = slot_path(write.slot);
    let (q, u, set_path) = match (&write.change, write.family.slots) {
        (SlotChange::Set(v), SlotKind::Raw { .. }) => {
            let path = format!("v.{slot}");
            let (q, u) = set_update(&id, &path, *v);
            (q, u, Some(path))
        }
        (SlotChange::Add(v), SlotKind::Raw { .. }) => (
            doc! { "_id": id.clone() },
            add_update(&format!("v.{slot}"), *v),
            None,
        ),
        (SlotChange::Merge { summary, values }, SlotKind::Rollup(_)) => (
            doc! { "_id": id.clone() },
            merge_update(&format!("r.{slot}"), summary, values)?,
            None,
        ),
        (change, _) => return Err(mismatch(change, write.family)),
    };
    let update = doc! { "q": q, "u": u, "upsert": true, "multi": false };
    Ok((
        collection,
        Statement {
            update,
            id,
            set_path,
        },
    ))
}

fn mismatch(change: &SlotChange, family: BucketFamily) -> BackendError {
    let change = match change {
        SlotChange::Set(_) => "Set",
        SlotChange::Add(_) => "Add",
        SlotChange::Merge { .. } => "Merge",
    };
    let kind = match family.slots {
        SlotKind::Raw { .. } => "a raw",
        SlotKind::Rollup(_) => "a rollup",
    };
    BackendError::Invalid(format!("a {change} change does not apply to {kind} family"))
}

fn prefix_invalid(e: BackendError, context: &str) -> BackendError {
    match e {
        BackendError::Invalid(m) => BackendError::Invalid(format!("{context}: {m}")),
        other => other,
    }
}

/// `Set`: seed 001's operators, on the condition that the slot holds no value.
fn set_update(id: &Document, path: &str, v: f64) -> (Document, Bson) {
    let q = doc! { "_id": id.clone(), path: Bson::Null };
    let u = doc! {
        "$set": { path: v },
        "$inc": { "n": 1_i64, "sum": v },
        "$min": { "mn": v },
        "$max": { "mx": v },
    };
    (q, Bson::Document(u))
}

/// `Add`: the slot (absent or `null` counting as 0) and `sum` grow by `v`, `n` by one.
fn add_update(path: &str, v: f64) -> Bson {
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
    Bson::Array(vec![Bson::Document(stage)])
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
fn merge_update(path: &str, summary: &Summary, values: &[f64]) -> Result<Bson> {
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
        return Ok(Bson::Array(vec![Bson::Document(
            doc! { "$set": first_stage },
        )]));
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
    Ok(Bson::Array(stages))
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
        let Bson::Array(stages) = merge_update("r.0.0", &summary, &values).unwrap() else {
            panic!("a pipeline");
        };
        // The first stage, two more for the sum, and the `$unset`.
        assert_eq!(stages.len(), 4);
        let Bson::Array(one) = merge_update("r.0.0", &summary, &[1.0]).unwrap() else {
            panic!("a pipeline");
        };
        assert_eq!(one.len(), 1);
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
