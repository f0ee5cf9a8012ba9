//! Deleting points and series (`ValueStore::delete_points`, `SeriesCatalog::remove_series`):
//! deleted points never come back — not after a restart, a compaction (merges, folds), a
//! later write into the same partition or a new rollup plan (the rollups recomputed) —
//! every read answers from what remains (points, neighbours, heads, derived rollups bit
//! for bit), and a series removed whole is gone from every listing, its key registered
//! again under a new id that holds only the new points.

use crate::{read_all, StoreFactory, StoreHandle};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{Backend, DeleteRange, NameQuery, SeriesAppend};
use tickertape_core::query::{select_range, Summary};
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};

fn key(host: &str, field: &str) -> SeriesKey {
    SeriesKey::new("mem", vec![("host".into(), host.into())], field)
}

/// 4 ns divides the suites' 16 ns partitions (kept beside them); 5 ns does not.
fn kept() -> Vec<Resolution> {
    [4, 5]
        .map(|ns| Resolution::new(ns).expect("valid"))
        .to_vec()
}

fn offer(b: &dyn Backend) {
    b.derive_segment_rollups(Arc::new(|m: &str| match m {
        "mem" => kept(),
        _ => Vec::new(),
    }));
}

fn range(start: Option<i64>, end: Option<i64>) -> DeleteRange {
    DeleteRange::new(start, end).expect("a non-empty range")
}

/// What each series should hold.
#[derive(Default)]
struct Model(BTreeMap<SeriesId, BTreeMap<i64, f64>>);

impl Model {
    fn append(&mut self, s: SeriesId, points: &[Point]) {
        let held = self.0.entry(s).or_default();
        held.extend(points.iter().map(|p| (p.time, p.value)));
    }

    fn delete(&mut self, s: SeriesId, range: DeleteRange) {
        if let Some(held) = self.0.get_mut(&s) {
            held.retain(|&t, _| !range.contains(t));
        }
    }

    fn points(&self, s: SeriesId) -> Vec<Point> {
        self.0.get(&s).map_or_else(Vec::new, |held| {
            held.iter().map(|(&t, &v)| Point::new(t, v)).collect()
        })
    }
}

async fn append(b: &dyn Backend, model: &mut Model, s: SeriesId, times: &[i64], seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let points: Vec<Point> = times
        .iter()
        .map(|&t| Point::new(t, f64::from(rng.gen_range(-1000..1000)) * 0.25))
        .collect();
    let append = SeriesAppend::new(s, points.clone()).expect("increasing");
    b.append(vec![append]).await.expect("append");
    model.append(s, &points);
}

/// Every read of each series answers the model: all points, ranges with their
/// neighbours around the deleted stretches, heads, and the kept rollups bit for bit.
async fn assert_holds(b: &dyn Backend, model: &Model, series: &[SeriesId], context: &str) {
    for &s in series {
        let want = model.points(s);
        let got = read_all(b, s).await;
        crate::assert_bits_eq(&got, &want, &format!("{context}: series {s:?}"));
        for (start, end) in [(20, 70), (25, 30), (70, 71), (0, 20), (140, 200), (30, 30)] {
            let segments = b.read_segments(s, start, end).await.expect("read");
            let mut got = tickertape_core::segment::collect_points(&segments).expect("decode");
            got.dedup_by_key(|p| p.time);
            let got = select_range(&got, start, end, true);
            let want = select_range(&want, start, end, true);
            crate::assert_bits_eq(
                &got,
                &want,
                &format!("{context}: [{start}, {end}) of {s:?}"),
            );
        }
        let head = b.heads(&[s]).await.expect("heads")[0].map(|h| h.last);
        match (head, want.last()) {
            (Some(got), Some(want)) => {
                assert!(got.bit_eq(want), "{context}: head {got:?}, want {want:?}")
            }
            (got, want) => assert_eq!(got, want.copied(), "{context}: head of {s:?}"),
        }
        for r in kept() {
            let w = r.nanos();
            for (start, end) in [(0, 40 * w), (4 * w, 15 * w)] {
                let got = b
                    .read_segment_rollup(s, r, start, end)
                    .await
                    .expect("rollup");
                let wanted = summarize_slots(&want, start, end, r);
                let bits = |slots: &[(i64, Summary)]| -> Vec<(i64, [u64; 8])> {
                    slots.iter().map(|(t, x)| (*t, x.to_bits())).collect()
                };
                assert_eq!(bits(&got), bits(&wanted), "{context}: rollup {r} of {s:?}");
            }
        }
    }
}

async fn reopen(store: &dyn StoreHandle, b: Arc<dyn Backend>) -> Arc<dyn Backend> {
    drop(b);
    let b = store.open().await;
    offer(&*b);
    b
}

pub async fn deleted_points_never_come_back(f: &dyn StoreFactory) {
    let store = f.create(7).await;
    let mut b = store.open().await;
    offer(&*b);
    let ids = b
        .resolve_series(&[key("a", "used"), key("b", "used"), key("c", "free")])
        .await
        .expect("register");
    let (a, bb, c) = (ids[0], ids[1], ids[2]);
    let mut model = Model::default();
    let early: Vec<i64> = (0..100).step_by(3).collect();
    for (i, &s) in ids.iter().enumerate() {
        append(&*b, &mut model, s, &early, i as u64).await;
    }
    // Parts, folds and rollups of the early points; the late ones stay in memory.
    b.compact().await.expect("compact");
    let late: Vec<i64> = (100..180).step_by(2).collect();
    for (i, &s) in ids.iter().enumerate() {
        append(&*b, &mut model, s, &late, 10 + i as u64).await;
    }

    // A range of one series across partitions (and the nearest points around it), and an
    // open-ended range of another through its newest points (its head).
    for (s, r) in [(a, range(Some(20), Some(70))), (bb, range(Some(150), None))] {
        b.delete_points(&[s], r).await.expect("delete");
        model.delete(s, r);
    }
    // An empty range of points, and an id never registered: no error.
    b.delete_points(&[a], range(Some(21), Some(23)))
        .await
        .expect("delete nothing");
    b.delete_points(&[SeriesId(9_999)], DeleteRange::all())
        .await
        .expect("unknown id");
    let all = [a, bb, c];
    assert_holds(&*b, &model, &all, "after the deletes").await;
    b = reopen(&*store, b).await;
    assert_holds(&*b, &model, &all, "after a restart").await;
    b.compact().await.expect("compact");
    assert_holds(&*b, &model, &all, "after a compaction").await;

    // A later write into the deleted range and its partitions: only what it writes comes
    // back (a later write wins over the delete).
    append(&*b, &mut model, a, &[30, 33, 71], 20).await;
    append(&*b, &mut model, bb, &[160], 21).await;
    assert_holds(&*b, &model, &all, "after late writes").await;
    b.compact().await.expect("compact");
    b = reopen(&*store, b).await;
    assert_holds(
        &*b,
        &model,
        &all,
        "after late writes, compaction and restart",
    )
    .await;
    // A new rollup plan makes stores derive their rollups again (a rebuild).
    offer(&*b);
    b.compact().await.expect("compact");
    assert_holds(&*b, &model, &all, "after rollups are derived again").await;

    // A measurement whose only series is deleted whole leaves the pickers.
    let lone = b
        .resolve_series(&[SeriesKey::new("gone", vec![("dc".into(), "x".into())], "v")])
        .await
        .expect("register")[0];
    append(&*b, &mut model, lone, &[1, 2], 40).await;
    b.delete_points(&[lone], DeleteRange::all())
        .await
        .expect("delete whole");
    assert_eq!(b.remove_series(&[lone]).await.expect("remove"), 1);
    let all_names = NameQuery::new("", 100);
    let measurements = b.list_measurements(&all_names).await.expect("measurements");
    assert_eq!(
        measurements,
        vec!["mem"],
        "the measurement left with no series"
    );
    let keys = b.list_tag_keys("gone", &all_names).await.expect("tag keys");
    assert!(
        keys.is_empty(),
        "tag keys of a measurement with no series: {keys:?}"
    );
    let fields = b.list_fields_of("gone", &all_names).await.expect("fields");
    assert!(
        fields.is_empty(),
        "fields of a measurement with no series: {fields:?}"
    );

    // A series deleted whole leaves the catalog and every listing.
    b.delete_points(&[c], DeleteRange::all())
        .await
        .expect("delete whole");
    model.delete(c, DeleteRange::all());
    assert_eq!(
        b.remove_series(&[c, SeriesId(9_999)])
            .await
            .expect("remove"),
        1
    );
    for round in ["removed", "removed, after a restart"] {
        assert_removed(&*b, c, round).await;
        assert_holds(&*b, &model, &[a, bb], round).await;
        b = reopen(&*store, b).await;
    }
    // Its key registered again is a new series, holding only what is written to it.
    let again = b
        .resolve_series(&[key("c", "free")])
        .await
        .expect("register")[0];
    assert_ne!(again, c, "a removed series' id is never issued again");
    assert!(
        read_all(&*b, again).await.is_empty(),
        "the new series holds nothing yet"
    );
    append(&*b, &mut model, again, &[5, 50], 30).await;
    b.compact().await.expect("compact");
    b = reopen(&*store, b).await;
    assert_holds(&*b, &model, &[a, bb, again], "the key written again").await;
    let listed = b
        .find_series(&SeriesSelector {
            measurement: "mem".into(),
            ..SeriesSelector::default()
        })
        .await
        .expect("find");
    let listed: Vec<SeriesId> = listed.iter().map(|s| s.id).collect();
    assert_eq!(
        listed,
        vec![a, bb, again],
        "the series listed after it is written again"
    );
}

/// `c` (the only series of field `free` and of tag value `host=c`) is nowhere listed.
async fn assert_removed(b: &dyn Backend, c: SeriesId, context: &str) {
    let selector = SeriesSelector {
        measurement: "mem".into(),
        ..SeriesSelector::default()
    };
    let found = b.find_series(&selector).await.expect("find");
    assert!(
        found.iter().all(|s| s.id != c),
        "{context}: still found: {found:?}"
    );
    assert_eq!(found.len(), 2, "{context}: the others are kept");
    let fields = b.list_fields().await.expect("fields");
    assert!(
        !fields.contains(&("mem".into(), "free".into())),
        "{context}: field still listed: {fields:?}"
    );
    let all = NameQuery::new("", 100);
    let values = b
        .list_tag_values("mem", "host", &all)
        .await
        .expect("values");
    assert_eq!(values, vec!["a", "b"], "{context}: tag values");
    let count = b.count_series(&["mem".into()]).await.expect("count");
    assert_eq!(count.per_measurement, vec![2], "{context}: count");
    assert_eq!(
        b.lookup_series(&[key("c", "free")]).await.expect("lookup"),
        vec![None],
        "{context}: its key is not registered"
    );
}
