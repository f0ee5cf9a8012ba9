//! Scraping (`serve --scrape-config prometheus.yml`): the server scrapes the targets of
//! a Prometheus 2.x configuration and stores what they expose through the write path of
//! remote write. What to scrape and how is decided without I/O in `tickertape_scrape`;
//! here are the loops that do it.
//!
//! - [`Scraping`]: the running configuration; `reload` (SIGHUP, `POST /-/reload`) reads
//!   the file again and restarts only the jobs whose configuration changed.
//! - `job.rs`: one job's discovery (`static_configs`, `file_sd_configs` re-read when a
//!   file changes and every `refresh_interval`) and its targets' loops.
//! - `target_loop.rs`: one target, scraped at its fixed offset in each interval.
//! - `fetch.rs`: the HTTP request, `tls.rs` its TLS settings; `append.rs`: the samples into the store, stale
//!   markers and the series the scrape adds (`up`, …).
//! - `api.rs`: `/prometheus/api/v1/targets` in Prometheus' shape, and `/-/reload`.

pub mod api;
mod append;
mod fetch;
mod job;
mod target_loop;
mod tls;

use job::RunningJob;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tickertape_core::database::DatabaseName;
use tickertape_engine::Engine;
use tickertape_scrape::{ScrapeFile, ScrapeJob};

pub use job::{Health, TargetStatus};

#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("cannot read the scrape config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(#[from] tickertape_scrape::ConfigError),
    #[error("scrape config: job {job:?}: tls_config: {message}")]
    Tls { job: String, message: String },
    #[error("scrape config: job {job:?}: database {database:?}: {message}")]
    Database {
        job: String,
        database: String,
        message: String,
    },
}

/// Where the configuration comes from and where samples go.
#[derive(Clone, Debug)]
pub struct ScrapeOptions {
    /// The Prometheus configuration file.
    pub config_path: PathBuf,
    /// The database of a job without its own `database` key (`--scrape-database`);
    /// `None`: the default database.
    pub database: Option<String>,
}

/// The running scrape configuration; cloning shares it.
#[derive(Clone)]
pub struct Scraping {
    shared: Arc<Shared>,
}

struct Shared {
    engine: Engine,
    options: ScrapeOptions,
    /// The jobs running; held across a whole reload, so reloads never interleave.
    jobs: tokio::sync::Mutex<Vec<RunningJob>>,
    /// What `/targets` shows: each job's view, in the file's order.
    views: std::sync::RwLock<Vec<Arc<job::JobView>>>,
}

impl std::fmt::Debug for Scraping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scraping")
            .field("config", &self.shared.options.config_path)
            .finish()
    }
}

impl Scraping {
    /// Reads the configuration and starts scraping. Refuses a configuration it cannot
    /// take (a key it does not know, a database that does not exist, a TLS file that
    /// cannot be read), naming what.
    pub async fn start(engine: Engine, options: ScrapeOptions) -> Result<Self, ScrapeError> {
        let scraping = Scraping {
            shared: Arc::new(Shared {
                engine,
                options,
                jobs: tokio::sync::Mutex::new(Vec::new()),
                views: std::sync::RwLock::new(Vec::new()),
            }),
        };
        scraping.reload().await?;
        Ok(scraping)
    }

    /// Reads the file again: a job whose configuration is unchanged keeps running (and
    /// its targets their series); a removed or changed one is stopped (stale markers for
    /// its targets' series) and the new one started. A file that cannot be taken changes
    /// nothing and is the error.
    pub async fn reload(&self) -> Result<(), ScrapeError> {
        let mut running = self.shared.jobs.lock().await;
        let file = self.read().await?;
        let mut started = Vec::with_capacity(file.jobs.len());
        for job in &file.jobs {
            let engine = self.engine_of(job).await?;
            started.push((job, engine, fetch::client(job)?));
        }
        let seed = tickertape_scrape::target::offset_seed(
            file.global
                .external_labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let mut kept = Vec::with_capacity(started.len());
        // Jobs whose configuration changed or went are stopped first (their stale
        // markers written), then the new ones started.
        let (mut old, stopping): (Vec<RunningJob>, Vec<RunningJob>) = std::mem::take(&mut *running)
            .into_iter()
            .partition(|r| r.seed == seed && started.iter().any(|(job, _, _)| **job == *r.job));
        for job in stopping {
            job.stop().await;
        }
        for (job, engine, client) in started {
            match old.iter().position(|r| *r.job == *job) {
                Some(i) => kept.push(old.swap_remove(i)),
                None => kept.push(RunningJob::start(
                    Arc::new(job.clone()),
                    engine,
                    client,
                    seed,
                )),
            }
        }
        *self.shared.views.write().unwrap_or_else(|p| p.into_inner()) =
            kept.iter().map(|r| Arc::clone(&r.view)).collect();
        *running = kept;
        tracing::info!(
            jobs = running.len(),
            config = %self.shared.options.config_path.display(),
            "scrape configuration loaded"
        );
        Ok(())
    }

    /// Stops every job, writing the stale markers of their targets' series.
    pub async fn stop(&self) {
        let mut running = self.shared.jobs.lock().await;
        for job in running.drain(..) {
            job.stop().await;
        }
        self.shared
            .views
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Every job's targets as they are now, in the file's order.
    pub fn targets(&self) -> Vec<(String, Vec<TargetStatus>, Vec<tickertape_scrape::Labels>)> {
        let views = self.shared.views.read().unwrap_or_else(|p| p.into_inner());
        views.iter().map(|view| view.snapshot()).collect()
    }

    async fn read(&self) -> Result<ScrapeFile, ScrapeError> {
        let path = &self.shared.options.config_path;
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|source| ScrapeError::Read {
                path: path.display().to_string(),
                source,
            })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Ok(ScrapeFile::parse(&text, base)?)
    }

    /// The engine of the job's database, which must exist.
    async fn engine_of(&self, job: &ScrapeJob) -> Result<Engine, ScrapeError> {
        let name = job
            .database
            .as_ref()
            .or(self.shared.options.database.as_ref());
        let error = |database: &str, message: String| ScrapeError::Database {
            job: job.name.clone(),
            database: database.to_string(),
            message,
        };
        if let Some(name) = name {
            DatabaseName::new(name).map_err(|e| error(name, e.to_string()))?;
        }
        self.shared
            .engine
            .database(name.map(String::as_str))
            .await
            .map_err(|e| error(name.map_or("", String::as_str), e.to_string()))
    }
}
