//! API tokens: what a token may do ([`Scope`], [`Scopes`]) and how it is kept ([`TokenHash`],
//! [`TokenRecord`]).
//!
//! A token is a random secret handed to its owner once. A store keeps only its SHA-256
//! ([`TokenHash`]): the secrets carry 192 random bits, so a fast hash is enough (a slow
//! password hash protects guessable secrets, and these are not guessable), and a stolen
//! token file or collection reveals no usable token.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// What a request needs: reading data, writing data, or operating the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Queries, listings, the dashboard, `/metrics`.
    Read,
    /// Writes: line protocol, Prometheus remote write.
    Write,
    /// Operations on the store (compaction, snapshots, deletion); implies read and write.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {0:?}: expected read, write or admin")]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|s| s.as_str() == text.trim())
            .ok_or_else(|| UnknownScope(text.to_string()))
    }
}

/// The scopes one token holds. Never empty: built by [`Scopes::new`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Scope>", into = "Vec<Scope>")]
pub struct Scopes(Vec<Scope>);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a token needs at least one scope (read, write or admin)")]
pub struct NoScope;

impl Scopes {
    /// The scopes given, sorted and without repeats; refused when there are none.
    pub fn new(scopes: impl IntoIterator<Item = Scope>) -> Result<Self, NoScope> {
        let mut scopes: Vec<Scope> = scopes.into_iter().collect();
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() {
            return Err(NoScope);
        }
        Ok(Self(scopes))
    }

    /// Whether a request that needs `needed` may go on: `admin` allows everything, the
    /// other scopes only themselves (a `write` token for Telegraf cannot read).
    pub fn allow(&self, needed: Scope) -> bool {
        self.0.contains(&Scope::Admin) || self.0.contains(&needed)
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }
}

impl TryFrom<Vec<Scope>> for Scopes {
    type Error = NoScope;

    fn try_from(scopes: Vec<Scope>) -> Result<Self, NoScope> {
        Self::new(scopes)
    }
}

impl From<Scopes> for Vec<Scope> {
    fn from(scopes: Scopes) -> Self {
        scopes.0
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        f.write_str(&names.join(","))
    }
}

/// The SHA-256 of a token's secret, as 64 lowercase hex digits: what a store keeps.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TokenHash(String);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a token hash is 64 lowercase hex digits, not {0:?}")]
pub struct BadTokenHash(pub String);

impl TokenHash {
    /// The hash of the secret a client presented.
    pub fn of(secret: &str) -> Self {
        let digest = Sha256::digest(secret.as_bytes());
        Self(hex(&digest))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The short name `list` and `revoke` use: the hash's first 12 digits (48 bits: two
    /// tokens of one store share one by a 1 in 10^14 chance per pair, and `revoke` would
    /// then remove both, which is safe).
    pub fn id(&self) -> &str {
        &self.0[..12]
    }
}

impl TryFrom<String> for TokenHash {
    type Error = BadTokenHash;

    fn try_from(text: String) -> Result<Self, BadTokenHash> {
        let valid = text.len() == 64
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if valid {
            Ok(Self(text))
        } else {
            Err(BadTokenHash(text))
        }
    }
}

impl From<TokenHash> for String {
    fn from(hash: TokenHash) -> Self {
        hash.0
    }
}

/// The prefix every secret starts with, so a token is recognizable in a config file or a
/// leaked log (secret scanners match on it).
pub const TOKEN_PREFIX: &str = "tt_";

/// A secret from 24 random bytes: `tt_` and 48 hex digits.
pub fn token_secret(random: [u8; 24]) -> String {
    format!("{TOKEN_PREFIX}{}", hex(&random))
}

/// One stored token: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// A name for people (`--name`), not necessarily unique; may be empty.
    pub name: String,
    pub scopes: Scopes,
    pub hash: TokenHash,
    /// When it was made, ns since the epoch.
    pub created: i64,
}

impl TokenRecord {
    pub fn id(&self) -> &str {
        self.hash.id()
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_everything_and_the_others_only_themselves() {
        let admin = Scopes::new([Scope::Admin]).unwrap();
        let write = Scopes::new([Scope::Write]).unwrap();
        let read_write = Scopes::new([Scope::Write, Scope::Read, Scope::Write]).unwrap();
        for s in Scope::ALL {
            assert!(admin.allow(s));
        }
        assert!(write.allow(Scope::Write));
        assert!(!write.allow(Scope::Read));
        assert!(!write.allow(Scope::Admin));
        assert!(read_write.allow(Scope::Read) && read_write.allow(Scope::Write));
        assert!(!read_write.allow(Scope::Admin));
        assert_eq!(read_write.to_string(), "read,write");
        assert_eq!(Scopes::new([]), Err(NoScope));
    }

    #[test]
    fn scopes_parse_by_name_and_refuse_others() {
        assert_eq!("admin".parse::<Scope>(), Ok(Scope::Admin));
        assert_eq!(" read".parse::<Scope>(), Ok(Scope::Read));
        assert_eq!(
            "root".parse::<Scope>(),
            Err(UnknownScope("root".to_string()))
        );
    }

    /// The SHA-256 test vector of "abc" (FIPS 180-2), so the stored hashes are the standard
    /// digest any other tool computes.
    #[test]
    fn the_hash_is_sha256_in_hex() {
        let hash = TokenHash::of("abc");
        assert_eq!(
            hash.as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hash.id(), "ba7816bf8f01");
        assert!(TokenHash::try_from("BA78".to_string()).is_err());
        assert_eq!(
            TokenHash::try_from(hash.as_str().to_string()),
            Ok(hash.clone())
        );
    }

    #[test]
    fn a_secret_is_the_prefix_and_48_hex_digits() {
        let secret = token_secret([0xab; 24]);
        assert_eq!(secret.len(), 3 + 48);
        assert!(secret.starts_with("tt_abab"));
    }

    #[test]
    fn a_record_round_trips_through_json_and_refuses_no_scopes() {
        let record = TokenRecord {
            name: "telegraf".into(),
            scopes: Scopes::new([Scope::Write]).unwrap(),
            hash: TokenHash::of("tt_x"),
            created: 5,
        };
        let json = serde_json::to_string(&record).unwrap();
        assert!(json.contains(r#""scopes":["write"]"#), "{json}");
        let back: TokenRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record);
        let empty = json.replace(r#"["write"]"#, "[]");
        assert!(serde_json::from_str::<TokenRecord>(&empty).is_err());
    }
}
