//! Series and their value segments beyond the basic appends of the crate root: what an
//! unregistered series gets, what `stats` counts, and how little a read in a gap opens.

use crate::{append, key, one_series, points, StoreFactory};
use tickertape_backend::{BackendError, SeriesAppend};
use tickertape_core::segment::collect_points;
use tickertape_core::SeriesId;

/// An id no test registers (stores number their series from small integers).
const NEVER_REGISTERED: SeriesId = SeriesId(1_000_000);

/// An append to a series never registered is refused as `UnknownSeries` naming it, alone
/// or beside a registered one; the unknown series has no head and no segments, and the
/// registered series goes on accepting points.
pub async fn unknown_series_are_refused(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let unknown = |times: &[i64]| {
        SeriesAppend::new(NEVER_REGISTERED, points(times)).expect("points in time order")
    };
    match b.append(vec![unknown(&[1, 2])]).await {
        Err(BackendError::UnknownSeries(id)) => assert_eq!(id, NEVER_REGISTERED),
        other => panic!("append to an unregistered series: {other:?}"),
    }
    let s = one_series(&*b).await;
    assert_ne!(s, NEVER_REGISTERED, "the test's unknown id was registered");
    let mixed = vec![
        SeriesAppend::new(s, points(&[1])).expect("points in time order"),
        unknown(&[3]),
    ];
    match b.append(mixed).await {
        Err(BackendError::UnknownSeries(id)) => assert_eq!(id, NEVER_REGISTERED),
        other => panic!("a call with an unregistered series: {other:?}"),
    }
    assert_eq!(
        b.heads(&[NEVER_REGISTERED]).await.expect("heads"),
        vec![None]
    );
    let segments = b
        .read_segments(NEVER_REGISTERED, i64::MIN, i64::MAX)
        .await
        .expect("read_segments");
    assert!(segments.is_empty(), "{segments:?}");
    // Whether the refused call stored the registered series' point is not said; the
    // series takes later points either way.
    append(&*b, s, &[5, 6]).await;
    let head = b.heads(&[s]).await.expect("heads")[0].expect("a head");
    assert_eq!(head.last.time, 6);
}

/// `stats` counts the registered series (with points or not) and the segments, and
/// reports some bytes once something is stored.
pub async fn stats_count_series_and_segments(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let ids = b
        .resolve_series(&[key("a", "u"), key("b", "u"), key("c", "u")])
        .await
        .expect("resolve");
    append(&*b, ids[0], &(1..=10).collect::<Vec<_>>()).await;
    append(&*b, ids[1], &(1..=12).collect::<Vec<_>>()).await;
    let stats = b.stats().await.expect("stats");
    assert_eq!(stats.series, 3, "{stats:?}");
    // However a store cuts them: at least one segment (block, document) per series with
    // points.
    assert!(stats.segments >= 2, "{stats:?}");
    assert!(stats.bytes > 0, "{stats:?}");
}

/// Batches that straddle segment boundaries; a read inside a gap between two points
/// answers those two points and nothing more, before and after compaction.
pub async fn a_read_in_a_gap_opens_only_its_neighbours(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let s = one_series(&*b).await;
    let times: Vec<i64> = (1..=14).map(|i| i * 10).collect();
    for chunk in times.chunks(3) {
        append(&*b, s, chunk).await;
    }
    let segments = b.read_segments(s, i64::MIN, i64::MAX).await.expect("read");
    assert_eq!(collect_points(&segments).expect("decode").len(), 14);
    for compacted in [false, true] {
        let gap = b.read_segments(s, 41, 49).await.expect("read");
        let got: Vec<i64> = collect_points(&gap)
            .expect("decode")
            .iter()
            .map(|p| p.time)
            .collect();
        // Whatever a store cuts its segments at, the answer is at most the two segments
        // holding the neighbours: the nearest point on each side and none in the gap.
        let before = got.iter().filter(|&&t| t < 41).max();
        let after = got.iter().filter(|&&t| t >= 49).min();
        assert_eq!(
            (before, after),
            (Some(&40), Some(&50)),
            "{got:?} ({compacted})"
        );
        assert!(gap.len() <= 2, "{} segments ({compacted})", gap.len());
        b.compact().await.expect("compact");
    }
}
