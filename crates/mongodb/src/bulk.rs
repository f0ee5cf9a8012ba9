//! Many writes in one round trip, with the outcome of each statement.
//!
//! The `insert` and `update` commands take any number of statements and, unordered, apply
//! each independently; they report failures per statement (`writeErrors[i].index`) but
//! matches only as a total. A conditional update whose filter does not match is not a
//! failure, so on its own the reply cannot say *which* series' condition failed.
//!
//! The trick: every conditional statement is sent with `upsert: true` and an `_id` equality
//! in its filter, for a document that is known to exist. When the rest of the filter does
//! not match, the server tries to insert a new document with that `_id` and fails with a
//! duplicate-key error (E11000) for exactly that statement; the insert never happens. The
//! server does not retry such an upsert itself (it only does so when the filter is nothing
//! but equalities on the unique key). This works on every MongoDB version, unlike the
//! `bulkWrite` command of 8.0, which reports matches per statement.
//!
//! Commands run through `run_command`, which applies no write concern of its own: the
//! backend's is put into each command, and a `writeConcernError` in a reply fails the whole
//! call as unavailable (the write may or may not be durable; it is never reported stored).

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use tickertape_backend::{BackendError, Result};

use crate::error::{is_transient_code, map_err, DUPLICATE_KEY};

/// Statements per command at most: far below the server's `maxWriteBatchSize` (100,000).
const CHUNK: usize = 500;

/// Bytes of statements per command at most (a single larger statement goes alone): far
/// below the 16 MiB a command document may take, whatever the statements hold.
const CHUNK_BYTES: usize = 8 << 20;

/// A write command as [`run`] sends it: its name, whether it is ordered, and the field
/// holding its statements.
struct Command {
    name: &'static str,
    ordered: bool,
    items_field: &'static str,
}

const INSERT: Command = Command {
    name: "insert",
    ordered: false,
    items_field: "documents",
};
const UPDATE: Command = Command {
    name: "update",
    ordered: false,
    items_field: "updates",
};
const DELETE: Command = Command {
    name: "delete",
    ordered: false,
    items_field: "deletes",
};
const UPDATE_ORDERED: Command = Command {
    name: "update",
    ordered: true,
    items_field: "updates",
};

/// One statement of an `update` command.
pub(crate) struct Update {
    pub q: Document,
    pub u: Document,
    /// Conditional statement: `q` holds an `_id` equality for an existing document, and the
    /// caller wants to know whether the rest of `q` matched.
    pub conditional: bool,
}

/// Runs `updates` as unordered `update` commands on `collection`. Returns, per statement,
/// whether it applied: for a conditional statement, whether its filter matched; for the
/// others, `true` (they report no per-statement match).
pub(crate) async fn update(
    db: &Database,
    write_concern: &Document,
    collection: &str,
    updates: Vec<Update>,
) -> Result<Vec<bool>> {
    let statements: Vec<Bson> = updates
        .iter()
        .map(|s| {
            Bson::Document(doc! {
                "q": s.q.clone(),
                "u": s.u.clone(),
                "upsert": s.conditional,
                "multi": false,
            })
        })
        .collect();
    let failures = run(db, write_concern, UPDATE, collection, statements).await?;
    updates
        .iter()
        .zip(failures)
        .map(|(s, failure)| match failure {
            None => Ok(true),
            Some((code, _)) if code == DUPLICATE_KEY && s.conditional => Ok(false),
            Some((code, message)) => Err(statement_error(collection, code, message)),
        })
        .collect()
}

/// Runs `updates` (filter, update) as unordered `update` commands of `multi` statements:
/// each applies to every document its filter matches (a fold's supersede marks, one
/// statement per series). Not conditional: a statement that matches nothing is no failure.
pub(crate) async fn update_many(
    db: &Database,
    write_concern: &Document,
    collection: &str,
    updates: Vec<(Document, Document)>,
) -> Result<()> {
    let statements = updates
        .into_iter()
        .map(|(q, u)| Bson::Document(doc! { "q": q, "u": u, "upsert": false, "multi": true }))
        .collect();
    let failures = run(db, write_concern, UPDATE, collection, statements).await?;
    match failures.into_iter().flatten().next() {
        Some((code, message)) => Err(statement_error(collection, code, message)),
        None => Ok(()),
    }
}

/// Deletes every document each filter matches (unordered, `limit: 0`).
pub(crate) async fn delete_many(
    db: &Database,
    write_concern: &Document,
    collection: &str,
    filters: Vec<Document>,
) -> Result<()> {
    let statements = filters
        .into_iter()
        .map(|q| Bson::Document(doc! { "q": q, "limit": 0 }))
        .collect();
    let failures = run(db, write_concern, DELETE, collection, statements).await?;
    match failures.into_iter().flatten().next() {
        Some((code, message)) => Err(statement_error(collection, code, message)),
        None => Ok(()),
    }
}

/// Inserts `documents` (unordered). Returns per document whether it was inserted (`false`:
/// a document with its `_id` or unique key already existed).
pub(crate) async fn insert(
    db: &Database,
    write_concern: &Document,
    collection: &str,
    documents: Vec<Document>,
) -> Result<Vec<bool>> {
    let documents = documents.into_iter().map(Bson::Document).collect();
    let failures = run(db, write_concern, INSERT, collection, documents).await?;
    failures
        .into_iter()
        .map(|failure| match failure {
            None => Ok(true),
            Some((DUPLICATE_KEY, _)) => Ok(false),
            Some((code, message)) => Err(statement_error(collection, code, message)),
        })
        .collect()
}

/// A failed statement's code and message as the error the caller reports.
pub(crate) fn statement_error(collection: &str, code: i32, message: String) -> BackendError {
    let text = format!("mongodb: write to {collection} failed ({code}): {message}");
    if is_transient_code(code) {
        BackendError::Unavailable(text)
    } else {
        BackendError::Storage(text)
    }
}

fn check_write_concern(reply: &Document, command: &str, collection: &str) -> Result<()> {
    match reply.get_document("writeConcernError") {
        Ok(wce) => Err(BackendError::Unavailable(format!(
            "mongodb: {command} {collection}: write concern not satisfied: {wce}"
        ))),
        Err(_) => Ok(()),
    }
}

/// The first statement of `updates` (full `{q, u, upsert, multi}` documents) that failed,
/// as `(index, code, errmsg)`, after running them as one *ordered* `update` command:
/// statements apply one after the other, and the server stops at the first failure, so
/// every statement before it applied and none after it ran. `None`: all applied.
///
/// Ordered, because bucket writes to one document must apply in the caller's order (its
/// `sum` adds values in write order); the caller resumes after a failure.
pub(crate) async fn update_ordered(
    db: &Database,
    write_concern: &Document,
    collection: &str,
    updates: Vec<Document>,
) -> Result<Option<(usize, i32, String)>> {
    let statements = updates.into_iter().map(Bson::Document).collect();
    let failures = run(db, write_concern, UPDATE_ORDERED, collection, statements).await?;
    Ok(failures
        .into_iter()
        .enumerate()
        .find_map(|(i, f)| f.map(|(code, message)| (i, code, message))))
}

/// Runs one write command per chunk; per item, `None` or its `(code, errmsg)`. Ordered
/// (`command.ordered`): the chunks run in order and the first failure ends the run (the
/// items after it report no failure but did not run; [`update_ordered`] reports only the
/// first failure).
async fn run(
    db: &Database,
    write_concern: &Document,
    command: Command,
    collection: &str,
    items: Vec<Bson>,
) -> Result<Vec<Option<(i32, String)>>> {
    let Command {
        name: command,
        ordered,
        items_field,
    } = command;
    let mut out = vec![None; items.len()];
    for (offset, chunk) in chunks(&items) {
        if ordered && out.iter().any(Option::is_some) {
            break;
        }
        let cmd = doc! {
            command: collection,
            items_field: chunk.to_vec(),
            "ordered": ordered,
            "writeConcern": write_concern.clone(),
        };
        let reply = db
            .run_command(cmd)
            .await
            .map_err(|e| map_err(&format!("{command} {collection}"), e))?;
        check_write_concern(&reply, command, collection)?;
        if let Ok(errors) = reply.get_array("writeErrors") {
            for error in errors {
                let Bson::Document(error) = error else {
                    return Err(BackendError::Storage(format!(
                        "mongodb: {command} {collection}: malformed writeErrors entry"
                    )));
                };
                let index = int(error.get("index")).and_then(|i| usize::try_from(i).ok());
                let Some(slot) = index.and_then(|i| out.get_mut(offset + i)) else {
                    return Err(BackendError::Storage(format!(
                        "mongodb: {command} {collection}: writeErrors entry without a valid \
                         index: {error}"
                    )));
                };
                let code = int(error.get("code")).unwrap_or(-1);
                let code = i32::try_from(code).unwrap_or(-1);
                let message = error.get_str("errmsg").unwrap_or("").to_owned();
                *slot = Some((code, message));
            }
        }
    }
    Ok(out)
}

/// `items` cut into commands of at most [`CHUNK`] statements and [`CHUNK_BYTES`] bytes,
/// each with the index of its first statement.
fn chunks(items: &[Bson]) -> Vec<(usize, &[Bson])> {
    let mut out = Vec::new();
    let (mut first, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let size = match item {
            Bson::Document(d) => mongodb::bson::to_vec(d).map_or(0, |v| v.len()),
            _ => 0,
        };
        if i > first && (i - first >= CHUNK || bytes + size > CHUNK_BYTES) {
            out.push((first, &items[first..i]));
            (first, bytes) = (i, 0);
        }
        bytes += size;
    }
    if first < items.len() {
        out.push((first, &items[first..]));
    }
    out
}

fn int(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 => Some(*v as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_cut_by_count_and_by_bytes() {
        let small: Vec<Bson> = (0..1200).map(|i| Bson::Document(doc! { "i": i })).collect();
        let cut: Vec<(usize, usize)> = chunks(&small).iter().map(|(o, c)| (*o, c.len())).collect();
        assert_eq!(cut, vec![(0, 500), (500, 500), (1000, 200)]);
        let big = || Bson::Document(doc! { "b": "x".repeat(3 << 20) });
        let large = vec![big(), big(), big(), big()];
        let cut: Vec<(usize, usize)> = chunks(&large).iter().map(|(o, c)| (*o, c.len())).collect();
        assert_eq!(cut, vec![(0, 2), (2, 2)]);
        assert!(chunks(&[]).is_empty());
    }
}
