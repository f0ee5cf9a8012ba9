//! Functions over a range vector (`rate(x[5m])`): each series' samples in the window
//! `[t - range, t]` of each step reduced to one value, with Prometheus 2.x's arithmetic.

/// One step's window and where it lies.
pub(crate) struct Window<'a> {
    /// Samples in time order (ms), stale markers removed.
    pub samples: &'a [(i64, f64)],
    /// `t - offset - range` and `t - offset`, in ms.
    pub range_start: i64,
    pub range_end: i64,
    /// The step's time `t` (predict_linear predicts from it).
    pub step_time: i64,
}

/// A range function: its window's value, `None` for no output at this step. `params`
/// are its scalar arguments at this step, in order (quantile_over_time's `q`,
/// predict_linear's seconds ahead, holt_winters' two factors), already checked by
/// [`check_args`].
pub(crate) type RangeFn = fn(&Window<'_>, &[f64]) -> Option<f64>;

/// The range functions tickertape evaluates, by name.
pub(crate) fn range_function(name: &str) -> Option<RangeFn> {
    let f: RangeFn = match name {
        "rate" => |w, _| extrapolated_rate(w, true, true),
        "increase" => |w, _| extrapolated_rate(w, true, false),
        "delta" => |w, _| extrapolated_rate(w, false, false),
        "irate" => |w, _| instant_value(w, true),
        "idelta" => |w, _| instant_value(w, false),
        "avg_over_time" => |w, _| Some(avg(w.samples)),
        "min_over_time" => |w, _| Some(extreme(w.samples, |v, m| v < m)),
        "max_over_time" => |w, _| Some(extreme(w.samples, |v, m| v > m)),
        "sum_over_time" => |w, _| Some(kahan_sum(w.samples.iter().map(|s| s.1))),
        "count_over_time" => |w, _| Some(w.samples.len() as f64),
        "last_over_time" => |w, _| w.samples.last().map(|s| s.1),
        "present_over_time" => |_, _| Some(1.0),
        "stddev_over_time" => |w, _| Some(variance(w.samples).sqrt()),
        "stdvar_over_time" => |w, _| Some(variance(w.samples)),
        "quantile_over_time" => |w, p| {
            let mut values: Vec<f64> = w.samples.iter().map(|s| s.1).collect();
            Some(quantile(p[0], &mut values))
        },
        "changes" => |w, _| {
            Some(changes(w.samples, |prev, cur| {
                cur != prev && !(cur.is_nan() && prev.is_nan())
            }))
        },
        "resets" => |w, _| Some(changes(w.samples, |prev, cur| cur < prev)),
        "deriv" => {
            |w, _| (w.samples.len() >= 2).then(|| linear_regression(w.samples, w.samples[0].0).0)
        }
        "predict_linear" => |w, p| {
            (w.samples.len() >= 2).then(|| {
                let (slope, intercept) = linear_regression(w.samples, w.step_time);
                slope * p[0] + intercept
            })
        },
        // Prometheus 3 renamed holt_winters double_exponential_smoothing.
        "holt_winters" | "double_exponential_smoothing" => {
            |w, p| holt_winters(w.samples, p[0], p[1])
        }
        _ => return None,
    };
    Some(f)
}

/// Where a function's range-vector argument is (quantile_over_time takes `q` first).
pub(crate) fn matrix_arg_index(name: &str) -> usize {
    usize::from(name == "quantile_over_time")
}

/// Where a function's scalar arguments are.
pub(crate) fn scalar_arg_indices(name: &str) -> &'static [usize] {
    match name {
        "quantile_over_time" => &[0],
        "predict_linear" => &[1],
        "holt_winters" | "double_exponential_smoothing" => &[1, 2],
        _ => &[],
    }
}

/// Refuses scalar arguments a function has no answer for, as Prometheus does: at a
/// step whose window holds samples (where the function is called).
pub(crate) fn check_args(name: &str, params: &[f64]) -> Result<(), String> {
    if let ("holt_winters" | "double_exponential_smoothing", [sf, tf]) = (name, params) {
        // Written so that NaN passes, as Prometheus' `sf <= 0 || sf >= 1` lets it.
        if *sf <= 0.0 || *sf >= 1.0 {
            return Err(format!(
                "invalid smoothing factor. Expected: 0 < sf < 1, got: {sf:.6}"
            ));
        }
        if *tf <= 0.0 || *tf >= 1.0 {
            return Err(format!(
                "invalid trend factor. Expected: 0 < tf < 1, got: {tf:.6}"
            ));
        }
    }
    Ok(())
}

/// Double exponential smoothing (Holt's linear method) with smoothing factor `sf` and
/// trend factor `tf`: the smoothed value after the last sample, as Prometheus 2.x's
/// `holt_winters` computes it; nothing from fewer than two samples.
fn holt_winters(samples: &[(i64, f64)], sf: f64, tf: f64) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    // `smoothed` is the level after the previous sample, `before` the one before it;
    // the first trend is the first difference.
    let (mut before, mut smoothed) = (0.0, samples[0].1);
    let mut trend = samples[1].1 - samples[0].1;
    for (i, &(_, v)) in samples.iter().enumerate().skip(1) {
        if i > 1 {
            trend = tf * (smoothed - before) + (1.0 - tf) * trend;
        }
        let next = sf * v + (1.0 - sf) * (smoothed + trend);
        (before, smoothed) = (smoothed, next);
    }
    Some(smoothed)
}

/// `rate`, `increase` and `delta`: the change over the window, corrected for counter
/// resets and extrapolated towards the window's ends (Prometheus' `extrapolatedRate`).
fn extrapolated_rate(w: &Window<'_>, is_counter: bool, is_rate: bool) -> Option<f64> {
    let s = w.samples;
    if s.len() < 2 {
        return None;
    }
    let (first, last) = (s[0], s[s.len() - 1]);
    let mut result = last.1 - first.1;
    if is_counter {
        let mut prev = first.1;
        for &(_, v) in &s[1..] {
            if v < prev {
                result += prev;
            }
            prev = v;
        }
    }
    let mut to_start = (first.0 - w.range_start) as f64 / 1000.0;
    let to_end = (w.range_end - last.0) as f64 / 1000.0;
    let sampled = (last.0 - first.0) as f64 / 1000.0;
    let average_gap = sampled / (s.len() - 1) as f64;
    if is_counter && result > 0.0 && first.1 >= 0.0 {
        // A counter starts at zero: do not extrapolate below it.
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = average_gap * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        average_gap / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        average_gap / 2.0
    };
    let mut factor = interval / sampled;
    if is_rate {
        factor /= (w.range_end - w.range_start) as f64 / 1000.0;
    }
    Some(result * factor)
}

/// `irate` and `idelta`: from the last two samples.
fn instant_value(w: &Window<'_>, is_rate: bool) -> Option<f64> {
    let s = w.samples;
    if s.len() < 2 {
        return None;
    }
    let (prev, last) = (s[s.len() - 2], s[s.len() - 1]);
    let mut result = match is_rate && last.1 < prev.1 {
        true => last.1,
        false => last.1 - prev.1,
    };
    let interval = last.0 - prev.0;
    if interval == 0 {
        return None;
    }
    if is_rate {
        result /= interval as f64 / 1000.0;
    }
    Some(result)
}

/// Neumaier's compensated summation step, as Prometheus sums over time.
pub(crate) fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = match sum.abs() >= inc.abs() {
        true => c + ((sum - t) + inc),
        false => c + ((inc - t) + sum),
    };
    (t, c)
}

pub(crate) fn kahan_sum(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut c) = (0.0, 0.0);
    for v in values {
        (sum, c) = kahan_inc(v, sum, c);
    }
    match sum.is_infinite() {
        true => sum,
        false => sum + c,
    }
}

/// The mean as Prometheus computes it over time: incremental and compensated, so that
/// large values do not overflow.
fn avg(samples: &[(i64, f64)]) -> f64 {
    let (mut mean, mut count, mut c) = (0.0f64, 0.0f64, 0.0f64);
    for &(_, v) in samples {
        count += 1.0;
        if mean.is_infinite() {
            if v.is_infinite() && (mean > 0.0) == (v > 0.0) {
                continue;
            }
            if !v.is_infinite() && !v.is_nan() {
                continue;
            }
        }
        (mean, c) = kahan_inc(v / count - mean / count, mean, c);
    }
    match mean.is_infinite() {
        true => mean,
        false => mean + c,
    }
}

/// The smallest or largest value (`better(v, current)`), NaN only if all are NaN.
fn extreme(samples: &[(i64, f64)], better: impl Fn(f64, f64) -> bool) -> f64 {
    extreme_of(samples.iter().map(|s| s.1), better).unwrap_or(f64::NAN)
}

/// [`extreme`] of any values; `None` for none.
pub(crate) fn extreme_of(
    mut values: impl Iterator<Item = f64>,
    better: impl Fn(f64, f64) -> bool,
) -> Option<f64> {
    let mut m = values.next()?;
    for v in values {
        if better(v, m) || m.is_nan() {
            m = v;
        }
    }
    Some(m)
}

/// The population variance, compensated as Prometheus computes it.
fn variance(samples: &[(i64, f64)]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(_, v) in samples {
        count += 1.0;
        let delta = v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

/// Least squares over the samples, times in seconds from `intercept_time`: (slope,
/// intercept), compensated sums as Prometheus' `linearRegression`.
fn linear_regression(samples: &[(i64, f64)], intercept_time: i64) -> (f64, f64) {
    let first = samples[0].1;
    if samples.iter().all(|s| s.1 == first) {
        return match first.is_infinite() {
            true => (f64::NAN, f64::NAN),
            false => (0.0, first),
        };
    }
    let (mut n, mut x_sum, mut y_sum, mut xy_sum, mut x2_sum) =
        (0.0, (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
    for &(t, v) in samples {
        n += 1.0;
        let x = (t - intercept_time) as f64 / 1e3;
        x_sum = kahan_inc(x, x_sum.0, x_sum.1);
        y_sum = kahan_inc(v, y_sum.0, y_sum.1);
        xy_sum = kahan_inc(x * v, xy_sum.0, xy_sum.1);
        x2_sum = kahan_inc(x * x, x2_sum.0, x2_sum.1);
    }
    let (sx, sy) = (x_sum.0 + x_sum.1, y_sum.0 + y_sum.1);
    let (sxy, sx2) = (xy_sum.0 + xy_sum.1, x2_sum.0 + x2_sum.1);
    let cov_xy = sxy - sx * sy / n;
    let var_x = sx2 - sx * sx / n;
    let slope = cov_xy / var_x;
    (slope, sy / n - slope * sx / n)
}

fn changes(samples: &[(i64, f64)], changed: fn(f64, f64) -> bool) -> f64 {
    samples
        .windows(2)
        .filter(|pair| changed(pair[0].1, pair[1].1))
        .count() as f64
}

/// The φ-quantile of `values` (interpolated between the closest ranks), as Prometheus'
/// `quantile` aggregation and `quantile_over_time` compute it.
pub(crate) fn quantile(q: f64, values: &mut [f64]) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    values[lower as usize] * (1.0 - weight) + values[upper as usize] * weight
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(samples: &[(i64, f64)], start: i64, end: i64) -> Window<'_> {
        Window {
            samples,
            range_start: start,
            range_end: end,
            step_time: end,
        }
    }

    #[test]
    fn rate_extrapolates_to_the_window_ends() {
        // A counter rising 10 per 10 s, sampled 10..=290 s, window (0, 300] s.
        let s: Vec<(i64, f64)> = (1..=29).map(|i| (i * 10_000, i as f64 * 10.0)).collect();
        let w = window(&s, 0, 300_000);
        let rate = extrapolated_rate(&w, true, true).unwrap();
        assert!((rate - 1.0).abs() < 1e-12, "{rate}");
        let increase = extrapolated_rate(&w, true, false).unwrap();
        assert!((increase - 300.0).abs() < 1e-9, "{increase}");
    }

    #[test]
    fn a_counter_reset_adds_the_value_before_it() {
        let s = [(0, 5.0), (10_000, 10.0), (20_000, 2.0), (30_000, 6.0)];
        let w = window(&s, 0, 30_000);
        // 10 - 5 + 6 (after reset from 10 to 2 the counter went on from 0).
        assert_eq!(extrapolated_rate(&w, true, false), Some(11.0));
        assert_eq!(instant_value(&w, true), Some(0.4));
        assert_eq!(changes(&s, |p, c| c < p), 1.0);
    }

    #[test]
    fn deriv_and_predict_linear_fit_a_line() {
        let s: Vec<(i64, f64)> = (0..10)
            .map(|i| (i * 10_000, 5.0 + 2.0 * i as f64))
            .collect();
        let w = window(&s, 0, 90_000);
        let deriv = range_function("deriv").unwrap()(&w, &[]).unwrap();
        assert!((deriv - 0.2).abs() < 1e-12, "{deriv}");
        // At 90 s the line is at 23; 10 s later 25.
        let ahead = range_function("predict_linear").unwrap()(&w, &[10.0]).unwrap();
        assert!((ahead - 25.0).abs() < 1e-9, "{ahead}");
    }

    #[test]
    fn holt_winters_follows_a_line_and_checks_its_factors() {
        // A line is its own smoothing: level and trend stay exact.
        let s: Vec<(i64, f64)> = (0..7).map(|i| (i * 10_000, 10.0 * i as f64)).collect();
        let hw = holt_winters(&s, 0.01, 0.1).unwrap();
        assert!((hw - 60.0).abs() < 1e-9, "{hw}");
        // By hand: level 1, trend 2; then 0.5·3 + 0.5·(1 + 2) = 3, trend 0.5·2 + 0.5·2 = 2;
        // then 0.5·4 + 0.5·(3 + 2) = 4.5.
        assert_eq!(
            holt_winters(&[(0, 1.0), (1, 3.0), (2, 4.0)], 0.5, 0.5),
            Some(4.5)
        );
        assert_eq!(holt_winters(&s[..1], 0.5, 0.5), None);
        assert!(check_args("holt_winters", &[0.5, 0.5]).is_ok());
        assert!(check_args("holt_winters", &[f64::NAN, 0.5]).is_ok());
        let err = check_args("double_exponential_smoothing", &[1.0, 0.5]).unwrap_err();
        assert_eq!(
            err,
            "invalid smoothing factor. Expected: 0 < sf < 1, got: 1.000000"
        );
        assert!(check_args("holt_winters", &[0.5, 0.0]).is_err());
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        assert_eq!(quantile(0.5, &mut [3.0, 1.0, 2.0, 4.0]), 2.5);
        assert_eq!(quantile(1.5, &mut [1.0]), f64::INFINITY);
        assert!(quantile(0.5, &mut []).is_nan());
    }
}
