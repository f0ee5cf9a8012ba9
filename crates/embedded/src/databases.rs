//! The database list (`DatabaseCatalog`) in the embedded store: one redb table of names.
//! Changed by the writer in its group transaction, read with a read transaction.

use crate::writer::storage;
use crate::writer::Job;
use crate::EmbeddedBackend;
use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use tickertape_backend::{BackendError, DatabaseCatalog, Result};
use tickertape_core::database::DatabaseName;

/// Database name → nothing: the databases created and not dropped.
pub const DATABASES: TableDefinition<&str, ()> = TableDefinition::new("databases");

/// A change to the list, applied by the writer ([`apply`]).
#[derive(Clone, Debug)]
pub enum DatabaseChange {
    Create(DatabaseName),
    Drop(DatabaseName),
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

/// Applies `change` in the writer's transaction; answers whether it changed the list.
pub fn apply(txn: &WriteTransaction, change: &DatabaseChange) -> Result<bool> {
    let mut table = txn.open_table(DATABASES).map_err(storage)?;
    let changed = match change {
        DatabaseChange::Create(name) => table.insert(name.as_str(), ()).map_err(storage)?.is_none(),
        DatabaseChange::Drop(name) => table.remove(name.as_str()).map_err(storage)?.is_some(),
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
}
