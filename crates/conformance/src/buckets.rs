//! Raw time buckets and their partitions (docs/design.md#bucket-documents-and-in-place-updates): `Set` once per
//! slot, `Add` for counters, pre-allocated shells, totals, partition listing and dropping.
//! Reads over ranges are in [`crate::bucket_ranges`], rollup merges in
//! [`crate::rollup_merges`].

use crate::StoreFactory;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use tickertape_backend::BucketRange;
use tickertape_backend::DocumentStart;
use tickertape_backend::{
    Backend, BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, Partition, SlotChange,
    SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesId};

use BucketWriteOutcome::{Applied, SlotTaken};

pub(crate) const S: i64 = 1_000_000_000;
pub(crate) const H: i64 = 3_600 * S;
pub(crate) const D: i64 = 24 * H;

/// The measurement token every bucket test writes under.
pub(crate) const MEASUREMENT: u64 = 7;

/// Raw 1-second buckets: hour documents of 3600 slots, day partitions.
pub(crate) fn raw() -> BucketFamily {
    BucketFamily::raw(MEASUREMENT, S).expect("1 s is a valid interval")
}

pub(crate) fn rollup(r: Resolution) -> BucketFamily {
    BucketFamily::rollup(MEASUREMENT, r)
}

pub(crate) fn set(series: SeriesId, bucket_start: i64, slot: u32, value: f64) -> BucketWrite {
    BucketWrite::new(raw(), series, bucket_start, slot, SlotChange::Set(value))
        .expect("a valid write")
}

fn add(series: SeriesId, bucket_start: i64, slot: u32, value: f64) -> BucketWrite {
    BucketWrite::new(raw(), series, bucket_start, slot, SlotChange::Add(value))
        .expect("a valid write")
}

pub(crate) async fn write(b: &dyn Backend, writes: Vec<BucketWrite>) -> Vec<BucketWriteOutcome> {
    b.write_buckets(writes).await.expect("write_buckets")
}

pub(crate) async fn read(
    b: &dyn Backend,
    family: BucketFamily,
    series: SeriesId,
    start: i64,
    end: i64,
) -> Vec<StoredBucket> {
    b.read_buckets(
        BucketRange {
            family,
            series,
            start,
            end,
        },
        BucketRead::Full,
    )
    .await
    .expect("read_buckets")
}

/// A raw document's slots as `(slot, value bits)`, so that NaN and -0.0 compare exactly.
fn value_bits(bucket: &StoredBucket) -> Vec<(u32, u64)> {
    bucket
        .slots
        .iter()
        .map(|(slot, v)| match v {
            SlotValue::Value(x) => (*slot, x.to_bits()),
            SlotValue::Summary(s) => panic!("raw slot {slot} read back as a summary {s:?}"),
        })
        .collect()
}

fn bits(slots: &[(u32, f64)]) -> Vec<(u32, u64)> {
    slots.iter().map(|(slot, v)| (*slot, v.to_bits())).collect()
}

/// A document's `(count, sum, min, max)`.
fn totals(bucket: &StoredBucket) -> (u64, f64, f64, f64) {
    let t = bucket.totals.expect("a written raw bucket has totals");
    (t.count, t.sum, t.min, t.max)
}

/// Values that stress float addition: signed zeros, tenths, wide magnitudes.
pub(crate) fn awkward_value(rng: &mut StdRng) -> f64 {
    match rng.gen_range(0..6) {
        0 => -0.0,
        1 => 0.0,
        2 => 0.1 * f64::from(rng.gen_range(-5..=5)),
        _ => rng.gen_range(-1e9..1e9) / 7.0 * 10f64.powi(rng.gen_range(-4..=4)),
    }
}

/// Set stores a value once per slot, bit for bit (NaN, -0.0): a second Set — in the same
/// call or a replayed one — is refused and changes nothing, while a new slot among
/// refused ones applies; a written 0 reads back as 0, totals follow the values, and a
/// totals-only read ships no slots.
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
            set(s2, 0, 6, f64::NAN),
            set(s2, 0, 6, 1.0),
            set(s2, 0, 7, -0.0),
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![Applied, Applied, SlotTaken, Applied, Applied, Applied, SlotTaken, Applied]
    );
    // A replayed batch: every taken slot refused; a new slot among them applies.
    let replay = vec![
        set(s1, 0, 0, 7.0),
        set(s1, 0, 1, 4.0),
        set(s1, 0, 61, 7.0),
        set(s1, H, 3_599, 7.0),
    ];
    assert_eq!(
        write(&*b, replay).await,
        vec![SlotTaken, Applied, SlotTaken, SlotTaken]
    );

    let got = read(&*b, raw(), s1, 0, 2 * H).await;
    assert_eq!(
        got.iter().map(|d| d.bucket_start).collect::<Vec<_>>(),
        vec![0, H]
    );
    assert_eq!(value_bits(&got[0]), bits(&[(0, 1.5), (1, 4.0), (61, 0.0)]));
    assert_eq!(value_bits(&got[1]), bits(&[(3_599, -2.0)]));
    assert_eq!(totals(&got[0]), (3, 1.5 + 0.0 + 4.0, 0.0, 4.0));
    let odd = read(&*b, raw(), s2, 0, H).await;
    assert_eq!(
        value_bits(&odd[0]),
        bits(&[(5, 4.0), (6, f64::NAN), (7, -0.0)]),
        "other series not mixed in; NaN and -0.0 kept"
    );
    assert_eq!(odd[0].totals.map(|t| t.count), Some(3));

    let totals_only = b
        .read_buckets(
            BucketRange {
                family: raw(),
                series: s1,
                start: 0,
                end: H,
            },
            BucketRead::TotalsOnly,
        )
        .await
        .expect("totals");
    assert_eq!(totals_only.len(), 1);
    assert!(totals_only[0].slots.is_empty());
    assert_eq!(totals_only[0].totals, got[0].totals);

    drop(b);
    let b = store.open().await;
    assert_eq!(read(&*b, raw(), s1, 0, 2 * H).await, got, "after reopen");
}

/// Add accumulates into a slot (counters), across calls and into pre-allocated
/// slots; an absent slot counts as 0; `n` counts increments and `min`/`max` are theirs.
pub async fn counter_slots_accumulate(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let (shelled, fresh) = (SeriesId(3), SeriesId(4));
    let created = b
        .preallocate(
            DocumentStart::new(raw(), -H).expect("a document start"),
            &[shelled],
        )
        .await
        .expect("preallocate");
    assert_eq!(created, 1);
    let out = write(
        &*b,
        vec![
            add(shelled, -H, 10, 1.0),
            add(shelled, -H, 10, 2.5),
            add(shelled, -H, 11, -4.0),
            add(fresh, -H, 10, 0.5),
            add(fresh, -H, 10, 0.5),
        ],
    )
    .await;
    assert_eq!(out, vec![Applied; 5]);
    write(
        &*b,
        vec![
            add(shelled, -H, 10, 0.5),
            add(fresh, -H, 10, 0.25),
            add(fresh, -H, 10, 0.25),
        ],
    )
    .await;
    for (series, slots, want) in [
        (
            shelled,
            [(10, 4.0), (11, -4.0)].to_vec(),
            (4, 0.0, -4.0, 2.5),
        ),
        (fresh, [(10, 1.5)].to_vec(), (4, 1.5, 0.25, 0.5)),
    ] {
        let got = read(&*b, raw(), series, -H, 0).await;
        assert_eq!(got.len(), 1, "{series:?}");
        assert_eq!(value_bits(&got[0]), bits(&slots), "{series:?}");
        assert_eq!(totals(&got[0]), want, "{series:?}");
    }
}

/// A document's `sum` continues the stored sum (`stored + v`), so it is its applied
/// values added in write order — the rule `agg=avg` over whole documents relies on —
/// also when refused Sets are scattered among the applied ones, in one call or several.
pub async fn raw_totals_sum_in_write_order(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let mut rng = StdRng::seed_from_u64(11);
    let mut want: BTreeMap<u32, f64> = BTreeMap::new();
    let mut sum: Option<f64> = None;
    let mut left = 400;
    while left > 0 {
        let n = rng.gen_range(1..=80).min(left);
        left -= n;
        let mut writes = Vec::new();
        let mut outcomes = Vec::new();
        for _ in 0..n {
            let (slot, v) = (rng.gen_range(0..250), awkward_value(&mut rng));
            writes.push(set(SeriesId(1), 0, slot, v));
            outcomes.push(match want.entry(slot) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(v);
                    sum = Some(sum.map_or(v, |s| s + v));
                    Applied
                }
                std::collections::btree_map::Entry::Occupied(_) => SlotTaken,
            });
        }
        assert_eq!(write(&*b, writes).await, outcomes);
    }
    let got = read(&*b, raw(), SeriesId(1), 0, H).await;
    let want_values: Vec<(u32, f64)> = want.into_iter().collect();
    assert_eq!(value_bits(&got[0]), bits(&want_values));
    let t = got[0].totals.expect("totals");
    assert_eq!(t.count, want_values.len() as u64);
    assert_eq!(
        t.sum.to_bits(),
        sum.unwrap_or(0.0).to_bits(),
        "{} vs {sum:?}",
        t.sum
    );
}

/// A pre-allocated slot that was never written reads back as absent, never as 0; a shell
/// has no totals; writing into a shell works; pre-allocating over an existing document
/// changes nothing, and a series named twice gets one shell. Shells are documents of
/// their partition, rollup ones too.
pub async fn preallocated_slots_read_as_absent(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let (s1, s2, s3) = (SeriesId(1), SeriesId(2), SeriesId(3));
    write(&*b, vec![set(s2, 0, 3, 0.0)]).await;
    let created = b
        .preallocate(
            DocumentStart::new(raw(), 0).expect("a document start"),
            &[s1, s2, s3, s1],
        )
        .await
        .expect("preallocate");
    assert_eq!(created, 2, "s2's document existed; s1 is named twice");
    let shell = read(&*b, raw(), s1, 0, H).await;
    assert_eq!(shell.len(), 1, "a shell is a document");
    assert_eq!(shell[0].bucket_start, 0);
    assert!(
        shell[0].slots.is_empty(),
        "shell slots: {:?}",
        shell[0].slots
    );
    assert_eq!(shell[0].totals, None, "a shell has no totals");
    let shell_totals = b
        .read_buckets(
            BucketRange {
                family: raw(),
                series: s3,
                start: 0,
                end: H,
            },
            BucketRead::TotalsOnly,
        )
        .await
        .expect("totals of a shell");
    assert_eq!(shell_totals.len(), 1);
    assert_eq!(shell_totals[0].totals, None);
    assert_eq!(
        value_bits(&read(&*b, raw(), s2, 0, H).await[0]),
        bits(&[(3, 0.0)])
    );

    let out = write(
        &*b,
        vec![set(s1, 0, 7, 0.0), set(s1, 0, 8, -0.0), set(s1, 0, 7, 2.5)],
    )
    .await;
    assert_eq!(out, vec![Applied, Applied, SlotTaken]);
    let got = read(&*b, raw(), s1, 0, H).await;
    assert_eq!(value_bits(&got[0]), bits(&[(7, 0.0), (8, -0.0)]));
    assert_eq!(totals(&got[0]), (2, 0.0, 0.0, 0.0));
    assert_eq!(
        b.preallocate(
            DocumentStart::new(raw(), 0).expect("a document start"),
            &[s1]
        )
        .await
        .expect("again"),
        0
    );
    assert_eq!(read(&*b, raw(), s1, 0, H).await, got);

    let hour = rollup(Resolution::HOUR);
    let period = hour.geometry().period_ns();
    assert_eq!(
        b.preallocate(
            DocumentStart::new(hour, period).expect("a document start"),
            &[s1]
        )
        .await
        .expect("rollup"),
        1
    );
    let rollup_shell = read(&*b, hour, s1, period, period + 1).await;
    assert_eq!(rollup_shell.len(), 1);
    assert!(rollup_shell[0].slots.is_empty() && rollup_shell[0].totals.is_none());
    let parts = b.list_partitions().await.expect("list");
    assert_eq!(
        parts,
        vec![
            Partition::new(raw(), 0).expect("a partition start"),
            Partition::of_document(hour, period).expect("a document start"),
        ]
    );
}

/// Documents live in partitions by start; listing is by family, then start; dropping one
/// removes its documents only, and dropping a missing one (or one twice) is not an error.
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
            set(SeriesId(6), -D + H, 0, 5.0),
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
    let mut want = vec![
        Partition::new(one_minute, -D).expect("a partition start"),
        Partition::new(raw(), D).expect("a partition start"),
        Partition::new(raw(), 0).expect("a partition start"),
        Partition::new(raw(), -D).expect("a partition start"),
    ];
    want.sort();
    assert_eq!(parts, want);

    let today = Partition::new(raw(), 0).expect("a partition start");
    b.drop_partition(today).await.expect("drop");
    b.drop_partition(today).await.expect("dropping twice");
    b.drop_partition(Partition::new(raw(), 50 * D).expect("a partition start"))
        .await
        .expect("dropping a missing partition is not an error");
    let left: Vec<i64> = read(&*b, raw(), s, -D, 2 * D)
        .await
        .iter()
        .map(|d| d.bucket_start)
        .collect();
    assert_eq!(left, vec![-H, D]);
    assert_eq!(read(&*b, raw(), SeriesId(6), -D, 0).await.len(), 1);
    drop(b);
    let b = store.open().await;
    want.retain(|p| *p != today);
    assert_eq!(b.list_partitions().await.expect("list"), want);
    assert_eq!(read(&*b, one_minute, s, -D, 0).await.len(), 1);
}
