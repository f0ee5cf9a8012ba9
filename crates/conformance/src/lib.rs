//! The backend conformance suite: every rule of the backend trait's contract (crates/backend) that a backend must keep, as one
//! async function per rule, run against each backend by `tests/conformance.rs` (a list of
//! factories, as Prometheus runs one chunk test over every encoding).
//!
//! A test gets a [`StoreFactory`], creates a fresh store with the segment capacity it wants
//! and may reopen it to check persistence. Failures panic with a message saying what broke.

mod batched_reads;
mod bucket_ranges;
mod buckets;
mod databases;
mod deletes;
mod derived_rollups;
mod model;
mod names;
mod rollup_merges;
mod selection;
mod series;
mod stale_markers;
mod tokens;

pub use batched_reads::many_series_are_read_at_once;
pub use bucket_ranges::bucket_reads_select_documents_overlapping_the_range;
pub use buckets::{
    counter_slots_accumulate, partitions_are_listed_and_dropped, preallocated_slots_read_as_absent,
    raw_buckets_set_once_per_slot, raw_totals_sum_in_write_order,
};
pub use databases::{
    a_databases_default_policy_bounds_its_raw_points, databases_are_created_listed_and_dropped,
    databases_keep_series_apart, retention_policies_are_kept_per_database,
};
pub use deletes::deleted_points_never_come_back;
pub use derived_rollups::{
    derived_rollups_equal_the_raw_slots, one_retention_call_drops_each_expiry,
};
pub use model::matches_the_reference;
pub use names::{
    assert_one_token_per_name, name_tokens_are_stable, name_tokens_count_from_zero_per_namespace,
    odd_names, tokenize_at_once,
};
pub use rollup_merges::{
    merge_write, merges_in_one_call_apply_in_order,
    rollup_shells_take_merges_and_keep_negative_zero, rollup_slots_match_the_reference,
};
pub use selection::{
    fields_listed_once_each, series_lookup_and_count_register_nothing,
    series_selected_by_tags_and_matchers, tag_keys_and_values_listed,
};
pub use series::{
    a_read_in_a_gap_opens_only_its_neighbours, stats_count_series_and_segments,
    unknown_series_are_refused,
};
pub use stale_markers::stale_markers_come_back_bit_for_bit;
pub use tokens::tokens_are_kept_replaced_and_revoked;

use async_trait::async_trait;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::query::select_range;
use tickertape_core::segment::{collect_points, SegmentBody, NO_NEXT, NO_PREVIOUS};
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};

/// Makes fresh, empty stores of one backend kind.
#[async_trait]
pub trait StoreFactory: Send + Sync {
    async fn create(&self, segment_capacity: usize) -> Box<dyn StoreHandle>;
}

/// One store's location; `open` may be called again after the previous backend was
/// dropped, to check what survived.
#[async_trait]
pub trait StoreHandle: Send + Sync {
    async fn open(&self) -> Arc<dyn Backend>;
}

fn key(host: &str, field: &str) -> SeriesKey {
    SeriesKey::new("cpu", vec![("host".into(), host.into())], field)
}

fn points(times: &[i64]) -> Vec<Point> {
    times
        .iter()
        .map(|&t| Point::new(t, t as f64 * 0.5))
        .collect()
}

async fn one_series(backend: &dyn Backend) -> SeriesId {
    backend
        .resolve_series(&[key("a", "u")])
        .await
        .expect("resolve")[0]
}

async fn append(backend: &dyn Backend, series: SeriesId, times: &[i64]) {
    backend
        .append(vec![
            SeriesAppend::new(series, points(times)).expect("points in time order")
        ])
        .await
        .expect("append");
}

async fn read_all(backend: &dyn Backend, series: SeriesId) -> Vec<Point> {
    let segments = backend
        .read_segments(series, i64::MIN, i64::MAX)
        .await
        .expect("read_segments");
    collect_points(&segments).expect("decode")
}

pub(crate) fn assert_bits_eq(got: &[Point], want: &[Point], context: &str) {
    let same = got.len() == want.len() && got.iter().zip(want).all(|(a, b)| a.bit_eq(b));
    assert!(same, "{context}: got {got:?}, want {want:?}");
}

/// Appended points come back, in order, bit for bit.
pub async fn append_then_read(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    append(&*b, s, &[1, 2, 3]).await;
    append(&*b, s, &[4, 5]).await;
    assert_bits_eq(
        &read_all(&*b, s).await,
        &points(&[1, 2, 3, 4, 5]),
        "read back",
    );
}

/// Values are stored bit for bit, times anywhere in i64 (the epoch and before it too).
pub async fn any_value_any_time(f: &dyn StoreFactory) {
    let store = f.create(3).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    let pts = vec![
        Point::new(i64::MIN + 1, f64::NAN),
        Point::new(-5, -0.0),
        Point::new(0, 0.0),
        Point::new(1, f64::INFINITY),
        Point::new(2, f64::NEG_INFINITY),
        Point::new(3, f64::from_bits(0x7ff8_dead_beef_0001)),
        Point::new(4, f64::MIN_POSITIVE / 2.0),
        Point::new(i64::MAX - 1, 1e300),
    ];
    b.append(vec![
        SeriesAppend::new(s, pts.clone()).expect("points in time order")
    ])
    .await
    .expect("append");
    assert_bits_eq(&read_all(&*b, s).await, &pts, "special values");
}

/// Points written in several calls, past the store's segment size, come back in order,
/// and the segments that carry them keep the chain's rules however the store cuts them:
/// sorted by `prev_end`, each segment's points strictly increasing and inside its
/// `(prev_end, next_start)` bounds, a sealed segment's block decoding to its points.
pub async fn rollover_keeps_chain_and_seals(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    let times: Vec<i64> = (1..=10).map(|i| i * 10).collect();
    // Uneven batches, one straddling a boundary.
    append(&*b, s, &times[..3]).await;
    append(&*b, s, &times[3..6]).await;
    append(&*b, s, &times[6..]).await;
    b.compact().await.expect("compact");
    append(&*b, s, &[105]).await;
    let segments = b.read_segments(s, i64::MIN, i64::MAX).await.expect("read");
    assert!(
        segments.windows(2).all(|w| w[0].prev_end <= w[1].prev_end),
        "sorted by prev_end"
    );
    for segment in &segments {
        let pts = segment.points().expect("decode");
        assert!(pts.windows(2).all(|w| w[0].time < w[1].time), "in order");
        if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
            assert!(segment.prev_end < first.time || segment.prev_end == NO_PREVIOUS);
            assert!(segment.next_start > last.time || segment.next_start == NO_NEXT);
        }
        if let SegmentBody::Sealed(block) = &segment.body {
            assert!(!block.is_empty(), "a sealed segment holds a block");
        }
    }
    let mut want = times.clone();
    want.insert(10, 105);
    want.sort_unstable();
    assert_bits_eq(
        &collect_points(&segments).expect("decode"),
        &points(&want),
        "points",
    );
}

/// Every range, including one inside a gap and one across a segment boundary, reads the
/// points in range plus the nearest one on each side.
pub async fn neighbors_across_boundaries_and_gaps(f: &dyn StoreFactory) {
    let store = f.create(3).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    let times: Vec<i64> = (1..=10).map(|i| i * 10).collect();
    append(&*b, s, &times).await;
    let all = points(&times);
    for start in (0..=115).step_by(5) {
        for end in (start..=115).step_by(5) {
            // The trait's range is inclusive; the API's end is exclusive.
            let segments = b.read_segments(s, start, end).await.expect("read");
            let got = select_range(
                &collect_points(&segments).expect("decode"),
                start,
                end,
                true,
            );
            let want = select_range(&all, start, end, true);
            assert_bits_eq(&got, &want, &format!("range [{start}, {end})"));
        }
    }
}

/// The one append rule: points may come in any order; a point at a time the series holds
/// replaces its value (the last write wins) and an exact duplicate changes nothing, also
/// after a reopen and a compaction.
pub async fn older_points_follow_the_append_rule(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    append(&*b, s, &[10, 20]).await;
    let late = vec![
        Point::new(15, 1.5),
        Point::new(20, -2.0),
        Point::new(30, 3.0),
    ];
    b.append(vec![SeriesAppend::new(s, late).expect("in order")])
        .await
        .expect("append");
    append(&*b, s, &[30]).await;
    let want = vec![
        Point::new(10, 5.0),
        Point::new(15, 1.5),
        Point::new(20, -2.0),
        Point::new(30, 15.0),
    ];
    assert_bits_eq(
        &read_all(&*b, s).await,
        &want,
        "the last write of each time",
    );
    let head = b.heads(&[s]).await.expect("heads")[0].expect("a head");
    assert!(head.last.bit_eq(&want[3]), "{head:?}");
    // An exact duplicate of everything changes nothing.
    b.append(vec![SeriesAppend::new(s, want.clone()).expect("in order")])
        .await
        .expect("append");
    assert_bits_eq(&read_all(&*b, s).await, &want, "idempotent");
    b.compact().await.expect("compact");
    assert_bits_eq(&read_all(&*b, s).await, &want, "after compaction");
    drop(b);
    let b = store.open().await;
    assert_bits_eq(&read_all(&*b, s).await, &want, "after reopen");
    // A late write after compaction still wins over the compacted value.
    b.append(vec![
        SeriesAppend::new(s, vec![Point::new(15, 9.0)]).expect("one point")
    ])
    .await
    .expect("append");
    let mut again = want.clone();
    again[1] = Point::new(15, 9.0);
    assert_bits_eq(&read_all(&*b, s).await, &again, "late after compaction");
}

/// Several appends in one call, to one series and to several, apply in order.
pub async fn many_series_in_one_call(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let keys: Vec<SeriesKey> = (0..5).map(|i| key(&format!("h{i}"), "u")).collect();
    let ids = b.resolve_series(&keys).await.expect("resolve");
    let mut appends = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let base = i as i64 * 100;
        appends.push(
            SeriesAppend::new(*id, points(&[base + 1, base + 2, base + 3]))
                .expect("points in time order"),
        );
        appends.push(
            SeriesAppend::new(*id, points(&[base + 4, base + 5])).expect("points in time order"),
        );
    }
    // A later append in the same call replaces the value at a time an earlier one wrote.
    appends.push(SeriesAppend::new(ids[0], vec![Point::new(2, -7.0)]).expect("one point"));
    b.append(appends).await.expect("append");
    for (i, id) in ids.iter().enumerate() {
        let base = i as i64 * 100;
        let times: Vec<i64> = (1..=5).map(|t| base + t).collect();
        let mut want = points(&times);
        if i == 0 {
            want[1] = Point::new(2, -7.0);
        }
        assert_bits_eq(&read_all(&*b, *id).await, &want, &format!("series {i}"));
    }
}

/// Series ids are stable, distinct, listed by selector, and survive a reopen.
pub async fn series_registry(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let keys = vec![
        key("a", "u"),
        key("b", "u"),
        key("a", "s"),
        SeriesKey::new(
            "mem",
            vec![("host".into(), "a".into()), ("dc".into(), "x y$.z".into())],
            "free",
        ),
        SeriesKey::new(
            "ünï $.m",
            vec![("$set.k e".into(), "v".repeat(1024))],
            "f.$x",
        ),
    ];
    let ids = {
        let b = store.open().await;
        let ids = b.resolve_series(&keys).await.expect("resolve");
        let again = b
            .resolve_series(&[keys[2].clone(), keys[0].clone()])
            .await
            .expect("resolve");
        assert_eq!(again, vec![ids[2], ids[0]], "same key, same id");
        let mut distinct = ids.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), keys.len(), "distinct keys get distinct ids");
        let cpu_a = b
            .find_series(&SeriesSelector {
                measurement: "cpu".into(),
                field: None,
                tags: vec![("host".into(), "a".into())],
                matchers: Vec::new(),
            })
            .await
            .expect("find");
        let mut found: Vec<SeriesKey> = cpu_a.into_iter().map(|s| s.key).collect();
        found.sort();
        let mut want = vec![keys[0].clone(), keys[2].clone()];
        want.sort();
        assert_eq!(found, want);
        ids
    };
    let b = store.open().await;
    assert_eq!(
        b.resolve_series(&keys).await.expect("resolve"),
        ids,
        "ids survive reopen"
    );
    let mem = b
        .find_series(&SeriesSelector {
            measurement: "mem".into(),
            field: Some("free".into()),
            tags: vec![],
            matchers: Vec::new(),
        })
        .await
        .expect("find");
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0].key, keys[3], "names with $, . and spaces survive");
    let odd = b
        .find_series(&SeriesSelector {
            measurement: "ünï $.m".into(),
            field: None,
            tags: vec![("$set.k e".into(), "v".repeat(1024))],
            matchers: Vec::new(),
        })
        .await
        .expect("find");
    assert_eq!(odd.len(), 1);
    assert_eq!(
        odd[0].key, keys[4],
        "unicode, `$`, `.` and 1 KB names survive"
    );
}

/// Everything acknowledged survives a reopen, and writing continues where it stopped.
pub async fn reopen_keeps_everything(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let s = {
        let b = store.open().await;
        let s = one_series(&*b).await;
        append(&*b, s, &[1, 2, 3, 4, 5, 6]).await;
        s
    };
    let b = store.open().await;
    assert_bits_eq(
        &read_all(&*b, s).await,
        &points(&[1, 2, 3, 4, 5, 6]),
        "after reopen",
    );
    let head = b.heads(&[s]).await.expect("heads")[0].expect("head");
    assert_eq!(head.last.time, 6);
    append(&*b, s, &[6, 7, 8, 9, 10]).await;
    assert_bits_eq(
        &read_all(&*b, s).await,
        &points(&(1..=10).collect::<Vec<_>>()),
        "continued",
    );
}

/// Heads give the latest point, also after a late point; a series without points has none.
pub async fn heads_report_last_point(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let ids = b
        .resolve_series(&[key("a", "u"), key("b", "u")])
        .await
        .expect("resolve");
    append(&*b, ids[0], &[5, 9]).await;
    append(&*b, ids[0], &[7]).await;
    let heads = b.heads(&ids).await.expect("heads");
    let h = heads[0].expect("head of a written series");
    assert!(h.last.bit_eq(&Point::new(9, 4.5)), "{h:?}");
    assert!(heads[1].is_none());
    append(&*b, ids[0], &[9]).await;
    b.append(vec![
        SeriesAppend::new(ids[0], vec![Point::new(9, -1.0)]).expect("one point")
    ])
    .await
    .expect("append");
    let h = b.heads(&ids).await.expect("heads")[0].expect("head");
    assert!(
        h.last.bit_eq(&Point::new(9, -1.0)),
        "the last write of the latest time: {h:?}"
    );
}

/// Random appends (some out of order) and reads against a `BTreeMap` model.
pub async fn model_check(f: &dyn StoreFactory, seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let store = f.create(rng.gen_range(2..=6)).await;
    let mut b = store.open().await;
    let keys: Vec<SeriesKey> = (0..3).map(|i| key(&format!("m{i}"), "v")).collect();
    let ids = b.resolve_series(&keys).await.expect("resolve");
    let mut model: BTreeMap<(SeriesId, i64), f64> = BTreeMap::new();
    let mut last: BTreeMap<SeriesId, i64> = BTreeMap::new();
    for step in 0..steps {
        match rng.gen_range(0..10) {
            0..=5 => {
                let mut appends = Vec::new();
                for _ in 0..rng.gen_range(1..=3) {
                    let series = ids[rng.gen_range(0..ids.len())];
                    let from = last.get(&series).copied().unwrap_or(0) + rng.gen_range(-3..4);
                    let mut t = from;
                    let pts: Vec<Point> = (0..rng.gen_range(1..=7))
                        .map(|_| {
                            t += rng.gen_range(1..5);
                            Point::new(t, rng.gen_range(-100.0..100.0))
                        })
                        .collect();
                    appends.push(SeriesAppend::new(series, pts).expect("points in time order"));
                }
                b.append(appends.clone()).await.expect("append");
                for a in &appends {
                    for p in a.points() {
                        model.insert((a.series(), p.time), p.value);
                        let newest = last
                            .get(&a.series())
                            .copied()
                            .unwrap_or(i64::MIN)
                            .max(p.time);
                        last.insert(a.series(), newest);
                    }
                }
            }
            6..=8 => {
                let series = ids[rng.gen_range(0..ids.len())];
                let start = rng.gen_range(-5..60);
                let end = start + rng.gen_range(0..40);
                let segments = b.read_segments(series, start, end).await.expect("read");
                let got = select_range(
                    &collect_points(&segments).expect("decode"),
                    start,
                    end,
                    true,
                );
                let all: Vec<Point> = model
                    .range((series, i64::MIN)..=(series, i64::MAX))
                    .map(|(&(_, t), &v)| Point::new(t, v))
                    .collect();
                assert_bits_eq(
                    &got,
                    &select_range(&all, start, end, true),
                    &format!("step {step}: read"),
                );
            }
            _ => {
                drop(b);
                b = store.open().await;
            }
        }
    }
}
