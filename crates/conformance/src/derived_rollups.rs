//! Rollups every backend derives from value segments itself
//! (`Backend::derive_segment_rollups`): every slot it answers must be exactly the summary
//! of the series' stored points, late and replaced points included, whether or not the
//! store has caught up, and they must outlive a raw retention drop.

use crate::{key, read_all, StoreFactory};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::sync::Arc;
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::{Point, SeriesId};

fn resolution(ns: i64) -> Resolution {
    Resolution::new(ns).expect("a valid resolution")
}

/// 4 and 8 ns divide the embedded suite's 16 ns partitions; 5 ns does not.
fn kept() -> Vec<Resolution> {
    vec![resolution(4), resolution(8), resolution(5)]
}

fn offer(backend: &dyn Backend) {
    backend.derive_segment_rollups(Arc::new(|measurement: &str| match measurement {
        "cpu" => kept(),
        _ => Vec::new(),
    }));
}

fn bits(slots: &[(i64, Summary)]) -> Vec<(i64, [u64; 8])> {
    slots.iter().map(|(t, s)| (*t, s.to_bits())).collect()
}

async fn rollup(
    b: &dyn Backend,
    s: SeriesId,
    r: Resolution,
    start: i64,
    end: i64,
) -> Vec<(i64, Summary)> {
    b.read_segment_rollup(s, r, start, end)
        .await
        .unwrap_or_else(|e| panic!("rollup {r} of [{start}, {end}): {e}"))
}

/// Every kept resolution over a few aligned ranges equals the slots of the raw points.
async fn assert_rollups_match_raw(b: &dyn Backend, s: SeriesId, context: &str) {
    let points = read_all(b, s).await;
    for r in kept() {
        let w = r.nanos();
        for (start, end) in [(0, 40 * w), (2 * w, 9 * w), (5 * w, 6 * w), (-4 * w, 0)] {
            let want = summarize_slots(&points, start, end, r);
            let got = rollup(b, s, r, start, end).await;
            assert_eq!(
                bits(&got),
                bits(&want),
                "{context}: rollup {r} of [{start}, {end})"
            );
        }
    }
}

pub async fn derived_rollups_equal_the_raw_slots(f: &dyn StoreFactory) {
    let store = f.create(7).await;
    let mut b = store.open().await;
    offer(&*b);
    let s = b.resolve_series(&[key("a", "v")]).await.expect("register")[0];
    let mut rng = StdRng::seed_from_u64(9);
    for round in 0..12 {
        // Times anywhere in [0, 160): late points, and values replaced at held times.
        let mut times: Vec<i64> = (0..rng.gen_range(1..20))
            .map(|_| rng.gen_range(0..160))
            .collect();
        times.sort_unstable();
        times.dedup();
        let points: Vec<Point> = times
            .iter()
            .map(|&t| Point::new(t, rng.gen_range(-1e6..1e6) * 0.1))
            .collect();
        let append = SeriesAppend::new(s, points).expect("increasing");
        b.append(vec![append]).await.expect("append");
        match round % 4 {
            1 => b.compact().await.expect("compact"),
            3 => {
                drop(b);
                b = store.open().await;
                offer(&*b);
            }
            _ => {}
        }
        assert_rollups_match_raw(&*b, s, &format!("round {round}")).await;
    }
    b.compact().await.expect("compact");
    assert_rollups_match_raw(&*b, s, "compacted").await;

    // Raw retention keeps the rollups of the partitions it drops (those that fit in a
    // partition); a rollup's own retention drops them.
    let before: Vec<Vec<(i64, Summary)>> = {
        let mut all = Vec::new();
        for r in kept() {
            all.push(rollup(&*b, s, r, 0, 64).await);
        }
        all
    };
    let dropped = b.drop_raw_before("cpu", 64, false).await.expect("drop raw");
    assert!(!dropped.is_empty(), "partitions before 64 hold points");
    let left = read_all(&*b, s).await;
    assert!(
        left.iter().all(|p| p.time >= 64),
        "raw points before 64 dropped"
    );
    for (r, want) in kept().into_iter().zip(&before) {
        if r.nanos() == 5 {
            continue; // not kept in partitions: it went with the raw points
        }
        assert_eq!(
            bits(&rollup(&*b, s, r, 0, 64).await),
            bits(want),
            "rollup {r} outlives raw"
        );
    }
    b.drop_segment_rollup_before("cpu", resolution(4), 64, false)
        .await
        .expect("drop rollup");
    assert!(rollup(&*b, s, resolution(4), 0, 64).await.is_empty());
    assert_eq!(
        bits(&rollup(&*b, s, resolution(8), 0, 64).await),
        bits(&before[1])
    );
    drop(b);
    let b = store.open().await;
    offer(&*b);
    assert_eq!(
        bits(&rollup(&*b, s, resolution(8), 0, 64).await),
        bits(&before[1]),
        "after reopen"
    );
    // A late point into a dropped partition is stored, and that partition's slots are
    // then its points' again (raw points win over what retention set aside).
    let late = SeriesAppend::new(s, vec![Point::new(10, 2.5)]).expect("one point");
    b.append(vec![late]).await.expect("late append");
    let raw = read_all(&*b, s).await;
    assert!(
        raw.contains(&Point::new(10, 2.5)),
        "the late point is stored"
    );
    b.compact().await.expect("compact");
    assert_eq!(
        bits(&rollup(&*b, s, resolution(8), 0, 16).await),
        bits(&summarize_slots(
            &[Point::new(10, 2.5)],
            0,
            16,
            resolution(8)
        )),
        "a dropped partition written again answers from its points"
    );
}

/// One `drop_expired` does what each of its expiries would do alone, whatever else the
/// partitions hold: one measurement's raw points, another's rollup at one resolution, and
/// nothing for a measurement the store never saw; a dry run only lists.
pub async fn one_retention_call_drops_each_expiry(f: &dyn StoreFactory) {
    use tickertape_backend::Expiry;
    use tickertape_core::rollup::ResolutionOrRaw;
    use tickertape_core::SeriesKey;
    let store = f.create(7).await;
    let b = store.open().await;
    let r4 = resolution(4);
    b.derive_segment_rollups(Arc::new(move |_: &str| vec![r4]));
    let keys = ["cpu", "mem"].map(|m| SeriesKey::new(m, vec![("host".into(), "a".into())], "v"));
    let ids = b.resolve_series(&keys).await.expect("register");
    let points: Vec<Point> = (0..128).map(|t| Point::new(t, t as f64 * 0.5)).collect();
    for &s in &ids {
        let append = SeriesAppend::new(s, points.clone()).expect("increasing");
        b.append(vec![append]).await.expect("append");
    }
    b.compact().await.expect("compact");
    let (cpu, mem) = (ids[0], ids[1]);
    let mem_slots = rollup(&*b, mem, r4, 0, 128).await;
    let expiry = |m: &str, level| Expiry {
        measurement: m.into(),
        level,
        cutoff: 64,
    };
    let expiries = [
        expiry("cpu", ResolutionOrRaw::Raw),
        expiry("mem", ResolutionOrRaw::Rollup(r4)),
        expiry("never_written", ResolutionOrRaw::Raw),
    ];
    let listed = b.drop_expired(&expiries, true).await.expect("dry run");
    assert_eq!(listed.len(), 3);
    // A store that derives rollups on read from the raw points that remain lists no
    // partition of mem's rollup: its raw points are all there.
    assert!(!listed[0].is_empty(), "{listed:?}");
    assert!(listed[2].is_empty(), "{listed:?}");
    assert!(listed[0].iter().all(|&(_, end)| end <= 64), "{listed:?}");
    assert_eq!(read_all(&*b, cpu).await, points, "a dry run drops nothing");
    let dropped = b.drop_expired(&expiries, false).await.expect("drop");
    assert_eq!(dropped, listed, "what the dry run listed");
    let cpu_left = read_all(&*b, cpu).await;
    assert!(cpu_left.iter().all(|p| p.time >= 64) && cpu_left.len() >= 64);
    assert_eq!(read_all(&*b, mem).await, points, "mem keeps its raw points");
    // cpu's rollup outlives its raw points; mem's rollup of [0, 64) is gone, and answers
    // again from its raw points, which are all still there.
    let want_cpu = summarize_slots(&points, 0, 64, r4);
    assert_eq!(bits(&rollup(&*b, cpu, r4, 0, 64).await), bits(&want_cpu));
    assert_eq!(bits(&rollup(&*b, mem, r4, 0, 128).await), bits(&mem_slots));
}
