//! Databases: namespaces of series, as InfluxDB 1.x's `db` and its v2 `bucket` name them.
//!
//! A database is not a storage concept: no backend knows it. The engine stores a series of
//! database `app` under the measurement [`MARK`] `app` [`SEPARATOR`] `cpu`, and a series of
//! the default database under its measurement as written. So a store written before
//! databases existed opens with all its data in the default database, and every backend
//! keeps its one contract.
//!
//! Invariant: [`MARK`] (U+10FFFF) sorts after every other character and no measurement of
//! the default database starts with it (the engine refuses such a name), so in any sorted
//! list of stored measurements the default database's come first. A listing of the
//! default database is the store's listing cut at the first marked name; a named
//! database's is the range of names starting with its prefix.

use std::borrow::Cow;
use std::fmt;
use thiserror::Error;

/// Starts every stored measurement of a named database.
pub const MARK: char = '\u{10FFFF}';
/// Ends the database name in a stored measurement.
pub const SEPARATOR: char = '\u{1F}';
/// The longest database name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// A database name a user may give: 1 to 64 ASCII letters, digits, `_`, `-` and `.`, so it
/// fits in a URL path (`/prometheus/db/<name>/`) and a stored measurement unescaped; but
/// not `.` or `..`, which a URL path reads as "this" and "the parent" segment (a client or
/// proxy that normalises `/prometheus/db/../api/v1/write` sends it elsewhere), as InfluxDB
/// refuses them too.
///
/// Every name a user gives goes through [`DatabaseName::new`]: the HTTP parameters and
/// path, InfluxQL's `CREATE DATABASE`, `ON db` and `FROM "db".."m"`, the CLI's `--db`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DatabaseName(String);

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error(
    "invalid database name {0:?}: a database name is 1 to 64 ASCII letters, digits, '_', '-' \
     and '.', other than \".\" and \"..\""
)]
pub struct DatabaseNameError(pub String);

impl DatabaseName {
    pub fn new(name: &str) -> Result<Self, DatabaseNameError> {
        match Self::of_store(name) {
            Ok(_) if matches!(name, "." | "..") => Err(DatabaseNameError(name.to_string())),
            checked => checked,
        }
    }

    /// A name read back from a store's list of databases: [`new`](Self::new)'s rule but
    /// for `.` and `..`, which earlier versions let a user create. A store holding one
    /// still opens and lists it; no request can name it any more.
    pub fn of_store(name: &str) -> Result<Self, DatabaseNameError> {
        let valid = !name.is_empty()
            && name.len() <= MAX_NAME_BYTES
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        match valid {
            true => Ok(Self(name.to_string())),
            false => Err(DatabaseNameError(name.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DatabaseName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a database's series are stored: unmarked (the default database) or under a
/// prefix. Maps measurement names between what users write and what a backend stores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    Default,
    /// `prefix` is [`MARK`], the name, [`SEPARATOR`].
    Named {
        prefix: String,
    },
}

impl Namespace {
    /// The namespace of a database other than the default one.
    pub fn named(name: &DatabaseName) -> Self {
        Self::Named {
            prefix: format!("{MARK}{name}{SEPARATOR}"),
        }
    }

    /// What every stored measurement of this namespace starts with ("" for the default).
    pub fn prefix(&self) -> &str {
        match self {
            Self::Default => "",
            Self::Named { prefix } => prefix,
        }
    }

    /// The stored name of `measurement` of this database. A default-database name
    /// starting with [`MARK`] (which no series of it can have) maps to a name of the
    /// database "", which cannot exist: so it never reads another database's series.
    pub fn stored<'a>(&self, measurement: &'a str) -> Cow<'a, str> {
        match self {
            Self::Default if measurement.starts_with(MARK) => {
                Cow::Owned(format!("{MARK}{SEPARATOR}{measurement}"))
            }
            Self::Default => Cow::Borrowed(measurement),
            Self::Named { prefix } => Cow::Owned(format!("{prefix}{measurement}")),
        }
    }

    /// The user's name of a stored measurement, if it is of this database.
    pub fn user<'a>(&self, stored: &'a str) -> Option<&'a str> {
        match self {
            Self::Default => (!stored.starts_with(MARK)).then_some(stored),
            Self::Named { prefix } => stored.strip_prefix(prefix.as_str()),
        }
    }
}

/// The database (`None`: the default one) and the user's measurement of a stored
/// measurement name, whatever its namespace.
pub fn split_stored(stored: &str) -> (Option<&str>, &str) {
    let Some(rest) = stored.strip_prefix(MARK) else {
        return (None, stored);
    };
    match rest.split_once(SEPARATOR) {
        Some((database, measurement)) => (Some(database), measurement),
        None => (None, stored),
    }
}

/// A stored measurement name as a person reads it: `cpu`, or `cpu (database app)`.
pub fn describe_stored(stored: &str) -> String {
    match split_stored(stored) {
        (None, measurement) => measurement.to_string(),
        (Some(database), measurement) => format!("{measurement} (database {database})"),
    }
}

/// Why `measurement` cannot be written to the default database, if it cannot: a name
/// starting with [`MARK`] would read as another database's (see the module's invariant).
pub fn refuse_measurement(measurement: &str) -> Option<String> {
    measurement.starts_with(MARK).then(|| {
        format!(
            "measurement {measurement:?} starts with U+10FFFF, which tickertape reserves to \
             mark databases"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_checked() {
        for good in [
            "telegraf",
            "home_assistant",
            "_internal",
            "a.b-c",
            "...",
            ".hidden",
            &"x".repeat(64),
        ] {
            assert_eq!(DatabaseName::new(good).map(|d| d.0), Ok(good.to_string()));
        }
        for bad in [
            "",
            ".",
            "..",
            "my db",
            "a/b",
            "é",
            "a\u{1F}",
            &"x".repeat(65),
        ] {
            assert_eq!(
                DatabaseName::new(bad),
                Err(DatabaseNameError(bad.to_string()))
            );
        }
        let message = DatabaseName::new("a/b").unwrap_err().to_string();
        assert!(message.contains("\"a/b\""), "{message}");
        // What an earlier version stored still reads back.
        assert_eq!(DatabaseName::of_store("..").map(|d| d.0), Ok("..".into()));
        assert!(DatabaseName::of_store("a/b").is_err());
    }

    #[test]
    fn default_keeps_names_and_named_prefixes_them() {
        let app = Namespace::named(&DatabaseName::new("app").unwrap());
        assert_eq!(Namespace::Default.stored("cpu"), "cpu");
        assert_eq!(app.stored("cpu"), "\u{10FFFF}app\u{1F}cpu");
        assert_eq!(app.user("\u{10FFFF}app\u{1F}cpu"), Some("cpu"));
        assert_eq!(app.user("cpu"), None);
        assert_eq!(app.user("\u{10FFFF}apps\u{1F}cpu"), None);
        assert_eq!(Namespace::Default.user("\u{10FFFF}app\u{1F}cpu"), None);
        // A default-database name that reads like another database's names none.
        let crafted = Namespace::Default.stored("\u{10FFFF}app\u{1F}cpu");
        assert_eq!(split_stored(&crafted).0, Some(""));
        assert_eq!(app.user(&crafted), None);
        assert_eq!(split_stored("\u{10FFFF}app\u{1F}cpu"), (Some("app"), "cpu"));
        assert_eq!(split_stored("cpu"), (None, "cpu"));
        assert!(refuse_measurement("\u{10FFFF}x").is_some());
        assert!(refuse_measurement("cpu").is_none());
        assert_eq!(
            describe_stored("\u{10FFFF}app\u{1F}cpu"),
            "cpu (database app)"
        );
        assert_eq!(describe_stored("cpu"), "cpu");
    }

    proptest! {
        /// The module's invariant: every measurement of the default database sorts before
        /// every stored measurement of a named one, and names round-trip.
        #[test]
        fn default_names_sort_first_and_round_trip(
            user in "\\PC{0,12}",
            other in "\\PC{0,12}",
            db in "[a-z0-9_.-]{1,8}",
        ) {
            prop_assume!(refuse_measurement(&user).is_none());
            let named = Namespace::named(&DatabaseName::of_store(&db).unwrap());
            let stored = named.stored(&other);
            prop_assert!(user.as_str() < stored.as_ref());
            prop_assert_eq!(named.user(&stored), Some(other.as_str()));
            prop_assert_eq!(split_stored(&stored), (Some(db.as_str()), other.as_str()));
            prop_assert_eq!(Namespace::Default.user(&user), Some(user.as_str()));
            prop_assert_eq!(named.user(&user), None);
        }
    }
}
