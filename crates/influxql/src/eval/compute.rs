//! What a `SELECT` computes once its points are read: aggregates per window (or over the
//! whole range), `fill()`, the transformations, and arithmetic between columns — each as
//! InfluxDB 1.x defines it (median of an even count is the mean of the middle two,
//! percentile is nearest-rank, stddev is the sample's, count fills empty windows with 0).

use crate::{Expr, Fill};
use tickertape_core::query::Aggregate;
use tickertape_core::time::window_start;
use tickertape_core::Point;

use super::zone::Zone;

/// One column over time: `(time, value)` sorted by time, `None` for an empty window.
pub type Column = Vec<(i64, Option<f64>)>;

/// Windows computed for one statement at most: InfluxDB's `max-select-buckets` idea, so a
/// `GROUP BY time(1s)` over ten years is refused, not built.
pub const MAX_WINDOWS: i64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Agg {
    Mean,
    Median,
    Count,
    Sum,
    Min,
    Max,
    First,
    Last,
    Spread,
    Stddev,
    Percentile(f64),
    /// Every distinct value (ascending, as InfluxDB emits them): several rows per window.
    Distinct,
    /// `count(distinct(f))`.
    CountDistinct,
}

impl Agg {
    /// The aggregate a call names, with its arguments after the field checked.
    pub fn of_call(name: &str, args: &[Expr]) -> Result<Option<Self>, String> {
        let agg = match name {
            "mean" => Agg::Mean,
            "median" => Agg::Median,
            "count" => Agg::Count,
            "sum" => Agg::Sum,
            "min" => Agg::Min,
            "max" => Agg::Max,
            "first" => Agg::First,
            "last" => Agg::Last,
            "spread" => Agg::Spread,
            "stddev" => Agg::Stddev,
            "distinct" => Agg::Distinct,
            "percentile" => {
                let n = match args.get(1) {
                    Some(Expr::Integer(n)) => *n as f64,
                    Some(Expr::Number(x)) => *x,
                    _ => return Err("expected float argument in percentile()".into()),
                };
                return Ok(Some(Agg::Percentile(n)));
            }
            _ => return Ok(None),
        };
        match args.len() {
            1 => Ok(Some(agg)),
            n => Err(format!(
                "invalid number of arguments for {name}, expected 1, got {n}"
            )),
        }
    }

    /// Selectors answer a point's own time when there is no `GROUP BY time()`.
    pub fn is_selector(self) -> bool {
        matches!(
            self,
            Agg::Min | Agg::Max | Agg::First | Agg::Last | Agg::Percentile(_)
        )
    }

    /// The stored aggregates this one is computed from when it is read through the
    /// store's windows (so rollups serve it), and whether a group of several series can
    /// be merged from them (`first`/`last` cannot: windows carry no point times).
    pub fn stored_parts(self) -> Option<(&'static [Aggregate], bool)> {
        match self {
            Agg::Mean => Some((&[Aggregate::Sum, Aggregate::Count], true)),
            Agg::Count => Some((&[Aggregate::Count], true)),
            Agg::Sum => Some((&[Aggregate::Sum], true)),
            Agg::Min => Some((&[Aggregate::Min], true)),
            Agg::Max => Some((&[Aggregate::Max], true)),
            Agg::Spread => Some((&[Aggregate::Max, Aggregate::Min], true)),
            Agg::First => Some((&[Aggregate::First], false)),
            Agg::Last => Some((&[Aggregate::Last], false)),
            _ => None,
        }
    }

    /// The stored aggregate that is this one for a single series (`spread` has none).
    pub fn stored_aggregate(self) -> Option<Aggregate> {
        match self {
            Agg::Mean => Some(Aggregate::Avg),
            Agg::Count => Some(Aggregate::Count),
            Agg::Sum => Some(Aggregate::Sum),
            Agg::Min => Some(Aggregate::Min),
            Agg::Max => Some(Aggregate::Max),
            Agg::First => Some(Aggregate::First),
            Agg::Last => Some(Aggregate::Last),
            _ => None,
        }
    }

    /// Aggregates that answer integers (InfluxDB's JSON shows them without a fraction) and
    /// 0, not null, for an empty window under `fill(null)`.
    pub fn counts(self) -> bool {
        matches!(self, Agg::Count | Agg::CountDistinct)
    }

    /// The aggregate of `points` (sorted by time): its value and, for selectors, the
    /// chosen point's time. `None` for no points (and stddev of one). `distinct` answers
    /// several values: [`distinct_values`] is its aggregate, and here it is the first.
    pub fn over(self, points: &[Point]) -> Option<(Option<i64>, f64)> {
        let first = points.first()?;
        let values = || points.iter().map(|p| p.value);
        let n = points.len() as f64;
        let value = match self {
            Agg::Mean => values().sum::<f64>() / n,
            Agg::Sum => values().sum(),
            Agg::Count => n,
            Agg::CountDistinct => distinct_values(points).len() as f64,
            Agg::Distinct => *distinct_values(points).first()?,
            // Points of several series at the same time: InfluxDB's first and last
            // keep the greatest value among them.
            Agg::First => {
                let tied = points.iter().take_while(|p| p.time == first.time);
                let v = tied.map(|p| p.value).fold(f64::NEG_INFINITY, f64::max);
                return Some((Some(first.time), v));
            }
            Agg::Last => {
                let last = points.last()?;
                let tied = points.iter().rev().take_while(|p| p.time == last.time);
                let v = tied.map(|p| p.value).fold(f64::NEG_INFINITY, f64::max);
                return Some((Some(last.time), v));
            }
            Agg::Min => {
                let p = points
                    .iter()
                    .fold(first, |m, p| if p.value < m.value { p } else { m });
                return Some((Some(p.time), p.value));
            }
            Agg::Max => {
                let p = points
                    .iter()
                    .fold(first, |m, p| if p.value > m.value { p } else { m });
                return Some((Some(p.time), p.value));
            }
            Agg::Spread => {
                let (lo, hi) = values().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
                hi - lo
            }
            Agg::Stddev => {
                if points.len() < 2 {
                    return None;
                }
                let mean = values().sum::<f64>() / n;
                let squares: f64 = values().map(|v| (v - mean) * (v - mean)).sum();
                (squares / (n - 1.0)).sqrt()
            }
            Agg::Median => {
                let sorted = sorted_values(points);
                let mid = sorted.len() / 2;
                if sorted.len().is_multiple_of(2) {
                    sorted[mid - 1] + (sorted[mid] - sorted[mid - 1]) / 2.0
                } else {
                    sorted[mid]
                }
            }
            Agg::Percentile(p) => {
                let mut sorted: Vec<&Point> = points.iter().collect();
                sorted.sort_by(|a, b| a.value.total_cmp(&b.value));
                let i = (sorted.len() as f64 * p / 100.0 + 0.5).floor() as i64 - 1;
                let chosen = sorted.get(usize::try_from(i).ok()?)?;
                return Some((Some(chosen.time), chosen.value));
            }
        };
        Some((None, value))
    }
}

/// `distinct()`: the values of `points`, each once, ascending.
pub fn distinct_values(points: &[Point]) -> Vec<f64> {
    let mut v = sorted_values(points);
    v.dedup();
    v
}

fn sorted_values(points: &[Point]) -> Vec<f64> {
    let mut v: Vec<f64> = points.iter().map(|p| p.value).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `GROUP BY time(interval, offset)` over `[start, end)`: the start of every window, in
/// UTC or in `zone` (where a window across an offset change is longer or shorter).
pub fn window_starts(
    start: i64,
    end: i64,
    interval: i64,
    offset: i64,
    zone: Option<Zone>,
) -> Result<Vec<i64>, String> {
    let at = |t: i64| match zone {
        Some(z) => z.window_start(t, interval, offset),
        None => window_start(t.saturating_sub(offset), interval).saturating_add(offset),
    };
    let (first, last) = (at(start), end.saturating_sub(1));
    // An offset change moves windows by less than an interval: at most one more.
    let count = (last.saturating_sub(first)) / interval + 1;
    if count > MAX_WINDOWS {
        return Err(format!(
            "max-select-buckets limit exceeded: ({count}/{MAX_WINDOWS}); use a larger GROUP BY time() interval or a shorter range"
        ));
    }
    let Some(zone) = zone else {
        return Ok((0..count.max(0)).map(|i| first + i * interval).collect());
    };
    let mut out = Vec::with_capacity(count.max(0) as usize + 1);
    let (mut w, last) = (first, at(last));
    while w <= last {
        out.push(w);
        w = zone.next_window(w, interval);
    }
    Ok(out)
}

/// `agg` per window of `points` (sorted by time, inside the range); a window ends where
/// the next one starts (one interval on, but for an offset change under `tz()`).
pub fn per_window(agg: Agg, points: &[Point], windows: &[i64], interval: i64) -> Column {
    let mut out = Vec::with_capacity(windows.len());
    let mut rest = points;
    for (i, &w) in windows.iter().enumerate() {
        let end = windows
            .get(i + 1)
            .copied()
            .unwrap_or(w.saturating_add(interval));
        let skip = rest.partition_point(|p| p.time < w);
        rest = &rest[skip..];
        let take = rest.partition_point(|p| p.time < end);
        let inside = &rest[..take];
        match agg {
            // No row for an empty window, whatever the fill (InfluxDB's distinct()).
            Agg::Distinct => out.extend(distinct_values(inside).into_iter().map(|v| (w, Some(v)))),
            // stddev of one point is null but its window not empty: marked NaN, so that
            // fill() leaves it as InfluxDB does (the evaluator makes the mark null). A
            // percentile below the first rank is filled as an empty window is.
            Agg::Stddev if inside.len() == 1 => out.push((w, Some(f64::NAN))),
            _ => out.push((w, agg.over(inside).map(|(_, v)| v))),
        }
        rest = &rest[take..];
    }
    out
}

/// `fill()` on an aggregate column. `count` answers 0 for an empty window under
/// `fill(null)`, as InfluxDB does.
pub fn fill(column: Column, fill: &Fill, agg: Agg) -> Column {
    match fill {
        Fill::None => column.into_iter().filter(|(_, v)| v.is_some()).collect(),
        Fill::Null if agg.counts() => column
            .into_iter()
            .map(|(t, v)| (t, v.or(Some(0.0))))
            .collect(),
        Fill::Null => column,
        Fill::Number(x) => column
            .into_iter()
            .map(|(t, v)| (t, v.or(Some(*x))))
            .collect(),
        Fill::Previous => {
            let mut held = None;
            column
                .into_iter()
                .map(|(t, v)| {
                    held = v.or(held);
                    (t, held)
                })
                .collect()
        }
        Fill::Linear => linear(column),
    }
}

fn linear(mut column: Column) -> Column {
    let known: Vec<(usize, i64, f64)> = column
        .iter()
        .enumerate()
        .filter_map(|(i, (t, v))| v.map(|v| (i, *t, v)))
        .collect();
    for pair in known.windows(2) {
        let ((i0, t0, v0), (i1, t1, v1)) = (pair[0], pair[1]);
        for slot in &mut column[i0 + 1..i1] {
            let f = (slot.0 - t0) as f64 / (t1 - t0) as f64;
            slot.1 = Some(v0 + (v1 - v0) * f);
        }
    }
    column
}

/// InfluxDB's transformations over a column, its empty windows skipped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Transform {
    /// Change per `unit` ns; `non_negative` drops decreases.
    Derivative {
        unit: i64,
        non_negative: bool,
    },
    Difference {
        non_negative: bool,
    },
    MovingAverage(usize),
    CumulativeSum,
    /// Time between successive points, in whole `unit`s (ns by default).
    Elapsed {
        unit: i64,
    },
}

impl Transform {
    pub fn of_call(name: &str, args: &[Expr]) -> Result<Option<Self>, String> {
        let unit = || match args.get(1) {
            None => Ok(1_000_000_000),
            Some(Expr::Duration(ns)) if *ns > 0 => Ok(*ns),
            Some(e) => Err(format!(
                "second argument to {name} must be a duration, got {e}"
            )),
        };
        Ok(Some(match name {
            "derivative" => Transform::Derivative {
                unit: unit()?,
                non_negative: false,
            },
            "non_negative_derivative" => Transform::Derivative {
                unit: unit()?,
                non_negative: true,
            },
            "difference" => Transform::Difference {
                non_negative: false,
            },
            "non_negative_difference" => Transform::Difference { non_negative: true },
            "cumulative_sum" => Transform::CumulativeSum,
            "elapsed" => Transform::Elapsed {
                unit: match args.get(1) {
                    None => 1,
                    Some(_) => unit()?,
                },
            },
            "moving_average" => match args.get(1) {
                Some(Expr::Integer(n)) if *n >= 1 => Transform::MovingAverage(*n as usize),
                _ => return Err("moving_average window must be an integer greater than 0".into()),
            },
            _ => return Ok(None),
        }))
    }

    pub fn apply(self, column: &Column) -> Column {
        let known: Vec<(i64, f64)> = column
            .iter()
            .filter_map(|(t, v)| v.map(|v| (*t, v)))
            .collect();
        match self {
            Transform::Derivative { unit, non_negative } => known
                .windows(2)
                .map(|w| {
                    (
                        w[1].0,
                        // Over a column read from its end the time between points is
                        // still counted forwards, as InfluxDB counts it.
                        (w[1].1 - w[0].1) / ((w[1].0 - w[0].0).abs() as f64 / unit as f64),
                    )
                })
                .filter(|(_, d)| !non_negative || *d >= 0.0)
                .map(|(t, d)| (t, Some(d)))
                .collect(),
            Transform::Difference { non_negative } => known
                .windows(2)
                .map(|w| (w[1].0, w[1].1 - w[0].1))
                .filter(|(_, d)| !non_negative || *d >= 0.0)
                .map(|(t, d)| (t, Some(d)))
                .collect(),
            Transform::MovingAverage(n) => known
                .windows(n)
                .map(|w| {
                    (
                        w[n - 1].0,
                        Some(w.iter().map(|(_, v)| v).sum::<f64>() / n as f64),
                    )
                })
                .collect(),
            Transform::Elapsed { unit } => known
                .windows(2)
                .map(|w| (w[1].0, Some(((w[1].0 - w[0].0) / unit) as f64)))
                .collect(),
            Transform::CumulativeSum => {
                let mut sum = 0.0;
                known
                    .into_iter()
                    .map(|(t, v)| {
                        sum += v;
                        (t, Some(sum))
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(values: &[(i64, f64)]) -> Vec<Point> {
        values.iter().map(|&(t, v)| Point::new(t, v)).collect()
    }

    #[test]
    fn aggregates_as_influxdb_defines_them() {
        let p = points(&[(1, 4.0), (2, 1.0), (3, 3.0), (4, 2.0)]);
        let value = |agg: Agg| agg.over(&p).map(|(_, v)| v);
        assert_eq!(value(Agg::Mean), Some(2.5));
        assert_eq!(value(Agg::Median), Some(2.5));
        assert_eq!(value(Agg::Spread), Some(3.0));
        assert_eq!(value(Agg::Count), Some(4.0));
        assert_eq!(Agg::Max.over(&p), Some((Some(1), 4.0)));
        assert_eq!(Agg::Percentile(50.0).over(&p), Some((Some(4), 2.0)));
        assert_eq!(Agg::Percentile(0.0).over(&p), None);
        let stddev = value(Agg::Stddev).unwrap_or_default();
        assert!((stddev - 1.2909944487358056).abs() < 1e-12);
        assert_eq!(Agg::Stddev.over(&p[..1]), None);
    }

    #[test]
    fn distinct_values_per_window_and_their_count() {
        let p = points(&[(1, 2.0), (2, 1.0), (3, 2.0), (25, 7.0)]);
        let windows = [0, 10, 20];
        assert_eq!(
            per_window(Agg::Distinct, &p, &windows, 10),
            [(0, Some(1.0)), (0, Some(2.0)), (20, Some(7.0))]
        );
        let counts = per_window(Agg::CountDistinct, &p, &windows, 10);
        assert_eq!(counts, [(0, Some(2.0)), (10, None), (20, Some(1.0))]);
        assert_eq!(
            fill(counts, &Fill::Null, Agg::CountDistinct)[1],
            (10, Some(0.0))
        );
    }

    #[test]
    fn windows_fill_and_transformations() {
        let windows = window_starts(5, 40, 10, 0, None).unwrap_or_default();
        assert_eq!(windows, [0, 10, 20, 30]);
        assert_eq!(
            window_starts(5, 40, 10, 3, None).unwrap_or_default(),
            [3, 13, 23, 33]
        );
        let p = points(&[(5, 1.0), (7, 3.0), (31, 8.0)]);
        let col = per_window(Agg::Mean, &p, &windows, 10);
        assert_eq!(
            col,
            [(0, Some(2.0)), (10, None), (20, None), (30, Some(8.0))]
        );
        assert_eq!(
            fill(col.clone(), &Fill::Linear, Agg::Mean),
            [
                (0, Some(2.0)),
                (10, Some(4.0)),
                (20, Some(6.0)),
                (30, Some(8.0))
            ]
        );
        assert_eq!(fill(col.clone(), &Fill::None, Agg::Mean).len(), 2);
        assert_eq!(
            fill(col.clone(), &Fill::Previous, Agg::Mean)[2],
            (20, Some(2.0))
        );
        let counts = per_window(Agg::Count, &p, &windows, 10);
        assert_eq!(fill(counts, &Fill::Null, Agg::Count)[1], (10, Some(0.0)));
        let derivative = Transform::Derivative {
            unit: 10,
            non_negative: false,
        };
        assert_eq!(derivative.apply(&col), [(30, Some(2.0))]);
        let sums = Transform::CumulativeSum.apply(&col);
        assert_eq!(sums, [(0, Some(2.0)), (30, Some(10.0))]);
        assert_eq!(Transform::MovingAverage(2).apply(&col), [(30, Some(5.0))]);
    }

    #[test]
    fn elapsed_and_ties_of_several_series() {
        let column: Column = vec![
            (10, Some(1.0)),
            (20, None),
            (30, Some(2.0)),
            (45, Some(3.0)),
        ];
        let ns = Transform::Elapsed { unit: 1 }.apply(&column);
        assert_eq!(ns, vec![(30, Some(20.0)), (45, Some(15.0))]);
        let tens = Transform::Elapsed { unit: 10 }.apply(&column);
        assert_eq!(tens, vec![(30, Some(2.0)), (45, Some(1.0))]);
        // Points of two series at one time: first and last keep the greater value.
        let p = points(&[(1, 2.0), (1, 5.0), (2, 7.0), (2, 3.0)]);
        assert_eq!(Agg::First.over(&p), Some((Some(1), 5.0)));
        assert_eq!(Agg::Last.over(&p), Some((Some(2), 7.0)));
    }

    #[test]
    fn fill_leaves_a_one_point_stddev_null() {
        let p = points(&[(0, 1.0), (5, 2.0), (10, 4.0)]);
        let column = per_window(Agg::Stddev, &p, &[0, 10, 20], 10);
        let filled = fill(column, &Fill::Number(-1.0), Agg::Stddev);
        assert_eq!(filled[0].1.map(|v| (v * 1e6).round()), Some(707107.0));
        // One point: null, marked until the evaluator reads it; no point: filled.
        assert!(filled[1].1.is_some_and(f64::is_nan));
        assert_eq!(filled[2].1, Some(-1.0));
    }
}
