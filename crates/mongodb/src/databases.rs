//! The database list (`DatabaseCatalog`) in the `databases` collection, one document per
//! database: `{_id: <name>}`. Written through the store's database handle, so with its
//! write concern: a database `create_database` returned for is as durable as a point.

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use tickertape_backend::{BackendError, Result};
use tickertape_core::database::DatabaseName;

use crate::error::map_err;
use crate::Shared;

pub(crate) const DATABASES: &str = "databases";

impl Shared {
    pub(crate) async fn databases(&self) -> Result<Vec<DatabaseName>> {
        let documents: Vec<Document> = self
            .collection(DATABASES)
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .await
            .map_err(|e| map_err("list databases", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("list databases", e))?;
        documents
            .iter()
            .map(|d| {
                let name = d.get_str("_id").map_err(|_| {
                    BackendError::Corrupt(format!("{DATABASES} document {d}: no string _id"))
                })?;
                DatabaseName::of_store(name)
                    .map_err(|e| BackendError::Corrupt(format!("{DATABASES} document {d}: {e}")))
            })
            .collect()
    }

    /// An upsert, so two servers creating the same database at once both succeed.
    pub(crate) async fn create_database(&self, name: &DatabaseName) -> Result<bool> {
        let result = self
            .collection(DATABASES)
            .update_one(
                doc! { "_id": name.as_str() },
                doc! { "$setOnInsert": { "_id": name.as_str() } },
            )
            .upsert(true)
            .await
            .map_err(|e| map_err("create a database", e))?;
        Ok(result.upserted_id.is_some())
    }

    pub(crate) async fn drop_database(&self, name: &DatabaseName) -> Result<bool> {
        let result = self
            .collection(DATABASES)
            .delete_one(doc! { "_id": name.as_str() })
            .await
            .map_err(|e| map_err("drop a database", e))?;
        Ok(result.deleted_count > 0)
    }
}
