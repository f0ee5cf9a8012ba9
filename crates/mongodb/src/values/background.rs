//! The task that folds every `fold_every`: it holds only a weak reference to the handle's
//! state, so it ends with the last handle (and is aborted when the handle drops).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::task::JoinHandle;

use super::pass::Scope;
use crate::Shared;

pub(crate) fn spawn(shared: &Arc<Shared>) -> JoinHandle<()> {
    let weak = Arc::downgrade(shared);
    tokio::spawn(run(weak))
}

async fn run(weak: Weak<Shared>) {
    // The first pass waits for the engine's rollup plan (or one period), so that its
    // verification derives the rollups the engine wants.
    {
        let Some(shared) = weak.upgrade() else { return };
        let every = shared.schedule.every;
        tokio::select! {
            _ = shared.plan_set.notified() => {}
            _ = tokio::time::sleep(every) => {}
        }
    }
    let mut scope = Scope::Verify;
    loop {
        let Some(shared) = weak.upgrade() else { return };
        if shared.verify.swap(false, Ordering::Relaxed) {
            scope = Scope::Verify;
        }
        match shared.fold_pass(scope).await {
            Ok(()) => scope = Scope::Pending,
            Err(e) => tracing::warn!(error = %e, ?scope, "mongodb: fold pass failed; retrying"),
        }
        let every = shared.schedule.every;
        drop(shared);
        tokio::time::sleep(every).await;
    }
}
