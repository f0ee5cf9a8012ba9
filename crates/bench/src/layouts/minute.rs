//! Per-minute buckets `v.S` (the page-view buckets, with MMS's update), written with
//! the driver (rows f, g): the product's geometry never makes minute documents for 10 s
//! data (it picks hour documents of 360 slots), so this row is the page-view layout itself.
//!
//! A document per series per minute, in collection `minutes`:
//! `{s: series, t: minute start ns, n, sum, mn, mx, v: {"0".."5": value}}` — six slots of
//! 10 s — with the page-view pattern's one index, `{s: 1, t: 1}`. A point is one statement
//! of an `update` command (one command per request) on `{s, t}`: `$set` of its slot, `$inc`
//! of `n` and `sum`, `$min`/`$max`, upsert.
//!
//! Why `{s, t}` fields and an index rather than an `_id: {s, t}` like the product's
//! buckets: that is the page-view pattern's shape, and secantusdb answers an equality on a
//! document-valued `_id` with a collection scan (its `explain` says `COLLSCAN`; a scalar
//! `_id` or the `{s, t}` index gets `IXSCAN`), so every upsert would cost time in
//! proportion to the collection — a server artifact, not the layout's cost. For the same
//! reason the queries ask one series at a time: `$in` and `$or` over `s` scan too.
//!
//! Row g first inserts a shell for every series' every minute: slots `null`, `n` and `sum`
//! zero, `mn`/`mx` at ±infinity — not 0, which `$min`/`$max` would keep, nor `null`,
//! which sorts below every number and so would stay the minimum. A shell has every field
//! the writes set, so they change values in place and never grow the document.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use futures::future::try_join_all;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, Database, IndexModel};

use super::queries::{median_of, q1_end};
use super::{mongo, Ctx, Data, Outcome, Row, INTERVAL_NS, MINUTE_NS, START_NS};
use crate::dataset::HOUR_NS;

const COLLECTION: &str = "minutes";
/// Slots per minute document at the dataset's 10 s interval.
const SLOTS: i64 = MINUTE_NS / INTERVAL_NS;
/// Shells per `insert_many` of the pre-allocation.
const SHELLS_PER_INSERT: usize = 1_000;

pub(super) async fn run(ctx: &Ctx<'_>, db: &Database, preallocated: bool) -> Result<Outcome> {
    let minutes = db.collection::<Document>(COLLECTION);
    minutes
        .create_index(IndexModel::builder().keys(doc! { "s": 1, "t": 1 }).build())
        .await
        .context("create index {s, t}")?;
    let requests: Vec<(usize, Vec<Document>)> = ctx
        .chunks()
        .map(|chunk| (chunk.len(), chunk.iter().map(statement).collect()))
        .collect();
    let mut outcome = Outcome::default();
    if preallocated {
        outcome
            .preallocate(ctx.limit(), preallocate(&minutes, ctx.data))
            .await?;
    }
    let before = ctx.round_trips_now();
    outcome
        .send_all(requests, ctx.limit(), |updates| update(db, updates))
        .await?;
    outcome.round_trips = Some(ctx.round_trips_now() - before);
    outcome.storage = Some(mongo::storage(db, &mut outcome.note).await);
    outcome.queries_ms = queries(&minutes, ctx.data, ctx.args.query_runs).await;
    Ok(outcome)
}

/// The minute document of `time` (its start) and the slot in it.
fn minute_of(time: i64) -> (i64, i64) {
    let start = time - (time - START_NS).rem_euclid(MINUTE_NS);
    (start, (time - start) / INTERVAL_NS)
}

/// The key of a document: the page-view pattern's `{page, timestamp}`.
fn key(series: usize, minute: i64) -> Document {
    doc! { "s": series as i64, "t": minute }
}

/// MMS's update of one slot (`$set` of the slot, `$inc` of the totals), as a statement of
/// an `update` command.
fn statement(r: &Row) -> Document {
    let (minute, slot) = minute_of(r.time);
    doc! {
        "q": key(r.series, minute),
        "u": {
            "$set": { format!("v.{slot}"): r.value },
            "$inc": { "n": 1_i64, "sum": r.value },
            "$min": { "mn": r.value },
            "$max": { "mx": r.value },
        },
        "upsert": true,
    }
}

/// One ordered `update` command: one round trip for the whole request.
async fn update(db: &Database, updates: Vec<Document>) -> Result<()> {
    let expected = updates.len() as i64;
    let reply = db
        .run_command(doc! { "update": COLLECTION, "updates": updates, "ordered": true })
        .await?;
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(first) = errors.first() {
            bail!("update: {} write errors, first: {first}", errors.len());
        }
    }
    let n = match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => bail!("update: no `n` in the reply {reply}"),
    };
    if n != expected {
        bail!("update: {n} of {expected} statements matched or upserted");
    }
    Ok(())
}

/// Inserts a shell for every series' every minute of the data; returns how many.
async fn preallocate(minutes: &Collection<Document>, data: &Data) -> Result<u64> {
    let mut slots = Document::new();
    for slot in 0..SLOTS {
        slots.insert(slot.to_string(), Bson::Null);
    }
    let shells: Vec<Document> = (0..data.keys.len())
        .flat_map(|series| {
            (START_NS..data.end)
                .step_by(MINUTE_NS as usize)
                .map(move |minute| (series, minute))
        })
        .map(|(series, minute)| {
            let mut shell = key(series, minute);
            shell.extend(doc! {
                "n": 0_i64,
                "sum": 0.0,
                "mn": f64::INFINITY,
                "mx": f64::NEG_INFINITY,
                "v": slots.clone(),
            });
            shell
        })
        .collect();
    let mut created = 0;
    for chunk in shells.chunks(SHELLS_PER_INSERT) {
        let inserted = minutes.insert_many(chunk).await.context("insert shells")?;
        created += inserted.inserted_ids.len() as u64;
    }
    Ok(created)
}

/// The documents of one series with minutes in `[start, end)` (an `{s, t}` index range).
fn range(series: usize, start: i64, end: i64) -> Document {
    doc! { "s": series as i64, "t": { "$gte": start, "$lt": end } }
}

/// The written slots of a document before `end` (a pre-allocated `null` is no point).
fn points_in(doc: &Document, end: i64) -> usize {
    let (Ok(minute), Ok(slots)) = (doc.get_i64("t"), doc.get_document("v")) else {
        return 0;
    };
    slots
        .iter()
        .filter(|(slot, value)| {
            let time = slot
                .parse::<i64>()
                .map_or(i64::MAX, |s| minute + s * INTERVAL_NS);
            matches!(value, Bson::Double(_)) && time < end
        })
        .count()
}

/// Reads of one series' documents in `[start, end)`, one `find` per series, at once.
async fn read(
    minutes: &Collection<Document>,
    series: std::ops::Range<usize>,
    end: i64,
    projection: Document,
) -> Result<Vec<Document>> {
    let reads = series.map(|s| {
        let projection = projection.clone();
        async move {
            let docs: Vec<Document> = minutes
                .find(range(s, START_NS, end))
                .projection(projection)
                .sort(doc! { "t": 1 })
                .await?
                .try_collect()
                .await?;
            anyhow::Ok(docs)
        }
    });
    Ok(try_join_all(reads).await?.into_iter().flatten().collect())
}

/// Q1 reads host_0's documents and expands their slots; Q2 is the documents' own `mx`
/// (the per-minute summary the layout keeps); Q3 takes each series' newest written
/// document and its last written slot; Q4 reads host_0's `mx` and keeps the largest per
/// field and hour.
async fn queries(minutes: &Collection<Document>, data: &Data, runs: usize) -> [Option<f64>; 4] {
    let summaries = doc! { "s": 1, "t": 1, "n": 1, "mx": 1 };
    let q1 = median_of(runs, || async {
        let end = q1_end(data);
        let docs = read(minutes, data.host0_series(), end, doc! {}).await?;
        Ok(docs.iter().map(|d| points_in(d, end)).sum())
    })
    .await;
    let q2 = median_of(runs, || async {
        let docs = read(minutes, 0..1, data.end, summaries.clone()).await?;
        Ok(docs
            .iter()
            .filter(|d| d.get_i64("n").unwrap_or(0) > 0)
            .count())
    })
    .await;
    let q3 = median_of(runs, || async {
        let pipeline = vec![
            doc! { "$match": { "n": { "$gt": 0_i64 } } },
            doc! { "$sort": { "s": 1, "t": -1 } },
            doc! { "$group": { "_id": "$s", "t": { "$first": "$t" }, "v": { "$first": "$v" } } },
        ];
        let docs: Vec<Document> = minutes.aggregate(pipeline).await?.try_collect().await?;
        Ok(docs.iter().filter(|d| last_slot(d).is_some()).count())
    })
    .await;
    let q4 = median_of(runs, || async {
        let docs = read(minutes, data.host0_series(), data.end, summaries.clone()).await?;
        Ok(hourly_max(&docs).len())
    })
    .await;
    [q1, q2, q3, q4]
}

/// The largest `mx` per (series, hour) of written documents.
fn hourly_max(docs: &[Document]) -> BTreeMap<(i64, i64), f64> {
    let mut out: BTreeMap<(i64, i64), f64> = BTreeMap::new();
    for d in docs.iter().filter(|d| d.get_i64("n").unwrap_or(0) > 0) {
        let (Ok(s), Ok(t), Ok(mx)) = (d.get_i64("s"), d.get_i64("t"), d.get_f64("mx")) else {
            continue;
        };
        let hour = t - (t - START_NS).rem_euclid(HOUR_NS);
        let max = out.entry((s, hour)).or_insert(f64::NEG_INFINITY);
        *max = max.max(mx);
    }
    out
}

/// The last written slot of a Q3 group: `{_id: series, t: minute, v: slots}`.
fn last_slot(group: &Document) -> Option<(i64, f64)> {
    let minute = group.get_i64("t").ok()?;
    let slots = group.get_document("v").ok()?;
    slots
        .iter()
        .filter_map(|(slot, value)| match (slot.parse::<i64>(), value) {
            (Ok(s), Bson::Double(v)) => Some((minute + s * INTERVAL_NS, *v)),
            _ => None,
        })
        .max_by_key(|(time, _)| *time)
}
