//! Runs the conformance suite against every backend: the list of factories is here.
//!
//! The MongoDB factory needs a server: `TICKERTAPE_MONGODB_URI` (the README's test command
//! starts one). Without it the MongoDB tests fail; they never pass silently.

use async_trait::async_trait;
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_conformance::{StoreFactory, StoreHandle};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

struct Embedded;

struct EmbeddedStore {
    dir: tempfile::TempDir,
    capacity: usize,
}

#[async_trait]
impl StoreFactory for Embedded {
    async fn create(&self, segment_capacity: usize) -> Box<dyn StoreHandle> {
        let dir = tempfile::tempdir().expect("temp dir");
        Box::new(EmbeddedStore {
            dir,
            capacity: segment_capacity,
        })
    }
}

#[async_trait]
impl StoreHandle for EmbeddedStore {
    async fn open(&self) -> Arc<dyn Backend> {
        let mut options = EmbeddedOptions::new(self.dir.path());
        options.segment_capacity = self.capacity;
        Arc::new(EmbeddedBackend::open(options).expect("open embedded store"))
    }
}

macro_rules! suite {
    ($module:ident, $factory:expr) => {
        mod $module {
            use super::*;
            suite!(@tests $factory;
                append_then_read, any_value_any_time, rollover_keeps_chain_and_seals,
                neighbors_across_boundaries_and_gaps, out_of_order_is_refused,
                many_series_in_one_call, series_registry, reopen_keeps_everything,
                heads_report_last_point);

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn model_check() {
                for seed in 0..4 {
                    tickertape_conformance::model_check(&$factory, seed, 150).await;
                }
            }
        }
    };
    (@tests $factory:expr; $($test:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                tickertape_conformance::$test(&$factory).await;
            }
        )*
    };
}

suite!(embedded, Embedded);
