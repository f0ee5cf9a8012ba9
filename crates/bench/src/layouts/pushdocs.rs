//! Row c, the alternative to the product's value partitions (row b) for last-write-wins
//! points on MongoDB, written with the driver: one document per series and time
//! partition, in one collection per partition (`pv.<partition start ns>`, day partitions
//! as the product's, so retention would drop whole collections too):
//!
//! `{_id: series, t: [time, …], v: [value, …]}` before the seal, `{_id, b: block}` after.
//!
//! - **Write:** a request is one unordered `update` command per partition it touches, one
//!   upsert statement per (series, partition): `$push` of its times and values with
//!   `$each`, in the body's order. A late point is pushed like any other, so a retried
//!   body only pushes the same pairs again; a reader sorts a document's pairs by time
//!   (stably) and takes the last pair of each time.
//! - **Seal** (the compaction step, after the writes): every document's pairs, merged
//!   after those of its block if it has one, last write per time, become one compressed
//!   block (`tickertape_core::codec`) in `b`, and `t`/`v` are unset — in unordered
//!   `update`s of one statement per document, conditioned on `t` still holding the pairs
//!   read (`$size`), so that a push between the read and the rewrite makes the statement
//!   miss rather than lose the pushed points. Pushes after a seal start `t`/`v` again,
//!   merged with `b` by the next seal and by readers.
//!
//! The series id is the dataset's series index: this row has no series collection (row b
//! has one, and counts it). No reference queries: a reader of this layout is not written.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use futures::TryStreamExt;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{doc, Binary, Bson, Document};
use mongodb::Database;
use tickertape_core::codec::{decode_block, encode_block};
use tickertape_core::partition::{Partitioning, DEFAULT_PARTITION_NS};
use tickertape_core::Point;

use super::{mongo, ms, Ctx, Outcome, Row, Sealed};

/// The prefix of the partition collections.
const PREFIX: &str = "pv.";
/// Statements per `update` command at most (MongoDB takes up to 100,000): one command per
/// request and partition at the bench's sizes.
const STATEMENTS_PER_COMMAND: usize = 10_000;
/// Bytes of statements per command at most: a command is one BSON document, limited to
/// 16 MiB.
const BYTES_PER_COMMAND: usize = 8 << 20;

pub(super) async fn run(ctx: &Ctx<'_>, db: &Database) -> Result<Outcome> {
    let partitioning = Partitioning::new(DEFAULT_PARTITION_NS).context("day partitions")?;
    let bodies = ctx.bodies();
    let requests: Vec<(usize, BTreeMap<i64, Vec<Document>>)> = bodies
        .iter()
        .map(|body| (body.chunk, pushes(&body.rows, partitioning)))
        .collect();
    let mut outcome = Outcome::default();
    let before = ctx.round_trips_now();
    outcome
        .send_all(requests, ctx.limit(), |partitions| async move {
            for (start, statements) in partitions {
                update(db, &collection(start), statements).await?;
            }
            Ok(())
        })
        .await?;
    outcome.count_late(&bodies);
    outcome.round_trips = Some(ctx.round_trips_now() - before);
    outcome.storage = Some(mongo::storage(db, &mut outcome.note).await);
    let before = ctx.round_trips_now();
    let started = Instant::now();
    seal(db).await.context("seal")?;
    let ms = ms(started.elapsed());
    outcome.sealed.push(Sealed {
        name: "(c') the same after the seal rewrite",
        ms,
        round_trips: Some(ctx.round_trips_now() - before),
        storage: mongo::storage(db, &mut outcome.note).await,
        queries_ms: [None; 4],
    });
    outcome
        .note
        .get_or_insert_with(|| "no reference queries: this layout has no reader here".into());
    Ok(outcome)
}

fn collection(partition_start: i64) -> String {
    format!("{PREFIX}{partition_start}")
}

/// One body as `update` statements by partition start: one upsert per (series,
/// partition) pushing its points in the body's order.
fn pushes(rows: &[Row], partitioning: Partitioning) -> BTreeMap<i64, Vec<Document>> {
    // (partition start, series) → its times and values, in order of first appearance.
    let mut groups: Vec<(i64, usize, Vec<i64>, Vec<f64>)> = Vec::new();
    let mut index: HashMap<(i64, usize), usize> = HashMap::new();
    for r in rows {
        let start = partitioning.start_of(r.time);
        let i = *index.entry((start, r.series)).or_insert_with(|| {
            groups.push((start, r.series, Vec::new(), Vec::new()));
            groups.len() - 1
        });
        groups[i].2.push(r.time);
        groups[i].3.push(r.value);
    }
    let mut out: BTreeMap<i64, Vec<Document>> = BTreeMap::new();
    for (start, series, times, values) in groups {
        out.entry(start).or_default().push(doc! {
            "q": { "_id": series as i64 },
            "u": { "$push": { "t": { "$each": times }, "v": { "$each": values } } },
            "upsert": true,
        });
    }
    out
}

/// `statements` on `collection` in unordered `update` commands, each under
/// [`STATEMENTS_PER_COMMAND`] and [`BYTES_PER_COMMAND`]; fails unless every statement
/// matched a document or upserted one.
async fn update(db: &Database, collection: &str, statements: Vec<Document>) -> Result<()> {
    let mut command: Vec<Document> = Vec::new();
    let mut bytes = 0;
    for statement in statements {
        let size = mongodb::bson::to_vec(&statement)?.len();
        if !command.is_empty()
            && (command.len() == STATEMENTS_PER_COMMAND || bytes + size > BYTES_PER_COMMAND)
        {
            update_command(db, collection, std::mem::take(&mut command)).await?;
            bytes = 0;
        }
        bytes += size;
        command.push(statement);
    }
    if !command.is_empty() {
        update_command(db, collection, command).await?;
    }
    Ok(())
}

async fn update_command(db: &Database, collection: &str, statements: Vec<Document>) -> Result<()> {
    let expected = statements.len() as i64;
    let reply = db
        .run_command(doc! { "update": collection, "updates": statements, "ordered": false })
        .await
        .with_context(|| format!("update {collection}"))?;
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(first) = errors.first() {
            bail!(
                "update {collection}: {} write errors, first: {first}",
                errors.len()
            );
        }
    }
    let n = match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => bail!("update {collection}: no `n` in the reply {reply}"),
    };
    if n != expected {
        bail!("update {collection}: {n} of {expected} statements matched or upserted");
    }
    Ok(())
}

/// Rewrites every document of every partition collection that holds pushed pairs into
/// one block (see the module docs).
async fn seal(db: &Database) -> Result<()> {
    let names = db.list_collection_names().await?;
    for name in names.iter().filter(|n| n.starts_with(PREFIX)) {
        let mut documents = db.collection::<Document>(name).find(doc! {}).await?;
        let mut statements = Vec::new();
        while let Some(document) = documents.try_next().await? {
            if let Some(statement) = seal_statement(&document)? {
                statements.push(statement);
            }
        }
        update(db, name, statements).await?;
    }
    Ok(())
}

/// The rewrite of one document into a block, `None` if it has no pushed pairs.
fn seal_statement(document: &Document) -> Result<Option<Document>> {
    let id = document.get("_id").context("a document without _id")?;
    let (times, values) = match (document.get("t"), document.get("v")) {
        (None, None) => return Ok(None),
        (Some(Bson::Array(t)), Some(Bson::Array(v))) if t.len() == v.len() => (t, v),
        _ => bail!("document {id}: `t` and `v` are not arrays of one length"),
    };
    let mut points = match document.get("b") {
        None => Vec::new(),
        Some(Bson::Binary(b)) => {
            decode_block(&b.bytes).with_context(|| format!("document {id}: its block"))?
        }
        Some(other) => bail!("document {id}: `b` is {other:?}, not a block"),
    };
    for (t, v) in times.iter().zip(values) {
        let time = match t {
            Bson::Int64(t) => *t,
            Bson::Int32(t) => i64::from(*t),
            other => bail!("document {id}: time {other:?} is not an integer"),
        };
        let Bson::Double(value) = v else {
            bail!("document {id}: value {v:?} is not a double");
        };
        points.push(Point::new(time, *value));
    }
    let block = Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: encode_block(&last_writes(points)),
    });
    Ok(Some(doc! {
        "q": { "_id": id.clone(), "t": { "$size": times.len() as i64 } },
        "u": { "$set": { "b": block }, "$unset": { "t": "", "v": "" } },
    }))
}

/// `points` in write order → by time, the last write of each time.
pub(super) fn last_writes(mut points: Vec<Point>) -> Vec<Point> {
    // Stable: the points of one time keep their write order.
    points.sort_by_key(|p| p.time);
    let mut out: Vec<Point> = Vec::with_capacity(points.len());
    for p in points {
        match out.last_mut() {
            Some(last) if last.time == p.time => *last = p,
            _ => out.push(p),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_of_a_time_wins() {
        let points = vec![
            Point::new(20, 1.0),
            Point::new(10, 2.0),
            Point::new(20, 3.0),
            Point::new(10, 4.0),
            Point::new(30, 5.0),
        ];
        let got: Vec<(i64, f64)> = last_writes(points)
            .iter()
            .map(|p| (p.time, p.value))
            .collect();
        assert_eq!(got, vec![(10, 4.0), (20, 3.0), (30, 5.0)]);
    }

    #[test]
    fn a_sealed_document_merges_its_block_before_its_pushes() {
        let block = encode_block(&[Point::new(10, 1.0), Point::new(20, 2.0)]);
        let document = doc! {
            "_id": 3_i64,
            "b": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: block }),
            "t": [20_i64, 30_i64],
            "v": [7.0, 8.0],
        };
        let statement = seal_statement(&document).unwrap().unwrap();
        let q = statement.get_document("q").unwrap();
        assert_eq!(q.get_document("t").unwrap().get_i64("$size").unwrap(), 2);
        let set = statement
            .get_document("u")
            .unwrap()
            .get_document("$set")
            .unwrap();
        let Some(Bson::Binary(b)) = set.get("b") else {
            panic!("no block in {statement}");
        };
        let got: Vec<(i64, f64)> = decode_block(&b.bytes)
            .unwrap()
            .iter()
            .map(|p| (p.time, p.value))
            .collect();
        assert_eq!(got, vec![(10, 1.0), (20, 7.0), (30, 8.0)]);
    }
}
