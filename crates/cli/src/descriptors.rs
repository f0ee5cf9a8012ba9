//! How `serve` shares the process's file descriptors (RLIMIT_NOFILE): the embedded store's
//! open part files (`--open-parts`, a bounded cache: other parts are opened when a read
//! needs them), a fixed reserve for everything else (the store's redb file and write-ahead
//! log, MongoDB's connection pool, listeners, the runtime, stdio) and the connections
//! (`--max-connections`). Worked out once, at start, and logged.

/// Descriptors kept for everything but part files and connections.
pub const RESERVED: u64 = 64;
/// Connections the default never goes under, whatever the limit.
const MIN_CONNECTIONS: u64 = 64;
/// The fewest part files kept open by default on a small limit.
const MIN_OPEN_PARTS: u64 = 16;

/// The shares of the descriptor limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The soft RLIMIT_NOFILE; `None` where unknown or unlimited.
    pub limit: Option<u64>,
    /// Part files the embedded store keeps open at most.
    pub open_parts: u64,
    /// Connections served at once.
    pub max_connections: u64,
}

impl Budget {
    /// The shares under `limit`, with what the flags set (`None`: their default).
    /// `open_parts` defaults to `default_open_parts`, or a quarter of the limit when that
    /// is less (at least [`MIN_OPEN_PARTS`]); connections to what the limit leaves after
    /// the open parts and [`RESERVED`], within `MIN_CONNECTIONS..=max_default_connections`.
    pub fn new(
        limit: Option<u64>,
        open_parts: Option<u64>,
        max_connections: Option<u64>,
        (default_open_parts, max_default_connections): (u64, u64),
    ) -> Self {
        let open_parts = open_parts.unwrap_or(match limit {
            Some(limit) => default_open_parts.min(limit / 4).max(MIN_OPEN_PARTS),
            None => default_open_parts,
        });
        let max_connections = max_connections.unwrap_or(match limit {
            Some(limit) => limit
                .saturating_sub(open_parts + RESERVED)
                .clamp(MIN_CONNECTIONS, max_default_connections),
            None => max_default_connections,
        });
        Self {
            limit,
            open_parts,
            max_connections,
        }
    }

    /// Whether the shares add up to more than the limit (past it, opening a part or
    /// accepting a connection fails with "too many open files").
    pub fn beyond_limit(&self) -> bool {
        self.limit
            .is_some_and(|limit| self.open_parts + RESERVED + self.max_connections > limit)
    }
}

/// The shares of this process's limit, with the defaults of the embedded store's open
/// parts and the server's connection cap.
pub fn budget(open_parts: Option<u64>, max_connections: Option<u64>) -> Budget {
    Budget::new(
        descriptor_limit(),
        open_parts,
        max_connections,
        (
            tickertape_embedded::DEFAULT_OPEN_PARTS as u64,
            tickertape_server::DEFAULT_MAX_CONNECTIONS as u64,
        ),
    )
}

/// The process' soft RLIMIT_NOFILE; `None` where unknown or unlimited.
pub fn descriptor_limit() -> Option<u64> {
    #[cfg(target_os = "linux")]
    return rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: (u64, u64) = (256, 10_000);

    #[test]
    fn the_limit_is_shared_between_parts_and_connections() {
        let b = Budget::new(Some(1024), None, None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (256, 1024 - 256 - 64));
        assert!(!b.beyond_limit());
        // A small limit: a quarter for parts, the rest for connections.
        let b = Budget::new(Some(256), None, None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (64, 128));
        assert!(!b.beyond_limit());
        // A large one: connections capped, parts at their default.
        let b = Budget::new(Some(1 << 20), None, None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (256, 10_000));
        // No limit known.
        let b = Budget::new(None, None, None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (256, 10_000));
        assert!(!b.beyond_limit());
    }

    #[test]
    fn flags_win_and_an_overcommit_is_seen() {
        let b = Budget::new(Some(1024), Some(100), None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (100, 1024 - 100 - 64));
        let b = Budget::new(Some(1024), Some(900), Some(500), DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (900, 500));
        assert!(b.beyond_limit());
        // The default never gives fewer than 64 connections, even past the limit.
        let b = Budget::new(Some(100), None, None, DEFAULTS);
        assert_eq!((b.open_parts, b.max_connections), (25, 64));
        assert!(b.beyond_limit());
    }
}
