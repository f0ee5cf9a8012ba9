//! Prometheus' stale marker is stored like a value but is none: every summary of points
//! (ranges, windows, rollup slots, rollup updates) leaves it out, and the rollup path
//! and the raw path still agree bit for bit.

use tickertape_core::model::STALE_NAN_BITS;
use tickertape_core::query::{
    aggregate_all, aggregate_windows, summarize_range, without_stale_markers, Aggregate,
};
use tickertape_core::rollup::{
    aggregate_by_slots, rollup_updates, rollup_window_summaries, summarize_slots, Resolution,
};
use tickertape_core::Point;

const M: i64 = 60_000_000_000;

fn stale() -> f64 {
    f64::from_bits(STALE_NAN_BITS)
}

/// Minute 0: 1, stale, 3. Minute 1: stale only. Minute 2: 5, then a final stale marker.
fn points() -> Vec<Point> {
    vec![
        Point::new(0, 1.0),
        Point::new(10, stale()),
        Point::new(20, 3.0),
        Point::new(M + 5, stale()),
        Point::new(2 * M, 5.0),
        Point::new(2 * M + 1, stale()),
    ]
}

#[test]
fn a_range_summary_counts_values_only() {
    let s = summarize_range(&points(), 0, 3 * M).unwrap();
    assert_eq!((s.count, s.sum, s.min, s.max), (3, 9.0, 1.0, 5.0));
    assert_eq!(
        s.last,
        Point::new(2 * M, 5.0),
        "the last value, not the marker"
    );
    assert_eq!(
        aggregate_all(&points(), 0, 3 * M, Aggregate::Last),
        Some(Point::new(2 * M, 5.0))
    );
    assert_eq!(summarize_range(&points(), M, 2 * M), None, "only a marker");
}

#[test]
fn a_window_with_only_markers_is_empty() {
    let counts = aggregate_windows(&points(), 0, 3 * M, M, Aggregate::Count);
    assert_eq!(counts, vec![Point::new(0, 2.0), Point::new(2 * M, 1.0)]);
    let avg = aggregate_windows(&points(), 0, 3 * M, M, Aggregate::Avg);
    assert_eq!(avg[0], Point::new(0, 2.0));
}

#[test]
fn rollup_slots_and_updates_leave_markers_out_and_agree() {
    let r = Resolution::MINUTE;
    let all = points();
    let slots = summarize_slots(&all, 0, 3 * M, r);
    let counts: Vec<(i64, u64)> = slots.iter().map(|(t, s)| (*t, s.count)).collect();
    assert_eq!(counts, vec![(0, 2), (2 * M, 1)]);

    // Applied in order to empty slots, the updates give the same slots, and none of
    // them covers a marker (backends add `points` one by one to the stored sum).
    let updates = rollup_updates(&all, &[r]).unwrap();
    for u in &updates {
        assert!(
            all[u.points.clone()]
                .iter()
                .all(|p| p.value.to_bits() != STALE_NAN_BITS),
            "{u:?}"
        );
    }
    let mut applied: Vec<(i64, tickertape_core::query::Summary)> = Vec::new();
    for u in &updates {
        let time = u.bucket_start + i64::from(u.slot) * r.nanos();
        match applied.last_mut() {
            Some((t, s)) if *t == time => *s = u.apply_to(Some(s), &all),
            _ => applied.push((time, u.apply_to(None, &all))),
        }
    }
    let bits = |v: &[(i64, tickertape_core::query::Summary)]| -> Vec<(i64, [u64; 8])> {
        v.iter().map(|(t, s)| (*t, s.to_bits())).collect()
    };
    assert_eq!(bits(&applied), bits(&slots));

    // The rollup answer equals the raw one.
    let from_rollup = rollup_window_summaries(&slots, 0, 3 * M, 3 * M);
    let raw = aggregate_by_slots(&all, 0, 3 * M, 3 * M, Aggregate::Sum, Some(r));
    assert_eq!(from_rollup[0].1.sum, raw[0].value);
    assert_eq!(raw[0].value, 9.0);
}

#[test]
fn without_stale_markers_keeps_other_nans() {
    let kept = without_stale_markers(vec![
        Point::new(1, f64::NAN),
        Point::new(2, stale()),
        Point::new(3, 1.0),
    ]);
    assert_eq!(kept.len(), 2);
    assert!(kept[0].value.is_nan());
    assert_eq!(kept[1], Point::new(3, 1.0));
}
