//! One document per point, written with the driver: `{m: {h, f}, t, v}` with an index on
//! `{m.h, m.f, t}` — batched (row a), in a native time-series collection (row d), and one
//! point per request (row e, the naive layout value segments replace).

use anyhow::{Context, Result};
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::{Collection, Database, IndexModel};

use super::queries::{median_of, q1_end};
use super::{mongo, Ctx, Data, Outcome, Row, MINUTE_NS, START_NS};
use crate::dataset::{FIELDS, HOUR_NS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Batched,
    Native,
    OnePerRequest,
}

pub(super) async fn run(ctx: &Ctx<'_>, db: &Database, shape: Shape) -> Result<Outcome> {
    let native = shape == Shape::Native;
    if native {
        if let Err(e) = create_time_series(db).await {
            return Ok(Outcome::failed(format!(
                "not supported by this server: {e}"
            )));
        }
    }
    let points = db.collection::<Document>("points");
    points
        .create_index(
            IndexModel::builder()
                .keys(doc! { "m.h": 1, "m.f": 1, "t": 1 })
                .build(),
        )
        .await
        .context("create index {m.h, m.f, t}")?;
    let (rows, batch): (&[Row], usize) = match shape {
        Shape::OnePerRequest => {
            let n = ctx.args.single_points.min(ctx.data.rows.len());
            (&ctx.data.rows[..n], 1)
        }
        _ => (&ctx.data.rows, ctx.args.batch),
    };
    let requests: Vec<(usize, Vec<Document>)> = rows
        .chunks(batch)
        .map(|c| {
            (
                c.len(),
                c.iter().map(|r| point_doc(ctx.data, r, native)).collect(),
            )
        })
        .collect();
    let mut outcome = Outcome::default();
    let before = ctx.round_trips_now();
    let collection = &points;
    outcome
        .send_all(requests, ctx.limit(), |mut body| async move {
            if body.len() == 1 {
                let one = body.remove(0);
                collection.insert_one(one).await?;
            } else {
                collection.insert_many(body).await?;
            }
            Ok(())
        })
        .await?;
    outcome.round_trips = Some(ctx.round_trips_now() - before);
    let storage = mongo::storage(db, &mut outcome.note).await;
    if native && storage.documents == outcome.points as u64 {
        outcome.note = Some(
            "the server accepted `timeseries` but collStats counts one document per \
             point: no buckets are visible on this server"
                .into(),
        );
    }
    outcome.storage = Some(storage);
    if shape != Shape::OnePerRequest {
        outcome.queries_ms = queries(&points, ctx.data, native, ctx.args.query_runs).await;
    }
    Ok(outcome)
}

async fn create_time_series(db: &Database) -> Result<()> {
    db.run_command(doc! {
        "create": "points",
        "timeseries": {"timeField": "t", "metaField": "m", "granularity": "seconds"},
    })
    .await?;
    Ok(())
}

fn point_doc(data: &Data, r: &Row, native: bool) -> Document {
    let time = if native {
        DateTime::from_millis(r.time / 1_000_000).into()
    } else {
        Bson::Int64(r.time)
    };
    doc! { "m": { "h": data.host(r.series), "f": Data::field(r.series) }, "t": time, "v": r.value }
}

/// The reference queries as `find` and aggregation pipelines over point documents.
async fn queries(
    points: &Collection<Document>,
    data: &Data,
    native: bool,
    runs: usize,
) -> [Option<f64>; 4] {
    let time = |ns: i64| -> Bson {
        if native {
            DateTime::from_millis(ns / 1_000_000).into()
        } else {
            Bson::Int64(ns)
        }
    };
    // Window start of `$t` for a window of `width` ns: in ms for dates (date − date = ms).
    let unit = if native { 1_000_000 } else { 1 };
    let bucket = |width: i64| {
        let offset = doc! { "$subtract": ["$t", time(START_NS)] };
        doc! { "$subtract": [offset.clone(), { "$mod": [offset, width / unit] }] }
    };
    let host = data.host(0);
    let collect = |pipeline: Vec<Document>| async move {
        let docs: Vec<Document> = points.aggregate(pipeline).await?.try_collect().await?;
        anyhow::Ok(docs.len())
    };
    let q1 = median_of(runs, || async {
        let filter =
            doc! { "m.h": &host, "t": { "$gte": time(START_NS), "$lt": time(q1_end(data)) } };
        let docs: Vec<Document> = points
            .find(filter)
            .sort(doc! { "m.f": 1, "t": 1 })
            .await?
            .try_collect()
            .await?;
        Ok(docs.len())
    })
    .await;
    let q2 = median_of(runs, || {
        collect(vec![
            doc! { "$match": { "m.h": &host, "m.f": FIELDS[0], "t": { "$gte": time(START_NS), "$lt": time(data.end) } } },
            doc! { "$group": { "_id": bucket(MINUTE_NS), "v": { "$max": "$v" } } },
            doc! { "$sort": { "_id": 1 } },
        ])
    })
    .await;
    let q3 = median_of(runs, || {
        collect(vec![
            doc! { "$sort": { "m.h": 1, "m.f": 1, "t": -1 } },
            doc! { "$group": { "_id": "$m", "t": { "$first": "$t" }, "v": { "$first": "$v" } } },
        ])
    })
    .await;
    let q4 = median_of(runs, || {
        collect(vec![
            doc! { "$match": { "m.h": &host, "t": { "$gte": time(START_NS), "$lt": time(data.end) } } },
            doc! { "$group": { "_id": { "f": "$m.f", "w": bucket(HOUR_NS) }, "v": { "$max": "$v" } } },
            doc! { "$sort": { "_id.f": 1, "_id.w": 1 } },
        ])
    })
    .await;
    [q1, q2, q3, q4]
}
