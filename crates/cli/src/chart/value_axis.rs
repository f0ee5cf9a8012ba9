//! The value axis: the range shown for the data's values, and labels as short as the
//! range allows (12.5, 0.003, 4.2M).

use std::ops::Range;

/// The share of the data's spread added above and below it, so extremes do not sit on the
/// frame.
const PADDING: f64 = 0.05;

/// The range shown for values in `[low, high]` (finite, `low <= high`): padded by 5% on each
/// side; a flat series gets a band around its value (±10% of it, ±1 around zero).
pub fn padded_range(low: f64, high: f64) -> Range<f64> {
    let spread = high - low;
    if spread > 0.0 && spread.is_finite() {
        return (low - spread * PADDING)..(high + spread * PADDING);
    }
    let half = match low.abs() * 0.1 {
        h if h > 0.0 && h.is_finite() => h,
        _ => 1.0,
    };
    (low - half)..(high + half)
}

/// The label of `value` on an axis whose range spans `span`: a fixed number of decimals
/// for the span (trailing zeros dropped), and M, G, T suffixes from a million up.
pub fn label(value: f64, span: f64) -> String {
    let magnitude = value.abs().max(span.abs());
    // Below a million, plain digits read best.
    let (scale, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M")]
        .into_iter()
        .find(|&(scale, _)| magnitude >= scale)
        .unwrap_or((1.0, ""));
    let (value, span) = (value / scale, span / scale);
    // Three significant digits of the span's order of magnitude: enough to tell ticks
    // about a tenth of the span apart.
    let decimals = match span > 0.0 && span.is_finite() {
        true => (2.0 - span.log10().floor()).clamp(0.0, 9.0) as usize,
        false => 3,
    };
    let text = format!("{value:.decimals$}");
    let text = match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    };
    // "-0" after rounding a tiny negative value.
    let text = if text == "-0" { "0".to_string() } else { text };
    format!("{text}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_padded_and_flat_ones_get_a_band() {
        assert_eq!(padded_range(0.0, 100.0), -5.0..105.0);
        assert_eq!(padded_range(50.0, 50.0), 45.0..55.0);
        assert_eq!(padded_range(0.0, 0.0), -1.0..1.0);
    }

    #[test]
    fn labels_fit_the_span() {
        assert_eq!(label(12.5, 10.0), "12.5");
        assert_eq!(label(20.0, 10.0), "20");
        assert_eq!(label(0.0035, 0.01), "0.0035");
        assert_eq!(label(1500.0, 2000.0), "1500");
        assert_eq!(label(4_200_000.0, 1e6), "4.2M");
        assert_eq!(label(3e12, 1e12), "3T");
        assert_eq!(label(-0.00001, 10.0), "0");
    }
}
