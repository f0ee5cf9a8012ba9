//! The time axis: UTC, ticks at round times (every 5 minutes, at midnight, on the first of
//! a month …) and labels that show what the range needs — seconds for a minute, hours for
//! a day, dates for a month.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use std::ops::Range;

const MS: i64 = 1_000_000;
const S: i64 = 1_000 * MS;
const M: i64 = 60 * S;
const H: i64 = 60 * M;
const D: i64 = 24 * H;
/// 1970-01-01 was a Thursday: weekly ticks start 4 days later, on Mondays.
const MONDAY_OFFSET: i64 = 4 * D;

/// The distance between two ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TickStep {
    /// A fixed width in ns, ticks at `offset + k * width` (ns since the epoch).
    Fixed { width: i64, offset: i64 },
    /// Calendar months: ticks at 00:00 UTC on the first of every `n`th month (January
    /// among them when `n` divides 12).
    Months(u32),
}

/// The fixed steps, finest first; after them come months, then years.
const FIXED_STEPS: [i64; 27] = [
    MS,
    2 * MS,
    5 * MS,
    10 * MS,
    20 * MS,
    50 * MS,
    100 * MS,
    200 * MS,
    500 * MS,
    S,
    2 * S,
    5 * S,
    10 * S,
    15 * S,
    30 * S,
    M,
    2 * M,
    5 * M,
    10 * M,
    15 * M,
    30 * M,
    H,
    2 * H,
    3 * H,
    6 * H,
    12 * H,
    D,
];
const WEEK_STEPS: [i64; 2] = [7 * D, 14 * D];
const MONTH_STEPS: [u32; 4] = [1, 2, 3, 6];

/// A time axis over `[start, end]` (ns since the epoch, UTC), `start < end`, with the tick
/// step chosen once for the room the axis has.
#[derive(Clone, Debug)]
pub struct TimeAxis {
    start: i64,
    end: i64,
    step: TickStep,
}

impl TimeAxis {
    /// An axis over `[start, end]` (ns) with at most `max_ticks` ticks (at least one kept
    /// where the range holds a round time). A range of one instant is widened by a minute
    /// on each side, so a single point sits in the middle.
    pub fn new(start: i64, end: i64, max_ticks: usize) -> Self {
        let (start, end) = match start < end {
            true => (start, end),
            false => (start.saturating_sub(M), end.saturating_add(M)),
        };
        let step = choose_step(start, end, max_ticks.max(1));
        Self { start, end, step }
    }

    /// The ticks inside the axis, in order.
    pub fn ticks(&self) -> Vec<i64> {
        match self.step {
            TickStep::Fixed { width, offset } => fixed_ticks(self.start, self.end, width, offset),
            TickStep::Months(n) => month_ticks(self.start, self.end, n),
        }
    }

    /// The label of a tick: as precise as the step needs; the date is left out when the
    /// whole axis lies in one UTC day (the caption names it).
    pub fn label(&self, time: i64) -> String {
        let format = match self.step {
            TickStep::Fixed { width, .. } if width < S => "%H:%M:%S%.3f",
            TickStep::Fixed { width, .. } if width < M => "%H:%M:%S",
            TickStep::Fixed { width, .. } if width < D && self.within_one_day() => "%H:%M",
            TickStep::Fixed { width, .. } if width < D => "%m-%d %H:%M",
            TickStep::Fixed { .. } => "%Y-%m-%d",
            TickStep::Months(n) if n % 12 == 0 => "%Y",
            TickStep::Months(_) => "%Y-%m",
        };
        utc(time).format(format).to_string()
    }

    /// "Time (UTC)", with the day when the labels show only times of one day.
    pub fn caption(&self) -> String {
        let labels_have_date = match self.step {
            TickStep::Fixed { width, .. } => width >= D || !self.within_one_day(),
            TickStep::Months(_) => true,
        };
        match labels_have_date {
            true => "Time (UTC)".to_string(),
            false => format!("Time (UTC), {}", utc(self.start).format("%Y-%m-%d")),
        }
    }

    fn within_one_day(&self) -> bool {
        utc(self.start).date_naive() == utc(self.end).date_naive()
    }
}

impl Ranged for TimeAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = i64;

    fn map(&self, value: &i64, limit: (i32, i32)) -> i32 {
        let fraction = (*value as f64 - self.start as f64) / (self.end as f64 - self.start as f64);
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    /// The same ticks for labels and grid lines: the step was chosen for the labels' room.
    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<i64> {
        self.ticks()
    }

    fn range(&self) -> Range<i64> {
        self.start..self.end
    }
}

impl ValueFormatter<i64> for TimeAxis {
    fn format_ext(&self, value: &i64) -> String {
        self.label(*value)
    }
}

fn utc(time: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(time)
}

/// The finest step that puts at most `max_ticks` ticks on `[start, end]`; the coarsest
/// one that is still a round number of years when none does.
fn choose_step(start: i64, end: i64, max_ticks: usize) -> TickStep {
    let span = (end as i128 - start as i128).max(1);
    let max_ticks = max_ticks as i128;
    // A step puts at most span / width + 1 ticks on the axis: it fits when
    // span / width < max_ticks (the same for months below).
    let fits = |width: i64| span / i128::from(width) < max_ticks;
    let fixed = FIXED_STEPS
        .iter()
        .map(|&width| TickStep::Fixed { width, offset: 0 })
        .chain(WEEK_STEPS.iter().map(|&width| TickStep::Fixed {
            width,
            offset: MONDAY_OFFSET,
        }))
        .find(|step| matches!(step, TickStep::Fixed { width, .. } if fits(*width)));
    if let Some(step) = fixed {
        return step;
    }
    let months = i128::from(months_between(start, end));
    let month_steps = MONTH_STEPS.iter().copied().chain(year_steps());
    month_steps
        .map(TickStep::Months)
        .find(|step| matches!(step, TickStep::Months(n) if months / i128::from(*n) < max_ticks))
        .unwrap_or(TickStep::Months(12 * 100_000))
}

/// 1, 2, 5, 10, 20, 50 … years, in months, up to past any range an i64 of ns can hold.
fn year_steps() -> impl Iterator<Item = u32> {
    (0..5u32).flat_map(|power| [1, 2, 5].map(|m| 12 * m * 10u32.pow(power)))
}

fn fixed_ticks(start: i64, end: i64, width: i64, offset: i64) -> Vec<i64> {
    let width = width as i128;
    let (start, end, offset) = (start as i128, end as i128, offset as i128);
    let first = (start - offset).div_euclid(width) * width + offset;
    let first = if first < start { first + width } else { first };
    (0..)
        .map(|k| first + k * width)
        .take_while(|&t| t <= end)
        .map(|t| t as i64)
        .collect()
}

/// Ticks on the first of every `n`th month (counted from year 0, so yearly steps fall on
/// January), 00:00 UTC.
fn month_ticks(start: i64, end: i64, n: u32) -> Vec<i64> {
    let first = utc(start);
    let mut index = first.year() as i64 * 12 + i64::from(first.month0());
    index = index.div_euclid(i64::from(n)) * i64::from(n);
    let mut ticks = Vec::new();
    while let Some(time) = month_start(index) {
        if time > end {
            break;
        }
        if time >= start {
            ticks.push(time);
        }
        index += i64::from(n);
    }
    ticks
}

/// 00:00 UTC on the first of month `index` (year * 12 + month0), in ns; `None` beyond
/// what an i64 of ns holds.
fn month_start(index: i64) -> Option<i64> {
    let year = i32::try_from(index.div_euclid(12)).ok()?;
    let month = u32::try_from(index.rem_euclid(12)).ok()? + 1;
    let date = NaiveDate::from_ymd_opt(year, month, 1)?;
    date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_nanos_opt()
}

fn months_between(start: i64, end: i64) -> i64 {
    let (a, b) = (utc(start), utc(end));
    (b.year() as i64 - a.year() as i64) * 12 + i64::from(b.month0()) - i64::from(a.month0())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-14T22:13:20Z
    const T0: i64 = 1_700_000_000 * S;

    fn labels(axis: &TimeAxis) -> Vec<String> {
        axis.ticks().iter().map(|&t| axis.label(t)).collect()
    }

    #[test]
    fn an_hour_gets_round_minutes_and_the_day_in_the_caption() {
        let axis = TimeAxis::new(T0, T0 + H, 8);
        assert_eq!(
            labels(&axis),
            ["22:20", "22:30", "22:40", "22:50", "23:00", "23:10"]
        );
        assert_eq!(axis.caption(), "Time (UTC), 2023-11-14");
    }

    #[test]
    fn a_minute_gets_seconds() {
        let axis = TimeAxis::new(T0, T0 + M, 7);
        assert_eq!(
            labels(&axis),
            ["22:13:20", "22:13:30", "22:13:40", "22:13:50", "22:14:00", "22:14:10", "22:14:20"]
        );
    }

    #[test]
    fn a_range_across_midnight_shows_the_date_in_each_label() {
        let axis = TimeAxis::new(T0, T0 + 6 * H, 4);
        assert_eq!(labels(&axis), ["11-15 00:00", "11-15 02:00", "11-15 04:00"]);
        assert_eq!(axis.caption(), "Time (UTC)");
    }

    #[test]
    fn weeks_start_on_mondays_and_months_on_the_first() {
        let axis = TimeAxis::new(T0, T0 + 60 * D, 6);
        // Mondays, every other one counted from 1970-01-05.
        assert_eq!(
            labels(&axis),
            ["2023-11-27", "2023-12-11", "2023-12-25", "2024-01-08"]
        );
        let axis = TimeAxis::new(T0, T0 + 400 * D, 6);
        assert_eq!(labels(&axis), ["2024-01", "2024-04", "2024-07", "2024-10"]);
        let axis = TimeAxis::new(0, T0, 6);
        assert_eq!(
            labels(&axis),
            ["1970", "1980", "1990", "2000", "2010", "2020"]
        );
    }

    #[test]
    fn one_instant_is_widened_and_the_extremes_do_not_overflow() {
        let axis = TimeAxis::new(T0, T0, 5);
        assert_eq!(axis.range(), T0 - M..T0 + M);
        assert!(axis.ticks().len() <= 5 && !axis.ticks().is_empty());
        let axis = TimeAxis::new(i64::MIN, i64::MAX, 5);
        assert!(axis.ticks().len() <= 5);
    }

    #[test]
    fn map_spans_the_pixel_range() {
        let axis = TimeAxis::new(0, 100 * S, 5);
        assert_eq!(axis.map(&0, (10, 110)), 10);
        assert_eq!(axis.map(&(50 * S), (10, 110)), 60);
        assert_eq!(axis.map(&(100 * S), (10, 110)), 110);
    }
}
