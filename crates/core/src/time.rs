//! Time math. Every timestamp in tickertape is an `i64` of nanoseconds since the Unix
//! epoch, UTC; every duration is an `i64` of nanoseconds, always positive.

use std::sync::atomic::{AtomicI64, Ordering};
use thiserror::Error;

pub const NANOS_PER_SECOND: i64 = 1_000_000_000;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TimeError {
    #[error("invalid duration {0:?}: expected a number and a unit, such as 10s, 1m, 1h30m (units: ns, us, ms, s, m, h, d, w)")]
    BadDuration(String),
    #[error("duration {0:?} must be greater than zero")]
    ZeroDuration(String),
    #[error(
        "invalid timestamp {0:?}: expected integer nanoseconds or RFC 3339 (2016-01-01T00:00:00Z)"
    )]
    BadTimestamp(String),
    #[error(
        "invalid time {0:?}: expected integer nanoseconds, RFC 3339 (2016-01-01T00:00:00Z), or a time relative to now: now, now-1h, now+5m, -30m"
    )]
    BadTime(String),
    #[error("time {0:?} is out of range")]
    TimeOutOfRange(String),
    #[error("invalid precision {0:?}: expected ns, us, ms or s")]
    BadPrecision(String),
}

/// The unit of timestamps in a line-protocol body (`precision=` on `/write`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    #[default]
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
}

impl Precision {
    pub fn parse(text: &str) -> Result<Self, TimeError> {
        match text {
            "ns" | "n" => Ok(Self::Nanoseconds),
            "us" | "u" | "µs" => Ok(Self::Microseconds),
            "ms" => Ok(Self::Milliseconds),
            "s" => Ok(Self::Seconds),
            _ => Err(TimeError::BadPrecision(text.to_string())),
        }
    }

    pub fn nanos_per_unit(self) -> i64 {
        match self {
            Self::Nanoseconds => 1,
            Self::Microseconds => 1_000,
            Self::Milliseconds => 1_000_000,
            Self::Seconds => NANOS_PER_SECOND,
        }
    }

    /// Converts a timestamp in this unit to nanoseconds; `None` if it does not fit an i64.
    pub fn to_nanos(self, value: i64) -> Option<i64> {
        value.checked_mul(self.nanos_per_unit())
    }
}

/// Parses a positive duration such as `10s`, `1m`, `1h30m`, `500ms` into nanoseconds.
/// Units: `ns`, `us`, `ms`, `s`, `m`, `h`, `d`, `w` and `y` (365 days, as Prometheus).
pub fn parse_duration(text: &str) -> Result<i64, TimeError> {
    let bad = || TimeError::BadDuration(text.to_string());
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let number: i64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS_PER_SECOND,
            "m" => 60 * NANOS_PER_SECOND,
            "h" => 3_600 * NANOS_PER_SECOND,
            "d" => 86_400 * NANOS_PER_SECOND,
            "w" => 7 * 86_400 * NANOS_PER_SECOND,
            "y" => 365 * 86_400 * NANOS_PER_SECOND,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = number
            .checked_mul(unit)
            .and_then(|n| total.checked_add(n))
            .ok_or_else(bad)?;
    }
    if total == 0 {
        return Err(TimeError::ZeroDuration(text.to_string()));
    }
    Ok(total)
}

/// Formats nanoseconds as the shortest exact duration text (`90s` → `1m30s`).
pub fn format_duration(mut nanos: i64) -> String {
    const UNITS: [(&str, i64); 7] = [
        ("d", 86_400 * NANOS_PER_SECOND),
        ("h", 3_600 * NANOS_PER_SECOND),
        ("m", 60 * NANOS_PER_SECOND),
        ("s", NANOS_PER_SECOND),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    if nanos <= 0 {
        return format!("{nanos}ns");
    }
    let mut out = String::new();
    for (name, size) in UNITS {
        if nanos >= size {
            out.push_str(&format!("{}{}", nanos / size, name));
            nanos %= size;
        }
    }
    out
}

/// Parses a query bound: integer nanoseconds or an RFC 3339 timestamp.
pub fn parse_timestamp(text: &str) -> Result<i64, TimeError> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Ok(n);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .and_then(|t| t.timestamp_nanos_opt())
        .ok_or_else(|| TimeError::BadTimestamp(text.to_string()))
}

/// Parses a query bound that may be relative to `now` (ns): what [`parse_timestamp`]
/// takes, or `now`, `now-D`, `now+D`, or `-D` (short for `now-D`), `D` a duration as
/// [`parse_duration`] reads it. `-5` stays 5 ns before the epoch: a bare number is always
/// nanoseconds.
pub fn parse_time(text: &str, now: i64) -> Result<i64, TimeError> {
    let text = text.trim();
    let relative = |sign: i64, duration: &str| {
        let span = parse_duration(duration).map_err(|_| TimeError::BadTime(text.to_string()))?;
        now.checked_add(sign * span)
            .ok_or_else(|| TimeError::TimeOutOfRange(text.to_string()))
    };
    if text == "now" {
        return Ok(now);
    }
    if let Some(rest) = text.strip_prefix("now") {
        return match (rest.strip_prefix('-'), rest.strip_prefix('+')) {
            (Some(d), _) => relative(-1, d),
            (_, Some(d)) => relative(1, d),
            _ => Err(TimeError::BadTime(text.to_string())),
        };
    }
    match parse_timestamp(text) {
        Ok(t) => Ok(t),
        Err(_) => match text.strip_prefix('-') {
            Some(d) => relative(-1, d),
            None => Err(TimeError::BadTime(text.to_string())),
        },
    }
}

/// Formats nanoseconds as RFC 3339 UTC with as many fraction digits as needed.
pub fn format_rfc3339(nanos: i64) -> String {
    let dt = chrono::DateTime::from_timestamp_nanos(nanos);
    dt.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// The start of the window of width `step` that holds `time`: windows are aligned to
/// multiples of `step` since the Unix epoch, also for times before it.
///
/// `step` must be > 0. For the few times within one step of `i64::MIN` whose window
/// start does not fit an i64, the result saturates at `i64::MIN`.
pub fn window_start(time: i64, step: i64) -> i64 {
    debug_assert!(step > 0);
    time.checked_sub(time.rem_euclid(step)).unwrap_or(i64::MIN)
}

/// Where "now" comes from. Injected so that retention, pre-allocation and rollover are
/// tested by moving a clock, never by sleeping.
pub trait Clock: Send + Sync + 'static {
    /// Nanoseconds since the Unix epoch.
    fn now_nanos(&self) -> i64;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_nanos(&self) -> i64 {
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(nanos: i64) -> Self {
        Self(AtomicI64::new(nanos))
    }
    pub fn set(&self, nanos: i64) {
        self.0.store(nanos, Ordering::SeqCst);
    }
    pub fn advance(&self, nanos: i64) {
        self.0.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_nanos(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(10 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("1m"), Ok(60 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("1h30m"), Ok(5_400 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("250ms"), Ok(250_000_000));
        assert_eq!(parse_duration("1y"), Ok(365 * 86_400 * NANOS_PER_SECOND));
        assert!(matches!(
            parse_duration("0s"),
            Err(TimeError::ZeroDuration(_))
        ));
        for bad in ["", "s", "10", "10x", "-1s", "1.5s", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            parse_timestamp("2016-01-01T00:00:00Z"),
            Ok(1_451_606_400 * NANOS_PER_SECOND)
        );
        assert_eq!(parse_timestamp("-5"), Ok(-5));
        assert!(parse_timestamp("yesterday").is_err());
        assert_eq!(
            format_rfc3339(1_451_606_400 * NANOS_PER_SECOND),
            "2016-01-01T00:00:00Z"
        );
    }

    #[test]
    fn windows_align_before_the_epoch() {
        assert_eq!(window_start(-1, 10), -10);
        assert_eq!(window_start(-10, 10), -10);
        assert_eq!(window_start(19, 10), 10);
        assert_eq!(window_start(i64::MIN, 3), i64::MIN);
    }

    #[test]
    fn times_relative_to_now() {
        let now = 1_700_000_000 * NANOS_PER_SECOND;
        let hour = 3_600 * NANOS_PER_SECOND;
        assert_eq!(parse_time("now", now), Ok(now));
        assert_eq!(parse_time(" now-1h ", now), Ok(now - hour));
        assert_eq!(parse_time("now+1h30m", now), Ok(now + hour + hour / 2));
        assert_eq!(parse_time("-1h", now), Ok(now - hour));
        assert_eq!(parse_time("-5", now), Ok(-5), "a number is nanoseconds");
        assert_eq!(parse_time("10", now), Ok(10));
        assert_eq!(
            parse_time("2016-01-01T00:00:00Z", now),
            Ok(1_451_606_400 * NANOS_PER_SECOND)
        );
        for bad in ["now-", "now*1h", "nowish", "-1x", "yesterday", "", "now-0s"] {
            assert_eq!(
                parse_time(bad, now),
                Err(TimeError::BadTime(bad.trim().to_string())),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_time("now+1y", i64::MAX - 1),
            Err(TimeError::TimeOutOfRange("now+1y".into()))
        );
        let message = parse_time("yesterday", now).unwrap_err().to_string();
        assert!(
            message.contains("now-1h") && message.contains("RFC 3339"),
            "{message}"
        );
    }

    proptest! {
        /// `now-D` and `-D` are the same time, `D` before `now`, and `now+D` as far after.
        #[test]
        fn relative_times_are_now_plus_or_minus_the_duration(
            now in -(1i64 << 60)..(1i64 << 60),
            hours in 1i64..100_000,
        ) {
            let span = hours * 3_600 * NANOS_PER_SECOND;
            prop_assert_eq!(parse_time(&format!("now-{hours}h"), now), Ok(now - span));
            prop_assert_eq!(parse_time(&format!("-{hours}h"), now), Ok(now - span));
            prop_assert_eq!(parse_time(&format!("now+{hours}h"), now), Ok(now + span));
        }
    }

    proptest! {
        #[test]
        fn window_matches_exact_model(t in any::<i64>(), step in 1i64..=i64::MAX) {
            let w = window_start(t, step);
            let exact = t as i128 - (t as i128).rem_euclid(step as i128);
            if exact >= i64::MIN as i128 {
                prop_assert_eq!(w as i128, exact);
            } else {
                prop_assert_eq!(w, i64::MIN);
            }
        }

        #[test]
        fn duration_round_trips(n in 1i64..=i64::MAX / 2) {
            prop_assert_eq!(parse_duration(&format_duration(n)), Ok(n));
        }

        #[test]
        fn precision_scales(v in -1_000_000_000i64..1_000_000_000) {
            prop_assert_eq!(Precision::Seconds.to_nanos(v), Some(v * NANOS_PER_SECOND));
            prop_assert_eq!(Precision::Milliseconds.to_nanos(v), Some(v * 1_000_000));
        }
    }
}
