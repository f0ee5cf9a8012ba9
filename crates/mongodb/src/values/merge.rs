//! The last write of each time: what readers and folds make of any set of documents.

use tickertape_core::Point;

/// A point and the write number that stored it.
pub(crate) type Written = (Point, i64);

/// The points of `pieces` (each a document's points, any order, any overlap), sorted by
/// time, one per time: the one with the highest write number. Two points with the same
/// time and write number come from the same write and are equal.
pub(crate) fn merge(pieces: impl IntoIterator<Item = Vec<Written>>) -> Vec<Written> {
    let mut all: Vec<Written> = pieces.into_iter().flatten().collect();
    all.sort_by_key(|&(p, w)| (p.time, w));
    let mut out: Vec<Written> = Vec::with_capacity(all.len());
    for item in all {
        match out.last_mut() {
            Some(last) if last.0.time == item.0.time => *last = item,
            _ => out.push(item),
        }
    }
    out
}

/// The points of `merged`, write numbers dropped.
pub(crate) fn points(merged: &[Written]) -> Vec<Point> {
    merged.iter().map(|&(p, _)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_highest_write_of_a_time_wins_whatever_the_order() {
        let a = vec![(Point::new(1, 1.0), 5), (Point::new(2, 2.0), 5)];
        let b = vec![(Point::new(2, 20.0), 7), (Point::new(3, 3.0), 7)];
        let c = vec![(Point::new(2, 9.0), 6)];
        let want = vec![
            (Point::new(1, 1.0), 5),
            (Point::new(2, 20.0), 7),
            (Point::new(3, 3.0), 7),
        ];
        assert_eq!(merge([a.clone(), b.clone(), c.clone()]), want);
        assert_eq!(merge([c, b, a]), want);
    }

    proptest! {
        /// Merging equals replaying the writes in write-number order into a map.
        #[test]
        fn merge_equals_replay(writes in prop::collection::vec(
            prop::collection::btree_map(0i64..40, -5i32..5, 1..10), 1..8)) {
            let mut replay = BTreeMap::new();
            let mut pieces = Vec::new();
            for (w, points) in writes.iter().enumerate() {
                let piece: Vec<Written> = points
                    .iter()
                    .map(|(&t, &v)| (Point::new(t, f64::from(v)), w as i64))
                    .collect();
                for &(p, _) in &piece {
                    replay.insert(p.time, p.value);
                }
                pieces.push(piece);
            }
            // Documents may be split and shuffled: merge must not care.
            pieces.reverse();
            let merged = merge(pieces);
            let got: Vec<(i64, f64)> = merged.iter().map(|(p, _)| (p.time, p.value)).collect();
            let want: Vec<(i64, f64)> = replay.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }
}
