//! Which databases exist: the names `CREATE DATABASE` made and `DROP DATABASE` has not
//! removed. A database's series are stored under marked measurement names
//! (`tickertape_core::database`), decided by the engine; a backend keeps only this list, so
//! an empty database is listed too. The default database is never stored in the list: it
//! always exists.
//!
//! Beside the list, each database's InfluxDB retention policies (`RetentionPolicies`), the
//! default database's too: absent until a statement sets them (the engine then answers an
//! `autogen` policy from the store's default retention).

use async_trait::async_trait;
use tickertape_core::database::DatabaseName;
use tickertape_core::retention_policy::RetentionPolicies;

use crate::Result;

#[async_trait]
pub trait DatabaseCatalog: Send + Sync {
    /// Every database created and not dropped, sorted by name.
    async fn databases(&self) -> Result<Vec<DatabaseName>>;

    /// Adds `name`, durably once this returns. Answers whether it was new: creating a
    /// database that exists changes nothing and is no error (as in InfluxDB 1.x).
    async fn create_database(&self, name: &DatabaseName) -> Result<bool>;

    /// Removes `name` from the list, and its retention policies, durably once this
    /// returns, and answers whether it was in the list. Only the name and the policies:
    /// the engine deletes the database's series first.
    async fn drop_database(&self, name: &DatabaseName) -> Result<bool>;

    /// The retention policies last set for database `name` (listed or not: the default
    /// database is never listed), `None` if none were set or they were removed.
    async fn retention_policies(&self, name: &DatabaseName) -> Result<Option<RetentionPolicies>>;

    /// Replaces the retention policies of `name` (`None` removes them), durably once this
    /// returns. The whole set at once, so a reader never sees half a change; two servers
    /// changing one database's policies at the same time: the last write wins.
    async fn set_retention_policies(
        &self,
        name: &DatabaseName,
        policies: Option<&RetentionPolicies>,
    ) -> Result<()>;
}
