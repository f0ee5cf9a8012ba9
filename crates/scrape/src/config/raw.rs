//! The file's shape, as serde reads it: every key Prometheus 2.x writes that tickertape
//! takes, and `deny_unknown_fields` everywhere, so a key it does not take is refused with
//! its name rather than silently ignored. Defaults and checks are applied afterwards, in
//! `config/mod.rs`, where the job's name is known for the message.

use super::duration::PromDuration;
use crate::relabel::RawRelabel;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The top of the file: `global` and `scrape_configs`. The other sections of a
/// `prometheus.yml` (`rule_files`, `alerting`, `remote_write`, …) are refused by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    #[serde(default)]
    pub global: RawGlobal,
    /// Each job as a YAML value first, so that its own errors can name it.
    #[serde(default)]
    pub scrape_configs: Vec<serde_yaml_ng::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGlobal {
    pub scrape_interval: Option<PromDuration>,
    pub scrape_timeout: Option<PromDuration>,
    /// Taken so that a `prometheus.yml` with rules loads; scraping does not use it.
    #[allow(dead_code)]
    pub evaluation_interval: Option<PromDuration>,
    #[serde(default)]
    pub external_labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJob {
    pub job_name: String,
    pub scrape_interval: Option<PromDuration>,
    pub scrape_timeout: Option<PromDuration>,
    pub metrics_path: Option<String>,
    pub scheme: Option<String>,
    #[serde(default)]
    pub params: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub honor_labels: bool,
    pub honor_timestamps: Option<bool>,
    #[serde(default)]
    pub static_configs: Vec<RawStaticConfig>,
    #[serde(default)]
    pub file_sd_configs: Vec<RawFileSd>,
    #[serde(default)]
    pub relabel_configs: Vec<RawRelabel>,
    #[serde(default)]
    pub metric_relabel_configs: Vec<RawRelabel>,
    pub basic_auth: Option<RawBasicAuth>,
    pub authorization: Option<RawAuthorization>,
    pub tls_config: Option<RawTls>,
    #[serde(default)]
    pub sample_limit: u64,
    #[serde(default)]
    pub label_limit: u64,
    #[serde(default)]
    pub label_name_length_limit: u64,
    #[serde(default)]
    pub label_value_length_limit: u64,
    pub body_size_limit: Option<String>,
    /// tickertape's own key: the database this job's samples are stored in.
    pub database: Option<String>,
}

/// One target group: `static_configs`' entries and a `file_sd` file's entries alike.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawStaticConfig {
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFileSd {
    pub files: Vec<String>,
    pub refresh_interval: Option<PromDuration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBasicAuth {
    pub username: String,
    pub password: Option<String>,
    pub password_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuthorization {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub credentials: Option<String>,
    pub credentials_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTls {
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub server_name: Option<String>,
    #[serde(default)]
    pub insecure_skip_verify: bool,
}
