//! Prometheus' stale marker (the NaN with bits `0x7ff0000000000002`) is stored like any
//! value: every codec, head and part file gives it back bit for bit, beside other NaNs;
//! and the rollups a backend derives leave it out, as `core::rollup::summarize_slots`
//! does.

use crate::{assert_bits_eq, one_series, read_all, StoreFactory};
use std::sync::Arc;
use tickertape_backend::{Backend, SeriesAppend};
use tickertape_core::model::{is_stale_marker, STALE_NAN_BITS};
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::Point;

fn stale() -> f64 {
    f64::from_bits(STALE_NAN_BITS)
}

/// Values around stale markers in the shapes codecs special-case: runs of one value,
/// decimals, integers, other NaNs (the quiet NaN Rust makes, one with a payload), a
/// series that ends stale and starts again.
fn points() -> Vec<Point> {
    let values = [
        1.0,
        1.0,
        stale(),
        stale(),
        stale(),
        0.25,
        f64::NAN,
        stale(),
        f64::from_bits(0x7ff8_0000_0000_0001),
        3.0,
        stale(),
        -0.0,
        12.5,
        stale(),
    ];
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| Point::new(i as i64 * 2, v))
        .collect()
}

/// Every kept resolution: 4 ns divides the embedded suite's 16 ns partitions.
fn kept() -> Vec<Resolution> {
    vec![Resolution::new(4).expect("a valid resolution")]
}

pub async fn stale_markers_come_back_bit_for_bit(f: &dyn StoreFactory) {
    let store = f.create(3).await;
    let b: Arc<dyn Backend> = store.open().await;
    b.derive_segment_rollups(Arc::new(|m: &str| match m {
        "cpu" => kept(),
        _ => Vec::new(),
    }));
    let s = one_series(&*b).await;
    let all = points();
    // Uneven batches, so markers fall at the start, middle and end of blocks.
    for batch in [&all[..3], &all[3..4], &all[4..9], &all[9..]] {
        let append = SeriesAppend::new(s, batch.to_vec()).expect("points in time order");
        b.append(vec![append]).await.expect("append");
    }
    assert_bits_eq(&read_all(&*b, s).await, &all, "as written");
    b.compact().await.expect("compact");
    assert_bits_eq(&read_all(&*b, s).await, &all, "after compaction");
    assert_rollups_leave_markers_out(&*b, s, &all).await;
    drop(b);
    let b = store.open().await;
    assert_bits_eq(&read_all(&*b, s).await, &all, "after reopening");
}

/// The derived rollup's slots count only the values, and equal `summarize_slots`.
async fn assert_rollups_leave_markers_out(
    b: &dyn Backend,
    s: tickertape_core::SeriesId,
    all: &[Point],
) {
    let r = kept()[0];
    let got = b
        .read_segment_rollup(s, r, 0, 32)
        .await
        .expect("read the rollup");
    let want = summarize_slots(all, 0, 32, r);
    let bits = |slots: &[(i64, tickertape_core::query::Summary)]| -> Vec<(i64, [u64; 8])> {
        slots.iter().map(|(t, x)| (*t, x.to_bits())).collect()
    };
    assert_eq!(bits(&got), bits(&want), "rollup slots");
    let counted: u64 = got.iter().map(|(_, x)| x.count).sum();
    let values = all.iter().filter(|p| !is_stale_marker(p.value)).count();
    assert_eq!(counted, values as u64, "stale markers are no values");
}
