//! Scraping as Prometheus 2.x does it, without I/O: what the server's scrape loop decides
//! with.
//!
//! - [`config`]: the `global` and `scrape_configs` sections of a `prometheus.yml`, every
//!   key Prometheus writes that is taken, any other refused by name.
//! - [`relabel`]: `relabel_configs` and `metric_relabel_configs`, Prometheus' actions.
//! - [`target`]: a target's labels from its group and its job, its URL, its scrape
//!   offset in the interval, and the labels of the samples scraped from it.
//! - [`file_sd`]: the target groups of a `file_sd_configs` file (JSON or YAML).
//! - [`exposition`]: the text format 0.0.4 and OpenMetrics 1.0, parsed without a panic
//!   on any input.

pub mod config;
pub mod exposition;
pub mod file_sd;
pub mod labels;
pub mod relabel;
pub mod target;

pub use config::{ConfigError, ScrapeFile, ScrapeJob};
pub use labels::Labels;
