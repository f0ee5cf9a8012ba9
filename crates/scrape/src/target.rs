//! Targets as Prometheus 2.x makes them from a job and its target groups: the labels
//! before and after `relabel_configs`, the scrape URL, the offset in the interval at which
//! a target is scraped, and the labels a scraped sample is stored with.

use crate::config::duration;
use crate::config::{ScrapeJob, TargetGroup};
use crate::labels::*;
use crate::relabel;
use std::time::Duration;

/// A target that relabeling kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The labels before relabeling (`discoveredLabels` of `/targets`).
    pub discovered: Labels,
    /// The labels after it, `__`-prefixed ones included (`__address__`, `__param_…`).
    pub labels: Labels,
    pub url: String,
}

impl Target {
    /// The labels every sample of this target gets: its labels but the `__` ones.
    pub fn public_labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels
            .iter()
            .filter(|(name, _)| !name.starts_with(RESERVED_PREFIX))
    }

    /// The scrape interval and timeout relabeling left (Prometheus lets relabeling change
    /// them through `__scrape_interval__`/`__scrape_timeout__`).
    pub fn interval(&self) -> Duration {
        duration::parse(self.labels.get(SCRAPE_INTERVAL)).unwrap_or_default()
    }

    pub fn timeout(&self) -> Duration {
        duration::parse(self.labels.get(SCRAPE_TIMEOUT)).unwrap_or_default()
    }

    /// The point in each interval at which this target is scraped, the same on every
    /// server and every restart: a hash of its URL and labels, and of `seed` (the external
    /// labels, so that two servers scraping the same targets spread them differently),
    /// spreads targets over the interval instead of scraping them all at once.
    pub fn offset(&self, seed: u64) -> Duration {
        let interval = self.interval().as_nanos().max(1) as u64;
        let mut hash = Fnv::new();
        for (name, value) in self.labels.iter() {
            hash.write(name.as_bytes());
            hash.write(&[0xff]);
            hash.write(value.as_bytes());
            hash.write(&[0xff]);
        }
        hash.write(self.url.as_bytes());
        Duration::from_nanos((hash.finish() ^ seed) % interval)
    }
}

/// The seed of [`Target::offset`] for a server with these external labels.
pub fn offset_seed<'a>(external_labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut hash = Fnv::new();
    for (name, value) in external_labels {
        hash.write(name.as_bytes());
        hash.write(&[0xff]);
        hash.write(value.as_bytes());
        hash.write(&[0xff]);
    }
    hash.finish()
}

/// FNV-1a, 64 bits: stable across builds and platforms, which the offsets must be.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What became of one discovered target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Active(Target),
    /// Dropped by relabeling: its labels before relabeling (`droppedTargets`).
    Dropped(Labels),
    /// Relabeling left something unusable; the message says what.
    Invalid {
        discovered: Labels,
        error: String,
    },
}

/// Every target of `groups` in `job`, in order. `extra` are labels each target gets
/// before its group's (`__meta_filepath` for a file's groups).
pub fn targets(job: &ScrapeJob, groups: &[TargetGroup], extra: &[(&str, &str)]) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for group in groups {
        for address in &group.targets {
            let mut discovered: Labels = extra.iter().copied().collect();
            for (name, value) in &group.labels {
                discovered.set(name, value);
            }
            discovered.set(ADDRESS, address);
            outcomes.push(populate(job, discovered));
        }
    }
    outcomes
}

/// Prometheus' `PopulateLabels`: the job's labels where the target has none, relabeling,
/// a default port, checks, `__meta_` labels removed, `instance` defaulted to the address.
pub fn populate(job: &ScrapeJob, target: Labels) -> Outcome {
    let mut labels = target;
    let defaults = [
        (JOB, job.name.clone()),
        (SCRAPE_INTERVAL, duration::format(job.interval)),
        (SCRAPE_TIMEOUT, duration::format(job.timeout)),
        (METRICS_PATH, job.metrics_path.clone()),
        (SCHEME, job.scheme.as_str().to_string()),
    ];
    for (name, value) in defaults {
        if labels.get(name).is_empty() {
            labels.set(name, &value);
        }
    }
    for (name, values) in &job.params {
        if let Some(first) = values.first() {
            labels.set(&format!("{PARAM_PREFIX}{name}"), first);
        }
    }
    let discovered = labels.clone();
    if !relabel::process(&mut labels, &job.relabel_configs) {
        return Outcome::Dropped(discovered);
    }
    let invalid = |error: String| Outcome::Invalid {
        discovered: discovered.clone(),
        error,
    };
    let mut address = labels.get(ADDRESS).to_string();
    if address.is_empty() {
        return invalid("no address".into());
    }
    if needs_port(&address) {
        match labels.get(SCHEME) {
            "http" | "" => address.push_str(":80"),
            "https" => address.push_str(":443"),
            other => return invalid(format!("invalid scheme: {other:?}")),
        }
        labels.set(ADDRESS, &address);
    }
    if address.contains('/') {
        return invalid(format!("{address:?} is not a valid hostname"));
    }
    let scheme = labels.get(SCHEME);
    if scheme != "http" && scheme != "https" {
        return invalid(format!("invalid scheme: {scheme:?}"));
    }
    let interval = match duration::parse(labels.get(SCRAPE_INTERVAL)) {
        Ok(d) if d.is_zero() => return invalid("scrape interval cannot be 0".into()),
        Ok(d) => d,
        Err(e) => return invalid(format!("error parsing scrape interval: {e}")),
    };
    let timeout = match duration::parse(labels.get(SCRAPE_TIMEOUT)) {
        Ok(d) if d.is_zero() => return invalid("scrape timeout cannot be 0".into()),
        Ok(d) => d,
        Err(e) => return invalid(format!("error parsing scrape timeout: {e}")),
    };
    if timeout > interval {
        return invalid(format!(
            "scrape timeout cannot be greater than scrape interval ({:?} > {:?})",
            labels.get(SCRAPE_TIMEOUT),
            labels.get(SCRAPE_INTERVAL)
        ));
    }
    labels.retain(|name, _| !name.starts_with(META_PREFIX));
    if labels.get(INSTANCE).is_empty() {
        labels.set(INSTANCE, &address);
    }
    let url = url(job, &labels);
    Outcome::Active(Target {
        discovered,
        labels,
        url,
    })
}

/// `host:port` needs no port; a bare host or `[v6]` does. Anything else is left alone
/// (checked after).
fn needs_port(address: &str) -> bool {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.ends_with(']');
    }
    // With a colon: a port (even empty, as Go splits `host:`), or several colons of an
    // IPv6 address without brackets, which adding a port does not mend either.
    !address.contains(':')
}

/// `scheme://address/path?params`: the job's `params`, each first value replaced by
/// a `__param_<name>` label where relabeling set one.
fn url(job: &ScrapeJob, labels: &Labels) -> String {
    let mut params: Vec<(String, Vec<String>)> = job
        .params
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (name, value) in labels.iter() {
        let Some(param) = name.strip_prefix(PARAM_PREFIX) else {
            continue;
        };
        match params.iter_mut().find(|(k, _)| k == param) {
            Some((_, values)) if !values.is_empty() => values[0] = value.to_string(),
            Some((_, values)) => values.push(value.to_string()),
            None => params.push((param.to_string(), vec![value.to_string()])),
        }
    }
    params.sort_by(|a, b| a.0.cmp(&b.0));
    let mut url = format!(
        "{}://{}{}",
        labels.get(SCHEME),
        labels.get(ADDRESS),
        labels.get(METRICS_PATH)
    );
    let mut first = true;
    for (name, values) in &params {
        for value in values {
            url.push(if first { '?' } else { '&' });
            first = false;
            query_escape(&mut url, name);
            url.push('=');
            query_escape(&mut url, value);
        }
    }
    url
}

/// Go's `url.QueryEscape`: unreserved bytes as they are, space as `+`, the rest `%XX`.
fn query_escape(out: &mut String, text: &str) {
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

/// The labels a scraped sample is stored with: its own, with the target's (`job`,
/// `instance`, the group's labels). With `honor_labels` the sample's own win; without,
/// the target's win and a sample's conflicting label is kept as `exported_<name>`
/// (`exported_exported_<name>` if that is taken too), as Prometheus does.
/// `metric_relabel_configs` are applied after; `None` when they drop the sample.
pub fn sample_labels(
    exposed: Labels,
    target: &Target,
    honor_labels: bool,
    metric_relabel: &[relabel::RelabelConfig],
) -> Option<Labels> {
    let mut labels = exposed.clone();
    if honor_labels {
        for (name, value) in target.public_labels() {
            if !exposed.has(name) {
                labels.set(name, value);
            }
        }
    } else {
        let mut conflicting: Vec<(String, String)> = Vec::new();
        for (name, value) in target.public_labels() {
            let own = exposed.get(name);
            if !own.is_empty() {
                conflicting.push((name.to_string(), own.to_string()));
            }
            labels.set(name, value);
        }
        // Shorter names first, so that `a` becomes `exported_a` before `exported_a`
        // (if exposed too) looks for its new name.
        conflicting.sort_by_key(|(name, _)| name.len());
        let mut renamed: Vec<(String, String)> = Vec::with_capacity(conflicting.len());
        for (name, value) in conflicting {
            let mut new = name;
            loop {
                new.insert_str(0, "exported_");
                let taken = exposed.has(&new)
                    || target.public_labels().any(|(n, _)| n == new)
                    || renamed.iter().any(|(n, _)| *n == new);
                if !taken {
                    break;
                }
            }
            renamed.push((new, value));
        }
        for (name, value) in renamed {
            labels.set(&name, &value);
        }
    }
    relabel::process(&mut labels, metric_relabel).then_some(labels)
}

/// The labels of the series the scrape itself adds (`up`, `scrape_duration_seconds`, …):
/// the name and the target's labels, which always win.
pub fn report_labels(name: &str, target: &Target) -> Labels {
    let mut labels: Labels = target.public_labels().collect();
    labels.set(METRIC_NAME, name);
    labels
}

#[cfg(test)]
mod tests;
