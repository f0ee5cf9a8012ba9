//! The name store (`docs/design.md#the-name-store`): user names as small integer tokens.
//!
//! Names are kept in capped documents `{ns, lv, l: [names…]}`; a name's token is the
//! document's `lv` (least value) plus its index in `l`. Tokens are issued once and never
//! change, so every client caches them; the same name in the same namespace gets the same
//! token from every client, across restarts, also when several processes add it at once.

use crate::{BackendError, Result};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Which kind of name a token stands for (not a database's `Namespace`). Each kind numbers
/// its names on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NameKind {
    Measurement,
    TagKey,
    TagValue,
    Field,
}

impl NameKind {
    pub const ALL: [Self; 4] = [Self::Measurement, Self::TagKey, Self::TagValue, Self::Field];

    /// The short stored code of the namespace (`m`, `tk`, `tv`, `f`).
    pub fn code(self) -> &'static str {
        match self {
            Self::Measurement => "m",
            Self::TagKey => "tk",
            Self::TagValue => "tv",
            Self::Field => "f",
        }
    }
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Measurement => "measurement",
            Self::TagKey => "tag key",
            Self::TagValue => "tag value",
            Self::Field => "field",
        })
    }
}

/// Names per name document: a document is full at this many names and the next name
/// opens a new document with `lv` = this one's `lv` + `NAMES_PER_DOCUMENT`.
pub const NAMES_PER_DOCUMENT: usize = 256;

/// The bookkeeping of one `tokenize` call, the same wherever tokens come from (a cache, a
/// lookup, a new issue): each distinct name is asked for once, in the order first seen,
/// and the answer has one token per name of the call, in its order.
///
/// ```
/// # use tickertape_backend::names::TokenRequest;
/// let names = ["cpu", "mem", "cpu"];
/// let mut request = TokenRequest::new(&names);
/// assert_eq!(request.missing(), ["cpu", "mem"]);
/// request.found("mem", 1);
/// request.found("cpu", 0);
/// assert_eq!(request.finish().unwrap(), [0, 1, 0]);
/// ```
pub struct TokenRequest<'a> {
    names: Vec<&'a str>,
    tokens: HashMap<&'a str, Option<u64>>,
}

impl<'a> TokenRequest<'a> {
    pub fn new<S: AsRef<str>>(names: &'a [S]) -> Self {
        let names: Vec<&'a str> = names.iter().map(AsRef::as_ref).collect();
        let tokens = names.iter().map(|&n| (n, None)).collect();
        Self { names, tokens }
    }

    /// The distinct names without a token yet, in the order first seen.
    pub fn missing(&self) -> Vec<&'a str> {
        let mut seen = HashSet::new();
        self.names
            .iter()
            .copied()
            .filter(|n| self.tokens.get(n).is_some_and(Option::is_none) && seen.insert(*n))
            .collect()
    }

    /// Records the token of `name`; a name the request does not hold is ignored.
    pub fn found(&mut self, name: &str, token: u64) {
        if let Some(slot) = self.tokens.get_mut(name) {
            *slot = Some(token);
        }
    }

    /// One token per name of the call, in its order; `Storage` naming the first name that
    /// got none (a backend that issued fewer tokens than it was asked for).
    pub fn finish(self) -> Result<Vec<u64>> {
        self.names
            .iter()
            .map(|n| {
                self.tokens.get(n).copied().flatten().ok_or_else(|| {
                    BackendError::Storage(format!("the name store issued no token for {n:?}"))
                })
            })
            .collect()
    }
}

#[async_trait]
/// The name store: names as tokens and back.
pub trait NameStore: Send + Sync {
    /// The token of each name in `namespace`, issuing tokens for names not seen before
    /// (see the module docs). Tokens are stable forever and the same from every client.
    async fn tokenize(&self, namespace: NameKind, names: &[String]) -> Result<Vec<u64>>;

    /// The names of tokens issued in `namespace` (`None` for a token never issued).
    async fn names_of(&self, namespace: NameKind, tokens: &[u64]) -> Result<Vec<Option<String>>>;
}
