//! The scrape configuration: the `global` and `scrape_configs` sections of a Prometheus
//! 2.x `prometheus.yml`, read, defaulted and checked once. A key tickertape does not take
//! is refused with its name (and its job's); nothing is silently ignored.

pub mod duration;
mod raw;
mod size;

pub use raw::RawStaticConfig as TargetGroup;

use crate::relabel::{RelabelConfig, RelabelError};
use raw::{RawAuthorization, RawBasicAuth, RawFile, RawJob, RawTls};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Prometheus' defaults.
pub const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_secs(60);
pub const DEFAULT_SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_METRICS_PATH: &str = "/metrics";
pub const DEFAULT_FILE_SD_REFRESH: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("scrape config: {0}")]
    File(String),
    #[error("scrape config: scrape_configs[{index}]: {message}")]
    Unnamed { index: usize, message: String },
    #[error("scrape config: job {job:?}: {message}")]
    Job { job: String, message: String },
}

/// The whole file, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapeFile {
    pub global: Global,
    pub jobs: Vec<ScrapeJob>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub scrape_interval: Duration,
    pub scrape_timeout: Duration,
    /// Kept for what sends data elsewhere; never added to the stored series, as in
    /// Prometheus, whose external labels apply to federation, remote write and alerts.
    pub external_labels: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A password or token, written in the file or read from a file at each scrape (so that
/// a rotated secret is used without a reload, as Prometheus does).
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Inline(String),
    File(PathBuf),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Secret(<inline>)"),
            Secret::File(path) => write!(f, "Secret(file {})", path.display()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credentials {
    Basic {
        username: String,
        password: Option<Secret>,
    },
    /// `Authorization: <kind> <credentials>`; `kind` is `Bearer` unless the file says.
    Authorization { kind: String, credentials: Secret },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsConfig {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub server_name: Option<String>,
    pub insecure_skip_verify: bool,
}

/// A job's limits; 0 is no limit, as in Prometheus. Each one past fails the whole scrape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Samples after `metric_relabel_configs`.
    pub sample_limit: u64,
    /// Labels of one sample, its name included.
    pub label_limit: u64,
    pub label_name_length_limit: u64,
    pub label_value_length_limit: u64,
    /// Bytes of the uncompressed body.
    pub body_size_limit: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FileSd {
    pub files: Vec<PathBuf>,
    pub refresh_interval: Duration,
}

/// One `scrape_configs` entry, its defaults filled from `global` and Prometheus'.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapeJob {
    pub name: String,
    pub interval: Duration,
    pub timeout: Duration,
    pub metrics_path: String,
    pub scheme: Scheme,
    pub params: BTreeMap<String, Vec<String>>,
    pub honor_labels: bool,
    pub honor_timestamps: bool,
    pub static_configs: Vec<TargetGroup>,
    pub file_sd_configs: Vec<FileSd>,
    pub relabel_configs: Vec<RelabelConfig>,
    pub metric_relabel_configs: Vec<RelabelConfig>,
    pub credentials: Option<Credentials>,
    pub tls: TlsConfig,
    pub limits: Limits,
    /// The database its samples go to; `None`: the server's `--scrape-database`.
    pub database: Option<String>,
}

impl ScrapeFile {
    /// Reads `text`, the file's content; relative paths in it (`file_sd_configs` files,
    /// `tls_config` and secret files) are taken from `base_dir`, the file's folder.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Self, ConfigError> {
        let raw: RawFile =
            serde_yaml_ng::from_str(text).map_err(|e| ConfigError::File(e.to_string()))?;
        let global = global(raw.global)?;
        let mut names = BTreeSet::new();
        let mut jobs = Vec::with_capacity(raw.scrape_configs.len());
        for (index, value) in raw.scrape_configs.into_iter().enumerate() {
            let name = value
                .get("job_name")
                .and_then(serde_yaml_ng::Value::as_str)
                .map(str::to_owned);
            let job_error = |message: String| match &name {
                Some(job) => ConfigError::Job {
                    job: job.clone(),
                    message,
                },
                None => ConfigError::Unnamed { index, message },
            };
            let raw: RawJob =
                serde_yaml_ng::from_value(value).map_err(|e| job_error(e.to_string()))?;
            let job = job(raw, &global, base_dir).map_err(job_error)?;
            if !names.insert(job.name.clone()) {
                return Err(job_error(
                    "found multiple scrape configs with this job name".into(),
                ));
            }
            jobs.push(job);
        }
        Ok(ScrapeFile { global, jobs })
    }
}

fn global(raw: raw::RawGlobal) -> Result<Global, ConfigError> {
    let scrape_interval = raw.scrape_interval.map_or(DEFAULT_SCRAPE_INTERVAL, |d| d.0);
    let mut scrape_timeout = raw.scrape_timeout.map_or(DEFAULT_SCRAPE_TIMEOUT, |d| d.0);
    if scrape_interval.is_zero() {
        return Err(ConfigError::File(
            "global: scrape_interval cannot be 0".into(),
        ));
    }
    if raw.scrape_timeout.is_none() && scrape_timeout > scrape_interval {
        scrape_timeout = scrape_interval;
    }
    if scrape_timeout > scrape_interval {
        return Err(ConfigError::File(
            "global: scrape_timeout greater than scrape_interval".into(),
        ));
    }
    for name in raw.external_labels.keys() {
        if !crate::labels::is_valid_name(name) {
            return Err(ConfigError::File(format!(
                "global: external_labels: {name:?} is not a valid label name"
            )));
        }
    }
    Ok(Global {
        scrape_interval,
        scrape_timeout,
        external_labels: raw.external_labels,
    })
}

fn job(raw: RawJob, global: &Global, base: &Path) -> Result<ScrapeJob, String> {
    if raw.job_name.is_empty() {
        return Err("job_name is empty".into());
    }
    let interval = raw.scrape_interval.map_or(global.scrape_interval, |d| d.0);
    if interval.is_zero() {
        return Err("scrape_interval cannot be 0".into());
    }
    // As Prometheus: a job's own timeout above its interval is an error; the global one
    // above it is cut to the interval.
    let timeout = match raw.scrape_timeout {
        Some(own) if own.0 > interval => {
            return Err(format!(
                "scrape_timeout {} greater than scrape_interval {}",
                duration::format(own.0),
                duration::format(interval)
            ))
        }
        Some(own) => own.0,
        None => global.scrape_timeout.min(interval),
    };
    if timeout.is_zero() {
        return Err("scrape_timeout cannot be 0".into());
    }
    let scheme = match raw.scheme.as_deref() {
        None | Some("http") => Scheme::Http,
        Some("https") => Scheme::Https,
        Some(other) => {
            return Err(format!(
                "scheme {other:?} is not supported: use \"http\" or \"https\""
            ))
        }
    };
    let static_configs = raw.static_configs;
    for group in &static_configs {
        check_group(group).map_err(|e| format!("static_configs: {e}"))?;
    }
    let file_sd_configs = raw
        .file_sd_configs
        .into_iter()
        .map(|sd| file_sd(sd, base))
        .collect::<Result<_, _>>()?;
    let relabel_configs = relabels(raw.relabel_configs, "relabel_configs")?;
    let metric_relabel_configs = relabels(raw.metric_relabel_configs, "metric_relabel_configs")?;
    let credentials = credentials(raw.basic_auth, raw.authorization, base)?;
    let tls = raw
        .tls_config
        .map(|t| tls(t, base))
        .transpose()?
        .unwrap_or_default();
    let body_size_limit = match raw.body_size_limit.as_deref() {
        None => 0,
        Some(text) => size::parse(text).map_err(|e| format!("body_size_limit: {e}"))?,
    };
    if let Some(database) = &raw.database {
        if database.is_empty() {
            return Err("database is empty: leave the key out for the server's default".into());
        }
    }
    Ok(ScrapeJob {
        name: raw.job_name,
        interval,
        timeout,
        metrics_path: raw
            .metrics_path
            .unwrap_or_else(|| DEFAULT_METRICS_PATH.to_string()),
        scheme,
        params: raw.params,
        honor_labels: raw.honor_labels,
        honor_timestamps: raw.honor_timestamps.unwrap_or(true),
        static_configs,
        file_sd_configs,
        relabel_configs,
        metric_relabel_configs,
        credentials,
        tls,
        limits: Limits {
            sample_limit: raw.sample_limit,
            label_limit: raw.label_limit,
            label_name_length_limit: raw.label_name_length_limit,
            label_value_length_limit: raw.label_value_length_limit,
            body_size_limit,
        },
        database: raw.database,
    })
}

/// A target group's labels must be valid names; a target must not be empty.
pub fn check_group(group: &TargetGroup) -> Result<(), String> {
    for name in group.labels.keys() {
        if !crate::labels::is_valid_name(name) {
            return Err(format!("{name:?} is not a valid label name"));
        }
    }
    if group.targets.iter().any(String::is_empty) {
        return Err("a target is empty".into());
    }
    Ok(())
}

fn file_sd(raw: raw::RawFileSd, base: &Path) -> Result<FileSd, String> {
    if raw.files.is_empty() {
        return Err("file_sd_configs: files is empty".into());
    }
    for file in &raw.files {
        let name = Path::new(file).file_name().and_then(|n| n.to_str());
        let known = name.is_some_and(|n| {
            [".json", ".yml", ".yaml"]
                .iter()
                .any(|ext| n.ends_with(ext))
        });
        if !known {
            return Err(format!(
                "file_sd_configs: {file:?}: the file name must end in .json, .yml or .yaml"
            ));
        }
    }
    Ok(FileSd {
        files: raw.files.iter().map(|f| base.join(f)).collect(),
        refresh_interval: raw
            .refresh_interval
            .map_or(DEFAULT_FILE_SD_REFRESH, |d| d.0),
    })
}

fn relabels(raw: Vec<crate::relabel::RawRelabel>, key: &str) -> Result<Vec<RelabelConfig>, String> {
    raw.into_iter()
        .enumerate()
        .map(|(i, r)| RelabelConfig::new(r).map_err(|e: RelabelError| format!("{key}[{i}]: {e}")))
        .collect()
}

fn credentials(
    basic: Option<RawBasicAuth>,
    authorization: Option<RawAuthorization>,
    base: &Path,
) -> Result<Option<Credentials>, String> {
    let secret = |inline: Option<String>, file: Option<String>, what: &str| match (inline, file) {
        (Some(_), Some(_)) => Err(format!("{what} and {what}_file are mutually exclusive")),
        (Some(text), None) => Ok(Some(Secret::Inline(text))),
        (None, Some(path)) => Ok(Some(Secret::File(base.join(path)))),
        (None, None) => Ok(None),
    };
    match (basic, authorization) {
        (Some(_), Some(_)) => {
            Err("at most one of basic_auth and authorization may be configured".into())
        }
        (Some(b), None) => Ok(Some(Credentials::Basic {
            username: b.username,
            password: secret(b.password, b.password_file, "basic_auth: password")?,
        })),
        (None, Some(a)) => {
            let kind = a.kind.unwrap_or_else(|| "Bearer".to_string());
            if kind.eq_ignore_ascii_case("basic") {
                return Err(
                    "authorization type cannot be set to \"basic\", use \"basic_auth\" instead"
                        .into(),
                );
            }
            let credentials = secret(
                a.credentials,
                a.credentials_file,
                "authorization: credentials",
            )?
            .ok_or("authorization: credentials or credentials_file is required")?;
            Ok(Some(Credentials::Authorization { kind, credentials }))
        }
        (None, None) => Ok(None),
    }
}

fn tls(raw: RawTls, base: &Path) -> Result<TlsConfig, String> {
    if raw.cert_file.is_some() != raw.key_file.is_some() {
        return Err("tls_config: cert_file and key_file must be given together".into());
    }
    let path = |p: Option<String>| p.map(|p| base.join(p));
    Ok(TlsConfig {
        ca_file: path(raw.ca_file),
        cert_file: path(raw.cert_file),
        key_file: path(raw.key_file),
        server_name: raw.server_name,
        insecure_skip_verify: raw.insecure_skip_verify,
    })
}

#[cfg(test)]
mod tests;
