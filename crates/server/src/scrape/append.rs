//! A scrape's samples into the store, as Prometheus appends them: each sample's labels
//! with the target's (`honor_labels`), `metric_relabel_configs`, the job's limits (one
//! past fails the whole scrape), the scrape's time unless `honor_timestamps` keeps the
//! sample's own; stale markers for the series of the previous scrape that this one lacks
//! (all of them when the scrape failed); and the series the scrape itself adds.
//!
//! Stored through the write path remote write takes (`Engine::write_samples`): the same
//! series and key limits, the same mapping of labels to series.

use super::fetch::Body;
use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tickertape_core::model::STALE_NAN_BITS;
use tickertape_core::time::Precision;
use tickertape_core::Point;
use tickertape_engine::{Engine, EngineError, SeriesRef, SeriesSamples, WriteReport};
use tickertape_prometheus::mapping::{series_of, VALUE_FIELD};
use tickertape_scrape::config::{Limits, ScrapeJob};
use tickertape_scrape::exposition;
use tickertape_scrape::labels::METRIC_NAME;
use tickertape_scrape::target::{report_labels, sample_labels, Target};
use tickertape_scrape::Labels;

/// A series' labels with their hash, computed once when the series is first seen: the
/// sets a scrape keeps (this scrape's series, the last one's) hash each sample's series,
/// and hashing the labels themselves each time was a large part of a scrape's CPU.
#[derive(Debug)]
pub(crate) struct SeriesLabels {
    labels: Labels,
    hash: u64,
}

impl SeriesLabels {
    fn new(labels: Labels) -> Self {
        let mut hasher = rustc_hash::FxHasher::default();
        labels.hash(&mut hasher);
        let hash = hasher.finish();
        SeriesLabels { labels, hash }
    }
}

impl Hash for SeriesLabels {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for SeriesLabels {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.labels == other.labels
    }
}

impl Eq for SeriesLabels {}

/// What one target's scrapes carry from one to the next.
#[derive(Default)]
pub(crate) struct SeriesSeen {
    /// Each series of the last scrape, and whether it came with its own time (such a
    /// series gets no stale marker).
    series: FxHashMap<Arc<SeriesLabels>, bool>,
    /// What a line's series text became (`None`: dropped by `metric_relabel_configs`),
    /// as Prometheus' scrape cache keeps it: a target repeats the same series at every
    /// scrape, so labeling, relabeling and the limits' checks run once per series, not
    /// once per sample. An entry not seen in a successful scrape is forgotten.
    by_text: FxHashMap<String, Cached>,
    /// Counts successful scrapes, to know which entries the last one saw.
    generation: u64,
}

struct Cached {
    labels: Option<Arc<SeriesLabels>>,
    generation: u64,
}

/// What a scrape did, for `/targets` and the report series.
pub(crate) struct Outcome {
    /// `None`: up.
    pub error: Option<String>,
    pub scraped: usize,
    pub post_relabel: usize,
    pub added: usize,
}

/// One sample as it will be stored.
struct Scraped {
    labels: Arc<SeriesLabels>,
    point: Point,
    /// The sample gave its own time (kept by `honor_timestamps`): such a series gets no
    /// stale marker when it goes, as in Prometheus, since its time is not the scrape's.
    own_time: bool,
}

/// The labels `sample` is stored with, or `None` when relabeling drops it; `Err` when
/// they pass a limit.
fn labels_of(
    sample: &exposition::Sample<'_>,
    job: &ScrapeJob,
    target: &Target,
) -> Result<Option<Arc<SeriesLabels>>, String> {
    let mut exposed = Labels::new();
    exposed.set(METRIC_NAME, sample.name);
    for (name, value) in &sample.labels {
        exposed.set(name, value);
    }
    let Some(labels) = sample_labels(
        exposed,
        target,
        job.honor_labels,
        &job.metric_relabel_configs,
    ) else {
        return Ok(None);
    };
    check_labels(&labels, &job.limits)?;
    Ok(Some(Arc::new(SeriesLabels::new(labels))))
}

/// The samples of a successful fetch, labeled, relabeled and checked against the limits;
/// `Err` fails the whole scrape.
fn samples(
    body: &Body,
    job: &ScrapeJob,
    target: &Target,
    seen: &mut SeriesSeen,
    time_ms: i64,
) -> Result<(usize, Vec<Scraped>), String> {
    let parsed = exposition::parse(&body.text, body.format).map_err(|e| e.to_string())?;
    let scraped = parsed.len();
    let generation = seen.generation + 1;
    let mut kept = Vec::with_capacity(parsed.len());
    let mut once = FxHashSet::with_capacity_and_hasher(parsed.len(), Default::default());
    for sample in parsed {
        let labels = match seen.by_text.get_mut(sample.series) {
            Some(cached) => {
                cached.generation = generation;
                cached.labels.clone()
            }
            None => {
                let labels = labels_of(&sample, job, target)?;
                let cached = Cached {
                    labels: labels.clone(),
                    generation,
                };
                seen.by_text.insert(sample.series.to_owned(), cached);
                labels
            }
        };
        let Some(labels) = labels else {
            continue;
        };
        let (time, own_time) = match (job.honor_timestamps, sample.timestamp_ms) {
            (true, Some(ms)) => (ms, true),
            _ => (time_ms, false),
        };
        // A series twice in one scrape: the first sample is kept, as Prometheus refuses
        // the second as a duplicate.
        if once.insert(Arc::clone(&labels)) {
            kept.push(Scraped {
                labels,
                point: Point::new(time, sample.value),
                own_time,
            });
        }
    }
    let limit = job.limits.sample_limit;
    if limit > 0 && kept.len() as u64 > limit {
        return Err(format!(
            "sample limit exceeded ({} samples, limit {limit})",
            kept.len()
        ));
    }
    seen.generation = generation;
    seen.by_text
        .retain(|_, cached| cached.generation == generation);
    Ok((scraped, kept))
}

/// `label_limit`, `label_name_length_limit`, `label_value_length_limit`, in Prometheus'
/// words.
fn check_labels(labels: &Labels, limits: &Limits) -> Result<(), String> {
    let name = labels.get(METRIC_NAME);
    if limits.label_limit > 0 && labels.len() as u64 > limits.label_limit {
        return Err(format!(
            "label_limit exceeded (metric: {name:.50}, number of labels: {}, limit: {})",
            labels.len(),
            limits.label_limit
        ));
    }
    for (label, value) in labels.iter() {
        let n = limits.label_name_length_limit;
        if n > 0 && label.len() as u64 > n {
            return Err(format!(
                "label_name_length_limit exceeded (metric: {name:.50}, label name: {label:.50}, length: {}, limit: {n})",
                label.len()
            ));
        }
        let v = limits.label_value_length_limit;
        if v > 0 && value.len() as u64 > v {
            return Err(format!(
                "label_value_length_limit exceeded (metric: {name:.50}, label name: {label:.50}, length: {}, limit: {v})",
                value.len()
            ));
        }
    }
    Ok(())
}

/// Appends one scrape: `fetched` is the body or the fetch's error, `time_ms` the scrape's
/// start, `duration` how long it took.
pub(crate) async fn append(
    engine: &Engine,
    job: &ScrapeJob,
    target: &Target,
    seen: &mut SeriesSeen,
    fetched: Result<Body, String>,
    time_ms: i64,
    duration: std::time::Duration,
) -> Result<Outcome, EngineError> {
    let result = fetched.and_then(|body| samples(&body, job, target, seen, time_ms));
    let (outcome, scraped) = match result {
        Ok((scraped, samples)) => {
            let added = samples
                .iter()
                .filter(|s| !seen.series.contains_key(&s.labels))
                .count();
            let outcome = Outcome {
                error: None,
                scraped,
                post_relabel: samples.len(),
                added,
            };
            (outcome, samples)
        }
        Err(error) => {
            let outcome = Outcome {
                error: Some(error),
                scraped: 0,
                post_relabel: 0,
                added: 0,
            };
            (outcome, Vec::new())
        }
    };
    let current: FxHashMap<Arc<SeriesLabels>, bool> = scraped
        .iter()
        .map(|s| (Arc::clone(&s.labels), s.own_time))
        .collect();
    let mut series: Vec<(Arc<SeriesLabels>, Point)> =
        scraped.into_iter().map(|s| (s.labels, s.point)).collect();
    let stale = f64::from_bits(STALE_NAN_BITS);
    for (gone, own_time) in &seen.series {
        if !own_time && !current.contains_key(gone) {
            series.push((Arc::clone(gone), Point::new(time_ms, stale)));
        }
    }
    seen.series = current;
    let up = if outcome.error.is_none() { 1.0 } else { 0.0 };
    let report = [
        ("up", up),
        ("scrape_duration_seconds", duration.as_secs_f64()),
        ("scrape_samples_scraped", outcome.scraped as f64),
        (
            "scrape_samples_post_metric_relabeling",
            outcome.post_relabel as f64,
        ),
        ("scrape_series_added", outcome.added as f64),
    ];
    for (name, value) in report {
        series.push((
            Arc::new(SeriesLabels::new(report_labels(name, target))),
            Point::new(time_ms, value),
        ));
    }
    let report = write(engine, &series).await?;
    if !report.errors.is_empty() {
        tracing::warn!(
            job = %job.name,
            target = %target.url,
            refused = report.rejected,
            first = %report.errors[0].message,
            "scrape: some series were refused by the store; the others were stored"
        );
    }
    Ok(outcome)
}

/// Stale markers at `time_ms` for every series of `seen`, and for the target's report
/// series: the target is gone (removed from the configuration or its discovery).
pub(crate) async fn mark_gone(
    engine: &Engine,
    target: &Target,
    seen: &mut SeriesSeen,
    time_ms: i64,
) -> Result<(), EngineError> {
    let stale = f64::from_bits(STALE_NAN_BITS);
    let mut series: Vec<(Arc<SeriesLabels>, Point)> = seen
        .series
        .drain()
        .filter(|(_, own_time)| !own_time)
        .map(|(labels, _)| (labels, Point::new(time_ms, stale)))
        .collect();
    for name in REPORT_SERIES {
        series.push((
            Arc::new(SeriesLabels::new(report_labels(name, target))),
            Point::new(time_ms, stale),
        ));
    }
    write(engine, &series).await.map(|_| ())
}

const REPORT_SERIES: [&str; 5] = [
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
];

/// One `write_samples` call for all of a scrape's series, one point each. A series whose
/// labels the mapping refuses is left out (logged by the caller through the report).
async fn write(
    engine: &Engine,
    series: &[(Arc<SeriesLabels>, Point)],
) -> Result<WriteReport, EngineError> {
    let points: Vec<Point> = series.iter().map(|(_, p)| *p).collect();
    let mut samples = Vec::with_capacity(series.len());
    let mut refused = 0;
    for (i, (labels, _)) in series.iter().enumerate() {
        match series_of(labels.labels.iter()) {
            Ok((measurement, tags)) => samples.push(SeriesSamples {
                series: SeriesRef {
                    measurement,
                    tags,
                    field: VALUE_FIELD,
                },
                points: &points[i..i + 1],
            }),
            Err(e) => {
                refused += 1;
                if refused == 1 {
                    tracing::warn!("scrape: a series was refused: {e}");
                }
            }
        }
    }
    engine
        .write_samples(&samples, Precision::Milliseconds)
        .await
}
