//! Driver errors mapped to the distinctions callers act on: `Unavailable` (the server cannot
//! be reached or is not able to take writes now: HTTP 503, retry later) and `Storage`
//! (anything else the server refused).

use mongodb::error::{Error, ErrorKind, WriteFailure};
use tickertape_backend::BackendError;

/// Server error codes that mean "not now" rather than "never": elections, shutdowns,
/// network trouble between members, timeouts.
const TRANSIENT_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    64,    // WriteConcernFailed
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

/// Whether a server error code is transient (see [`TRANSIENT_CODES`]).
pub(crate) fn is_transient_code(code: i32) -> bool {
    TRANSIENT_CODES.contains(&code)
}

/// Maps a driver error, with `context` saying what was being done ("reserve slots: …").
pub(crate) fn map_err(context: &str, err: Error) -> BackendError {
    let unavailable = match &*err.kind {
        ErrorKind::ServerSelection { .. }
        | ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::Shutdown => true,
        ErrorKind::Command(c) => is_transient_code(c.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(_)) => true,
        ErrorKind::Write(WriteFailure::WriteError(w)) => is_transient_code(w.code),
        _ => err.contains_label("RetryableWriteError"),
    };
    if unavailable {
        BackendError::Unavailable(format!("mongodb: {context}: {err}"))
    } else {
        BackendError::Storage(format!("mongodb: {context}: {err}"))
    }
}

/// Whether `err` is a duplicate-key error (E11000) from a single-document write.
pub(crate) fn is_duplicate_key(err: &Error) -> bool {
    matches!(&*err.kind, ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == DUPLICATE_KEY)
        || matches!(&*err.kind, ErrorKind::Command(c) if c.code == DUPLICATE_KEY)
}

/// The server's duplicate-key error code.
pub(crate) const DUPLICATE_KEY: i32 = 11000;

/// A stored document that does not have the shape `docs/format/mongodb.md` gives it.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> BackendError {
    BackendError::Corrupt(format!("mongodb: {what}"))
}
