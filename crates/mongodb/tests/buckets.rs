//! Time buckets as MongoDB stores them: the bucket document shapes of docs/design.md (`_id {s, b}`,
//! `v.M.S`, `n`), shells with every slot present as null, long merges that leave no
//! temporary field behind, and writers on separate handles racing for the same slots.
//! The rules of the `Backend` trait (Set once, Add, Merge as `apply_to`, shells read as
//! absent, partitions, ranges) are checked on every backend by the conformance suite.

mod common;

use std::collections::BTreeMap;
use tickertape_backend::{BucketRange, BucketStore, DocumentStart};

use common::*;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Client;
use tickertape_backend::{
    BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, Partition, SlotChange, SlotValue,
};
use tickertape_core::rollup::{rollup_updates, Resolution};
use tickertape_core::{Point, SeriesId};
use tickertape_mongodb::{uri_with_database, MongoBackend};

use BucketWriteOutcome::Applied;

const S: i64 = 1_000_000_000;
const H: i64 = 3_600 * S;

/// 1-second raw buckets: hour documents of 3600 slots, day partitions.
fn raw_family() -> BucketFamily {
    BucketFamily::raw(3, S).unwrap()
}

fn set(series: u64, bucket_start: i64, slot: u32, value: f64) -> BucketWrite {
    BucketWrite::new(
        raw_family(),
        SeriesId(series),
        bucket_start,
        slot,
        SlotChange::Set(value),
    )
    .unwrap()
}

/// The stored document of `series` starting at `start` in `family`'s partition,
/// straight from the server.
async fn stored(
    b: &MongoBackend,
    family: BucketFamily,
    series: u64,
    start: i64,
) -> Option<Document> {
    let collection = Partition::of_document(family, start)
        .expect("a document start")
        .name();
    let uri = uri_with_database(&server_uri(), b.database_name());
    let client = Client::with_uri_str(&uri).await.expect("client");
    client
        .database(b.database_name())
        .collection::<Document>(&collection)
        .find_one(doc! { "_id": { "s": series as i64, "b": start } })
        .await
        .expect("find_one")
}

#[tokio::test]
async fn raw_documents_have_the_seed_shape() {
    let b = open(&fresh_db("bk_shape"), 8).await;
    let out = b
        .write_buckets(vec![
            set(1, 0, 0, 1.5),
            set(1, 0, 61, 0.0),
            set(1, 0, 62, -3.0),
        ])
        .await
        .expect("write");
    assert_eq!(out, vec![Applied; 3]);
    // `v.M.S` (minute, second of the minute), summary fields beside it, `_id` {s, b}.
    let d = stored(&b, raw_family(), 1, 0).await.expect("stored");
    let v = d.get_document("v").expect("v");
    assert_eq!(
        v.get_document("1").expect("v.1").get("1"),
        Some(&Bson::Double(0.0))
    );
    assert_eq!(
        v.get_document("0").expect("v.0").get("0"),
        Some(&Bson::Double(1.5))
    );
    assert_eq!(d.get("n"), Some(&Bson::Int64(3)));
    assert_eq!(d.get("sum"), Some(&Bson::Double(1.5 + 0.0 + -3.0)));
    b.drop_database().await.expect("drop");
}

/// Pre-allocation writes every slot as null, so that later writes update the document in
/// place rather than grow it (docs/design.md#pre-allocation).
#[tokio::test]
async fn shells_hold_every_slot_as_null() {
    let b = open(&fresh_db("bk_shell"), 8).await;
    b.preallocate(
        DocumentStart::new(raw_family(), 0).expect("a document start"),
        &[SeriesId(1)],
    )
    .await
    .expect("preallocate");
    let shell = stored(&b, raw_family(), 1, 0).await.expect("shell");
    let nulls: usize = shell
        .get_document("v")
        .expect("v")
        .values()
        .map(|m| {
            m.as_document()
                .map_or(0, |d| d.iter().filter(|(_, v)| **v == Bson::Null).count())
        })
        .sum();
    assert_eq!(nulls, 3_600);
    b.drop_database().await.expect("drop");
}

/// A merge of more values than one pipeline stage adds, into a shell and into a fresh
/// document, leaves no temporary field (`_w`) in the stored document.
#[tokio::test]
async fn long_merges_leave_no_temporary_field() {
    let b = open(&fresh_db("bk_long"), 8).await;
    let minute = BucketFamily::rollup(3, Resolution::MINUTE);
    b.preallocate(
        DocumentStart::new(minute, 0).expect("a document start"),
        &[SeriesId(1)],
    )
    .await
    .expect("shell");
    let batch: Vec<Point> = (0..90)
        .map(|i| Point::new(i * S / 2, i as f64 / 7.0))
        .collect();
    let updates = rollup_updates(&batch, &[Resolution::MINUTE]).expect("updates");
    assert!(updates.iter().any(|u| u.points.len() > 32), "a long merge");
    for series in [1, 2] {
        let writes = updates
            .iter()
            .map(|u| BucketWrite::rollup(3, SeriesId(series), u, &batch).unwrap())
            .collect();
        let out = b.write_buckets(writes).await.expect("merge");
        assert!(out.iter().all(|o| *o == Applied), "{out:?}");
        let d = stored(&b, minute, series, 0).await.expect("written");
        assert!(!d.contains_key("_w"), "{d}");
    }
    b.drop_database().await.expect("drop");
}

/// Writers on separate handles race to `Set` the same slots of documents that do not exist
/// yet: each slot is applied exactly once, and the value read is the applied one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_sets_apply_once_per_slot() {
    let db = fresh_db("bk_race");
    let mut tasks = Vec::new();
    for w in 0..4_u32 {
        let b = open(&db, 8).await;
        tasks.push(tokio::spawn(async move {
            let mut applied = Vec::new();
            for round in 0..6_i64 {
                let writes: Vec<BucketWrite> = (0..10_u32)
                    .map(|slot| set(1, round * H, slot, f64::from(w * 100 + slot)))
                    .collect();
                let out = b.write_buckets(writes).await.expect("write");
                for (slot, o) in out.into_iter().enumerate() {
                    if o == Applied {
                        applied.push((round, slot as u32, f64::from(w * 100 + slot as u32)));
                    }
                }
            }
            applied
        }));
    }
    let mut winners = BTreeMap::new();
    for task in tasks {
        for (round, slot, v) in task.await.expect("task") {
            assert!(
                winners.insert((round, slot), v).is_none(),
                "slot {round}/{slot} applied twice"
            );
        }
    }
    assert_eq!(winners.len(), 60, "every slot applied once");
    let b = open(&db, 8).await;
    for round in 0..6_i64 {
        let got = b
            .read_buckets(
                BucketRange {
                    family: raw_family(),
                    series: SeriesId(1),
                    start: round * H,
                    end: round * H + 1,
                },
                BucketRead::Full,
            )
            .await
            .expect("read");
        let want: Vec<(u32, SlotValue)> = (0..10)
            .map(|slot| (slot, SlotValue::Value(winners[&(round, slot)])))
            .collect();
        assert_eq!(got[0].slots, want);
        assert_eq!(got[0].totals.map(|t| t.count), Some(10));
    }
    b.drop_database().await.expect("drop");
}
