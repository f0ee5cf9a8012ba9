//! What only the embedded backend does: stored bytes that do not decode are `Corrupt`
//! for their series only, files of other formats are refused, raw points and their
//! rollups commit in one transaction, and its single writer issues tokens densely also
//! under concurrent callers. Every rule of the `Backend` trait itself is checked on every
//! backend by the conformance suite (`crates/conformance`).

use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::BucketRange;
use tickertape_backend::{
    Backend, BackendError, BucketFamily, BucketRead, BucketWrite, BucketWriteOutcome, NameKind,
    SlotChange, StoredBucket,
};
use tickertape_backend::{BucketStore, NameStore, SeriesCatalog, ValueStore};
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
    b.read_buckets(
        BucketRange {
            family,
            series: SeriesId(series),
            start,
            end,
        },
        BucketRead::Full,
    )
    .await
    .unwrap()
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
            .read_buckets(
                BucketRange {
                    family: raw_family(),
                    series: SeriesId(series),
                    start: 0,
                    end: H,
                },
                BucketRead::Full,
            )
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
            .read_buckets(
                BucketRange {
                    family: minute,
                    series: SeriesId(series),
                    start: 0,
                    end: H,
                },
                BucketRead::Full,
            )
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

/// A file written by the format 1 layout (no `format_version`), by format 2 (value segments
/// in redb), by format 3 (rollups of value segments in redb) or by an unknown format is
/// refused with a message that says so, and left as it was.
#[test]
fn other_formats_are_refused() {
    for version in [None, Some(1u64), Some(2), Some(3), Some(12)] {
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
            Err(BackendError::Corrupt(msg)) => {
                assert!(msg.contains("format"), "{msg}");
                assert!(msg.contains("re-import"), "{msg}");
                if version == Some(2) {
                    assert!(msg.contains("write-ahead log and part files"), "{msg}");
                }
                if version == Some(3) {
                    assert!(msg.contains("rollups of value segments"), "{msg}");
                }
            }
            Err(e) => panic!("{version:?}: {e}"),
            Ok(_) => panic!("{version:?}: opened"),
        }
    }
    // A new store records its format and opens again.
    let dir = tempfile::tempdir().unwrap();
    drop(open(&dir));
    drop(open(&dir));
}

/// A format 4 store (series keys as JSON, and a JSON → id table) is migrated at open:
/// the same series under the same ids, new series after them, and it opens again.
#[tokio::test]
async fn a_format_4_catalog_is_migrated() {
    use tickertape_core::{SeriesKey, SeriesSelector};
    let dir = tempfile::tempdir().unwrap();
    let keys = [
        SeriesKey::new("cpu", vec![("host".into(), "a b".into())], "usage"),
        SeriesKey::new("disk", vec![], "free"),
    ];
    {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
            let by_id: redb::TableDefinition<u64, &[u8]> =
                redb::TableDefinition::new("series_keys");
            let by_key: redb::TableDefinition<&[u8], u64> =
                redb::TableDefinition::new("series_ids");
            let mut meta = txn.open_table(meta).unwrap();
            meta.insert("format_version", 4).unwrap();
            meta.insert("next_series_id", 8).unwrap();
            let (mut by_id, mut by_key) = (
                txn.open_table(by_id).unwrap(),
                txn.open_table(by_key).unwrap(),
            );
            for (key, id) in keys.iter().zip([3u64, 7]) {
                let json = serde_json::to_vec(key).unwrap();
                by_id.insert(id, json.as_slice()).unwrap();
                by_key.insert(json.as_slice(), id).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    for _ in 0..2 {
        let b = open(&dir);
        for (key, id) in keys.iter().zip([3, 7]) {
            let selector = SeriesSelector {
                measurement: key.measurement.clone(),
                ..SeriesSelector::default()
            };
            let found = b.find_series(&selector).await.unwrap();
            let found: Vec<_> = found.into_iter().map(|s| (s.id, s.key)).collect();
            assert_eq!(found, vec![(SeriesId(id), key.clone())]);
        }
        let ids = b
            .resolve_series(&[keys[1].clone(), SeriesKey::new("net", vec![], "rx")])
            .await
            .unwrap();
        assert_eq!(ids[0], SeriesId(7));
        assert!(ids[1].0 >= 8, "{ids:?}");
    }
}

/// A format 5 store (a catalog row per series, its strings in the name store) is migrated
/// at open: its series found by tag, new strings and ids after the old ones,
/// across reopens.
#[tokio::test]
async fn a_format_5_catalog_is_read_and_extended() {
    use tickertape_core::{SeriesKey, SeriesSelector};
    let dir = tempfile::tempdir().unwrap();
    {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
            let keys: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("series_keys");
            let names: redb::TableDefinition<(&str, u64), &str> =
                redb::TableDefinition::new("token_names");
            let tokens: redb::TableDefinition<(&str, &str), u64> =
                redb::TableDefinition::new("name_tokens");
            let mut meta = txn.open_table(meta).unwrap();
            meta.insert("format_version", 5).unwrap();
            meta.insert("next_series_id", 8).unwrap();
            meta.insert("next_token.key", 4).unwrap();
            let (mut names, mut tokens) = (
                txn.open_table(names).unwrap(),
                txn.open_table(tokens).unwrap(),
            );
            for (t, name) in ["cpu", "usage", "host", "a b"].into_iter().enumerate() {
                names.insert(("key", t as u64), name).unwrap();
                tokens.insert(("key", name), t as u64).unwrap();
            }
            // measurement 0 · one tag · (2 · 3) · field 1
            txn.open_table(keys)
                .unwrap()
                .insert(3, [0u8, 1, 2, 3, 1].as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let old = SeriesKey::new("cpu", vec![("host".into(), "a b".into())], "usage");
    let new = SeriesKey::new("cpu", vec![("host".into(), "c".into())], "usage");
    let by_host = |host: &str| SeriesSelector {
        measurement: "cpu".into(),
        tags: vec![("host".into(), host.into())],
        ..SeriesSelector::default()
    };
    for round in 0..2 {
        let b = open(&dir);
        let found = b.find_series(&by_host("a b")).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].id, &found[0].key), (SeriesId(3), &old));
        let ids = b.resolve_series(&[new.clone(), old.clone()]).await.unwrap();
        assert_eq!(ids, vec![SeriesId(8), SeriesId(3)], "round {round}");
        let found = b.find_series(&by_host("c")).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key, new);
    }
}

/// A format 7 store (before series could be removed), 8 (before databases), 9 (before
/// parts of many measurements) or 10 (before packs) opens with its series and is recorded
/// as format 11, so an older binary refuses it from then on instead of listing removed
/// series again, other databases' series as its own, or failing on parts it cannot read
/// or find.
#[tokio::test]
async fn a_format_7_to_10_store_is_recorded_as_11() {
    let dir = tempfile::tempdir().unwrap();
    let key = tickertape_core::SeriesKey::new("cpu", vec![("host".into(), "a".into())], "usage");
    {
        let b = open(&dir);
        b.resolve_series(std::slice::from_ref(&key)).await.unwrap();
    }
    let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
    use redb::ReadableTable;
    let version = |set: Option<u64>| {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        let found = {
            let mut table = txn.open_table(meta).unwrap();
            if let Some(v) = set {
                table.insert("format_version", v).unwrap();
            }
            table.get("format_version").unwrap().map(|v| v.value())
        };
        txn.commit().unwrap();
        found
    };
    for old in [7, 8, 9, 10] {
        assert_eq!(version(Some(old)), Some(old));
        {
            let b = open(&dir);
            let found = b.lookup_series(std::slice::from_ref(&key)).await.unwrap();
            assert!(found[0].is_some(), "the series survives the upgrade");
        }
        assert_eq!(version(None), Some(11));
    }
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
                let t = b.tokenize(NameKind::TagValue, chunk).await.unwrap();
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
        .read_buckets(
            BucketRange {
                family: raw_family(),
                series: SeriesId(2),
                start: 0,
                end: H,
            },
            BucketRead::Full,
        )
        .await
        .unwrap();
    assert!(raw.is_empty(), "{raw:?}");

    // The same call with its rollups: raw points and rollup slot in one commit.
    let hour = Resolution::parse("1h").unwrap();
    let outcome = store
        .write_with_rollups(
            batch,
            Box::new(move |outcome| {
                assert_eq!(outcome.buckets, vec![BucketWriteOutcome::Applied]);
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
        .read_buckets(
            BucketRange {
                family: rollup(hour),
                series,
                start: 0,
                end: D,
            },
            BucketRead::Full,
        )
        .await
        .unwrap();
    assert_eq!(rolled.len(), 1);
}

/// A head older than `head_age` is flushed at the next write however few points it holds:
/// a series no longer written does not stay in memory.
#[tokio::test]
async fn an_old_head_is_flushed() {
    use tickertape_backend::SeriesAppend;
    use tickertape_core::SeriesKey;
    let dir = tempfile::tempdir().unwrap();
    let mut options = EmbeddedOptions::new(dir.path());
    options.head_age = std::time::Duration::ZERO;
    let b = EmbeddedBackend::open(options).unwrap();
    let ids = b
        .resolve_series(&[SeriesKey::new("m", vec![], "v")])
        .await
        .unwrap();
    let append = SeriesAppend::new(ids[0], vec![Point::new(1, 1.0), Point::new(2, 2.0)]).unwrap();
    b.append(vec![append]).await.unwrap();
    let mut in_memory = u64::MAX;
    for _ in 0..200 {
        in_memory = b.stats().await.unwrap().memory_points;
        if in_memory == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(in_memory, 0, "the head was not flushed");
    let points = b.read_segments(ids[0], 0, 10).await.unwrap();
    assert_eq!(
        tickertape_core::segment::collect_points(&points)
            .unwrap()
            .len(),
        2
    );
}
