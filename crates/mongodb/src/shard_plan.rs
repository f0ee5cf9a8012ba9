//! The sharding plan: each collection of a store, present and upcoming, with the shard
//! key it gets and why (`tickertape admin shard --plan`). Pure except for the listing:
//! it changes nothing, so it runs on any server.
//!
//! The keys, chosen for spread and routing (`docs/format/mongodb.md`, "Sharding"):
//! - value collections `sv.…`: `{s: "hashed"}`. Every value read and fold write filters on
//!   one series (`s`), so it goes to the one shard holding that series; hashed, so series
//!   ids issued in order (a new fleet of hosts) spread over every shard from their first
//!   point, and the current period's writes with them. The series id names one
//!   measurement's series, so a read of a measurement's series stays targeted in a
//!   collection every measurement shares.
//! - rollup collections `sr.…`: `{s: "hashed"}` (`s` beside the `_id` `{s, p}`), for the
//!   same reasons.
//! - bucket partitions `bk.…`: `{s: "hashed"}` as the values: every bucket read and write
//!   names its series `s` beside the `_id` `{s, b}`.
//! - the fixed collections stay unsharded (each says why).

use std::collections::BTreeSet;

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use serde_json::{json, Value};
use tickertape_backend::{Partition, Result};

use crate::error::map_err;
use crate::naming::PartitionName;
use crate::Shared;

/// One collection of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCollection {
    pub name: String,
    /// The shard key, `None` for a collection that stays unsharded.
    pub key: Option<Document>,
    /// Sharded now (registered in the cluster's `config.collections`).
    pub sharded: bool,
    /// Exists already (upcoming ones are the next period's partitions).
    pub exists: bool,
    pub reason: &'static str,
}

/// What `admin shard --plan` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardPlan {
    pub database: String,
    pub collections: Vec<PlannedCollection>,
}

impl ShardPlan {
    /// `{"database", "collections": [{"name", "key", "sharded", "exists", "reason"}, …]}`.
    pub fn to_json(&self) -> Value {
        let collections: Vec<Value> = self
            .collections
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "key": c.key.as_ref().map(|k| Bson::Document(k.clone()).into_relaxed_extjson()),
                    "sharded": c.sharded,
                    "exists": c.exists,
                    "reason": c.reason,
                })
            })
            .collect();
        json!({ "database": self.database, "collections": collections })
    }
}

/// The shard key of a collection of the store, and why.
pub fn shard_key_of(name: &str) -> (Option<Document>, &'static str) {
    if let Some(p) = PartitionName::parse(name) {
        return match p.resolution {
            None => (
                Some(doc! { "s": "hashed" }),
                "value points of every measurement in one period: every read and fold write \
                 names one series (s), so it goes to the shard holding it; hashed, so series \
                 issued in order spread over every shard, and the current period's writes \
                 with them",
            ),
            Some(_) => (
                Some(doc! { "s": "hashed" }),
                "rollups of every measurement at one resolution: each read and fold write \
                 names one series (s, beside the _id {s, p}); hashed for the same spread as \
                 the values",
            ),
        };
    }
    if name.starts_with(Partition::NAME_PREFIX) {
        return (
            Some(doc! { "s": "hashed" }),
            "bucket documents of one series (s) and start: every read (an _id range of one \
             series) and every write (an _id upsert) also names s, so it goes to the shard \
             holding the series; hashed, so new series spread over every shard",
        );
    }
    let reason = match name {
        "series" => {
            "one small document per series, read by _id; its unique {ck: 1} index (one id per \
             key under concurrent registration) must be prefixed by any shard key"
        }
        "tag_values" | "names" | "measurements" => {
            "one small document per distinct name, not per point: stays on the primary shard"
        }
        "meta" | "counters" | "pending" | "api_tokens" | "databases" => "a handful of documents",
        _ => "not a collection of the store's layout",
    };
    (None, reason)
}

impl Shared {
    /// The plan for every collection that exists and for the next partition of each
    /// value and bucket partition series (the period after the newest one).
    pub(crate) async fn shard_plan(&self) -> Result<ShardPlan> {
        let database = self.db.name().to_owned();
        let mut names: BTreeSet<String> = self
            .db
            .list_collection_names()
            .await
            .map_err(|e| map_err("list collections", e))?
            .into_iter()
            .filter(|n| !n.starts_with("system."))
            .collect();
        let present = names.clone();
        names.extend(self.upcoming_partitions(&present));
        let sharded = self.sharded_collections(&database).await?;
        let collections = names
            .into_iter()
            .map(|name| {
                let (key, reason) = shard_key_of(&name);
                PlannedCollection {
                    sharded: sharded.contains(&name),
                    exists: present.contains(&name),
                    name,
                    key,
                    reason,
                }
            })
            .collect();
        Ok(ShardPlan {
            database,
            collections,
        })
    }

    /// The period after the newest value collection, after the newest rollup collection
    /// of each resolution, and after the newest partition of each bucket family.
    fn upcoming_partitions(&self, present: &BTreeSet<String>) -> Vec<String> {
        let periods = self.layout.periods;
        let mut newest: std::collections::BTreeMap<Option<i64>, i64> = Default::default();
        let mut newest_buckets: std::collections::BTreeMap<String, Partition> = Default::default();
        for name in present {
            if let Some(p) = PartitionName::parse(name) {
                let entry = newest.entry(p.resolution).or_insert(p.start);
                *entry = (*entry).max(p.start);
            } else if let Some(p) = Partition::from_name(name) {
                let key = format!("{:?}", p.family());
                match newest_buckets.get(&key) {
                    Some(q) if q.start() >= p.start() => {}
                    _ => {
                        newest_buckets.insert(key, p);
                    }
                }
            }
        }
        let mut out: Vec<String> = newest
            .into_iter()
            .filter_map(|(resolution, start)| {
                let by = match resolution {
                    None => periods.values(),
                    Some(_) => periods.rollups(),
                };
                let next = by.clamped_end_of(start);
                (next > start).then(|| {
                    PartitionName {
                        resolution,
                        start: next,
                    }
                    .collection()
                })
            })
            .collect();
        for p in newest_buckets.into_values() {
            let width = p.family().geometry().partition_ns();
            if let Some(next) = p.start().checked_add(width) {
                if let Ok(next) = Partition::new(p.family(), next) {
                    out.push(next.name());
                }
            }
        }
        out
    }

    /// The collections of `database` the cluster has sharded (`config.collections`, as
    /// read through a `mongos`); none on any other server, which shards nothing.
    async fn sharded_collections(&self, database: &str) -> Result<BTreeSet<String>> {
        let hello = self
            .client
            .database("admin")
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(|e| map_err("hello", e))?;
        if hello.get_str("msg").ok() != Some("isdbgrid") {
            return Ok(BTreeSet::new());
        }
        let prefix = format!("{database}.");
        let docs: Vec<Document> = self
            .client
            .database("config")
            .collection::<Document>("collections")
            .find(doc! { "_id": { "$regex": format!("^{}", regex_escape(&prefix)) } })
            .await
            .map_err(|e| map_err("read config.collections", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("read config.collections", e))?;
        Ok(docs
            .iter()
            .filter(|d| !matches!(d.get("dropped"), Some(Bson::Boolean(true))))
            .filter_map(|d| d.get_str("_id").ok())
            .filter_map(|id| id.strip_prefix(&prefix).map(str::to_owned))
            .collect())
    }
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c.is_ascii_alphanumeric() || c == '_' {
            true => vec![c],
            false => vec!['\\', c],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_collection_kind_has_its_key() {
        assert_eq!(shard_key_of("sv.0").0, Some(doc! { "s": "hashed" }));
        assert_eq!(shard_key_of("sr.3600.0").0, Some(doc! { "s": "hashed" }));
        assert!(shard_key_of("series").0.is_none());
        assert!(shard_key_of("series").1.contains("ck"));
        assert!(shard_key_of("pending").0.is_none());
    }
}
