//! Databases (InfluxDB's `db`, its v2 `bucket`, `/prometheus/db/<name>/`): an [`Engine`]
//! works in one database, its *view*; [`Engine::database`] hands out the engine of another.
//!
//! A database is a namespace of measurement names (`tickertape_core::database`), so the
//! engine maps names at the few places it meets the backend — series keys and selectors
//! ([`Engine::find_stored`], the write path's registration), measurement names (listings,
//! name-store tokens) — and everything above it sees the user's names only. Each view has
//! its own series cache, since a line's text names different series in different
//! databases.
//!
//! Which databases exist is the backend's [`DatabaseCatalog`](tickertape_backend::DatabaseCatalog)
//! list, plus the default database, which always exists. Naming one that does not exist is
//! [`EngineError::UnknownDatabase`] (InfluxDB 1.x's "database not found"), so a typo never
//! makes a new namespace. The list is cached and read again after [`KNOWN_FOR`], or at once
//! when a name is missing from it, so a database another server created is found.

use crate::retention_policies::PolicyCache;
use crate::series_cache::SeriesCache;
use crate::{DeleteReport, Engine, EngineError};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tickertape_backend::{DeleteRange, NameQuery, SeriesInfo};
use tickertape_core::database::{DatabaseName, Namespace};
use tickertape_core::{SeriesKey, SeriesSelector};

/// How long the list of databases read from the backend is trusted.
pub const KNOWN_FOR: Duration = Duration::from_secs(5);

/// The name of the default database unless `serve --default-database` says otherwise
/// (what `SHOW DATABASES` has always listed).
pub const DEFAULT_DATABASE: &str = "tickertape";

/// One database as an engine works in it.
pub(crate) struct View {
    pub(crate) name: DatabaseName,
    pub(crate) namespace: Namespace,
    pub(crate) cache: SeriesCache,
}

impl View {
    fn new(name: DatabaseName, namespace: Namespace) -> Arc<Self> {
        Arc::new(Self {
            name,
            namespace,
            cache: SeriesCache::default(),
        })
    }
}

/// What every view of one engine shares: the default database's name, the views handed
/// out so far (so each database keeps one series cache) and the cached list.
pub(crate) struct Databases {
    default: Arc<View>,
    views: Mutex<HashMap<DatabaseName, Arc<View>>>,
    known: RwLock<Option<(Instant, BTreeSet<DatabaseName>)>>,
    /// Each database's retention policies as last read (`retention_policies.rs`).
    pub(crate) policies: PolicyCache,
}

impl Databases {
    pub(crate) fn new(default_name: DatabaseName) -> Self {
        Self {
            default: View::new(default_name, Namespace::Default),
            views: Mutex::new(HashMap::new()),
            known: RwLock::new(None),
            policies: PolicyCache::default(),
        }
    }

    pub(crate) fn default_view(&self) -> Arc<View> {
        Arc::clone(&self.default)
    }

    fn view(&self, name: &DatabaseName) -> Arc<View> {
        if *name == self.default.name {
            return self.default_view();
        }
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        let view = views
            .entry(name.clone())
            .or_insert_with(|| View::new(name.clone(), Namespace::named(name)));
        Arc::clone(view)
    }

    /// Whether `name` is in a list read less than [`KNOWN_FOR`] ago.
    fn known(&self, name: &DatabaseName) -> bool {
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        known
            .as_ref()
            .is_some_and(|(read_at, names)| read_at.elapsed() < KNOWN_FOR && names.contains(name))
    }

    fn remember(&self, names: &[DatabaseName]) {
        let set = names.iter().cloned().collect();
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), set));
    }

    fn forget(&self) {
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Engine {
    /// Makes `name` the default database's name: a request naming it, or none, works on
    /// the series stored without a database (all of a store's series before databases).
    pub fn with_default_database(mut self, name: &str) -> Result<Self, EngineError> {
        let name = database_name(name)?;
        self.databases = Arc::new(Databases::new(name));
        self.db = self.databases.default_view();
        Ok(self)
    }

    /// The database this engine works in.
    pub fn database_name(&self) -> &DatabaseName {
        &self.db.name
    }

    /// The default database's name.
    pub fn default_database(&self) -> &DatabaseName {
        &self.databases.default.name
    }

    /// The engine of database `name`, sharing everything but the database with this one;
    /// `None` is the default database. Refuses a name that cannot be a database, `""`
    /// included ([`EngineError::BadQuery`]): an empty name is a mistake, not a way to say
    /// "the default". Refuses a name of no database that exists
    /// ([`EngineError::UnknownDatabase`]).
    pub async fn database(&self, name: Option<&str>) -> Result<Engine, EngineError> {
        let name = match name {
            None => return Ok(self.in_view(self.databases.default_view())),
            Some(text) => database_name(text)?,
        };
        if name != self.databases.default.name && !self.database_exists(&name).await? {
            return Err(EngineError::UnknownDatabase(name.to_string()));
        }
        Ok(self.in_view(self.databases.view(&name)))
    }

    fn in_view(&self, view: Arc<View>) -> Engine {
        Engine {
            db: view,
            ..self.clone()
        }
    }

    async fn database_exists(&self, name: &DatabaseName) -> Result<bool, EngineError> {
        if self.databases.known(name) {
            return Ok(true);
        }
        let names = self.backend.databases().await?;
        self.databases.remember(&names);
        Ok(names.contains(name))
    }

    /// Every database, the default one included, sorted by name.
    pub async fn list_databases(&self) -> Result<Vec<DatabaseName>, EngineError> {
        let mut names = self.backend.databases().await?;
        self.databases.remember(&names);
        names.push(self.default_database().clone());
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Creates database `name` (nothing changes if it exists); answers whether it is new.
    pub async fn create_database(&self, name: &str) -> Result<bool, EngineError> {
        let name = database_name(name)?;
        if name == *self.default_database() {
            return Ok(false);
        }
        let created = self.backend.create_database(&name).await?;
        self.databases.forget();
        Ok(created)
    }

    /// Deletes every series of database `name` and then the database itself; the default
    /// database is emptied but stays. A database that does not exist is
    /// [`EngineError::UnknownDatabase`]. Series written to it while it is being dropped
    /// may outlive the drop (unlisted until the database is created again).
    pub async fn drop_database(&self, name: &str) -> Result<DeleteReport, EngineError> {
        let engine = self.database(Some(name)).await?;
        let mut report = DeleteReport::default();
        let every = NameQuery::new("", usize::MAX);
        for measurement in engine.list_measurements(&every).await?.names {
            let selector = SeriesSelector {
                measurement,
                ..SeriesSelector::default()
            };
            let one = engine.delete(&selector, DeleteRange::all()).await?;
            report.series_matched += one.series_matched;
            report.series_removed += one.series_removed;
        }
        if *engine.database_name() != *self.default_database() {
            // The backend drops the database's retention policies with its name.
            self.backend.drop_database(engine.database_name()).await?;
            self.databases.forget();
            self.databases.policies.forget(engine.database_name());
        } else {
            self.forget_retention_policies(engine.database_name())
                .await?;
        }
        tracing::info!(database = %engine.database_name(), series = report.series_removed, "dropped a database");
        Ok(report)
    }

    /// The backend's `find_series` in this database: the selector's measurement mapped
    /// to its stored name, the keys found mapped back.
    pub(crate) async fn find_stored(
        &self,
        selector: &SeriesSelector,
    ) -> Result<Vec<SeriesInfo>, EngineError> {
        let stored = self.db.namespace.stored(&selector.measurement);
        if *stored == selector.measurement {
            return Ok(self.backend.find_series(selector).await?);
        }
        let stored = SeriesSelector {
            measurement: stored.into_owned(),
            ..selector.clone()
        };
        let mut found = self.backend.find_series(&stored).await?;
        for info in &mut found {
            info.key.measurement = selector.measurement.clone();
        }
        Ok(found)
    }

    /// `key` as this database stores it.
    pub(crate) fn stored_key(&self, mut key: SeriesKey) -> SeriesKey {
        if let Cow::Owned(stored) = self.db.namespace.stored(&key.measurement) {
            key.measurement = stored;
        }
        key
    }

    /// The stored name of this database's `measurement`.
    pub(crate) fn stored_measurement<'a>(&self, measurement: &'a str) -> Cow<'a, str> {
        self.db.namespace.stored(measurement)
    }

    pub(crate) fn namespace(&self) -> &Namespace {
        &self.db.namespace
    }
}

/// A user's database name, checked.
fn database_name(text: &str) -> Result<DatabaseName, EngineError> {
    DatabaseName::new(text).map_err(|e| EngineError::BadQuery(e.to_string()))
}
