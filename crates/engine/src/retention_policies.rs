//! InfluxDB's retention policies of the engine's database
//! (`tickertape_core::retention_policy`): read from the backend's `DatabaseCatalog`,
//! changed whole under one lock per engine, and what they say of how long the database's
//! raw points are kept, which the retention pass asks ([`Engine::policy_retentions`]).
//!
//! A database whose policies were never set has InfluxDB's `autogen`, keeping points as
//! long as the store's default raw retention (`[defaults]`, `--retention`) says: it is
//! answered, not stored, so such a database follows the store's defaults as they change;
//! the first change stores it with the change.
//!
//! The policies are cached per database for [`KNOWN_FOR`] (a write naming `rp` checks
//! them), dropped at once by a change made through this engine; another server's change
//! is seen within that time.

use crate::databases::KNOWN_FOR;
use crate::{Engine, EngineError};
use std::collections::HashMap;
use std::time::Instant;
use tickertape_core::database::DatabaseName;
use tickertape_core::retention_policy::{
    PolicyError, PolicyRetention, PolicySpec, RetentionPolicies,
};
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;

/// The policies read for each database, with when they were read (`None`: never set).
#[derive(Default)]
pub(crate) struct PolicyCache {
    read: std::sync::Mutex<HashMap<DatabaseName, (Instant, Option<RetentionPolicies>)>>,
    /// Held across a change's read, change and write, so two statements of this server
    /// never lose one another's change.
    pub(crate) changing: tokio::sync::Mutex<()>,
}

impl PolicyCache {
    fn get(&self, name: &DatabaseName) -> Option<Option<RetentionPolicies>> {
        let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        let (at, policies) = read.get(name)?;
        (at.elapsed() < KNOWN_FOR).then(|| policies.clone())
    }

    fn put(&self, name: &DatabaseName, policies: Option<RetentionPolicies>) {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        read.insert(name.clone(), (Instant::now(), policies));
    }

    pub(crate) fn forget(&self, name: &DatabaseName) {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        read.remove(name);
    }
}

impl Engine {
    /// This database's retention policies: as set, or `autogen` keeping points for the
    /// store's default raw retention where none were set.
    pub async fn retention_policies(&self) -> Result<RetentionPolicies, EngineError> {
        let stored = self.stored_policies(self.database_name()).await?;
        Ok(stored.unwrap_or_else(|| self.implicit_policies()))
    }

    /// Refuses a policy this database does not have: `rp` (a write's or a query's
    /// `rp=`, a source's `"rp"."m"`), or the default one for `None`, which may have been
    /// dropped. InfluxDB's `retention policy not found: <name>`.
    pub async fn check_retention_policy(&self, rp: Option<&str>) -> Result<(), EngineError> {
        let rp = rp.filter(|rp| !rp.is_empty());
        self.retention_policies().await?.resolve(rp)?;
        Ok(())
    }

    /// Applies `change` to this database's policies and stores the result, one change
    /// at a time per engine; a refused change stores nothing.
    pub async fn change_retention_policies<T>(
        &self,
        change: impl FnOnce(&mut RetentionPolicies) -> Result<T, PolicyError>,
    ) -> Result<T, EngineError> {
        let _one_at_a_time = self.databases.policies.changing.lock().await;
        let name = self.database_name().clone();
        self.databases.policies.forget(&name);
        let mut policies = self.retention_policies().await?;
        let answer = change(&mut policies)?;
        self.backend
            .set_retention_policies(&name, Some(&policies))
            .await?;
        self.databases.policies.forget(&name);
        tracing::info!(database = %name, "retention policies changed");
        Ok(answer)
    }

    /// `CREATE DATABASE name WITH …`: the database with `spec` as its one, default
    /// policy; for one that exists, no error if it has that policy as its default, else
    /// InfluxDB's conflict. Answers whether the database is new.
    pub async fn create_database_with(
        &self,
        name: &str,
        spec: &PolicySpec,
    ) -> Result<bool, EngineError> {
        let created_with = RetentionPolicies::created_with(spec)?;
        let engine = match self.database(Some(name)).await {
            Ok(engine) => engine,
            Err(EngineError::UnknownDatabase(_)) => {
                self.create_database(name).await?;
                let engine = self.database(Some(name)).await?;
                engine
                    .change_retention_policies(|policies| {
                        *policies = created_with;
                        Ok(())
                    })
                    .await?;
                return Ok(true);
            }
            Err(e) => return Err(e),
        };
        engine.retention_policies().await?.recreated_with(spec)?;
        Ok(false)
    }

    /// What each database's policies say of its raw retention, by database name; the
    /// databases whose policies were never set are left out (the store's defaults hold).
    pub(crate) async fn policy_retentions(
        &self,
    ) -> Result<HashMap<DatabaseName, PolicyRetention>, EngineError> {
        let mut out = HashMap::new();
        for name in self.list_databases().await? {
            if let Some(policies) = self.stored_policies(&name).await? {
                out.insert(name, policies.raw_retention());
            }
        }
        Ok(out)
    }

    /// What this database's policies say of its raw retention.
    pub(crate) async fn policy_retention(&self) -> Result<PolicyRetention, EngineError> {
        let stored = self.stored_policies(self.database_name()).await?;
        Ok(stored.map_or(PolicyRetention::Unset, |p| p.raw_retention()))
    }

    /// The store's schema as it holds in this database: raw retention as its default
    /// policy leaves it ([`Schema::under_policy`]).
    pub async fn schema_in_force(&self) -> Result<Schema, EngineError> {
        Ok(self.schema.under_policy(self.policy_retention().await?))
    }

    /// Removes the policies of `name` (a dropped default database keeps none).
    pub(crate) async fn forget_retention_policies(
        &self,
        name: &DatabaseName,
    ) -> Result<(), EngineError> {
        let _one_at_a_time = self.databases.policies.changing.lock().await;
        self.backend.set_retention_policies(name, None).await?;
        self.databases.policies.forget(name);
        Ok(())
    }

    async fn stored_policies(
        &self,
        name: &DatabaseName,
    ) -> Result<Option<RetentionPolicies>, EngineError> {
        if let Some(known) = self.databases.policies.get(name) {
            return Ok(known);
        }
        let stored = self.backend.retention_policies(name).await?;
        self.databases.policies.put(name, stored.clone());
        Ok(stored)
    }

    /// `autogen`, keeping points as the store's defaults keep an unlisted measurement's.
    fn implicit_policies(&self) -> RetentionPolicies {
        let raw = self.schema.defaults.retention_ns(ResolutionOrRaw::Raw);
        RetentionPolicies::autogen(raw.unwrap_or(0))
    }
}
