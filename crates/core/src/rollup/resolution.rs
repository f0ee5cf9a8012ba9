//! Resolutions: the slot widths rollups are kept at, and the `raw | <resolution>` choice
//! that retention keys and the `resolution=` query parameter name.

use crate::time::{format_duration, parse_duration, TimeError, NANOS_PER_SECOND};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

const MINUTE_NS: i64 = 60 * NANOS_PER_SECOND;
const HOUR_NS: i64 = 60 * MINUTE_NS;
const DAY_NS: i64 = 24 * HOUR_NS;

/// The longest resolution (and raw sampling interval) tickertape accepts: 364 days, the
/// longest document span of [`BucketGeometry`](super::BucketGeometry). A coarser rollup
/// would hold fewer points than a year has days, which no chart needs.
pub const MAX_RESOLUTION_NS: i64 = 364 * DAY_NS;

/// Why a text is not a resolution.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolutionError {
    #[error(transparent)]
    Duration(#[from] TimeError),
    #[error("resolution {0:?} is longer than the longest supported, 364d")]
    TooLong(String),
}

/// The width of one rollup slot, in nanoseconds: `0 < ns <= MAX_RESOLUTION_NS`.
///
/// Slots of a resolution are aligned to multiples of its width since the Unix epoch, like
/// query windows. Ordered by width, so the coarsest of a set is its maximum. Text form:
/// the shortest exact duration (`1m`, `5m`, `1h`, `1d`, `1h30m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resolution(i64);

impl Resolution {
    pub const MINUTE: Self = Self(MINUTE_NS);
    pub const FIVE_MINUTES: Self = Self(5 * MINUTE_NS);
    pub const HOUR: Self = Self(HOUR_NS);
    pub const DAY: Self = Self(DAY_NS);

    /// The rollups every measurement gets unless its schema says otherwise (the
    /// copies MMS keeps for its zoom levels, `docs/design.md#rollups-at-several-resolutions`),
    /// finest first.
    pub const STANDARD: [Self; 4] = [Self::MINUTE, Self::FIVE_MINUTES, Self::HOUR, Self::DAY];

    /// `None` unless `0 < nanos <= MAX_RESOLUTION_NS`.
    pub const fn new(nanos: i64) -> Option<Self> {
        if nanos > 0 && nanos <= MAX_RESOLUTION_NS {
            Some(Self(nanos))
        } else {
            None
        }
    }

    /// The slot width in nanoseconds.
    pub const fn nanos(self) -> i64 {
        self.0
    }

    /// Parses a duration such as `1m` or `5m` (units as [`parse_duration`]).
    pub fn parse(text: &str) -> Result<Self, ResolutionError> {
        let nanos = parse_duration(text)?;
        Self::new(nanos).ok_or_else(|| ResolutionError::TooLong(text.to_string()))
    }

    /// Whether a window of `step_ns` is an exact union of this resolution's slots.
    pub const fn divides(self, step_ns: i64) -> bool {
        step_ns > 0 && step_ns % self.0 == 0
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

/// Raw points or one rollup resolution: a retention key (`raw = "7d"`, `"1m" = "90d"`) and
/// the value of the `resolution=` query parameter. Raw sorts before every resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResolutionOrRaw {
    Raw,
    Rollup(Resolution),
}

impl ResolutionOrRaw {
    /// `raw`, or a resolution as [`Resolution::parse`].
    pub fn parse(text: &str) -> Result<Self, ResolutionError> {
        if text == "raw" {
            Ok(Self::Raw)
        } else {
            Resolution::parse(text).map(Self::Rollup)
        }
    }

    /// The rollup's resolution; `None` for raw points.
    pub fn rollup(self) -> Option<Resolution> {
        match self {
            Self::Raw => None,
            Self::Rollup(r) => Some(r),
        }
    }
}

impl fmt::Display for ResolutionOrRaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Raw => f.write_str("raw"),
            Self::Rollup(r) => r.fmt(f),
        }
    }
}

impl From<Resolution> for ResolutionOrRaw {
    fn from(r: Resolution) -> Self {
        Self::Rollup(r)
    }
}

/// `FromStr`, `Serialize` and `Deserialize` through the type's `parse` and `Display`, so
/// that configuration files, query parameters and messages spell a value one way.
macro_rules! text_form {
    ($t:ty) => {
        impl FromStr for $t {
            type Err = ResolutionError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

text_form!(Resolution);
text_form!(ResolutionOrRaw);
