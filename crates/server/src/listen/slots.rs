//! The connection slots of `--max-connections`, and what frees one when they are all
//! taken: a connection that holds its slot without using it.
//!
//! A slot is held from accept to close. A connection is *waiting on its client* while it
//! has no request in flight (an idle keep-alive connection, or one whose head has not
//! come) or while its request's body comes slower than `--min-body-rate`. Such a
//! connection costs the server a slot and gives nothing; a handful of clients that
//! trickle bytes could otherwise hold every slot for as long as their bodies last and
//! lock every other client out. So when a new connection finds every slot taken, the
//! connection that has been waiting on its client the longest (for at least
//! [`SHED_GRACE`]) is closed — *shed* — and the new one waits up to [`SHED_WAIT`] for its
//! slot. With none to shed, the new connection is closed at once, as before.

use super::stats::ConnectionStats;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// At most one warning about refused connections per this interval: a flood of refusals
/// must not become a flood of log lines.
const REFUSAL_WARNING_EVERY: Duration = Duration::from_secs(10);

/// How long a connection may wait on its client before it can be shed: long enough
/// that a client between two requests of a burst, or a head or small body on its way,
/// is not closed under it.
pub(crate) const SHED_GRACE: Duration = Duration::from_secs(2);

/// How long a new connection waits for the slot of the connection shed for it.
const SHED_WAIT: Duration = Duration::from_secs(1);

/// [`Holder::waiting_since`]'s value for "using its slot".
const BUSY: u64 = u64::MAX;

/// What a connection tells the slots about itself.
pub(crate) struct Holder {
    /// Since when (milliseconds after the slots' `epoch`) the connection may be shed
    /// for waiting on its client; [`BUSY`] while it uses its slot.
    sheddable_from: AtomicU64,
    /// Notified when the connection is shed: it closes at once.
    pub(crate) shed: Notify,
    epoch: Instant,
}

impl Holder {
    /// The connection uses its slot (a request is being handled or answered).
    pub(crate) fn busy(&self) {
        self.sheddable_from.store(BUSY, Ordering::Release);
    }

    /// The connection waits on its client from `since` on, and may be shed
    /// [`SHED_GRACE`] later, or at `at_the_earliest` if that is later.
    pub(crate) fn waiting(&self, since: Instant, at_the_earliest: Option<Instant>) {
        let from = (since + SHED_GRACE).max(at_the_earliest.unwrap_or(since));
        let ms = from.saturating_duration_since(self.epoch).as_millis();
        self.sheddable_from
            .store(u64::try_from(ms).unwrap_or(BUSY - 1), Ordering::Release);
    }

    fn sheddable_at(&self, now_ms: u64) -> Option<u64> {
        let from = self.sheddable_from.load(Ordering::Acquire);
        (from != BUSY && from <= now_ms).then_some(from)
    }
}

/// The slots: a connection holds one from accept to close.
pub(crate) struct ConnectionSlots {
    slots: Arc<Semaphore>,
    max: usize,
    stats: Arc<ConnectionStats>,
    holders: Arc<Mutex<HashMap<u64, Arc<Holder>>>>,
    next_id: AtomicU64,
    epoch: Instant,
    /// When the last warning was logged, and the refusals counted at that time.
    last_warning: Mutex<Option<(Instant, u64)>>,
}

/// A connection's place among `--max-connections`, given back when dropped.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    id: u64,
    pub(crate) holder: Arc<Holder>,
    holders: Arc<Mutex<HashMap<u64, Arc<Holder>>>>,
    stats: Arc<ConnectionStats>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.holders).remove(&self.id);
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What [`ConnectionSlots::take`] gives a new connection.
pub(crate) enum Admission {
    Now(Slot),
    /// Every slot was taken and a waiting connection was shed: the slot comes when it
    /// has closed ([`ConnectionSlots::after_shedding`]).
    AfterShedding,
    /// Every slot was taken by a connection in use: close the new one at once.
    Refused,
}

impl ConnectionSlots {
    pub(crate) fn new(max: usize, stats: Arc<ConnectionStats>) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
            stats,
            holders: Arc::default(),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
            last_warning: Mutex::new(None),
        }
    }

    /// A slot for a new connection, at once if one is free; else a waiting connection
    /// is shed for it, or it is refused (counted, and warned about now and then).
    pub(crate) fn take(&self, peer: SocketAddr) -> Admission {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Admission::Now(self.slot(permit));
        }
        if self.shed_one() {
            return Admission::AfterShedding;
        }
        let refused = self.stats.refused.fetch_add(1, Ordering::Relaxed) + 1;
        self.warn(peer, refused);
        Admission::Refused
    }

    /// The slot of a connection admitted [`Admission::AfterShedding`], once the shed one
    /// has closed; `None` (counted as refused) when none came free within [`SHED_WAIT`].
    pub(crate) async fn after_shedding(&self) -> Option<Slot> {
        let permit = tokio::time::timeout(SHED_WAIT, Arc::clone(&self.slots).acquire_owned());
        match permit.await {
            Ok(Ok(permit)) => Some(self.slot(permit)),
            _ => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    fn slot(&self, permit: OwnedSemaphorePermit) -> Slot {
        self.stats.open.fetch_add(1, Ordering::Relaxed);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let holder = Arc::new(Holder {
            sheddable_from: AtomicU64::new(BUSY),
            shed: Notify::new(),
            epoch: self.epoch,
        });
        // A new connection waits for its first head.
        holder.waiting(Instant::now(), None);
        lock(&self.holders).insert(id, Arc::clone(&holder));
        Slot {
            _permit: permit,
            id,
            holder,
            holders: Arc::clone(&self.holders),
            stats: Arc::clone(&self.stats),
        }
    }

    /// Sheds the connection that has waited on its client the longest; whether there
    /// was one. A scan of every holder, done only when every slot is taken.
    fn shed_one(&self) -> bool {
        let now_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(BUSY - 1);
        let mut holders = lock(&self.holders);
        let longest = holders
            .iter()
            .filter_map(|(id, h)| h.sheddable_at(now_ms).map(|from| (from, *id)))
            .min();
        let Some((_, id)) = longest else {
            return false;
        };
        // Out of the list at once, so the next new connection sheds another one.
        if let Some(holder) = holders.remove(&id) {
            holder.shed.notify_one();
        }
        ConnectionStats::count(&self.stats.shed);
        true
    }

    fn warn(&self, peer: SocketAddr, refused: u64) {
        let mut last = lock(&self.last_warning);
        let now = Instant::now();
        let since = match *last {
            Some((at, _)) if now.duration_since(at) < REFUSAL_WARNING_EVERY => return,
            Some((_, counted)) => refused - counted,
            None => refused,
        };
        *last = Some((now, refused));
        tracing::warn!(
            %peer,
            refused_since_last_warning = since,
            refused_total = refused,
            "{} connections open, the most --max-connections allows, none of them waiting \
             on its client: new connections are closed at once",
            self.max
        );
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1))
    }

    #[tokio::test]
    async fn a_busy_or_fresh_connection_is_never_shed() {
        let slots = ConnectionSlots::new(1, Arc::default());
        let Admission::Now(first) = slots.take(peer()) else {
            panic!("a free slot");
        };
        // Fresh: waiting on its client for less than the grace.
        assert!(matches!(slots.take(peer()), Admission::Refused));
        first.holder.busy();
        assert!(matches!(slots.take(peer()), Admission::Refused));
        assert_eq!(slots.stats.refused.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn the_longest_waiting_connection_is_shed_for_a_new_one() {
        let mut slots = ConnectionSlots::new(2, Arc::default());
        // Times before the slots' epoch would all read as 0.
        slots.epoch -= 10 * SHED_GRACE;
        let (Admission::Now(a), Admission::Now(b)) = (slots.take(peer()), slots.take(peer()))
        else {
            panic!("two free slots");
        };
        let long_ago = Instant::now() - 2 * SHED_GRACE;
        a.holder
            .waiting(long_ago + Duration::from_millis(100), None);
        b.holder.waiting(long_ago, None);
        assert!(matches!(slots.take(peer()), Admission::AfterShedding));
        // `b` was told to close; it closes by dropping its slot.
        let shed = tokio::time::timeout(Duration::from_secs(1), b.holder.shed.notified());
        assert!(shed.await.is_ok(), "the longest-waiting connection is shed");
        drop(b);
        let _new = slots.after_shedding().await.expect("the shed one's slot");
        // `a` is next; a body that keeps its rate is not.
        a.holder
            .waiting(long_ago, Some(Instant::now() + SHED_GRACE));
        assert!(matches!(slots.take(peer()), Admission::Refused));
        assert_eq!(slots.stats.shed.load(Ordering::Relaxed), 1);
    }
}
