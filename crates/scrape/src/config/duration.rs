//! Prometheus' durations (`15s`, `1m30s`, `2h`, `1d`) in the file, and as it writes them
//! back in the `__scrape_interval__`/`__scrape_timeout__` labels and `/targets`.

use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// A duration read from Prometheus' text form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromDuration(pub Duration);

impl<'de> Deserialize<'de> for PromDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse(&text)
            .map(PromDuration)
            .map_err(serde::de::Error::custom)
    }
}

/// Parses `text` as Prometheus does: numbers each followed by a unit (`y w d h m s ms`,
/// `us` and `ns` taken too), `0` alone allowed.
pub fn parse(text: &str) -> Result<Duration, String> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let ns = tickertape_core::time::parse_duration(text)
        .map_err(|_| format!("not a valid duration string: {text:?}"))?;
    u64::try_from(ns)
        .map(Duration::from_nanos)
        .map_err(|_| format!("not a valid duration string: {text:?}"))
}

/// Prometheus' `model.Duration.String()`: the largest units first, zero parts left out,
/// `0s` for nothing (`90s` → `1m30s`, `1h` → `1h`).
pub fn format(duration: Duration) -> String {
    const UNITS: [(&str, u128); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let mut ms = duration.as_millis();
    if ms == 0 {
        return "0s".to_string();
    }
    let mut text = String::new();
    for (unit, size) in UNITS {
        if ms >= size {
            text.push_str(&(ms / size).to_string());
            text.push_str(unit);
            ms %= size;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_prometheus_durations() {
        for (text, secs) in [("15s", 15), ("1m", 60), ("1m30s", 90), ("2h", 7200)] {
            assert_eq!(parse(text).unwrap(), Duration::from_secs(secs), "{text}");
            assert_eq!(format(Duration::from_secs(secs)), text);
        }
        assert_eq!(format(Duration::from_millis(1500)), "1s500ms");
        assert_eq!(format(Duration::from_secs(86_400)), "1d");
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert!(parse("15").is_err());
        assert!(parse("-1s").is_err());
        assert!(parse("").is_err());
    }
}
