//! Request parameters of Prometheus' query API, from the request's one reading
//! ([`RequestParams`]: the query string and, for POST, the form body alike); times as
//! Unix seconds or RFC 3339, durations as `5m` or seconds.

use super::error::PromError;
use crate::params::RequestParams;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

/// Every `name=value` of the request (`match[]` repeats); refusals in Prometheus' shape.
pub(crate) struct Params(RequestParams);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = PromError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, PromError> {
        Ok(Self(RequestParams::of(parts).await?))
    }
}

impl Params {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name)
    }

    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0.all(name)
    }

    pub(crate) fn required(&self, name: &str) -> Result<&str, PromError> {
        self.get(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| PromError::bad_data(format!("invalid parameter \"{name}\": missing")))
    }

    /// A time parameter in milliseconds, `default` when absent.
    pub(crate) fn time_or(&self, name: &str, default: i64) -> Result<i64, PromError> {
        match self.get(name).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(text) => parse_time(text).ok_or_else(|| {
                PromError::bad_data(format!(
                    "invalid parameter \"{name}\": cannot parse {text:?} to a valid timestamp"
                ))
            }),
        }
    }

    /// A duration parameter in milliseconds.
    pub(crate) fn duration(&self, name: &str) -> Result<i64, PromError> {
        let text = self.required(name)?;
        parse_duration(text).ok_or_else(|| {
            PromError::bad_data(format!(
                "invalid parameter \"{name}\": cannot parse {text:?} to a valid duration"
            ))
        })
    }
}

/// The earliest and latest times an absent `start`/`end` stands for (Prometheus' own).
pub(crate) const MIN_TIME: i64 = i64::MIN / 2;
pub(crate) const MAX_TIME: i64 = i64::MAX / 2;

/// Now, in milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Unix seconds (fractions rounded to the millisecond) or RFC 3339, in milliseconds.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    if let Ok(seconds) = text.parse::<f64>() {
        let ms = (seconds * 1000.0).round();
        return (ms.is_finite() && ms.abs() < 9.2e18).then_some(ms as i64);
    }
    let nanos = tickertape_core::time::parse_timestamp(text).ok()?;
    Some(nanos.div_euclid(1_000_000))
}

/// `1h30m`, `5m`, `250ms` (core's duration syntax) or seconds as a number, in
/// milliseconds. A zero duration is 0 here: the caller refuses it with its own words.
pub(crate) fn parse_duration(text: &str) -> Option<i64> {
    if let Ok(seconds) = text.parse::<f64>() {
        let ms = (seconds * 1000.0).round();
        return (ms.is_finite() && ms.abs() < 9.2e18).then_some(ms as i64);
    }
    match tickertape_core::time::parse_duration(text) {
        Ok(nanos) => Some(nanos / 1_000_000),
        Err(tickertape_core::time::TimeError::ZeroDuration(_)) => Some(0),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_seconds_or_rfc3339() {
        assert_eq!(parse_time("4"), Some(4000));
        assert_eq!(parse_time("1435781451.781"), Some(1_435_781_451_781));
        assert_eq!(
            parse_time("2015-07-01T20:10:51.781Z"),
            Some(1_435_781_451_781)
        );
        assert_eq!(parse_time("tomorrow"), None);
    }

    #[test]
    fn durations_with_units_or_seconds() {
        assert_eq!(parse_duration("15"), Some(15_000));
        assert_eq!(parse_duration("0.5"), Some(500));
        assert_eq!(parse_duration("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration("250ms"), Some(250));
        assert_eq!(parse_duration("1y"), Some(365 * 86_400_000));
        assert_eq!(parse_duration("0s"), Some(0));
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(parse_duration(""), None);
    }
}
