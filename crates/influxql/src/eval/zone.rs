//! `tz('Area/City')`: a statement's time zone, as InfluxDB 1.x applies it. `GROUP BY
//! time()` windows start at local multiples of the interval (a day's window at local
//! midnight), a window that crosses an offset change is longer or shorter by it (23 or 25
//! hours), and times print as RFC 3339 with the zone's offset. The zone database is
//! `chrono-tz`'s, compiled in: nothing is read from the system at run time.

use chrono::{Offset, TimeZone};
use chrono_tz::Tz;

const NANOS: i64 = 1_000_000_000;

/// A zone other than UTC (UTC is no zone: windows and times as without `tz()`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone(Tz);

impl Zone {
    /// The zone `tz('…')` names; `None` for UTC. An unknown name is refused in InfluxDB's
    /// words (`unable to find time zone Mars/Olympus`).
    pub fn parse(name: &str) -> Result<Option<Zone>, String> {
        match name {
            "" | "UTC" | "Etc/UTC" => Ok(None),
            _ => name
                .parse::<Tz>()
                .map(|tz| Some(Zone(tz)))
                .map_err(|_| format!("unable to find time zone {name}")),
        }
    }

    /// The zone's offset from UTC at `ns` (since the epoch), in nanoseconds.
    pub fn offset(self, ns: i64) -> i64 {
        let utc = chrono::DateTime::from_timestamp_nanos(ns).naive_utc();
        let local_minus_utc = self
            .0
            .offset_from_utc_datetime(&utc)
            .fix()
            .local_minus_utc();
        i64::from(local_minus_utc) * NANOS
    }

    /// The start of the `interval` window (shifted by `offset`) that holds `t`: InfluxDB's
    /// `Window()` — truncated in local time, then moved by the offset change between `t`
    /// and that start when the change is shorter than the interval.
    pub fn window_start(self, t: i64, interval: i64, offset: i64) -> i64 {
        let t = t.saturating_sub(offset);
        let zone = self.offset(t);
        let start = t.saturating_sub(t.saturating_add(zone).rem_euclid(interval));
        let change = zone - self.offset(start);
        let start = match change != 0 && change.abs() < interval {
            true => start.saturating_add(change),
            false => start,
        };
        start.saturating_add(offset)
    }

    /// The window after the one starting at `start`: one interval on, moved by an offset
    /// change inside it when the change is shorter than the interval (InfluxDB's fill
    /// iterator steps this way).
    pub fn next_window(self, start: i64, interval: i64) -> i64 {
        let next = start.saturating_add(interval);
        let change = self.offset(start) - self.offset(next - 1);
        match change != 0 && change.abs() < interval {
            true => next.saturating_add(change),
            false => next,
        }
    }

    /// Go's RFC3339Nano in this zone, as InfluxDB prints times under `tz()`:
    /// `2020-10-25T00:00:00+02:00`, `Z` where the offset is zero.
    pub fn rfc3339(self, ns: i64) -> String {
        let local = self.0.timestamp_nanos(ns);
        let whole = local.format("%Y-%m-%dT%H:%M:%S");
        let nanos = ns.rem_euclid(NANOS);
        let fraction = match nanos {
            0 => String::new(),
            n => format!(".{}", format!("{n:09}").trim_end_matches('0')),
        };
        let offset = match self.offset(ns) {
            0 => "Z".to_string(),
            _ => local.format("%:z").to_string(),
        };
        format!("{whole}{fraction}{offset}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3600 * NANOS;
    const DAY: i64 = 24 * HOUR;
    /// 2020-10-25T00:00:00Z: Paris leaves summer time at 01:00Z that day.
    const OCT25: i64 = 1_603_584_000 * NANOS;

    fn paris() -> Zone {
        match Zone::parse("Europe/Paris") {
            Ok(Some(z)) => z,
            other => panic!("Europe/Paris: {other:?}"),
        }
    }

    #[test]
    fn names_utc_and_unknown_zones() {
        assert_eq!(Zone::parse("UTC"), Ok(None));
        assert_eq!(
            Zone::parse("Mars/Olympus"),
            Err("unable to find time zone Mars/Olympus".to_string())
        );
        assert_eq!(paris().offset(OCT25), 2 * HOUR);
        assert_eq!(paris().offset(OCT25 + 2 * HOUR), HOUR);
    }

    #[test]
    fn day_windows_start_at_local_midnight_across_the_change() {
        let z = paris();
        // 25 Oct 00:00 CEST is 24 Oct 22:00Z; the day lasts 25 hours.
        let start = z.window_start(OCT25 + 5 * HOUR, DAY, 0);
        assert_eq!(start, OCT25 - 2 * HOUR);
        assert_eq!(z.next_window(start, DAY), OCT25 + 23 * HOUR);
        assert_eq!(z.window_start(OCT25 + 23 * HOUR, DAY, 0), OCT25 + 23 * HOUR);
        // Hours stay whole hours.
        assert_eq!(z.window_start(OCT25 + HOUR + 5, HOUR, 0), OCT25 + HOUR);
        assert_eq!(z.next_window(OCT25, HOUR), OCT25 + HOUR);
    }

    #[test]
    fn times_print_with_the_offset() {
        let z = paris();
        assert_eq!(z.rfc3339(OCT25 - 2 * HOUR), "2020-10-25T00:00:00+02:00");
        assert_eq!(
            z.rfc3339(OCT25 + 23 * HOUR + 500),
            "2020-10-26T00:00:00.0000005+01:00"
        );
        let london = Zone::parse("Europe/London").ok().flatten();
        assert_eq!(
            london.map(|z| z.rfc3339(OCT25 + 3 * HOUR)).as_deref(),
            Some("2020-10-25T03:00:00Z")
        );
    }
}
