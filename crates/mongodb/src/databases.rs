//! The database list (`DatabaseCatalog`) in the `databases` collection, one document per
//! database: `{_id: <name>}`; and one per database with retention policies, the default
//! database's included: `{_id: {rp: <name>}, p: [{n, d, sg, r}, …], df: <default>}` (a
//! document `_id`, so the list, which reads string `_id`s, never sees it). Written through
//! the store's database handle, so with its write concern: a database `create_database`
//! returned for is as durable as a point.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{BackendError, Result};
use tickertape_core::database::DatabaseName;
use tickertape_core::retention_policy::RetentionPolicies;

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
            .filter(|d| !matches!(d.get("_id"), Some(Bson::Document(_))))
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
        self.set_retention_policies(name, None).await?;
        Ok(result.deleted_count > 0)
    }

    pub(crate) async fn retention_policies(
        &self,
        name: &DatabaseName,
    ) -> Result<Option<RetentionPolicies>> {
        let found = self
            .collection(DATABASES)
            .find_one(policies_id(name))
            .await
            .map_err(|e| map_err("read retention policies", e))?;
        let Some(mut document) = found else {
            return Ok(None);
        };
        document.remove("_id");
        mongodb::bson::from_document(document)
            .map(Some)
            .map_err(|e| BackendError::Corrupt(format!("{DATABASES}, policies of {name}: {e}")))
    }

    /// One replacing upsert (or a delete): a reader sees the old set or the new one.
    pub(crate) async fn set_retention_policies(
        &self,
        name: &DatabaseName,
        policies: Option<&RetentionPolicies>,
    ) -> Result<()> {
        let collection = self.collection(DATABASES);
        let Some(policies) = policies else {
            collection
                .delete_one(policies_id(name))
                .await
                .map_err(|e| map_err("remove retention policies", e))?;
            return Ok(());
        };
        let mut document = mongodb::bson::to_document(policies)
            .map_err(|e| BackendError::Invalid(format!("retention policies of {name}: {e}")))?;
        document.insert("_id", doc! { "rp": name.as_str() });
        collection
            .replace_one(policies_id(name), document)
            .upsert(true)
            .await
            .map_err(|e| map_err("set retention policies", e))?;
        Ok(())
    }
}

/// The filter of the document holding `name`'s retention policies.
fn policies_id(name: &DatabaseName) -> Document {
    doc! { "_id": { "rp": name.as_str() } }
}
