//! Which databases exist: the names `CREATE DATABASE` made and `DROP DATABASE` has not
//! removed. A database's series are stored under marked measurement names
//! (`tickertape_core::database`), decided by the engine; a backend keeps only this list, so
//! an empty database is listed too. The default database is never stored here: it always
//! exists.

use async_trait::async_trait;
use tickertape_core::database::DatabaseName;

use crate::Result;

#[async_trait]
pub trait DatabaseCatalog: Send + Sync {
    /// Every database created and not dropped, sorted by name.
    async fn databases(&self) -> Result<Vec<DatabaseName>>;

    /// Adds `name`, durably once this returns. Answers whether it was new: creating a
    /// database that exists changes nothing and is no error (as in InfluxDB 1.x).
    async fn create_database(&self, name: &DatabaseName) -> Result<bool>;

    /// Removes `name` from the list, durably once this returns, and answers whether it
    /// was there. Only the name: the engine deletes the database's series first.
    async fn drop_database(&self, name: &DatabaseName) -> Result<bool>;
}
