use super::*;
use crate::model::Point;
use crate::query::{aggregate_windows, Aggregate, Summary};
use crate::time::{window_start, NANOS_PER_SECOND};
use proptest::prelude::*;
use std::collections::BTreeMap;

const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;
const H: i64 = 60 * M;
const D: i64 = 24 * H;

/// Windows of `step` answered from rollup slots, as the engine reads them.
fn aggregate_from_rollup(
    slots: &[(i64, Summary)],
    start: i64,
    end: i64,
    step: i64,
    agg: Aggregate,
) -> Vec<Point> {
    crate::query::answer_windows(&rollup_window_summaries(slots, start, end, step), agg)
}

fn geometry(slot: i64) -> (i64, u32) {
    let g = BucketGeometry::for_slot(slot).unwrap();
    (g.period_ns(), g.slots())
}

#[test]
fn document_spans_for_the_standard_widths() {
    assert_eq!(geometry(S), (H, 3_600));
    assert_eq!(geometry(10 * S), (H, 360));
    assert_eq!(geometry(M), (H, 60));
    assert_eq!(geometry(5 * M), (D, 288));
    assert_eq!(geometry(H), (7 * D, 168));
    assert_eq!(geometry(D), (364 * D, 364));
    // Odd widths: periods rounded up to whole slots, sub-second slots capped at 3600.
    assert_eq!(geometry(7 * S), (3_605 * S, 515));
    assert_eq!(geometry(2 * M), (D, 720));
    assert_eq!(geometry(6 * H), (28 * D, 112));
    assert_eq!(geometry(100_000_000), (M, 600));
    assert_eq!(geometry(1_000_000), (S, 1_000));
    assert_eq!(geometry(1), (3_600, 3_600));
    assert_eq!(geometry(7 * D), (420 * D, 60));
    assert_eq!(geometry(MAX_RESOLUTION_NS), (MAX_PERIOD_NS, 60));
    assert_eq!(BucketGeometry::for_slot(0), None);
    assert_eq!(BucketGeometry::for_slot(MAX_RESOLUTION_NS + 1), None);
    for r in Resolution::STANDARD {
        assert_eq!(r.geometry(), BucketGeometry::for_slot(r.nanos()).unwrap());
    }
}

#[test]
fn partitions_hold_whole_documents() {
    let partition = |slot: i64| BucketGeometry::for_slot(slot).unwrap().partition_ns();
    assert_eq!(partition(S), D);
    assert_eq!(partition(M), D);
    assert_eq!(partition(5 * M), 7 * D);
    assert_eq!(partition(H), 28 * D);
    assert_eq!(partition(D), 364 * D);
    assert_eq!(partition(100_000_000), H);
    for slot in [S, 7 * S, M, 2 * M, 5 * M, H, 6 * H, D, 100_000_000, 364 * D] {
        let g = BucketGeometry::for_slot(slot).unwrap();
        assert_eq!(g.partition_ns() % g.period_ns(), 0, "slot {slot}");
        let (bucket, _) = g.slot_of(-3 * D - 1).unwrap();
        let p = g.partition_of(bucket);
        assert!(p <= bucket && bucket + g.period_ns() <= p + g.partition_ns());
    }
}

#[test]
fn seconds_land_in_minute_and_second_of_the_hour() {
    let g = BucketGeometry::for_slot(S).unwrap();
    let hour = 1_451_606_400 * S; // 2016-01-01T00:00:00Z
    let t = hour + 17 * M + 42 * S + 5;
    assert_eq!(g.slot_of(t), Some((hour, 17 * 60 + 42)));
    assert_eq!(g.slot_time(hour, 17 * 60 + 42), t - 5);
    // Before the epoch: the document that ends at 0 holds -1 ns in its last slot.
    assert_eq!(g.slot_of(-1), Some((-H, 3_599)));
    assert_eq!(g.slot_time(-H, 3_599), -S);
}

#[test]
fn the_ends_of_time() {
    let widest = BucketGeometry::for_slot(MAX_RESOLUTION_NS).unwrap();
    for g in [widest, Resolution::MINUTE.geometry()] {
        assert_eq!(g.slot_of(MIN_BUCKET_TIME - 1), None);
        let (b, s) = g.slot_of(MIN_BUCKET_TIME).unwrap();
        assert!(g.slot_time(b, s) <= MIN_BUCKET_TIME);
        let (b, s) = g.slot_of(i64::MAX).unwrap();
        assert_eq!(g.slot_time(b, s), window_start(i64::MAX, g.slot_ns()));
    }
    assert_eq!(
        crate::time::format_rfc3339(MIN_BUCKET_TIME),
        "1737-07-09T00:12:43.145224192Z"
    );
    let too_early = [Point::new(MIN_BUCKET_TIME - 1, 1.0)];
    assert_eq!(
        rollup_updates(&too_early, &Resolution::STANDARD),
        Err(RollupError::TooEarly {
            time: MIN_BUCKET_TIME - 1
        })
    );
}

#[test]
fn bucket_starts_cover_the_range() {
    let g = Resolution::MINUTE.geometry();
    let starts: Vec<i64> = g.bucket_starts(-H - 1, H + 1).collect();
    assert_eq!(starts, vec![-2 * H, -H, 0, H]);
    assert_eq!(g.bucket_starts(0, H).collect::<Vec<_>>(), vec![0]);
    assert_eq!(g.bucket_starts(5, 5).count(), 0);
    assert_eq!(g.bucket_starts(i64::MAX - 1, i64::MAX).count(), 1);
    assert_eq!(g.bucket_starts(i64::MIN, MIN_BUCKET_TIME + 1).count(), 1);
}

#[test]
fn resolutions_parse_and_print() {
    assert_eq!(Resolution::parse("1m"), Ok(Resolution::MINUTE));
    assert_eq!(Resolution::parse("60s").unwrap().to_string(), "1m");
    assert_eq!(
        Resolution::STANDARD.map(|r| r.to_string()),
        ["1m", "5m", "1h", "1d"]
    );
    assert!(matches!(
        Resolution::parse("0s"),
        Err(ResolutionError::Duration(_))
    ));
    assert!(matches!(
        Resolution::parse("365d"),
        Err(ResolutionError::TooLong(_))
    ));
    assert_eq!(
        Resolution::parse("364d").unwrap().nanos(),
        MAX_RESOLUTION_NS
    );
    assert_eq!(ResolutionOrRaw::parse("raw"), Ok(ResolutionOrRaw::Raw));
    assert_eq!(
        "5m".parse::<ResolutionOrRaw>(),
        Ok(ResolutionOrRaw::Rollup(Resolution::FIVE_MINUTES))
    );
    assert!(ResolutionOrRaw::Raw < ResolutionOrRaw::Rollup(Resolution::new(1).unwrap()));
    assert!("rows".parse::<ResolutionOrRaw>().is_err());
}

#[test]
fn updates_group_a_batch_per_slot() {
    let points: Vec<Point> = [0, 20, 59, 60, 61, 299, 300]
        .iter()
        .map(|&s| Point::new(s * S, s as f64))
        .collect();
    let updates = rollup_updates(&points, &[Resolution::MINUTE, Resolution::FIVE_MINUTES]).unwrap();
    let shape: Vec<_> = updates
        .iter()
        .map(|u| {
            (
                u.resolution,
                u.bucket_start,
                u.slot,
                u.summary.count,
                u.points.clone(),
            )
        })
        .collect();
    let (m, f) = (Resolution::MINUTE, Resolution::FIVE_MINUTES);
    assert_eq!(
        shape,
        vec![
            (m, 0, 0, 3, 0..3),
            (m, 0, 1, 2, 3..5),
            (m, 0, 4, 1, 5..6),
            (m, 0, 5, 1, 6..7),
            (f, 0, 0, 6, 0..6),
            (f, 0, 1, 1, 6..7),
        ]
    );
    assert_eq!(updates[0].summary.sum, 79.0);
    assert_eq!(updates[0].summary.first, points[0]);
    assert_eq!(updates[0].summary.last, points[2]);
}

#[test]
fn a_later_batch_continues_the_slot_sum_point_by_point() {
    let first = [Point::new(0, 1e16)];
    let second = [Point::new(S, 1.0), Point::new(2 * S, 1.0)];
    let r = [Resolution::MINUTE];
    let stored = rollup_updates(&first, &r).unwrap()[0].apply_to(None, &first);
    let update = &rollup_updates(&second, &r).unwrap()[0];
    let after = update.apply_to(Some(&stored), &second);
    // (1e16 + 1) + 1 rounds back to 1e16 twice; 1e16 + (1 + 1) would not.
    assert_eq!(after.sum, (1e16 + 1.0) + 1.0);
    assert_ne!(after.sum, stored.sum + update.summary.sum);
    let all = [first[0], second[0], second[1]];
    assert_eq!(after, summarize_slots(&all, 0, M, Resolution::MINUTE)[0].1);
    assert_eq!(
        (after.count, after.first, after.last),
        (3, first[0], second[1])
    );
    // A never-written slot keeps a first value of -0.0.
    let zero = [Point::new(0, -0.0)];
    let z = rollup_updates(&zero, &r).unwrap()[0].apply_to(None, &zero);
    assert!(z.sum.is_sign_negative());
}

#[test]
fn aligned_span_examples() {
    let m = Resolution::MINUTE;
    assert_eq!(aligned_span(0, 10 * M, m), (0, 10 * M));
    assert_eq!(aligned_span(30 * S, 10 * M + 1, m), (M, 10 * M));
    assert_eq!(aligned_span(-90 * S, -30 * S, m), (-M, -M));
    assert_eq!(aligned_span(10 * S, 20 * S, m), (20 * S, 20 * S));
    assert_eq!(aligned_span(7, 3, m), (7, 7));
    assert_eq!(
        aligned_span(i64::MAX - 5, i64::MAX, m),
        (i64::MAX, i64::MAX)
    );
}

#[test]
fn choosing_resolutions() {
    let std = Resolution::STANDARD;
    assert_eq!(choose_resolution(M, &std), Some(Resolution::MINUTE));
    assert_eq!(
        choose_resolution(10 * M, &std),
        Some(Resolution::FIVE_MINUTES)
    );
    assert_eq!(choose_resolution(H, &std), Some(Resolution::HOUR));
    assert_eq!(choose_resolution(3 * H, &std), Some(Resolution::HOUR));
    assert_eq!(choose_resolution(7 * D, &std), Some(Resolution::DAY));
    assert_eq!(choose_resolution(90 * S, &std), None);
    assert_eq!(choose_resolution(30 * S, &std), None);
    assert_eq!(choose_resolution(H, &[]), None);
}

#[test]
fn zoom_table() {
    let std = Resolution::STANDARD;
    let day = 1_451_606_400 * S;
    assert_eq!(
        plan_max_points(day, day + D, 1_000, &std),
        (5 * M, Some(Resolution::FIVE_MINUTES))
    );
    assert_eq!(
        plan_max_points(day, day + H, 100, &std),
        (M, Some(Resolution::MINUTE))
    );
    assert_eq!(plan_max_points(day, day + H, 1_000, &std), (5 * S, None));
    assert_eq!(
        plan_max_points(day, day + 30 * D, 800, &std),
        (H, Some(Resolution::HOUR))
    );
    assert_eq!(
        plan_max_points(day, day + 365 * D, 400, &std),
        (D, Some(Resolution::DAY))
    );
    assert_eq!(plan_max_points(day, day, 10, &std).0, NICE_STEPS[0]);
    // Straddling the epoch always takes two windows.
    let (step, _) = plan_max_points(-1, 1, 1, &std);
    assert_eq!(window_count(-1, 1, step), 2);
    // Longer than i64::MAX ns: three windows at the longest step.
    let (step, _) = plan_max_points(i64::MIN, i64::MAX, 2, &std);
    assert_eq!(window_count(i64::MIN, i64::MAX, step), 3);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "straddles")]
fn a_slot_cut_by_the_range_is_refused() {
    let p = [Point::new(0, 1.0), Point::new(30 * S, 2.0)];
    let slots = summarize_slots(&p, 0, M, Resolution::MINUTE);
    aggregate_from_rollup(&slots, 10 * S, M, M, Aggregate::Sum);
}

// ---- properties ----

/// Two points agree to the bit (values by bit pattern: -0.0 != 0.0, NaN == NaN).
fn same_points(a: &[Point], b: &[Point]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.bit_eq(y))
}

fn same_summary(a: &Summary, b: &Summary) -> bool {
    a.count == b.count
        && a.sum.to_bits() == b.sum.to_bits()
        && a.min.to_bits() == b.min.to_bits()
        && a.max.to_bits() == b.max.to_bits()
        && a.first.bit_eq(&b.first)
        && a.last.bit_eq(&b.last)
}

/// Values whose sums round differently depending on grouping: mixed magnitudes, signed
/// zeros, decimals that are not binary fractions.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e3..1e3f64,
        -1e17..1e17f64,
        (-1_000i64..1_000).prop_map(|n| n as f64 * 0.1),
        Just(0.0),
        Just(-0.0),
        Just(1e16),
    ]
}

fn slot_width() -> impl Strategy<Value = i64> {
    prop_oneof![
        proptest::sample::select(vec![S, 10 * S, M, 5 * M, H, D, 7 * S, 90 * S, 100_000_000]),
        1..=MAX_RESOLUTION_NS,
    ]
}

/// One series: sorted unique times around `base`, spread over about 40 slots of `r`.
fn series(r: i64, values: BoxedStrategy<f64>) -> impl Strategy<Value = (i64, Vec<Point>)> {
    let span = 40 * r;
    (-4_000_000_000_000_000_000i64..4_000_000_000_000_000_000).prop_flat_map(move |base| {
        (
            Just(base),
            proptest::collection::btree_map(0..span, values.clone(), 0..200).prop_map(move |m| {
                m.into_iter()
                    .map(|(off, v)| Point::new(base + off, v))
                    .collect::<Vec<_>>()
            }),
        )
    })
}

/// What a rollup holds after the points were written in the given batches.
fn stored_slots(points: &[Point], cuts: &[usize], r: Resolution) -> BTreeMap<(i64, u32), Summary> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (points.len() + 1)).collect();
    cuts.extend([0, points.len()]);
    cuts.sort();
    let mut stored = BTreeMap::new();
    for w in cuts.windows(2) {
        let batch = &points[w[0]..w[1]];
        for u in rollup_updates(batch, &[r]).unwrap() {
            let key = (u.bucket_start, u.slot);
            let next = u.apply_to(stored.get(&key), batch);
            stored.insert(key, next);
        }
    }
    stored
}

/// The engine's read: whole slots from the rollup, ragged edges from raw points.
fn read_via_rollup(
    points: &[Point],
    stored: &BTreeMap<(i64, u32), Summary>,
    r: Resolution,
    start: i64,
    end: i64,
    step: i64,
    agg: Aggregate,
) -> Vec<Point> {
    let g = r.geometry();
    let (inner_start, inner_end) = aligned_span(start, end, r);
    let mut slots = summarize_slots(points, start, inner_start, r);
    slots.extend(
        stored
            .iter()
            .map(|(&(b, s), summary)| (g.slot_time(b, s), *summary))
            .filter(|(t, _)| *t >= inner_start && *t < inner_end),
    );
    slots.extend(summarize_slots(points, inner_end, end, r));
    aggregate_from_rollup(&slots, start, end, step, agg)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn slot_of_and_slot_time_are_inverse(t in any::<i64>(), slot in slot_width()) {
        let g = BucketGeometry::for_slot(slot).unwrap();
        prop_assert_eq!(g.period_ns() % slot, 0);
        match g.slot_of(t) {
            None => prop_assert!(t < MIN_BUCKET_TIME),
            Some((b, s)) => {
                prop_assert!(t >= MIN_BUCKET_TIME);
                prop_assert_eq!(b.rem_euclid(g.period_ns()), 0);
                prop_assert!(s < g.slots());
                let st = g.slot_time(b, s);
                prop_assert_eq!(st, window_start(t, slot));
                prop_assert!(st <= t && (t as i128) < st as i128 + slot as i128);
                // The first slots after MIN_BUCKET_TIME may start before it.
                if st >= MIN_BUCKET_TIME {
                    prop_assert_eq!(g.slot_of(st), Some((b, s)));
                }
            }
        }
    }

    #[test]
    fn chosen_resolution_is_the_coarsest_divisor(
        available in proptest::sample::subsequence(
            vec![S, 7 * S, 10 * S, M, 90 * S, 5 * M, H, 2 * H, D, 7 * D], 0..=10),
        step_slots in 1i64..5_000,
        unit in proptest::sample::select(vec![S, 7 * S, M, 5 * M, H, D]),
    ) {
        let available: Vec<Resolution> =
            available.into_iter().map(|n| Resolution::new(n).unwrap()).collect();
        let step = step_slots * unit;
        match choose_resolution(step, &available) {
            Some(r) => {
                prop_assert_eq!(step % r.nanos(), 0);
                prop_assert!(available.iter().all(|a| step % a.nanos() != 0 || *a <= r));
            }
            None => prop_assert!(available.iter().all(|a| step % a.nanos() != 0)),
        }
    }

    #[test]
    fn plan_never_exceeds_max_points(
        start in any::<i64>(),
        len in prop_oneof![0i64..1_000_000_000_000, 0i64..=i64::MAX],
        max_points in 2usize..5_000,
    ) {
        let end = start.saturating_add(len);
        let (step, r) = plan_max_points(start, end, max_points, &Resolution::STANDARD);
        prop_assert!(window_count(start, end, step) <= max_points as u64);
        prop_assert_eq!(r, choose_resolution(step, &Resolution::STANDARD));
        // The finest step that fits: the nice step before it would not.
        if let Some(i) = NICE_STEPS.iter().position(|&s| s == step) {
            if i > 0 {
                prop_assert!(window_count(start, end, NICE_STEPS[i - 1]) > max_points as u64);
            }
        }
    }

    /// Found by this property: a slot boundary just after a `start` whose own slot starts
    /// before i64::MIN was missed.
    #[test]
    fn aligned_span_near_the_start_of_time(offset in 0i64..4) {
        let slot = 3_293_904_873_568_743;
        let start = -9_222_933_645_992_480_401 + offset - 1;
        let (a, b) = aligned_span(start, start + 2, Resolution::new(slot).unwrap());
        prop_assert!(a == b && a >= start && b <= start + 2);
        prop_assert!(start == a || window_start(start, slot) == window_start(a - 1, slot));
    }

    #[test]
    fn aligned_span_leaves_edges_shorter_than_a_slot(
        start in any::<i64>(), len in 0i64..1_000_000_000_000_000, slot in slot_width(),
    ) {
        let r = Resolution::new(slot).unwrap();
        let end = start.saturating_add(len);
        let (a, b) = aligned_span(start, end, r);
        prop_assert!(start <= a && a <= b && b <= end);
        prop_assert!((a as i128 - start as i128) < slot as i128);
        prop_assert!((end as i128 - b as i128) < slot as i128 || a == b);
        if a < b {
            prop_assert_eq!(a.rem_euclid(slot), 0);
            prop_assert_eq!(b.rem_euclid(slot), 0);
        } else {
            // No whole slot: each edge lies within one slot.
            prop_assert!(start == a || window_start(start, slot) == window_start(a - 1, slot));
            prop_assert!(a == end || window_start(a, slot) == window_start(end - 1, slot));
        }
    }

    /// The heart of it: slots stored through any split into write batches, read with
    /// raw ragged edges, answer every aggregate exactly as the raw path does.
    #[test]
    fn rollup_answers_equal_raw_answers_bit_for_bit(
        (r, k, (base, points), cuts, from, to) in slot_width().prop_flat_map(|slot| (
            Just(slot),
            1i64..6,
            series(slot, value().boxed()),
            proptest::collection::vec(any::<usize>(), 0..8),
            0i64..45,
            0i64..45,
        )).prop_map(|(slot, k, s, cuts, from, to)| {
            (Resolution::new(slot).unwrap(), k, s, cuts, from, to)
        }),
        jitter in any::<(u16, u16)>(),
    ) {
        let stored = stored_slots(&points, &cuts, r);
        // Every stored slot equals the slot summarised from raw points in one go.
        let whole = summarize_slots(&points, i64::MIN, i64::MAX, r);
        prop_assert_eq!(whole.len(), stored.len());
        for ((t, want), (&(b, s), got)) in whole.iter().zip(&stored) {
            prop_assert_eq!(*t, r.geometry().slot_time(b, s));
            prop_assert!(same_summary(want, got), "{:?} vs {:?}", want, got);
        }
        let step = k * r.nanos();
        // Ranges aligned or not to the resolution, around and beyond the data.
        let start = base + (from - 2) * r.nanos() + (jitter.0 as i64 % 3) * (r.nanos() / 3);
        let end = base + to * r.nanos() - (jitter.1 as i64 % 2) * (r.nanos() / 2);
        for agg in Aggregate::ALL {
            let via_rollup = read_via_rollup(&points, &stored, r, start, end, step, agg);
            let raw = aggregate_by_slots(&points, start, end, step, agg, Some(r));
            prop_assert!(same_points(&via_rollup, &raw), "{} {:?} vs {:?}", agg, via_rollup, raw);
            let plain = aggregate_windows(&points, start, end, step, agg);
            if k == 1 || !matches!(agg, Aggregate::Sum | Aggregate::Avg) {
                // One slot per window, or an aggregate that does not round: also equal
                // to the plain left-to-right fold over raw values.
                prop_assert!(same_points(&via_rollup, &plain), "{} {:?} vs {:?}", agg, via_rollup, plain);
            }
        }
    }

    /// With exact sums (integer values, as counters have) the rollup answer also equals
    /// the plain raw fold for every aggregate and every step the resolution divides.
    #[test]
    fn exact_sums_equal_the_plain_raw_fold(
        (r, k, (base, points), cuts, from, to) in slot_width().prop_flat_map(|slot| (
            Just(slot),
            1i64..6,
            series(slot, (-1_000_000i64..1_000_000).prop_map(|n| n as f64).boxed()),
            proptest::collection::vec(any::<usize>(), 0..8),
            0i64..45,
            0i64..45,
        )).prop_map(|(slot, k, s, cuts, from, to)| {
            (Resolution::new(slot).unwrap(), k, s, cuts, from, to)
        }),
    ) {
        let stored = stored_slots(&points, &cuts, r);
        let step = k * r.nanos();
        let start = base + (from - 2) * r.nanos() + 1;
        let end = base + to * r.nanos();
        for agg in Aggregate::ALL {
            let via_rollup = read_via_rollup(&points, &stored, r, start, end, step, agg);
            let plain = aggregate_windows(&points, start, end, step, agg);
            prop_assert!(same_points(&via_rollup, &plain), "{} {:?} vs {:?}", agg, via_rollup, plain);
        }
    }
}

#[test]
fn merge_keeps_first_earlier_and_last_later() {
    let p = |t: i64, v: f64| Point::new(t, v);
    let points = [p(1, 3.0), p(2, -1.0), p(3, 7.0), p(4, 0.5)];
    let mut pushed = Summary::of(points[0]);
    points[1..].iter().for_each(|&x| pushed.push(x));
    let (mut a, mut b) = (Summary::of(points[0]), Summary::of(points[2]));
    a.push(points[1]);
    b.push(points[3]);
    let mut forward = a;
    forward.merge(&b);
    let mut backward = b;
    backward.merge(&a);
    for merged in [forward, backward] {
        assert_eq!(
            (
                merged.count,
                merged.min,
                merged.max,
                merged.first,
                merged.last
            ),
            (4, -1.0, 7.0, points[0], points[3])
        );
    }
    assert_eq!(forward, pushed);
    // Equal times: first stays, last is the one merged in, as with push.
    let mut tie = Summary::of(p(5, 1.0));
    tie.merge(&Summary::of(p(5, 2.0)));
    assert_eq!((tie.first.value, tie.last.value), (1.0, 2.0));
}

#[test]
fn a_whole_range_reads_the_coarsest_rollup_with_a_whole_slot_in_it() {
    let available: Vec<Resolution> = ["1m", "1h", "1d"]
        .iter()
        .map(|r| Resolution::parse(r).unwrap())
        .collect();
    let pick = |start: i64, end: i64| choose_range_resolution(start, end, &available);
    assert_eq!(pick(0, D), Resolution::parse("1d").ok());
    assert_eq!(pick(30 * M, D + 30 * M), Resolution::parse("1h").ok());
    assert_eq!(pick(30 * M, 90 * M), Resolution::parse("1m").ok());
    assert_eq!(pick(M + 1, 2 * M + 1), None, "no whole slot of any rollup");
    assert_eq!(choose_range_resolution(0, D, &[]), None);
}
