//! The packing plan on periods of daily partitions.

use super::*;

const DAY: i64 = 86_400;

fn own(id: u64, day: i64, len: u64) -> Seen {
    Seen {
        id,
        start: day * DAY,
        len,
        pack: None,
    }
}

fn packed(id: u64, day: i64, len: u64, pack: (u64, u64, u64)) -> Seen {
    Seen {
        pack: Some(pack),
        ..own(id, day, len)
    }
}

#[test]
fn the_current_week_stays_in_daily_parts() {
    // Days 0..=6 are week 0; the newest partition is day 6: the week is not over.
    let parts: Vec<Seen> = (0..7).map(|d| own(d as u64, d, 100)).collect();
    assert!(plan(&parts, DAY).is_empty());
}

#[test]
fn a_week_that_is_over_goes_into_one_pack() {
    let mut parts: Vec<Seen> = (0..7).map(|d| own(d as u64, d, 100)).collect();
    parts.push(own(7, 7, 100));
    assert_eq!(plan(&parts, DAY), vec![(0..7).collect::<Vec<u64>>()]);
}

#[test]
fn four_weeks_go_into_one_pack_a_week_after_they_are_over() {
    // Four week packs (days 0..28) and the newest day: day 34 is not a week after day 28.
    let week = |w: u64| -> Vec<Seen> {
        (0..7)
            .map(|d| packed(w * 7 + d, (w * 7 + d) as i64, 100, (100 + w, 700, 0)))
            .collect()
    };
    let mut parts: Vec<Seen> = (0..4).flat_map(week).collect();
    parts.push(own(50, 34, 100));
    assert!(
        plan(&parts, DAY).is_empty(),
        "week packs stay while the period is recent"
    );
    parts.pop();
    parts.push(own(50, 35, 100));
    assert_eq!(plan(&parts, DAY), vec![(0..28).collect::<Vec<u64>>()]);
}

#[test]
fn a_few_small_parts_beside_a_large_pack_wait_then_pack_together() {
    // A four-week pack of 28,000 bytes, days long over; retention rewrote two days into
    // small parts of their own.
    let mut parts: Vec<Seen> = (2..28)
        .map(|d| packed(d as u64, d, 1_000, (900, 26_000, 2_000)))
        .collect();
    parts.push(own(100, 0, 10));
    parts.push(own(101, 1, 10));
    parts.push(own(200, 100, 10));
    assert!(
        plan(&parts, DAY).is_empty(),
        "two small files beside the pack wait"
    );
    parts.push(own(102, 5, 10));
    parts.push(own(103, 6, 10));
    assert_eq!(plan(&parts, DAY), vec![vec![100, 101, 102, 103]]);
}

#[test]
fn a_mostly_dead_pack_is_packed_again() {
    let mut parts: Vec<Seen> = (14..28)
        .map(|d| packed(d as u64, d, 1_000, (900, 14_000, 14_000)))
        .collect();
    parts.push(own(200, 100, 10));
    assert_eq!(plan(&parts, DAY), vec![(14..28).collect::<Vec<u64>>()]);
}

#[test]
fn one_file_per_period_is_left_alone() {
    let parts = vec![own(1, 0, 100), own(2, 100, 100)];
    assert!(plan(&parts, DAY).is_empty());
}
