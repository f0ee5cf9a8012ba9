//! Time buckets, partitions and the name store (DESIGN §3, seeds 001–004).

use crate::{assert_bits_eq, StoreFactory};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{
    Backend, BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, NameSpace, Partition,
    SlotChange, SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{rollup_updates, Resolution, RollupUpdate};
use tickertape_core::{Point, SeriesId};

const S: i64 = 1_000_000_000;
const H: i64 = 3_600 * S;
const D: i64 = 24 * H;

/// Raw 1-second buckets of measurement token 7: hour documents of 3600 slots, day partitions.
fn raw() -> BucketFamily {
    BucketFamily::raw(7, S).expect("1 s is a valid interval")
}

fn rollup(r: Resolution) -> BucketFamily {
    BucketFamily::rollup(7, r)
}

fn set(series: SeriesId, bucket_start: i64, slot: u32, value: f64) -> BucketWrite {
    BucketWrite::new(raw(), series, bucket_start, slot, SlotChange::Set(value))
        .expect("a valid write")
}

async fn write(b: &dyn Backend, writes: Vec<BucketWrite>) -> Vec<BucketWriteOutcome> {
    b.write_buckets(writes).await.expect("write_buckets")
}

async fn read(
    b: &dyn Backend,
    family: BucketFamily,
    series: SeriesId,
    start: i64,
    end: i64,
) -> Vec<StoredBucket> {
    b.read_buckets(family, series, start, end, BucketRead::Full)
        .await
        .expect("read_buckets")
}

fn values(bucket: &StoredBucket) -> Vec<(u32, f64)> {
    bucket
        .slots
        .iter()
        .map(|(slot, v)| match v {
            SlotValue::Value(x) => (*slot, *x),
            SlotValue::Summary(s) => panic!("raw slot {slot} read back as a summary {s:?}"),
        })
        .collect()
}

/// Set stores a value once per slot (a second Set is refused and changes nothing), a
/// written 0 reads back as 0, totals follow the values, and reads select documents by
/// their period.
pub async fn raw_buckets_set_once_per_slot(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let (s1, s2) = (SeriesId(1), SeriesId(2));
    let out = write(
        &*b,
        vec![
            set(s1, 0, 0, 1.5),
            set(s1, 0, 61, 0.0),
            set(s1, 0, 61, 9.0),
            set(s1, H, 3_599, -2.0),
            set(s2, 0, 5, 4.0),
        ],
    )
    .await;
    use BucketWriteOutcome::{Applied, SlotTaken};
    assert_eq!(out, vec![Applied, Applied, SlotTaken, Applied, Applied]);
    assert_eq!(write(&*b, vec![set(s1, 0, 0, 3.0)]).await, vec![SlotTaken]);

    let got = read(&*b, raw(), s1, 0, 2 * H).await;
    assert_eq!(
        got.iter().map(|d| d.bucket_start).collect::<Vec<_>>(),
        vec![0, H]
    );
    assert_eq!(values(&got[0]), vec![(0, 1.5), (61, 0.0)]);
    assert_eq!(values(&got[1]), vec![(3_599, -2.0)]);
    let totals = got[0].totals.expect("a written raw bucket has totals");
    assert_eq!(
        (totals.count, totals.sum, totals.min, totals.max),
        (2, 1.5, 0.0, 1.5)
    );
    // Only documents overlapping [start, end); other series not mixed in.
    assert_eq!(read(&*b, raw(), s1, H, H + 1).await.len(), 1);
    assert_eq!(read(&*b, raw(), s1, 2 * H, 3 * H).await.len(), 0);
    assert_eq!(values(&read(&*b, raw(), s2, 0, H).await[0]), vec![(5, 4.0)]);

    // Totals only: no slots shipped.
    let totals_only = b
        .read_buckets(raw(), s1, 0, H, BucketRead::TotalsOnly)
        .await
        .expect("totals");
    assert_eq!(totals_only.len(), 1);
    assert!(totals_only[0].slots.is_empty());
    assert_eq!(totals_only[0].totals, got[0].totals);

    drop(b);
    let b = store.open().await;
    assert_eq!(read(&*b, raw(), s1, 0, 2 * H).await, got, "after reopen");
}

/// Add accumulates into a slot (counters, seed 003); an absent slot counts as 0.
pub async fn counter_slots_accumulate(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let add = |slot: u32, value: f64| {
        BucketWrite::new(raw(), SeriesId(3), -H, slot, SlotChange::Add(value))
            .expect("a valid write")
    };
    write(&*b, vec![add(10, 1.0), add(10, 2.0), add(11, 5.0)]).await;
    write(&*b, vec![add(10, 4.0)]).await;
    let got = read(&*b, raw(), SeriesId(3), -H, 0).await;
    assert_eq!(got.len(), 1);
    assert_eq!(values(&got[0]), vec![(10, 7.0), (11, 5.0)]);
    let totals = got[0].totals.expect("totals");
    assert_eq!((totals.count, totals.sum), (4, 12.0));
}

/// Rollup slots hold exactly what `RollupUpdate::apply_to` computes, bit for bit, however
/// a series' points are split into write calls.
pub async fn rollup_slots_match_the_reference(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let mut rng = StdRng::seed_from_u64(4);
    let resolutions = [Resolution::MINUTE, Resolution::HOUR];
    let series = SeriesId(9);
    let mut model: BTreeMap<(i64, i64, u32), Summary> = BTreeMap::new();
    let mut t = -2 * H;
    for call in 0..25 {
        let batch: Vec<Point> = (0..rng.gen_range(1..12))
            .map(|_| {
                t += rng.gen_range(1..40) * S;
                let value = match rng.gen_range(0..6) {
                    0 => -0.0,
                    1 => 0.1 * rng.gen_range(-5..5) as f64,
                    _ => rng.gen_range(-1e6..1e6),
                };
                Point::new(t, value)
            })
            .collect();
        let updates = rollup_updates(&batch, &resolutions).expect("rollup updates");
        let writes = updates
            .iter()
            .map(|u| merge_write(series, u, &batch))
            .collect();
        for u in &updates {
            let key = (u.resolution.nanos(), u.bucket_start, u.slot);
            let after = u.apply_to(model.get(&key), &batch);
            model.insert(key, after);
        }
        let out = write(&*b, writes).await;
        assert!(
            out.iter().all(|o| *o == BucketWriteOutcome::Applied),
            "call {call}: {out:?}"
        );
    }
    for r in resolutions {
        let docs = read(&*b, rollup(r), series, -3 * H, t + 1).await;
        let mut got = BTreeMap::new();
        for d in &docs {
            assert!(d.totals.is_none(), "rollup documents have no raw totals");
            for (slot, v) in &d.slots {
                let SlotValue::Summary(s) = v else {
                    panic!("rollup slot {slot} read back as a value")
                };
                got.insert((r.nanos(), d.bucket_start, *slot), *s);
            }
        }
        let want: BTreeMap<_, _> = model
            .iter()
            .filter(|(k, _)| k.0 == r.nanos())
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(got.len(), want.len(), "{r}: slots");
        for (k, w) in &want {
            let g = &got[k];
            assert_eq!(g.to_bits(), w.to_bits(), "{r} slot {k:?}: {g:?} vs {w:?}");
        }
    }
}

/// The write the engine makes for one rollup update.
pub fn merge_write(series: SeriesId, u: &RollupUpdate, batch: &[Point]) -> BucketWrite {
    BucketWrite::rollup(7, series, u, batch).expect("a valid rollup write")
}

/// A pre-allocated slot that was never written reads back as absent, never as 0; writing
/// into a shell works; pre-allocating over an existing document changes nothing.
pub async fn preallocated_slots_read_as_absent(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let (s1, s2) = (SeriesId(1), SeriesId(2));
    write(&*b, vec![set(s2, 0, 3, 0.0)]).await;
    let created = b
        .preallocate(raw(), &[s1, s2], 0)
        .await
        .expect("preallocate");
    assert_eq!(created, 1, "s2's document existed");
    let shell = read(&*b, raw(), s1, 0, H).await;
    assert_eq!(shell.len(), 1, "a shell is a document");
    assert!(
        shell[0].slots.is_empty(),
        "shell slots: {:?}",
        shell[0].slots
    );
    assert!(shell[0].totals.is_none_or_empty());
    assert_eq!(values(&read(&*b, raw(), s2, 0, H).await[0]), vec![(3, 0.0)]);

    let out = write(&*b, vec![set(s1, 0, 7, 0.0), set(s1, 0, 8, 2.5)]).await;
    assert_eq!(out, vec![BucketWriteOutcome::Applied; 2]);
    let got = read(&*b, raw(), s1, 0, H).await;
    assert_eq!(values(&got[0]), vec![(7, 0.0), (8, 2.5)]);
    let totals = got[0].totals.expect("totals after writes");
    assert_eq!(
        (totals.count, totals.sum, totals.min, totals.max),
        (2, 2.5, 0.0, 2.5)
    );
    assert_eq!(b.preallocate(raw(), &[s1], 0).await.expect("again"), 0);
    assert_eq!(read(&*b, raw(), s1, 0, H).await, got);
}

trait TotalsExt {
    fn is_none_or_empty(&self) -> bool;
}

impl TotalsExt for Option<tickertape_backend::BucketTotals> {
    /// A shell has no totals, or totals of nothing.
    fn is_none_or_empty(&self) -> bool {
        self.is_none_or(|t| t.count == 0)
    }
}

/// Documents live in partitions by start; dropping one removes its documents only.
pub async fn partitions_are_listed_and_dropped(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let s = SeriesId(5);
    let one_minute = rollup(Resolution::MINUTE);
    let summary = Summary::of(Point::new(-D, 1.0));
    write(
        &*b,
        vec![
            set(s, 0, 0, 1.0),
            set(s, 23 * H, 0, 2.0),
            set(s, D, 0, 3.0),
            set(s, -H, 0, 4.0),
            BucketWrite::new(
                one_minute,
                s,
                -D,
                0,
                SlotChange::Merge {
                    summary,
                    values: vec![1.0],
                },
            )
            .expect("a valid write"),
        ],
    )
    .await;
    let parts = b.list_partitions().await.expect("list");
    let want = vec![
        Partition::new(raw(), -D).expect("a partition start"),
        Partition::new(raw(), 0).expect("a partition start"),
        Partition::new(raw(), D).expect("a partition start"),
        Partition::new(one_minute, -D).expect("a partition start"),
    ];
    let mut sorted = want.clone();
    sorted.sort();
    assert_eq!(parts, sorted);

    b.drop_partition(Partition::new(raw(), 0).expect("a partition start"))
        .await
        .expect("drop");
    b.drop_partition(Partition::new(raw(), 50 * D).expect("a partition start"))
        .await
        .expect("dropping a missing partition is not an error");
    let left: Vec<i64> = read(&*b, raw(), s, -D, 2 * D)
        .await
        .iter()
        .map(|d| d.bucket_start)
        .collect();
    assert_eq!(left, vec![-H, D]);
    drop(b);
    let b = store.open().await;
    assert_eq!(b.list_partitions().await.expect("list").len(), 3);
    assert_eq!(read(&*b, one_minute, s, -D, 0).await.len(), 1);
}

/// Odd names work, tokens are per namespace, stable across reopen, and concurrent callers
/// get one token per name.
pub async fn name_tokens_are_stable(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let odd: Vec<String> = vec![
        "cpu".into(),
        "$set".into(),
        "a.b.c".into(),
        "with space".into(),
        "ünïcödé ✓".into(),
        "x".repeat(1024),
        String::new(),
    ];
    let tokens = b
        .tokenize(NameSpace::TagValue, &odd)
        .await
        .expect("tokenize");
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), odd.len(), "one token per name: {tokens:?}");
    let names = b
        .names_of(NameSpace::TagValue, &tokens)
        .await
        .expect("names_of");
    assert_eq!(names, odd.iter().cloned().map(Some).collect::<Vec<_>>());
    assert_eq!(
        b.tokenize(NameSpace::TagValue, &odd).await.expect("again"),
        tokens
    );
    let unknown = tokens.iter().max().copied().unwrap_or(0) + 1_000;
    assert_eq!(
        b.names_of(NameSpace::TagValue, &[unknown])
            .await
            .expect("unknown"),
        vec![None]
    );

    // Many callers at once, overlapping names, more than one name document's worth.
    let all: Vec<String> = (0..600).map(|i| format!("host-{i}")).collect();
    let mut tasks = Vec::new();
    for k in 0..4 {
        let b: Arc<dyn Backend> = b.clone();
        let mine: Vec<String> = all.iter().skip(k * 50).step_by(1 + k).cloned().collect();
        tasks.push(tokio::spawn(async move {
            let t = b
                .tokenize(NameSpace::TagKey, &mine)
                .await
                .expect("tokenize");
            mine.into_iter().zip(t).collect::<Vec<_>>()
        }));
    }
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for task in tasks {
        for (name, token) in task.await.expect("task") {
            let prior = seen.insert(name.clone(), token);
            assert!(
                prior.is_none_or(|p| p == token),
                "{name}: {prior:?} and {token}"
            );
        }
    }
    let mut by_token: BTreeMap<u64, &String> = BTreeMap::new();
    for (name, token) in &seen {
        assert!(
            by_token.insert(*token, name).is_none(),
            "token {token} issued twice"
        );
    }
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.tokenize(NameSpace::TagValue, &odd)
            .await
            .expect("after reopen"),
        tokens
    );
    let names: Vec<String> = seen.keys().cloned().collect();
    let again = b
        .tokenize(NameSpace::TagKey, &names)
        .await
        .expect("after reopen");
    assert_eq!(again, seen.values().copied().collect::<Vec<_>>());
}

/// Sums in raw totals continue the stored sum (`stored + v`), so a document's `sum` is its
/// values added in write order — the rule `agg=avg` over whole documents relies on.
pub async fn raw_totals_sum_in_write_order(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let mut rng = StdRng::seed_from_u64(11);
    let vals: Vec<f64> = (0..200).map(|_| rng.gen_range(-1e9..1e9) / 7.0).collect();
    for (i, chunk) in vals.chunks(17).enumerate() {
        let writes = chunk
            .iter()
            .enumerate()
            .map(|(j, v)| set(SeriesId(1), 0, (i * 17 + j) as u32, *v))
            .collect();
        write(&*b, writes).await;
    }
    let got = read(&*b, raw(), SeriesId(1), 0, H).await;
    let totals = got[0].totals.expect("totals");
    let want = vals
        .iter()
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(*v, |s| s + v)));
    assert_eq!(totals.sum.to_bits(), want.unwrap_or(0.0).to_bits());
    let points: Vec<Point> = values(&got[0])
        .into_iter()
        .map(|(slot, v)| Point::new(slot as i64 * S, v))
        .collect();
    let expect: Vec<Point> = vals
        .iter()
        .enumerate()
        .map(|(i, v)| Point::new(i as i64 * S, *v))
        .collect();
    assert_bits_eq(&points, &expect, "raw slots");
}
