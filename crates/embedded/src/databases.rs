//! The database list (`DatabaseCatalog`) in the embedded store: one redb table of names,
//! and one of each database's retention policies (their serde form as JSON). Changed by
//! the writer in its group transaction, read with a read transaction.

use crate::writer::storage;
use crate::writer::Job;
use crate::EmbeddedBackend;
use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use tickertape_backend::{BackendError, DatabaseCatalog, Result};
use tickertape_core::database::DatabaseName;
use tickertape_core::retention_policy::RetentionPolicies;

/// Database name → nothing: the databases created and not dropped.
pub const DATABASES: TableDefinition<&str, ()> = TableDefinition::new("databases");

/// Database name → its retention policies, `RetentionPolicies` as JSON (a table of its
/// own: the default database has policies but is never in [`DATABASES`]).
pub const RETENTION_POLICIES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("retention_policies");

/// A change to the list, applied by the writer ([`apply`]).
#[derive(Clone, Debug)]
pub enum DatabaseChange {
    Create(DatabaseName),
    /// The name and its policies.
    Drop(DatabaseName),
    /// A database's policies replaced (`None`: removed), as JSON.
    SetPolicies(DatabaseName, Option<Vec<u8>>),
}

/// Every database in the table, sorted (redb keeps `&str` keys in byte order).
pub fn list(db: &Database) -> Result<Vec<DatabaseName>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = match txn.open_table(DATABASES) {
        Ok(table) => table,
        // A store no database was ever created in has no table yet.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(storage(e)),
    };
    let mut names = Vec::new();
    for entry in table.iter().map_err(storage)? {
        let (name, _) = entry.map_err(storage)?;
        let name = DatabaseName::of_store(name.value())
            .map_err(|e| BackendError::Corrupt(format!("table {DATABASES}: {e}")))?;
        names.push(name);
    }
    Ok(names)
}

/// The retention policies of `name`, if set.
pub fn policies(db: &Database, name: &DatabaseName) -> Result<Option<RetentionPolicies>> {
    let txn = db.begin_read().map_err(storage)?;
    let table = match txn.open_table(RETENTION_POLICIES) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(storage(e)),
    };
    let Some(bytes) = table.get(name.as_str()).map_err(storage)? else {
        return Ok(None);
    };
    serde_json::from_slice(bytes.value())
        .map(Some)
        .map_err(|e| BackendError::Corrupt(format!("table {RETENTION_POLICIES}, {name}: {e}")))
}

/// Applies `change` in the writer's transaction; answers whether it changed the list.
pub fn apply(txn: &WriteTransaction, change: &DatabaseChange) -> Result<bool> {
    let mut table = txn.open_table(DATABASES).map_err(storage)?;
    let mut policies = txn.open_table(RETENTION_POLICIES).map_err(storage)?;
    let changed = match change {
        DatabaseChange::Create(name) => table.insert(name.as_str(), ()).map_err(storage)?.is_none(),
        DatabaseChange::Drop(name) => {
            policies.remove(name.as_str()).map_err(storage)?;
            table.remove(name.as_str()).map_err(storage)?.is_some()
        }
        DatabaseChange::SetPolicies(name, Some(bytes)) => {
            policies
                .insert(name.as_str(), bytes.as_slice())
                .map_err(storage)?;
            false
        }
        DatabaseChange::SetPolicies(name, None) => {
            policies.remove(name.as_str()).map_err(storage)?;
            false
        }
    };
    Ok(changed)
}

#[async_trait]
impl DatabaseCatalog for EmbeddedBackend {
    async fn databases(&self) -> Result<Vec<DatabaseName>> {
        self.read(list).await
    }

    async fn create_database(&self, name: &DatabaseName) -> Result<bool> {
        let change = DatabaseChange::Create(name.clone());
        self.submit(|reply| Job::Database { change, reply }).await
    }

    async fn drop_database(&self, name: &DatabaseName) -> Result<bool> {
        let change = DatabaseChange::Drop(name.clone());
        self.submit(|reply| Job::Database { change, reply }).await
    }

    async fn retention_policies(&self, name: &DatabaseName) -> Result<Option<RetentionPolicies>> {
        let name = name.clone();
        self.read(move |db| policies(db, &name)).await
    }

    async fn set_retention_policies(
        &self,
        name: &DatabaseName,
        policies: Option<&RetentionPolicies>,
    ) -> Result<()> {
        let bytes = policies
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| BackendError::Invalid(format!("retention policies of {name}: {e}")))?;
        let change = DatabaseChange::SetPolicies(name.clone(), bytes);
        self.submit(|reply| Job::Database { change, reply })
            .await
            .map(|_| ())
    }
}
