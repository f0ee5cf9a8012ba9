//! The name store (DESIGN §3, seed 002): user names as small integer tokens.
//!
//! Names are kept in capped documents `{ns, lv, l: [names…]}`; a name's token is the
//! document's `lv` (least value) plus its index in `l`. Tokens are issued once and never
//! change, so every client caches them; the same name in the same namespace gets the same
//! token from every client, across restarts, also when several processes add it at once.

use std::fmt;

/// Which kind of name a token stands for. Each namespace numbers its names on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NameSpace {
    Measurement,
    TagKey,
    TagValue,
    Field,
}

impl NameSpace {
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

impl fmt::Display for NameSpace {
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
