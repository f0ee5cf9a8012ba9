//! `tickertape admin shard`: spreading a store's segments over a sharded cluster.
//!
//! Only documented server commands are used (`hello`, `enableSharding`, `shardCollection`),
//! and nothing is changed unless the server is a `mongos`. The shard keys and why they are
//! these are written down in `docs/format/mongodb.md`, "Sharding".

use mongodb::bson::{doc, Document};
use tickertape_backend::{BackendError, Result};

use crate::bucket_layout::collection_name;
use crate::error::map_err;
use crate::Shared;

/// `hello.msg` on a `mongos`, and only there.
const MONGOS_MSG: &str = "isdbgrid";

/// Server error code `AlreadyInitialized`: `enableSharding` on a database that already has
/// sharding enabled (MongoDB < 6.0; later versions accept the command as a no-op).
const ALREADY_INITIALIZED: i32 = 23;

/// The shard key of value and rollup partitions and of bucket partitions: `_id`, which is
/// `{s: <series>, w: <write number>}` for values, the series id for rollups and
/// `{series, start}` for buckets.
///
/// Ranged on the whole `_id`, whose embedded documents compare field by field, so chunks
/// hold runs of one series' documents: seed 003's compound key `{series, time}`. `_id` is
/// immutable and in every fold's and bucket write's filter (a sharded collection accepts an
/// upsert only when its filter holds the full shard key), so those writes stay targeted.
pub fn segments_shard_key() -> Document {
    doc! { "_id": 1 }
}

/// What `shard` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardReport {
    pub database: String,
    /// One line per action, in order, for the operator.
    pub actions: Vec<String>,
}

/// Fails, as [`MongoBackend::shard`] does, unless the server at `uri` is a `mongos`.
/// Changes nothing: for callers that must check before [`MongoBackend::connect`] creates
/// the store's collections.
pub async fn ensure_mongos(uri: &str) -> Result<()> {
    let client = mongodb::Client::with_uri_str(uri)
        .await
        .map_err(|e| BackendError::Invalid(format!("bad MongoDB URI: {e}")))?;
    let hello = client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .map_err(|e| map_err("hello", e));
    client.shutdown().await;
    check_mongos(&hello?, client_db_name(uri))
}

fn client_db_name(uri: &str) -> &str {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let path = rest.split_once('/').map_or("", |(_, p)| p);
    let name = path.split('?').next().unwrap_or("");
    if name.is_empty() {
        crate::DEFAULT_DATABASE
    } else {
        name
    }
}

fn check_mongos(hello: &Document, database: &str) -> Result<()> {
    if hello.get_str("msg").ok() == Some(MONGOS_MSG) {
        return Ok(());
    }
    Err(BackendError::Invalid(format!(
        "the server of database {database} is not a mongos (sharding needs a sharded \
         cluster; connect to one of its mongos routers); nothing was changed"
    )))
}

impl Shared {
    /// Enables sharding on the store's database and shards every value, rollup and bucket
    /// partition collection that exists now on [`segments_shard_key`] (`{_id: 1}`, which for
    /// buckets is `{series, start}`); `series`, `meta`, `counters` and `names` stay on the
    /// primary shard (see `docs/format/mongodb.md`, "Sharding").
    ///
    /// Partitions created later (the next period's shells, a new measurement) start
    /// unsharded on the primary shard: run this again — it is idempotent — after
    /// pre-allocation has created them, e.g. once a day.
    ///
    /// On a server that is not a `mongos` it changes nothing and fails with
    /// [`BackendError::Invalid`] saying so. Running it again on a sharded store is harmless.
    pub async fn shard(&self) -> Result<ShardReport> {
        let name = self.db.name().to_owned();
        let hello = self
            .client
            .database("admin")
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(|e| map_err("hello", e))?;
        check_mongos(&hello, &name)?;
        let admin = self.client.database("admin");
        let mut actions = Vec::new();
        match admin.run_command(doc! { "enableSharding": &name }).await {
            Ok(_) => actions.push(format!("enableSharding {name}: ok")),
            Err(e) if command_code(&e) == Some(ALREADY_INITIALIZED) => {
                actions.push(format!("enableSharding {name}: already enabled"))
            }
            Err(e) => return Err(map_err("enableSharding", e)),
        }
        let value_partitions = self.partitions(None).await?;
        for p in &value_partitions {
            let namespace = format!("{name}.{}", p.collection());
            // `{_id: 1}` is the built-in unique index, so no index has to be built first.
            match admin
                .run_command(doc! { "shardCollection": &namespace, "key": segments_shard_key() })
                .await
            {
                Ok(_) => {}
                Err(e) if command_code(&e) == Some(ALREADY_INITIALIZED) => {}
                Err(e) => return Err(map_err("shardCollection value partition", e)),
            }
        }
        actions.push(format!(
            "shardCollection of {} value and rollup partition collection(s) on {}: ok (run \
             again for partitions created later)",
            value_partitions.len(),
            segments_shard_key()
        ));
        self.shard_bucket_partitions(&name, &mut actions).await?;
        actions.push(format!(
            "{name}.series, .meta, .counters, .names: left unsharded on the primary shard (one small \
             document per series; the unique {{ck: 1}} index must be prefixed by any shard key)"
        ));
        Ok(ShardReport {
            database: name,
            actions,
        })
    }
}

impl Shared {
    /// `shardCollection` on `{_id: 1}` for every bucket partition collection.
    async fn shard_bucket_partitions(&self, name: &str, actions: &mut Vec<String>) -> Result<()> {
        let admin = self.client.database("admin");
        let partitions = self.list_bucket_partitions().await?;
        for p in &partitions {
            let namespace = format!("{name}.{}", collection_name(*p));
            match admin
                .run_command(doc! { "shardCollection": &namespace, "key": segments_shard_key() })
                .await
            {
                Ok(_) => {}
                // Versions before 5.0 refuse a collection that is sharded already.
                Err(e) if command_code(&e) == Some(ALREADY_INITIALIZED) => {}
                Err(e) => return Err(map_err("shardCollection bucket partition", e)),
            }
        }
        actions.push(format!(
            "shardCollection of {} bucket partition collection(s) on {}: ok (run again for \
             partitions created later)",
            partitions.len(),
            segments_shard_key()
        ));
        Ok(())
    }
}

fn command_code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}
