//! `max_over_time` and `min_over_time` over a window sliding forward, in amortized
//! constant time per step instead of a scan of the whole window: a subquery's peak over
//! an hour at a minute's step (`max_over_time(rate(x[5m])[1h:1m])`) would otherwise look
//! at 61 values per step and series.
//!
//! The answer is the one `range_functions`' scan gives (a property test holds them
//! together): the first largest (smallest) value of the window that is not NaN; NaN when
//! every value is.

use std::collections::VecDeque;

/// The extreme of the samples in `[end - range, end]` as `end` moves forward.
pub(crate) struct SlidingExtreme<'a> {
    samples: &'a [(i64, f64)],
    /// Looks for the largest value (`max_over_time`), else the smallest.
    largest: bool,
    /// Indices of the window's non-NaN samples that no later sample beats, in time
    /// order: their values never improve from front to back, so the front is the first
    /// best of the window.
    candidates: VecDeque<usize>,
    /// The window is `samples[lo..hi]`.
    lo: usize,
    hi: usize,
}

impl<'a> SlidingExtreme<'a> {
    /// Over `samples` in time order; `largest` for `max_over_time`.
    pub(crate) fn new(samples: &'a [(i64, f64)], largest: bool) -> Self {
        Self {
            samples,
            largest,
            candidates: VecDeque::new(),
            lo: 0,
            hi: 0,
        }
    }

    /// The extreme of the samples in `[end - range, end]`, `None` for no sample; `end`
    /// must not decrease between calls.
    pub(crate) fn at(&mut self, end: i64, range: i64) -> Option<f64> {
        let start = end.saturating_sub(range);
        while self.hi < self.samples.len() && self.samples[self.hi].0 <= end {
            self.push(self.hi);
            self.hi += 1;
        }
        while self.lo < self.hi && self.samples[self.lo].0 < start {
            self.lo += 1;
        }
        while self.candidates.front().is_some_and(|&i| i < self.lo) {
            self.candidates.pop_front();
        }
        if self.lo == self.hi {
            return None;
        }
        Some(
            self.candidates
                .front()
                .map_or(f64::NAN, |&i| self.samples[i].1),
        )
    }

    /// Takes sample `i` into the window: it ends the candidacy of every earlier sample it
    /// beats (strictly: of equal values the first stays the answer, as in the scan).
    fn push(&mut self, i: usize) {
        let v = self.samples[i].1;
        if v.is_nan() {
            return;
        }
        while let Some(&last) = self.candidates.back() {
            let m = self.samples[last].1;
            let beats = match self.largest {
                true => v > m,
                false => v < m,
            };
            if !beats {
                break;
            }
            self.candidates.pop_back();
        }
        self.candidates.push_back(i);
    }
}

#[cfg(test)]
mod tests {
    use super::super::range_functions::{range_function, Window};
    use super::*;
    use proptest::prelude::*;

    /// What the scan of `range_functions` answers for one window.
    fn scanned(name: &str, samples: &[(i64, f64)], end: i64, range: i64) -> Option<f64> {
        let inside: Vec<(i64, f64)> = samples
            .iter()
            .copied()
            .filter(|&(t, _)| t >= end - range && t <= end)
            .collect();
        if inside.is_empty() {
            return None;
        }
        let w = Window {
            samples: &inside,
            range_start: end - range,
            range_end: end,
            step_time: end,
        };
        range_function(name).and_then(|f| f(&w, &[]))
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-3i32..4).prop_map(f64::from),
            Just(f64::NAN),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
        ]
    }

    proptest! {
        /// Bit for bit the scan's answer, at every step, for windows of any length over
        /// values with ties, NaN, infinities and both zeros.
        #[test]
        fn agrees_with_the_scan(
            values in prop::collection::vec((1i64..4, value()), 0..60),
            range in 0i64..12,
            step in 1i64..5,
        ) {
            let mut t = 0;
            let samples: Vec<(i64, f64)> = values
                .into_iter()
                .map(|(gap, v)| {
                    t += gap;
                    (t, v)
                })
                .collect();
            for (name, largest) in [("max_over_time", true), ("min_over_time", false)] {
                let mut sliding = SlidingExtreme::new(&samples, largest);
                for end in (0..t + range + 2).step_by(step as usize) {
                    let want = scanned(name, &samples, end, range);
                    let got = sliding.at(end, range);
                    prop_assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{} at {}", name, end);
                }
            }
        }
    }
}
