//! Reads of many series at once (`ValueStore::read_points`, `read_segment_rollups`): one
//! call for a set of series answers, for each in the order given, exactly what the
//! contract says of that series alone — its points in the range, its neighbours when
//! asked, its rollup slots bit for bit — with late and replaced points, deletes, a
//! compaction and a reopen in between; a series without points, or never registered,
//! answers nothing.

use crate::StoreFactory;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{Backend, DeleteRange, PointsRange, RangePoints, SeriesAppend};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId, SeriesKey};

/// An id no test registers.
const NEVER_REGISTERED: SeriesId = SeriesId(1_000_000);

/// 4 ns divides the suites' 16 ns partitions (kept beside them); 5 ns does not.
fn kept() -> Vec<Resolution> {
    [4, 5]
        .map(|ns| Resolution::new(ns).expect("valid"))
        .to_vec()
}

fn offer(b: &dyn Backend) {
    b.derive_segment_rollups(Arc::new(|m: &str| match m {
        "disk" => kept(),
        _ => Vec::new(),
    }));
}

fn key(host: &str) -> SeriesKey {
    SeriesKey::new("disk", vec![("host".into(), host.into())], "used")
}

/// The ranges every check reads: wide, narrow, cut anywhere, empty, reversed, before and
/// after every point, all of time.
const RANGES: [(i64, i64); 8] = [
    (0, 200),
    (50, 51),
    (37, 123),
    (120, 120),
    (150, 90),
    (-50, -10),
    (300, 400),
    (i64::MIN, i64::MAX),
];

/// Aligned to both kept resolutions (20 ns apart).
const ROLLUP_RANGES: [(i64, i64); 4] = [(0, 200), (40, 120), (-20, 20), (180, 260)];

pub async fn many_series_are_read_at_once(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let mut b = store.open().await;
    offer(&*b);
    let keys: Vec<SeriesKey> = ["a", "b", "c", "d", "silent"].map(key).to_vec();
    let ids = b.resolve_series(&keys).await.expect("register");
    let written = &ids[..4];
    // Asked in an order of their own, a series twice, with one never written and one
    // never registered.
    let asked: Vec<SeriesId> = vec![
        ids[2],
        ids[4],
        ids[0],
        NEVER_REGISTERED,
        ids[3],
        ids[1],
        ids[2],
    ];
    let mut model: BTreeMap<SeriesId, BTreeMap<i64, f64>> = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(31);
    for round in 0..6 {
        let mut appends = Vec::new();
        for &s in written {
            // Anywhere in [0, 200): late points, and values replaced at held times.
            let mut times: Vec<i64> = (0..rng.gen_range(1..16))
                .map(|_| rng.gen_range(0..200))
                .collect();
            times.sort_unstable();
            times.dedup();
            let points: Vec<Point> = times
                .iter()
                .map(|&t| Point::new(t, f64::from(rng.gen_range(-1000..1000)) * 0.25))
                .collect();
            let held = model.entry(s).or_default();
            held.extend(points.iter().map(|p| (p.time, p.value)));
            appends.push(SeriesAppend::new(s, points).expect("increasing"));
        }
        b.append(appends).await.expect("append");
        match round {
            2 => {
                let range = DeleteRange::new(Some(40), Some(60)).expect("a range");
                b.delete_points(&written[1..3], range)
                    .await
                    .expect("delete");
                for s in &written[1..3] {
                    if let Some(held) = model.get_mut(s) {
                        held.retain(|&t, _| !range.contains(t));
                    }
                }
            }
            3 => b.compact().await.expect("compact"),
            4 => {
                drop(b);
                b = store.open().await;
                offer(&*b);
            }
            _ => {}
        }
        let context = format!("round {round}");
        check_points(&*b, &asked, &model, &context).await;
        check_rollups(&*b, &asked, &model, &context).await;
    }
}

fn stored(model: &BTreeMap<SeriesId, BTreeMap<i64, f64>>, s: SeriesId) -> Vec<Point> {
    model.get(&s).map_or_else(Vec::new, |held| {
        held.iter().map(|(&t, &v)| Point::new(t, v)).collect()
    })
}

/// A point as (time, value bits), for an exact comparison.
type PointBits = (i64, u64);

fn bits(p: &RangePoints) -> (Option<PointBits>, Vec<PointBits>, Option<PointBits>) {
    let b = |p: &Point| (p.time, p.value.to_bits());
    (
        p.before.as_ref().map(b),
        p.points.iter().map(b).collect(),
        p.after.as_ref().map(b),
    )
}

async fn check_points(
    b: &dyn Backend,
    asked: &[SeriesId],
    model: &BTreeMap<SeriesId, BTreeMap<i64, f64>>,
    context: &str,
) {
    for (start, end) in RANGES {
        for neighbors in [false, true] {
            let range = PointsRange {
                start,
                end,
                neighbors,
            };
            let got = b
                .read_points(asked, range)
                .await
                .unwrap_or_else(|e| panic!("{context}: read_points {range:?}: {e}"));
            assert_eq!(got.len(), asked.len(), "{context}: one answer per series");
            for (&s, got) in asked.iter().zip(&got) {
                let want = RangePoints::from_sorted(&stored(model, s), range);
                assert_eq!(bits(got), bits(&want), "{context}: series {s}, {range:?}");
            }
        }
    }
}

fn slot_bits(slots: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
    slots.iter().map(|(t, s)| (*t, s.to_bits())).collect()
}

async fn check_rollups(
    b: &dyn Backend,
    asked: &[SeriesId],
    model: &BTreeMap<SeriesId, BTreeMap<i64, f64>>,
    context: &str,
) {
    for r in kept() {
        for (start, end) in ROLLUP_RANGES {
            let got = b
                .read_segment_rollups(asked, r, start, end)
                .await
                .unwrap_or_else(|e| panic!("{context}: rollups {r} [{start}, {end}): {e}"));
            assert_eq!(got.len(), asked.len(), "{context}: one answer per series");
            for (&s, got) in asked.iter().zip(&got) {
                let want = summarize_slots(&stored(model, s), start, end, r);
                assert_eq!(
                    slot_bits(got),
                    slot_bits(&want),
                    "{context}: series {s}, rollup {r} of [{start}, {end})"
                );
            }
        }
    }
}
