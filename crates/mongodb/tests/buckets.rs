//! Time buckets on MongoDB: `Set` once per slot, `Add`, `Merge` bit for bit as
//! `RollupUpdate::apply_to`, shells, partitions, totals-only reads, and the stored shapes.

mod common;

use std::collections::BTreeMap;

use common::*;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Client;
use tickertape_backend::{
    Backend, BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, Partition, SlotChange,
    SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{rollup_updates, Resolution, RollupUpdate};
use tickertape_core::{Point, SeriesId};
use tickertape_mongodb::{uri_with_database, MongoBackend, SegmentProtocol};

use BucketWriteOutcome::{Applied, SlotTaken};

const S: i64 = 1_000_000_000;
const H: i64 = 3_600 * S;
const D: i64 = 24 * H;

/// 1-second raw buckets: hour documents of 3600 slots, day partitions.
fn raw_family() -> BucketFamily {
    BucketFamily::raw(3, S).unwrap()
}

fn rollup(r: Resolution) -> BucketFamily {
    BucketFamily::rollup(3, r)
}

fn raw(series: u64, bucket_start: i64, slot: u32, change: SlotChange) -> BucketWrite {
    BucketWrite::new(raw_family(), SeriesId(series), bucket_start, slot, change).unwrap()
}

async fn open_db(test: &str) -> MongoBackend {
    open(&fresh_db(test), SegmentProtocol::Reserve, 8).await
}

async fn read(
    b: &MongoBackend,
    family: BucketFamily,
    series: u64,
    start: i64,
    end: i64,
) -> Vec<StoredBucket> {
    b.read_buckets(family, SeriesId(series), start, end, BucketRead::Full)
        .await
        .expect("read_buckets")
}

fn values(bucket: &StoredBucket) -> Vec<(u32, f64)> {
    bucket
        .slots
        .iter()
        .map(|(slot, v)| match v {
            SlotValue::Value(x) => (*slot, *x),
            SlotValue::Summary(s) => panic!("raw slot {slot} holds a summary {s:?}"),
        })
        .collect()
}

/// The stored document, straight from the server.
async fn stored(b: &MongoBackend, collection: &str, series: i64, start: i64) -> Option<Document> {
    let uri = uri_with_database(&server_uri(), b.database_name());
    let client = Client::with_uri_str(&uri).await.expect("client");
    client
        .database(b.database_name())
        .collection::<Document>(collection)
        .find_one(doc! { "_id": { "s": series, "b": start } })
        .await
        .expect("find_one")
}

/// A small deterministic generator (splitmix64), so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Values that stress float addition: signed zeros, tenths, wide magnitudes.
    fn value(&mut self) -> f64 {
        match self.below(6) {
            0 => -0.0,
            1 => 0.0,
            2 => 0.1 * (self.below(11) as f64 - 5.0),
            _ => {
                (self.below(2_000_000_000) as f64 - 1e9) / 7.0
                    * 10f64.powi(self.below(9) as i32 - 4)
            }
        }
    }
}

#[tokio::test]
async fn set_fills_a_slot_once_and_refuses_the_rest() {
    let b = open_db("bk_set").await;
    let out = b
        .write_buckets(vec![
            raw(1, 0, 0, SlotChange::Set(1.5)),
            raw(1, 0, 61, SlotChange::Set(0.0)),
            raw(1, 0, 61, SlotChange::Set(9.0)),
            raw(1, 0, 62, SlotChange::Set(-3.0)),
            raw(1, H, 3_599, SlotChange::Set(2.0)),
        ])
        .await
        .expect("write");
    assert_eq!(out, vec![Applied, Applied, SlotTaken, Applied, Applied]);

    // A replayed batch: every slot taken, nothing changes; a new slot among them applies.
    let replay = vec![
        raw(1, 0, 0, SlotChange::Set(7.0)),
        raw(1, 0, 1, SlotChange::Set(4.0)),
        raw(1, 0, 61, SlotChange::Set(7.0)),
        raw(1, 0, 62, SlotChange::Set(7.0)),
        raw(1, H, 3_599, SlotChange::Set(7.0)),
    ];
    let out = b.write_buckets(replay).await.expect("replay");
    assert_eq!(
        out,
        vec![SlotTaken, Applied, SlotTaken, SlotTaken, SlotTaken]
    );

    let got = read(&b, raw_family(), 1, 0, 2 * H).await;
    assert_eq!(got.len(), 2);
    assert_eq!(
        values(&got[0]),
        vec![(0, 1.5), (1, 4.0), (61, 0.0), (62, -3.0)]
    );
    assert_eq!(values(&got[1]), vec![(3_599, 2.0)]);
    let t = got[0].totals.expect("totals");
    assert_eq!(
        (t.count, t.sum, t.min, t.max),
        (4, 1.5 + 0.0 + -3.0 + 4.0, -3.0, 4.0)
    );

    // The seed's shape: `v.M.S`, summary fields beside it, `_id` {s, b}.
    let d = stored(&b, "bk.3.raw.1000000000.0", 1, 0)
        .await
        .expect("stored");
    let v = d.get_document("v").expect("v");
    assert_eq!(
        v.get_document("1").expect("v.1").get("1"),
        Some(&Bson::Double(0.0))
    );
    assert_eq!(d.get("n"), Some(&Bson::Int64(4)));
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn set_refusals_interleave_with_applied_writes_in_order() {
    let b = open_db("bk_order").await;
    // Many writes to one document, with taken slots scattered among them: every outcome
    // is right and the sum adds the applied values in write order.
    let mut rng = Rng(5);
    let mut writes = Vec::new();
    let mut want: BTreeMap<u32, f64> = BTreeMap::new();
    let mut outcomes = Vec::new();
    let mut sum: Option<f64> = None;
    for _ in 0..300 {
        let slot = rng.below(200) as u32;
        let v = rng.value();
        writes.push(raw(2, 0, slot, SlotChange::Set(v)));
        if let std::collections::btree_map::Entry::Vacant(e) = want.entry(slot) {
            e.insert(v);
            sum = Some(sum.map_or(v, |s| s + v));
            outcomes.push(Applied);
        } else {
            outcomes.push(SlotTaken);
        }
    }
    assert_eq!(b.write_buckets(writes).await.expect("write"), outcomes);
    let got = read(&b, raw_family(), 2, 0, H).await;
    let got_values: Vec<(u32, u64)> = values(&got[0])
        .iter()
        .map(|(s, v)| (*s, v.to_bits()))
        .collect();
    let want_values: Vec<(u32, u64)> = want.iter().map(|(s, v)| (*s, v.to_bits())).collect();
    assert_eq!(got_values, want_values);
    let t = got[0].totals.expect("totals");
    assert_eq!(t.count, want.len() as u64);
    assert_eq!(t.sum.to_bits(), sum.unwrap_or(0.0).to_bits());
    b.drop_database().await.expect("drop");
}

/// Writers on separate handles race to `Set` the same slots of documents that do not exist
/// yet: each slot is applied exactly once, and the value read is the applied one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_sets_apply_once_per_slot() {
    let db = fresh_db("bk_race");
    let mut tasks = Vec::new();
    for w in 0..4_u32 {
        let b = open(&db, SegmentProtocol::Reserve, 8).await;
        tasks.push(tokio::spawn(async move {
            let mut applied = Vec::new();
            for round in 0..6_i64 {
                let writes: Vec<BucketWrite> = (0..10_u32)
                    .map(|slot| {
                        raw(
                            1,
                            round * H,
                            slot,
                            SlotChange::Set(f64::from(w * 100 + slot)),
                        )
                    })
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
    let b = open(&db, SegmentProtocol::Reserve, 8).await;
    for round in 0..6_i64 {
        let got = read(&b, raw_family(), 1, round * H, round * H + 1).await;
        let want: Vec<(u32, f64)> = (0..10)
            .map(|slot| (slot, winners[&(round, slot)]))
            .collect();
        assert_eq!(values(&got[0]), want);
        assert_eq!(got[0].totals.map(|t| t.count), Some(10));
    }
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn add_accumulates_also_into_preallocated_slots() {
    let b = open_db("bk_add").await;
    assert_eq!(
        b.preallocate(raw_family(), &[SeriesId(4)], -H)
            .await
            .expect("shell"),
        1
    );
    let out = b
        .write_buckets(vec![
            raw(4, -H, 10, SlotChange::Add(1.0)),
            raw(4, -H, 10, SlotChange::Add(2.5)),
            raw(4, -H, 11, SlotChange::Add(-4.0)),
            raw(5, -H, 10, SlotChange::Add(0.25)),
        ])
        .await
        .expect("add");
    assert_eq!(out, vec![Applied; 4]);
    b.write_buckets(vec![raw(4, -H, 10, SlotChange::Add(0.5))])
        .await
        .expect("add again");
    for (series, slots, totals) in [
        (4, vec![(10, 4.0), (11, -4.0)], (4, 0.0, -4.0, 2.5)),
        (5, vec![(10, 0.25)], (1, 0.25, 0.25, 0.25)),
    ] {
        let got = read(&b, raw_family(), series, -H, 0).await;
        assert_eq!(values(&got[0]), slots, "series {series}");
        let t = got[0].totals.expect("totals");
        assert_eq!((t.count, t.sum, t.min, t.max), totals, "series {series}");
    }
    b.drop_database().await.expect("drop");
}

/// The write the engine makes for one rollup update.
fn merge(series: u64, u: &RollupUpdate, batch: &[Point]) -> BucketWrite {
    BucketWrite::new(
        rollup(u.resolution),
        SeriesId(series),
        u.bucket_start,
        u.slot,
        SlotChange::Merge {
            summary: u.summary,
            values: batch[u.points.clone()].iter().map(|p| p.value).collect(),
        },
    )
    .unwrap()
}

fn bits(s: &Summary) -> (u64, u64, u64, u64, i64, u64, i64, u64) {
    (
        s.count,
        s.sum.to_bits(),
        s.min.to_bits(),
        s.max.to_bits(),
        s.first.time,
        s.first.value.to_bits(),
        s.last.time,
        s.last.value.to_bits(),
    )
}

#[tokio::test]
async fn merge_matches_apply_to_bit_for_bit() {
    let b = open_db("bk_merge").await;
    let resolutions = [Resolution::MINUTE, Resolution::HOUR];
    // Some hour-rollup slots are shells, so merges also land on pre-allocated nulls.
    b.preallocate(rollup(Resolution::HOUR), &[SeriesId(6)], 0)
        .await
        .expect("shell");
    let mut rng = Rng(42);
    let mut model: BTreeMap<(i64, i64, u32), Summary> = BTreeMap::new();
    let mut t = -H / 2;
    let mut long_merges = 0;
    for call in 0..30 {
        // Several batches per call; batch sizes up to 90 points so that some slots get
        // more values in one merge than one pipeline stage adds.
        let mut writes = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let n = 1 + rng.below(if call % 7 == 0 { 90 } else { 12 });
            let batch: Vec<Point> = (0..n)
                .map(|_| {
                    t += (1 + rng.below(if n > 40 { 2 } else { 40 }) as i64) * S / 2;
                    Point::new(t, rng.value())
                })
                .collect();
            let updates = rollup_updates(&batch, &resolutions).expect("updates");
            for u in &updates {
                long_merges += usize::from(u.points.len() > 32);
                let key = (u.resolution.nanos(), u.bucket_start, u.slot);
                let after = u.apply_to(model.get(&key), &batch);
                model.insert(key, after);
                writes.push(merge(6, u, &batch));
            }
        }
        let out = b.write_buckets(writes).await.expect("merge");
        assert!(out.iter().all(|o| *o == Applied), "call {call}: {out:?}");
    }
    assert!(long_merges > 0, "no merge spanned several pipeline stages");
    assert!(
        model
            .keys()
            .any(|k| k.0 == Resolution::HOUR.nanos() && k.1 == 0),
        "no merge landed in the shell"
    );
    for r in resolutions {
        let docs = read(&b, rollup(r), 6, -4 * H, t + 1).await;
        let mut got = BTreeMap::new();
        for d in &docs {
            assert!(d.totals.is_none());
            for (slot, v) in &d.slots {
                let SlotValue::Summary(s) = v else {
                    panic!("rollup slot {slot} holds a value")
                };
                got.insert((r.nanos(), d.bucket_start, *slot), *s);
            }
        }
        let want: BTreeMap<_, _> = model.iter().filter(|(k, _)| k.0 == r.nanos()).collect();
        assert_eq!(got.len(), want.len(), "{r}: slots");
        for (k, w) in want {
            assert_eq!(
                bits(&got[k]),
                bits(w),
                "{r} slot {k:?}: {:?} vs {w:?}",
                got[k]
            );
        }
    }
    // No temporary field of a long merge is left behind.
    let d = stored(
        &b,
        &format!("bk.3.roll.{}.0", Resolution::HOUR.nanos()),
        6,
        0,
    )
    .await
    .expect("shell written into");
    assert!(!d.contains_key("_w"), "{d}");
    b.drop_database().await.expect("drop");
}

/// One call carries runs of merges to one document — the same slot several times in a
/// run, runs of two documents interleaved, merges longer than one pipeline stage, a
/// shell — and every slot ends bit for bit as `RollupUpdate::apply_to` in the call's order.
#[tokio::test]
async fn merges_to_one_document_in_one_call_match_apply_to() {
    let b = open_db("bk_multi").await;
    let minute = [Resolution::MINUTE];
    b.preallocate(rollup(Resolution::MINUTE), &[SeriesId(9)], 0)
        .await
        .expect("shell");
    let mut rng = Rng(7);
    let mut model: BTreeMap<(u64, i64, u32), Summary> = BTreeMap::new();
    let mut long_merges = 0;
    let mut repeated_in_a_run = 0;
    for call in 0..8 {
        // A batch: points from a minute of hour 0 on (spilling into hour 1 now and then),
        // 1-3 s apart, so that batches of one call share slots and times.
        let batch = |rng: &mut Rng| -> Vec<Point> {
            let mut t = [0, 1, 2, 58][rng.below(4) as usize] * 60 * S;
            let step = (1 + rng.below(3) as i64) * S;
            (0..1 + rng.below(if call % 3 == 0 { 90 } else { 20 }))
                .map(|_| {
                    t += step;
                    Point::new(t, rng.value())
                })
                .collect()
        };
        // Two batches of series 8 back to back (one run per document, the same slots
        // merged twice in it), then series 9, 8, 9: the documents interleave.
        let order = [8, 8, 9, 8, 9];
        let mut writes = Vec::new();
        let mut run_slots: Vec<(u64, i64, u32)> = Vec::new();
        for (k, series) in order.into_iter().enumerate() {
            let points = batch(&mut rng);
            let updates = rollup_updates(&points, &minute).expect("updates");
            for u in &updates {
                long_merges += usize::from(u.points.len() > 32);
                let key = (series, u.bucket_start, u.slot);
                if k == 1 && run_slots.contains(&key) {
                    repeated_in_a_run += 1;
                }
                if k == 0 {
                    run_slots.push(key);
                }
                model.insert(key, u.apply_to(model.get(&key), &points));
                writes.push(merge(series, u, &points));
            }
        }
        let out = b.write_buckets(writes).await.expect("merge");
        assert!(out.iter().all(|o| *o == Applied), "call {call}: {out:?}");
    }
    assert!(long_merges > 0, "no merge spanned several pipeline stages");
    assert!(repeated_in_a_run > 0, "no slot was merged twice in one run");
    for series in [8, 9] {
        let mut got = BTreeMap::new();
        for d in read(&b, rollup(Resolution::MINUTE), series, 0, 2 * H).await {
            for (slot, v) in &d.slots {
                let SlotValue::Summary(s) = v else {
                    panic!("rollup slot {slot} holds a value")
                };
                got.insert((series, d.bucket_start, *slot), *s);
            }
        }
        let want: BTreeMap<_, _> = model.iter().filter(|(k, _)| k.0 == series).collect();
        assert_eq!(got.len(), want.len(), "series {series}: slots");
        for (k, w) in want {
            assert_eq!(bits(&got[k]), bits(w), "slot {k:?}: {:?} vs {w:?}", got[k]);
        }
        let collection = format!("bk.3.roll.{}.0", Resolution::MINUTE.nanos());
        let d = stored(&b, &collection, series as i64, 0)
            .await
            .expect("written");
        assert!(!d.contains_key("_w"), "{d}");
    }
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn a_fresh_slot_keeps_a_negative_zero() {
    let b = open_db("bk_negzero").await;
    let p = Point::new(5 * S, -0.0);
    let updates = rollup_updates(&[p], &[Resolution::MINUTE]).expect("updates");
    b.write_buckets(vec![merge(7, &updates[0], &[p])])
        .await
        .expect("merge");
    let got = read(&b, rollup(Resolution::MINUTE), 7, 0, H).await;
    let SlotValue::Summary(s) = got[0].slots[0].1 else {
        panic!("a summary")
    };
    assert_eq!(bits(&s), bits(&Summary::of(p)));
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn shells_read_as_absent_and_written_zero_as_zero() {
    let b = open_db("bk_shell").await;
    b.write_buckets(vec![raw(2, 0, 3, SlotChange::Set(1.0))])
        .await
        .expect("write");
    let created = b
        .preallocate(raw_family(), &[SeriesId(1), SeriesId(2), SeriesId(3)], 0)
        .await
        .expect("preallocate");
    assert_eq!(created, 2, "series 2's document existed");
    assert_eq!(
        b.preallocate(raw_family(), &[SeriesId(1)], 0)
            .await
            .expect("again"),
        0
    );

    // Every slot is present as null: later writes update in place (seed 004).
    let shell = stored(&b, "bk.3.raw.1000000000.0", 1, 0)
        .await
        .expect("shell");
    let slots: usize = shell
        .get_document("v")
        .expect("v")
        .values()
        .map(|m| {
            m.as_document()
                .map_or(0, |d| d.iter().filter(|(_, v)| **v == Bson::Null).count())
        })
        .sum();
    assert_eq!(slots, 3_600);
    let got = read(&b, raw_family(), 1, 0, H).await;
    assert_eq!(got.len(), 1);
    assert!(
        got[0].slots.is_empty() && got[0].totals.is_none(),
        "{got:?}"
    );
    assert_eq!(
        values(&read(&b, raw_family(), 2, 0, H).await[0]),
        vec![(3, 1.0)]
    );

    let out = b
        .write_buckets(vec![
            raw(1, 0, 7, SlotChange::Set(0.0)),
            raw(1, 0, 8, SlotChange::Set(-0.0)),
            raw(1, 0, 7, SlotChange::Set(5.0)),
        ])
        .await
        .expect("write into shell");
    assert_eq!(out, vec![Applied, Applied, SlotTaken]);
    let got = read(&b, raw_family(), 1, 0, H).await;
    let v = values(&got[0]);
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].0, v[0].1.to_bits()), (7, 0.0_f64.to_bits()));
    assert_eq!((v[1].0, v[1].1.to_bits()), (8, (-0.0_f64).to_bits()));
    let t = got[0].totals.expect("totals");
    assert_eq!((t.count, t.sum, t.min, t.max), (2, 0.0, 0.0, 0.0));

    // Totals only: a projection, no slots.
    let totals = b
        .read_buckets(raw_family(), SeriesId(1), 0, H, BucketRead::TotalsOnly)
        .await
        .expect("totals only");
    assert_eq!(totals.len(), 1);
    assert!(totals[0].slots.is_empty());
    assert_eq!(totals[0].totals, got[0].totals);
    let shell_totals = b
        .read_buckets(raw_family(), SeriesId(3), 0, H, BucketRead::TotalsOnly)
        .await
        .expect("totals of a shell");
    assert_eq!(shell_totals.len(), 1);
    assert_eq!(shell_totals[0].totals, None);
    b.drop_database().await.expect("drop");
}

#[tokio::test]
async fn partitions_are_collections_listed_read_and_dropped() {
    let b = open_db("bk_parts").await;
    let minute = rollup(Resolution::MINUTE);
    let mut writes: Vec<BucketWrite> = (-2..20)
        .map(|day| raw(9, day * D + H, 0, SlotChange::Set(day as f64)))
        .collect();
    writes.push(
        BucketWrite::new(
            minute,
            SeriesId(9),
            -D,
            0,
            SlotChange::Merge {
                summary: Summary::of(Point::new(-D, 1.0)),
                values: vec![1.0],
            },
        )
        .unwrap(),
    );
    b.write_buckets(writes).await.expect("write");

    let parts = b.list_partitions().await.expect("list");
    let mut want: Vec<Partition> = (-2..20)
        .map(|day| Partition::new(raw_family(), day * D).unwrap())
        .collect();
    want.push(Partition::new(minute, -D).unwrap());
    want.sort();
    assert_eq!(parts, want);

    // A range over more partitions than are addressed directly, and one over a few.
    let all = read(&b, raw_family(), 9, i64::MIN, i64::MAX).await;
    assert_eq!(
        all.iter().map(|d| d.bucket_start).collect::<Vec<_>>(),
        (-2..20).map(|day| day * D + H).collect::<Vec<_>>()
    );
    let some = read(&b, raw_family(), 9, D + H + 1, 3 * D + H + 1).await;
    assert_eq!(
        some.iter().map(|d| d.bucket_start).collect::<Vec<_>>(),
        vec![D + H, 2 * D + H, 3 * D + H]
    );

    b.drop_partition(Partition::new(raw_family(), 0).unwrap())
        .await
        .expect("drop");
    b.drop_partition(Partition::new(raw_family(), 500 * D).unwrap())
        .await
        .expect("a missing partition is not an error");
    assert!(
        Partition::new(raw_family(), 5).is_err(),
        "a start off the boundaries names no partition"
    );
    assert_eq!(
        b.list_partitions().await.expect("list").len(),
        want.len() - 1
    );
    assert!(read(&b, raw_family(), 9, 0, D).await.is_empty());
    assert_eq!(read(&b, minute, 9, -D, 0).await.len(), 1);
    b.drop_database().await.expect("drop");
}
