//! `tickertape admin shard`: spreading a store's segments over a sharded cluster.
//!
//! Only documented server commands are used (`hello`, `enableSharding`, `shardCollection`),
//! and nothing is changed unless the server is a `mongos`. The shard keys and why they are
//! these are written down in `docs/format/mongodb.md`, "Sharding".

use mongodb::bson::{doc, Document};
use tickertape_backend::{BackendError, Result};

use crate::error::map_err;
use crate::Shared;

/// `hello.msg` on a `mongos`, and only there.
const MONGOS_MSG: &str = "isdbgrid";

/// Server error code `AlreadyInitialized`: `enableSharding` on a database that already has
/// sharding enabled (MongoDB < 6.0; later versions accept the command as a no-op).
const ALREADY_INITIALIZED: i32 = 23;

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
    /// Enables sharding on the store's database and shards every collection of the plan
    /// ([`crate::shard_plan`]) that has a key and is not sharded yet, the next period's
    /// partitions included (created by the command, so their first write already lands on
    /// a sharded collection); the fixed collections stay on the primary shard (see
    /// `docs/format/mongodb.md`, "Sharding"). Idempotent.
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
        let plan = self.shard_plan().await?;
        let mut count = 0;
        for c in &plan.collections {
            let Some(key) = c.key.as_ref().filter(|_| !c.sharded) else {
                if c.key.is_none() {
                    actions.push(format!("{name}.{}: left unsharded ({})", c.name, c.reason));
                }
                continue;
            };
            self.shard_collection(&name, &c.name, key, c.exists).await?;
            count += 1;
        }
        actions.push(format!(
            "shardCollection of {count} collection(s), upcoming partitions included: ok (run \
             again, or let `serve` do it, for partitions created later)"
        ));
        Ok(ShardReport {
            database: name,
            actions,
        })
    }
}

impl Shared {
    /// `shardCollection` of one collection on `key`. A hashed key needs its index first on
    /// a collection that holds documents; a collection that does not exist yet is created
    /// by the command itself, already sharded.
    async fn shard_collection(
        &self,
        database: &str,
        collection: &str,
        key: &Document,
        exists: bool,
    ) -> Result<()> {
        let hashed = key.values().any(|v| v.as_str() == Some("hashed"));
        if hashed && exists {
            let index = mongodb::IndexModel::builder().keys(key.clone()).build();
            self.collection(collection)
                .create_index(index)
                .await
                .map_err(|e| map_err(&format!("create the shard key index of {collection}"), e))?;
        }
        let namespace = format!("{database}.{collection}");
        match self
            .client
            .database("admin")
            .run_command(doc! { "shardCollection": &namespace, "key": key.clone() })
            .await
        {
            Ok(_) => Ok(()),
            // Versions before 5.0 refuse a collection that is sharded already.
            Err(e) if command_code(&e) == Some(ALREADY_INITIALIZED) => Ok(()),
            Err(e) => Err(map_err(&format!("shardCollection {namespace}"), e)),
        }
    }
}

fn command_code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}
