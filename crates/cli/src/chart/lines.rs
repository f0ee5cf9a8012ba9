//! A series' points cut into the runs a line joins: a line is not drawn across a gap, so a
//! stretch without data does not look like a straight ramp between its two sides.

/// A gap is an interval longer than this many times the series' median interval: a
/// windowed answer that misses one window already has an interval of twice its step, while
/// the jitter of raw points collected "every 10 s" stays well below half an interval.
const GAP_FACTOR: f64 = 1.5;

/// The runs of `points` (time-ordered, ns) to draw as connected lines: cut where a value
/// is missing (`None`) and where the interval to the next point is a gap. A run may hold
/// one point only (draw it as a dot).
pub fn runs(points: &[(i64, Option<f64>)]) -> Vec<Vec<(i64, f64)>> {
    let gap = gap_threshold(points);
    let mut runs: Vec<Vec<(i64, f64)>> = Vec::new();
    let mut current: Vec<(i64, f64)> = Vec::new();
    for &(time, value) in points {
        let Some((time, value)) = finite(&(time, value)) else {
            flush(&mut runs, &mut current);
            continue;
        };
        if let (Some(&(last, _)), Some(gap)) = (current.last(), gap) {
            if (time as i128 - last as i128) as f64 > gap {
                flush(&mut runs, &mut current);
            }
        }
        current.push((time, value));
    }
    flush(&mut runs, &mut current);
    runs
}

fn flush(runs: &mut Vec<Vec<(i64, f64)>>, current: &mut Vec<(i64, f64)>) {
    if !current.is_empty() {
        runs.push(std::mem::take(current));
    }
}

/// The interval (ns) beyond which two neighbouring points are not joined, or `None` when
/// there are too few intervals to tell what is usual (fewer than 3 points).
fn gap_threshold(points: &[(i64, Option<f64>)]) -> Option<f64> {
    let mut intervals: Vec<i128> = points
        .windows(2)
        .map(|w| w[1].0 as i128 - w[0].0 as i128)
        .filter(|&d| d > 0)
        .collect();
    if intervals.len() < 2 {
        return None;
    }
    intervals.sort_unstable();
    let median = intervals[intervals.len() / 2];
    Some(median as f64 * GAP_FACTOR)
}

/// The smallest and largest finite value of all `series`, or `None` when they hold none.
pub fn value_bounds<'a>(
    series: impl IntoIterator<Item = &'a [(i64, Option<f64>)]>,
) -> Option<(f64, f64)> {
    series
        .into_iter()
        .flatten()
        .filter_map(finite)
        .map(|(_, v)| (v, v))
        .reduce(|(lo, hi), (a, b)| (lo.min(a), hi.max(b)))
}

/// The first and last time with a finite value in any of `series`, or `None`.
pub fn time_bounds<'a>(
    series: impl IntoIterator<Item = &'a [(i64, Option<f64>)]>,
) -> Option<(i64, i64)> {
    series
        .into_iter()
        .flatten()
        .filter_map(finite)
        .map(|(t, _)| (t, t))
        .reduce(|(lo, hi), (a, b)| (lo.min(a), hi.max(b)))
}

fn finite(&(time, value): &(i64, Option<f64>)) -> Option<(i64, f64)> {
    value.filter(|v| v.is_finite()).map(|v| (time, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_10(values: &[Option<f64>]) -> Vec<(i64, Option<f64>)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as i64 * 10, v))
            .collect()
    }

    #[test]
    fn a_regular_series_is_one_run() {
        let points = every_10(&[Some(1.0), Some(2.0), Some(3.0)]);
        assert_eq!(runs(&points), vec![vec![(0, 1.0), (10, 2.0), (20, 3.0)]]);
    }

    #[test]
    fn a_missing_interval_cuts_the_line_and_jitter_does_not() {
        let points = vec![
            (0, Some(1.0)),
            (10, Some(2.0)),
            (21, Some(3.0)),
            (30, Some(4.0)),
            (50, Some(5.0)),
            (60, Some(6.0)),
        ];
        assert_eq!(
            runs(&points),
            vec![
                vec![(0, 1.0), (10, 2.0), (21, 3.0), (30, 4.0)],
                vec![(50, 5.0), (60, 6.0)]
            ]
        );
    }

    #[test]
    fn nulls_and_non_finite_values_cut_the_line() {
        let points = every_10(&[Some(1.0), None, Some(3.0), Some(f64::NAN), Some(5.0)]);
        assert_eq!(
            runs(&points),
            vec![vec![(0, 1.0)], vec![(20, 3.0)], vec![(40, 5.0)]]
        );
    }

    #[test]
    fn bounds_skip_missing_values() {
        let a = every_10(&[Some(3.0), None, Some(-1.0)]);
        let b = vec![(100, Some(7.0)), (200, None)];
        let all = [a.as_slice(), b.as_slice()];
        assert_eq!(value_bounds(all), Some((-1.0, 7.0)));
        assert_eq!(time_bounds(all), Some((0, 100)));
        let empty: [&[(i64, Option<f64>)]; 1] = [&[(5, None)]];
        assert_eq!(value_bounds(empty), None);
    }
}
