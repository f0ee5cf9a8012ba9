//! One job: its targets discovered (`static_configs`, `file_sd_configs`), relabeled, and
//! one loop per target, started and stopped as discovery changes.

use super::target_loop::{self, TargetLoop};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};
use tickertape_engine::Engine;
use tickertape_scrape::file_sd::{self, FILEPATH_LABEL};
use tickertape_scrape::target::{targets, Outcome, Target};
use tickertape_scrape::{Labels, ScrapeJob};
use tokio::sync::watch;

/// How often `file_sd_configs` files are checked for a change (their size and time); a
/// changed file is read again at once, every file at least each `refresh_interval`.
const FILE_CHECK_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Unknown,
    Up,
    Down,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Up => "up",
            Health::Down => "down",
        }
    }
}

/// One target as `/targets` shows it.
#[derive(Clone, Debug)]
pub struct TargetStatus {
    pub target: Target,
    pub health: Health,
    pub last_error: String,
    pub last_scrape: Option<SystemTime>,
    pub last_duration: Duration,
}

/// What a job shows of itself; its loops update it.
pub(crate) struct JobView {
    pub name: String,
    state: RwLock<ViewState>,
}

#[derive(Default)]
struct ViewState {
    active: Vec<Arc<Mutex<TargetStatus>>>,
    dropped: Vec<Labels>,
}

impl JobView {
    pub fn snapshot(&self) -> (String, Vec<TargetStatus>, Vec<Labels>) {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let active = state
            .active
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .collect();
        (self.name.clone(), active, state.dropped.clone())
    }
}

/// A running job: stop it with [`RunningJob::stop`].
pub(crate) struct RunningJob {
    pub job: Arc<ScrapeJob>,
    pub seed: u64,
    pub view: Arc<JobView>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningJob {
    pub fn start(job: Arc<ScrapeJob>, engine: Engine, client: reqwest::Client, seed: u64) -> Self {
        let view = Arc::new(JobView {
            name: job.name.clone(),
            state: RwLock::default(),
        });
        let (stop, stopped) = watch::channel(false);
        let runner = JobRunner {
            job: Arc::clone(&job),
            engine,
            client,
            seed,
            view: Arc::clone(&view),
            loops: HashMap::new(),
        };
        let task = tokio::spawn(runner.run(stopped));
        RunningJob {
            job,
            seed,
            view,
            stop,
            task,
        }
    }

    /// Stops the job; the future completes once every target has written its stale
    /// markers.
    pub fn stop(self) -> impl std::future::Future<Output = ()> {
        let _ = self.stop.send(true);
        async move {
            if let Err(e) = self.task.await {
                tracing::warn!("scrape job {} ended abnormally: {e}", self.job.name);
            }
        }
    }
}

struct JobRunner {
    job: Arc<ScrapeJob>,
    engine: Engine,
    client: reqwest::Client,
    seed: u64,
    view: Arc<JobView>,
    /// By the target's labels and URL, as Prometheus tells targets apart.
    loops: HashMap<(Labels, String), TargetLoop>,
}

impl JobRunner {
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        let mut files = FileState::default();
        loop {
            self.sync(&mut files).await;
            if self.job.file_sd_configs.is_empty() {
                let _ = stopped.wait_for(|stop| *stop).await;
                break;
            }
            let changed = loop {
                tokio::select! {
                    _ = stopped.wait_for(|stop| *stop) => break false,
                    _ = tokio::time::sleep(FILE_CHECK_EVERY) => {}
                }
                if files.changed(&self.job) {
                    break true;
                }
            };
            if !changed {
                break;
            }
        }
        for (_, target) in self.loops.drain() {
            target.stop().await;
        }
    }

    /// Discovers the targets again and starts and stops loops to match.
    async fn sync(&mut self, files: &mut FileState) {
        let mut outcomes = targets(&self.job, &self.job.static_configs, &[]);
        for (path, groups) in files.read(&self.job) {
            let extra = [(FILEPATH_LABEL, path.as_str())];
            outcomes.extend(targets(&self.job, &groups, &extra));
        }
        let mut active = Vec::new();
        let mut dropped = Vec::new();
        let mut wanted: HashMap<(Labels, String), Target> = HashMap::new();
        for outcome in outcomes {
            match outcome {
                Outcome::Active(target) => {
                    wanted
                        .entry((target.labels.clone(), target.url.clone()))
                        .or_insert(target);
                }
                Outcome::Dropped(labels) => dropped.push(labels),
                Outcome::Invalid { discovered, error } => {
                    tracing::warn!(job = %self.job.name, "target dropped: {error}");
                    dropped.push(discovered);
                }
            }
        }
        let gone: Vec<(Labels, String)> = self
            .loops
            .keys()
            .filter(|key| !wanted.contains_key(*key))
            .cloned()
            .collect();
        for key in gone {
            if let Some(target) = self.loops.remove(&key) {
                target.stop().await;
            }
        }
        for (key, target) in wanted {
            let running = self.loops.entry(key).or_insert_with(|| {
                target_loop::start(
                    target,
                    Arc::clone(&self.job),
                    self.engine.clone(),
                    self.client.clone(),
                    self.seed,
                )
            });
            active.push(Arc::clone(&running.status));
        }
        active.sort_by(|a, b| {
            let a = a
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .target
                .url
                .clone();
            let b = b
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .target
                .url
                .clone();
            a.cmp(&b)
        });
        *self.view.state.write().unwrap_or_else(|p| p.into_inner()) = ViewState { active, dropped };
    }
}

/// The `file_sd_configs` files as last read: each path's size and modification time,
/// and when all were last read.
#[derive(Default)]
struct FileState {
    signature: Vec<(PathBuf, u64, Option<SystemTime>)>,
    read_at: Option<std::time::Instant>,
}

impl FileState {
    /// Every file the job's `file_sd_configs` name now (a `*` in a file name matches
    /// within its folder), with its target groups; a file that cannot be read or parsed
    /// is logged and contributes none, as in Prometheus.
    fn read(
        &mut self,
        job: &ScrapeJob,
    ) -> Vec<(String, Vec<tickertape_scrape::config::TargetGroup>)> {
        self.signature = signature(job);
        self.read_at = Some(std::time::Instant::now());
        let mut read = Vec::new();
        for (path, _, _) in &self.signature {
            let shown = path.display().to_string();
            match std::fs::read_to_string(path) {
                Ok(text) => match file_sd::parse(&shown, &text) {
                    Ok(groups) => read.push((shown, groups)),
                    Err(e) => tracing::warn!(job = %job.name, "{e}"),
                },
                Err(e) => tracing::warn!(job = %job.name, "file_sd {shown}: {e}"),
            }
        }
        read
    }

    /// Whether a file changed, appeared or went, or the shortest refresh interval passed.
    fn changed(&self, job: &ScrapeJob) -> bool {
        let refresh = job
            .file_sd_configs
            .iter()
            .map(|sd| sd.refresh_interval)
            .min()
            .unwrap_or(Duration::MAX);
        let due = self.read_at.is_none_or(|at| at.elapsed() >= refresh);
        due || signature(job) != self.signature
    }
}

fn signature(job: &ScrapeJob) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut paths: Vec<PathBuf> = job
        .file_sd_configs
        .iter()
        .flat_map(|sd| sd.files.iter())
        .flat_map(|pattern| expand(pattern))
        .collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path).ok();
            let len = meta.as_ref().map_or(0, |m| m.len());
            let modified = meta.and_then(|m| m.modified().ok());
            (path, len, modified)
        })
        .collect()
}

/// `pattern` itself, or the files of its folder its name matches when it holds `*`/`?`.
fn expand(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !name.contains(['*', '?']) {
        return vec![pattern.to_path_buf()];
    }
    let folder = pattern.parent().unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| glob_match(name, n)))
        .map(|e| e.path())
        .collect()
}

/// `*` any run of characters, `?` one; everything else literal.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Classic two-pointer match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_of_file_names() {
        assert!(glob_match("*.json", "a.json"));
        assert!(glob_match("t?.yml", "t1.yml"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("*.json", "a.yml"));
        assert!(!glob_match("a*b", "acbx"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
    }
}
