//! One target's loop: scraped at the same point of every interval (its offset, a hash of
//! the target: no jitter from one scrape to the next), each scrape appended, its status
//! kept for `/targets`; stale markers for all its series when it stops.

use super::append::{self, SeriesSeen};
use super::fetch;
use super::job::{Health, TargetStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tickertape_engine::Engine;
use tickertape_scrape::target::Target;
use tickertape_scrape::ScrapeJob;
use tokio::sync::watch;
use tokio::time::Instant;

pub(crate) struct TargetLoop {
    pub status: Arc<Mutex<TargetStatus>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl TargetLoop {
    /// Stops the loop once its scrape in flight, if any, is appended; then its series get
    /// their stale markers.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await {
            tracing::warn!("a scrape loop ended abnormally: {e}");
        }
    }
}

pub(crate) fn start(
    target: Target,
    job: Arc<ScrapeJob>,
    engine: Engine,
    client: reqwest::Client,
    seed: u64,
) -> TargetLoop {
    let status = Arc::new(Mutex::new(TargetStatus {
        target: target.clone(),
        health: Health::Unknown,
        last_error: String::new(),
        last_scrape: None,
        last_duration: Duration::ZERO,
    }));
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(run(
        target,
        job,
        engine,
        client,
        seed,
        Arc::clone(&status),
        stopped,
    ));
    TargetLoop { status, stop, task }
}

/// The wait before the first scrape: to the next time (by the engine's clock) that is
/// `offset` past a multiple of `interval`.
fn first_wait(now_ns: i64, interval: Duration, offset: Duration) -> Duration {
    let interval = interval.as_nanos().max(1) as i128;
    let into = (now_ns as i128).rem_euclid(interval);
    let wait = (offset.as_nanos() as i128 - into).rem_euclid(interval);
    Duration::from_nanos(wait as u64)
}

async fn run(
    target: Target,
    job: Arc<ScrapeJob>,
    engine: Engine,
    client: reqwest::Client,
    seed: u64,
    status: Arc<Mutex<TargetStatus>>,
    mut stopped: watch::Receiver<bool>,
) {
    let interval = target.interval();
    let timeout = target.timeout();
    let mut next = Instant::now() + first_wait(engine.now_nanos(), interval, target.offset(seed));
    let mut seen = SeriesSeen::default();
    loop {
        tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => break,
            _ = tokio::time::sleep_until(next) => {}
        }
        let time_ms = engine.now_nanos().div_euclid(1_000_000);
        let wall = SystemTime::now();
        let started = Instant::now();
        let fetched = fetch::fetch(&client, &job, &target.url, timeout).await;
        let duration = started.elapsed();
        let result = append::append(
            &engine, &job, &target, &mut seen, fetched, time_ms, duration,
        )
        .await;
        let (health, error) = match result {
            Ok(outcome) => match outcome.error {
                None => (Health::Up, String::new()),
                Some(e) => (Health::Down, e),
            },
            Err(e) => (Health::Down, format!("the store refused the scrape: {e}")),
        };
        if !error.is_empty() {
            tracing::debug!(job = %job.name, target = %target.url, "scrape failed: {error}");
        }
        {
            let mut s = status.lock().unwrap_or_else(|p| p.into_inner());
            s.health = health;
            s.last_error = error;
            s.last_scrape = Some(wall);
            s.last_duration = duration;
        }
        // The next slot of this target's grid; slots missed (a store that stalled) are
        // skipped, not caught up.
        next += interval;
        let now = Instant::now();
        if next < now {
            let behind = (now - next).as_nanos() / interval.as_nanos().max(1) + 1;
            next += interval * behind as u32;
        }
    }
    let time_ms = engine.now_nanos().div_euclid(1_000_000);
    if let Err(e) = append::mark_gone(&engine, &target, &mut seen, time_ms).await {
        tracing::warn!(job = %job.name, target = %target.url, "stale markers not written: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::first_wait;
    use std::time::Duration;

    #[test]
    fn the_first_scrape_lands_on_the_targets_offset() {
        let s = Duration::from_secs;
        // 100 s into the epoch, a 15 s interval, offset 7 s: 105 + 7 = 112, 12 s away.
        assert_eq!(first_wait(100_000_000_000, s(15), s(7)), s(12));
        assert_eq!(first_wait(112_000_000_000, s(15), s(7)), s(0));
        assert_eq!(first_wait(113_000_000_000, s(15), s(7)), s(14));
    }
}
