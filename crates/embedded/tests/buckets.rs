//! Time buckets, partitions and the name store of the embedded backend, through the
//! `Backend` trait (the conformance suite covers the same contract over every backend;
//! these add the embedded-specific cases: corrupt bytes, wide reads, argument checks).

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{
    Backend, BackendError, BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, NameSpace,
    Partition, SlotChange, SlotValue, StoredBucket,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{rollup_updates, Resolution};
use tickertape_core::{Point, SeriesId};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions, DATA_FILE};

const S: i64 = 1_000_000_000;
const H: i64 = 3_600 * S;
const D: i64 = 24 * H;

/// Raw 1 s buckets: hour documents of 3600 slots, day partitions.
fn raw_family() -> BucketFamily {
    BucketFamily::raw(3, S).unwrap()
}

fn rollup(r: Resolution) -> BucketFamily {
    BucketFamily::rollup(3, r)
}

fn open(dir: &tempfile::TempDir) -> EmbeddedBackend {
    EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap()
}

fn write(series: u64, bucket_start: i64, slot: u32, change: SlotChange) -> BucketWrite {
    BucketWrite::new(raw_family(), SeriesId(series), bucket_start, slot, change).unwrap()
}

async fn read(
    b: &EmbeddedBackend,
    family: BucketFamily,
    series: u64,
    start: i64,
    end: i64,
) -> Vec<StoredBucket> {
    b.read_buckets(family, SeriesId(series), start, end, BucketRead::Full)
        .await
        .unwrap()
}

fn values(bucket: &StoredBucket) -> Vec<(u32, u64)> {
    bucket
        .slots
        .iter()
        .map(|(i, v)| match v {
            SlotValue::Value(x) => (*i, x.to_bits()),
            SlotValue::Summary(s) => panic!("summary {s:?} in a raw slot"),
        })
        .collect()
}

#[tokio::test]
async fn set_is_refused_on_a_taken_slot_even_within_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    use BucketWriteOutcome::{Applied, SlotTaken};
    let out = b
        .write_buckets(vec![
            write(1, 0, 5, SlotChange::Set(f64::NAN)),
            write(1, 0, 5, SlotChange::Set(1.0)),
            write(1, 0, 6, SlotChange::Set(-0.0)),
        ])
        .await
        .unwrap();
    assert_eq!(out, vec![Applied, SlotTaken, Applied]);
    let again = b
        .write_buckets(vec![write(1, 0, 6, SlotChange::Set(2.0))])
        .await
        .unwrap();
    assert_eq!(again, vec![SlotTaken]);
    let got = read(&b, raw_family(), 1, 0, H).await;
    assert_eq!(
        values(&got[0]),
        vec![(5, f64::NAN.to_bits()), (6, (-0.0f64).to_bits())]
    );
    assert_eq!(got[0].totals.unwrap().count, 2);
}

#[tokio::test]
async fn add_accumulates_across_calls() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    for v in [0.5, 0.25] {
        b.write_buckets(vec![
            write(2, H, 0, SlotChange::Add(v)),
            write(2, H, 0, SlotChange::Add(v)),
        ])
        .await
        .unwrap();
    }
    let got = read(&b, raw_family(), 2, H, 2 * H).await;
    assert_eq!(values(&got[0]), vec![(0, 1.5f64.to_bits())]);
    let t = got[0].totals.unwrap();
    assert_eq!((t.count, t.sum, t.min, t.max), (4, 1.5, 0.25, 0.5));
}

#[tokio::test]
async fn preallocated_slots_are_absent_and_written_zero_is_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    assert_eq!(
        b.preallocate(raw_family(), &[SeriesId(1), SeriesId(1)], 0)
            .await
            .unwrap(),
        1
    );
    let shell = read(&b, raw_family(), 1, 0, H).await;
    assert_eq!(shell.len(), 1);
    assert!(shell[0].slots.is_empty() && shell[0].totals.is_none());

    b.write_buckets(vec![write(1, 0, 9, SlotChange::Set(0.0))])
        .await
        .unwrap();
    let got = read(&b, raw_family(), 1, 0, H).await;
    assert_eq!(got[0].slots, vec![(9, SlotValue::Value(0.0))]);
    // An existing document is left as it is.
    assert_eq!(
        b.preallocate(raw_family(), &[SeriesId(1)], 0)
            .await
            .unwrap(),
        0
    );
    assert_eq!(read(&b, raw_family(), 1, 0, H).await, got);
    // Rollup shells too; and they are partitions.
    let hour = rollup(Resolution::HOUR);
    let week = hour.geometry().period_ns();
    assert_eq!(b.preallocate(hour, &[SeriesId(1)], week).await.unwrap(), 1);
    assert!(read(&b, hour, 1, week, week + 1).await[0].slots.is_empty());
    assert_eq!(b.list_partitions().await.unwrap().len(), 2);
}

#[tokio::test]
async fn partitions_are_listed_sorted_and_dropped_whole() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    let minute = rollup(Resolution::MINUTE);
    let merge = |t: i64| SlotChange::Merge {
        summary: Summary::of(Point::new(t, 1.0)),
        values: vec![1.0],
    };
    b.write_buckets(vec![
        write(1, 2 * D, 0, SlotChange::Set(1.0)),
        write(1, -D, 0, SlotChange::Set(1.0)),
        write(2, -D + H, 0, SlotChange::Set(1.0)),
        BucketWrite::new(minute, SeriesId(1), 0, 0, merge(0)).unwrap(),
    ])
    .await
    .unwrap();
    let parts = b.list_partitions().await.unwrap();
    assert_eq!(
        parts,
        vec![
            Partition::new(raw_family(), -D).unwrap(),
            Partition::new(raw_family(), 2 * D).unwrap(),
            Partition::new(minute, 0).unwrap(),
        ]
    );
    b.drop_partition(Partition::new(raw_family(), -D).unwrap())
        .await
        .unwrap();
    b.drop_partition(Partition::new(raw_family(), -D).unwrap())
        .await
        .unwrap();
    assert!(read(&b, raw_family(), 1, -D, 0).await.is_empty());
    assert!(read(&b, raw_family(), 2, -D, 0).await.is_empty());
    assert_eq!(read(&b, raw_family(), 1, 2 * D, 3 * D).await.len(), 1);
    assert_eq!(read(&b, minute, 1, 0, H).await.len(), 1);
    drop(b);
    let b = open(&dir);
    assert_eq!(b.list_partitions().await.unwrap().len(), 2);
}

#[tokio::test]
async fn wide_reads_find_far_apart_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    let starts = [-1_000 * D, -H, 0, 400 * D];
    let writes = starts
        .iter()
        .map(|&s| write(1, s, 1, SlotChange::Set(s as f64)))
        .collect();
    b.write_buckets(writes).await.unwrap();
    let got = read(&b, raw_family(), 1, i64::MIN, i64::MAX).await;
    let got: Vec<i64> = got.iter().map(|d| d.bucket_start).collect();
    assert_eq!(got, starts);
    // A document overlapping the start of the range is included; one at its end is not.
    let got = read(&b, raw_family(), 1, -1, 400 * D).await;
    assert_eq!(
        got.iter().map(|d| d.bucket_start).collect::<Vec<_>>(),
        vec![-H, 0]
    );
    assert!(read(&b, raw_family(), 1, 5, 5).await.is_empty());
}

#[tokio::test]
async fn undecodable_bytes_are_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    b.write_buckets(vec![write(1, 0, 0, SlotChange::Set(1.0))])
        .await
        .unwrap();
    drop(b);
    {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<(u64, i64), &[u8]> =
                redb::TableDefinition::new("bk.3.raw.1000000000.0");
            let mut table = txn.open_table(def).unwrap();
            table
                .insert((1, 0), [1u8, 0, 16, 14, 0, 0, 1].as_slice())
                .unwrap();
            table
                .insert((2, 0), [2u8, 0, 60, 0, 0, 0].as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let b = open(&dir);
    for series in [1, 2] {
        let read = b
            .read_buckets(raw_family(), SeriesId(series), 0, H, BucketRead::Full)
            .await;
        assert!(matches!(read, Err(BackendError::Corrupt(_))), "{read:?}");
    }
    let written = b
        .write_buckets(vec![write(1, 0, 1, SlotChange::Set(1.0))])
        .await;
    assert!(
        matches!(written, Err(BackendError::Corrupt(_))),
        "{written:?}"
    );
    // The store still works for everything else.
    b.write_buckets(vec![write(3, 0, 1, SlotChange::Set(1.0))])
        .await
        .unwrap();
}

/// Rollup partitions hold rows of slots, `(series, bucket start, row index)`; a bad row is
/// corrupt data, reported for that series only.
#[tokio::test]
async fn undecodable_rollup_rows_are_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let minute = rollup(Resolution::MINUTE);
    let merge = |series, slot| {
        BucketWrite::new(
            minute,
            SeriesId(series),
            0,
            slot,
            SlotChange::Merge {
                summary: Summary::of(Point::new(i64::from(slot) * 60 * S, 1.0)),
                values: vec![1.0],
            },
        )
        .unwrap()
    };
    let b = open(&dir);
    b.write_buckets(vec![merge(1, 0), merge(4, 0)])
        .await
        .unwrap();
    drop(b);
    {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<(u64, i64, u32), &[u8]> =
                redb::TableDefinition::new("bk.3.roll.60000000000.0");
            let mut table = txn.open_table(def).unwrap();
            // Too short; a row past the document's 60 slots; a shell row with a value.
            table.insert((1, 0, 0), [6u8, 0].as_slice()).unwrap();
            table.insert((2, 0, 60), [0u8; 43].as_slice()).unwrap();
            table.insert((3, 0, u32::MAX), [0u8].as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let b = open(&dir);
    for series in [1, 2, 3] {
        let got = b
            .read_buckets(minute, SeriesId(series), 0, H, BucketRead::Full)
            .await;
        assert!(matches!(got, Err(BackendError::Corrupt(_))), "{got:?}");
    }
    let written = b.write_buckets(vec![merge(4, 1), merge(1, 0)]).await;
    assert!(
        matches!(written, Err(BackendError::Corrupt(_))),
        "{written:?}"
    );
    // Nothing of the refused call was stored; the store still works for everything else.
    assert_eq!(read(&b, minute, 4, 0, H).await[0].slots.len(), 1);
    b.write_buckets(vec![merge(4, 1)]).await.unwrap();
    assert_eq!(read(&b, minute, 4, 0, H).await[0].slots.len(), 2);
}

/// A rollup shell is a document with no slots until one is merged into it; pre-allocating
/// over a document that has slots changes nothing.
#[tokio::test]
async fn rollup_shells_take_merges() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    let minute = rollup(Resolution::MINUTE);
    let summary = Summary::of(Point::new(H + 5 * S, -0.0));
    let merge = |series, slot| {
        BucketWrite::new(
            minute,
            SeriesId(series),
            H,
            slot,
            SlotChange::Merge {
                summary,
                values: vec![-0.0],
            },
        )
        .unwrap()
    };
    b.write_buckets(vec![merge(2, 0)]).await.unwrap();
    assert_eq!(
        b.preallocate(minute, &[SeriesId(1), SeriesId(2), SeriesId(1)], H)
            .await
            .unwrap(),
        1
    );
    let shell = read(&b, minute, 1, H, 2 * H).await;
    assert_eq!(shell.len(), 1);
    assert!(shell[0].slots.is_empty() && shell[0].totals.is_none());
    b.write_buckets(vec![merge(1, 0)]).await.unwrap();
    for series in [1, 2] {
        let got = read(&b, minute, series, 0, 3 * H).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].bucket_start, H);
        assert_eq!(got[0].slots.len(), 1);
        let SlotValue::Summary(s) = got[0].slots[0].1 else {
            panic!("value in a rollup")
        };
        assert_eq!(s.to_bits(), summary.to_bits());
    }
    assert_eq!(b.preallocate(minute, &[SeriesId(1)], H).await.unwrap(), 0);
    let totals_only = b
        .read_buckets(minute, SeriesId(1), H, 2 * H, BucketRead::TotalsOnly)
        .await
        .unwrap();
    assert_eq!(totals_only.len(), 1);
    assert!(totals_only[0].slots.is_empty());
}

/// A file written by the format 1 layout (no `format_version`) or by an unknown format is
/// refused with a message that says so, and left as it was.
#[test]
fn other_formats_are_refused() {
    for version in [None, Some(1u64), Some(3)] {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
                let mut meta = txn.open_table(meta).unwrap();
                meta.insert("next_series_id", 2).unwrap();
                if let Some(v) = version {
                    meta.insert("format_version", v).unwrap();
                }
            }
            txn.commit().unwrap();
        }
        match EmbeddedBackend::open(EmbeddedOptions::new(dir.path())) {
            Err(BackendError::Corrupt(msg)) => assert!(msg.contains("format"), "{msg}"),
            Err(e) => panic!("{version:?}: {e}"),
            Ok(_) => panic!("{version:?}: opened"),
        }
    }
    // A new store records its format and opens again.
    let dir = tempfile::tempdir().unwrap();
    drop(open(&dir));
    drop(open(&dir));
}

#[tokio::test]
async fn tokens_count_from_zero_per_namespace_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir);
    let names: Vec<String> = ["cpu", "mem", "cpu", "disk"].map(String::from).to_vec();
    assert_eq!(
        b.tokenize(NameSpace::Measurement, &names).await.unwrap(),
        vec![0, 1, 0, 2]
    );
    assert_eq!(
        b.tokenize(NameSpace::Field, &names[1..]).await.unwrap(),
        vec![0, 1, 2]
    );
    let odd: Vec<String> = vec![
        "$inc".into(),
        "a.b".into(),
        "two words".into(),
        "日本語 ✓".into(),
        "é".repeat(512),
    ];
    let odd_tokens = b.tokenize(NameSpace::TagValue, &odd).await.unwrap();
    assert_eq!(odd_tokens, vec![0, 1, 2, 3, 4]);
    drop(b);
    let b = open(&dir);
    assert_eq!(
        b.tokenize(NameSpace::Measurement, &["disk".into(), "net".into()])
            .await
            .unwrap(),
        vec![2, 3]
    );
    assert_eq!(
        b.names_of(NameSpace::TagValue, &[4, 0, 99]).await.unwrap(),
        vec![Some(odd[4].clone()), Some(odd[0].clone()), None]
    );
    assert!(b.tokenize(NameSpace::Field, &[]).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tokenize_gives_one_token_per_name() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(open(&dir));
    let all: Vec<String> = (0..300).map(|i| format!("host {i}")).collect();
    let mut tasks = Vec::new();
    for k in 0..8 {
        let b = b.clone();
        let mut mine = all.clone();
        mine.rotate_left(k * 37);
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for chunk in mine.chunks(25) {
                let t = b.tokenize(NameSpace::TagValue, chunk).await.unwrap();
                got.extend(chunk.iter().cloned().zip(t));
            }
            got
        }));
    }
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for task in tasks {
        for (name, token) in task.await.unwrap() {
            assert_eq!(*seen.entry(name.clone()).or_insert(token), token, "{name}");
        }
    }
    let mut tokens: Vec<u64> = seen.values().copied().collect();
    tokens.sort_unstable();
    assert_eq!(
        tokens,
        (0..300).collect::<Vec<u64>>(),
        "dense, one per name"
    );
}

fn merge_writes(family: BucketFamily, batch: &[Point], r: Resolution) -> Vec<BucketWrite> {
    rollup_updates(batch, &[r])
        .unwrap()
        .iter()
        .map(|u| {
            BucketWrite::new(
                family,
                SeriesId(1),
                u.bucket_start,
                u.slot,
                SlotChange::Merge {
                    summary: u.summary,
                    values: batch[u.points.clone()].iter().map(|p| p.value).collect(),
                },
            )
            .unwrap()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Rollup slots through the store equal core's reference, bit for bit, however the
    /// points are split into calls.
    #[test]
    fn merge_through_the_store_equals_apply_to(
        steps in proptest::collection::vec((1i64..90, -1e3f64..1e3), 1..120),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut t = -H;
        let points: Vec<Point> = steps
            .iter()
            .map(|&(dt, v)| { t += dt * S; Point::new(t, v / 7.0) })
            .collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(points.len())).collect();
        cuts.extend([0, points.len()]);
        cuts.sort_unstable();
        cuts.dedup();
        let r = Resolution::MINUTE;
        let family = rollup(r);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut model: BTreeMap<(i64, u32), Summary> = BTreeMap::new();
        let got = rt.block_on(async {
            let b = open(&dir);
            for batch in cuts.windows(2).map(|w| &points[w[0]..w[1]]) {
                for u in rollup_updates(batch, &[r]).unwrap() {
                    let key = (u.bucket_start, u.slot);
                    let after = u.apply_to(model.get(&key), batch);
                    model.insert(key, after);
                }
                b.write_buckets(merge_writes(family, batch, r)).await.unwrap();
            }
            read(&b, family, 1, -2 * H, t + 1).await
        });
        let mut stored = BTreeMap::new();
        for d in &got {
            for (slot, v) in &d.slots {
                let SlotValue::Summary(s) = v else { panic!("value in a rollup") };
                stored.insert((d.bucket_start, *slot), s.to_bits());
            }
        }
        let want: BTreeMap<_, _> = model.iter().map(|(k, s)| (*k, s.to_bits())).collect();
        prop_assert_eq!(stored, want);
    }
}

/// Raw points and their rollups are one transaction: when the rollups cannot be written,
/// the raw points of the same call are not committed either (whatever the error), and
/// the store goes on from what was committed.
#[tokio::test]
async fn raw_writes_are_not_committed_without_their_rollups() {
    use tickertape_backend::{RawBatch, SeriesAppend};
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let key = tickertape_core::SeriesKey::new("m", vec![], "f");
    let series = store.resolve_series(&[key]).await.unwrap()[0];
    let batch = RawBatch {
        appends: vec![SeriesAppend::new(
            series,
            vec![Point::new(10 * S, 1.0), Point::new(20 * S, 2.0)],
        )
        .unwrap()],
        buckets: vec![write(2, 0, 5, SlotChange::Set(7.0))],
    };
    let failed = store
        .write_with_rollups(
            batch.clone(),
            Box::new(|_| Err(BackendError::Invalid("no rollups today".into()))),
        )
        .await;
    assert!(
        matches!(&failed, Err(BackendError::Invalid(m)) if m.contains("no rollups today")),
        "the caller hears its own error: {failed:?}"
    );
    drop(store);

    let store = open(&dir);
    assert_eq!(store.heads(&[series]).await.unwrap(), vec![None]);
    let raw = store
        .read_buckets(raw_family(), SeriesId(2), 0, H, BucketRead::Full)
        .await
        .unwrap();
    assert!(raw.is_empty(), "{raw:?}");

    // The same call with its rollups: raw points and rollup slot in one commit.
    let hour = Resolution::parse("1h").unwrap();
    let outcome = store
        .write_with_rollups(
            batch,
            Box::new(move |outcome| {
                assert_eq!(outcome.appends[0].refused, 0);
                let updates = rollup_updates(&[Point::new(10 * S, 1.0)], &[hour]).unwrap();
                Ok(updates
                    .into_iter()
                    .map(|u| {
                        BucketWrite::new(
                            rollup(hour),
                            series,
                            u.bucket_start,
                            u.slot,
                            SlotChange::Merge {
                                summary: u.summary,
                                values: vec![1.0],
                            },
                        )
                        .unwrap()
                    })
                    .collect())
            }),
        )
        .await
        .unwrap();
    assert_eq!(outcome.buckets, vec![BucketWriteOutcome::Applied]);
    drop(store);
    let store = open(&dir);
    let heads = store.heads(&[series]).await.unwrap();
    assert_eq!(heads[0].map(|h| h.last), Some(Point::new(20 * S, 2.0)));
    let rolled = store
        .read_buckets(rollup(hour), series, 0, D, BucketRead::Full)
        .await
        .unwrap();
    assert_eq!(rolled.len(), 1);
}
