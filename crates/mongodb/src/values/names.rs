//! Collection names of value partitions and their rollups, and the partition listing.

use mongodb::bson::doc;
use tickertape_backend::Result;

use crate::error::map_err;
use crate::Shared;

/// A value partition collection: `sv.<token>.<start>`.
pub(crate) fn value_collection(token: u64, start: i64) -> String {
    format!("sv.{token}.{start}")
}

/// A rollup partition collection: `sr.<token>.<resolution ns>.<start>`.
pub(crate) fn rollup_collection(token: u64, resolution: i64, start: i64) -> String {
    format!("sr.{token}.{resolution}.{start}")
}

/// A collection of value points (`resolution: None`) or of rollups, as named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PartitionName {
    pub token: u64,
    pub resolution: Option<i64>,
    pub start: i64,
}

impl PartitionName {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        let mut parts = name.split('.');
        let kind = parts.next()?;
        let token = parts.next()?.parse().ok()?;
        let (resolution, start) = match kind {
            "sv" => (None, parts.next()?.parse().ok()?),
            "sr" => (
                Some(parts.next()?.parse().ok()?),
                parts.next()?.parse().ok()?,
            ),
            _ => return None,
        };
        match parts.next() {
            Some(_) => None,
            None => Some(Self {
                token,
                resolution,
                start,
            }),
        }
    }

    pub(crate) fn collection(&self) -> String {
        match self.resolution {
            None => value_collection(self.token, self.start),
            Some(r) => rollup_collection(self.token, r, self.start),
        }
    }
}

impl Shared {
    /// The value and rollup partitions that exist, of one measurement token or of all,
    /// sorted by token, kind (values first), start. One `listCollections`.
    pub(crate) async fn partitions(&self, token: Option<u64>) -> Result<Vec<PartitionName>> {
        let pattern = match token {
            Some(t) => format!("^s[vr]\\.{t}\\."),
            None => "^s[vr]\\.".to_owned(),
        };
        let names = self
            .db
            .list_collection_names()
            .filter(doc! { "name": { "$regex": pattern } })
            .await
            .map_err(|e| map_err("list partitions", e))?;
        let mut out: Vec<PartitionName> = names
            .iter()
            .filter_map(|n| PartitionName::parse(n))
            .collect();
        out.sort();
        Ok(out)
    }

    /// The value partitions of `token` (starts, ascending).
    pub(crate) async fn value_partitions(&self, token: u64) -> Result<Vec<i64>> {
        Ok(self
            .partitions(Some(token))
            .await?
            .into_iter()
            .filter(|p| p.resolution.is_none())
            .map(|p| p.start)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        for name in [
            PartitionName {
                token: 3,
                resolution: None,
                start: -86_400,
            },
            PartitionName {
                token: 0,
                resolution: Some(3_600),
                start: 1_700_000_000,
            },
        ] {
            assert_eq!(PartitionName::parse(&name.collection()), Some(name));
        }
        for stranger in ["sv.x.1", "sv.1", "sv.1.2.3", "bk.1.2", "sr.1.2", "series"] {
            assert_eq!(PartitionName::parse(stranger), None, "{stranger}");
        }
    }
}
