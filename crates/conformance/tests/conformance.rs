//! Runs the conformance suite against every backend: the list of factories is here. The
//! in-memory reference backend is one of them, and `matches_the_reference` compares each
//! other backend with a reference over random sequences of every operation.
//!
//! The MongoDB factory needs a server: `TICKERTAPE_MONGODB_URI` (the README's test command
//! starts one). Without it the MongoDB tests fail; they never pass silently.

use async_trait::async_trait;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tickertape_backend::Backend;
use tickertape_conformance::{StoreFactory, StoreHandle};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_mongodb::{MongoBackend, MongoOptions};
use tickertape_reference::ReferenceBackend;

/// The reference backend; "reopening" hands out another backend on the same state.
struct Reference;

struct ReferenceStore(ReferenceBackend);

#[async_trait]
impl StoreFactory for Reference {
    async fn create(&self, segment_capacity: usize) -> Box<dyn StoreHandle> {
        // Small partitions, as the other backends' here, so that raw retention drops some.
        let backend = ReferenceBackend::new(segment_capacity)
            .and_then(|b| b.with_partition_ns(16))
            .expect("a valid capacity");
        Box::new(ReferenceStore(backend))
    }
}

#[async_trait]
impl StoreHandle for ReferenceStore {
    async fn open(&self) -> Arc<dyn Backend> {
        Arc::new(self.0.reopen())
    }
}

struct Embedded;

struct EmbeddedStore {
    dir: tempfile::TempDir,
    head_points: usize,
}

/// The embedded store keeps no segments of a fixed capacity: the capacity becomes the size
/// of its head, so that the suite's small stores flush to part files, merge and read
/// across parts, frozen heads and the head all the time.
#[async_trait]
impl StoreFactory for Embedded {
    async fn create(&self, segment_capacity: usize) -> Box<dyn StoreHandle> {
        let dir = tempfile::tempdir().expect("temp dir");
        Box::new(EmbeddedStore {
            dir,
            head_points: segment_capacity,
        })
    }
}

#[async_trait]
impl StoreHandle for EmbeddedStore {
    async fn open(&self) -> Arc<dyn Backend> {
        let mut options = EmbeddedOptions::new(self.dir.path());
        options.head_points = self.head_points;
        // Small partitions, so that ranges and neighbours cross several of them.
        options.partition_ns = 16;
        Arc::new(EmbeddedBackend::open(options).expect("open embedded store"))
    }
}

/// MongoDB; each store is a fresh database on the server named by
/// `TICKERTAPE_MONGODB_URI`. Small partitions and documents, and folds every 50 ms after
/// three documents, so that ranges, neighbours and folds (racing the test's own calls)
/// all cross several of them.
struct Mongo;

struct MongoStore {
    uri: String,
    block_points: usize,
}

#[async_trait]
impl StoreFactory for Mongo {
    async fn create(&self, segment_capacity: usize) -> Box<dyn StoreHandle> {
        static N: AtomicU32 = AtomicU32::new(0);
        let server = std::env::var("TICKERTAPE_MONGODB_URI").unwrap_or_else(|_| {
            panic!("TICKERTAPE_MONGODB_URI is not set: run scripts/test, which starts a MongoDB test server")
        });
        let db = format!(
            "tt_conformance_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        Box::new(MongoStore {
            uri: tickertape_mongodb::uri_with_database(&server, &db),
            block_points: segment_capacity,
        })
    }
}

#[async_trait]
impl StoreHandle for MongoStore {
    async fn open(&self) -> Arc<dyn Backend> {
        let mut options = MongoOptions::new(&self.uri);
        options.partition_ns = 16;
        options.block_points = self.block_points;
        options.fold_every = std::time::Duration::from_millis(50);
        options.fold_docs = 3;
        // The suite reads only between its own calls, never beside a fold: `compact`
        // deletes what its fold superseded at once.
        options.superseded_grace = std::time::Duration::ZERO;
        let backend = MongoBackend::connect(options)
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.uri));
        Arc::new(backend)
    }
}

/// Seeds and steps of `matches_the_reference` per backend: every operation is drawn a few
/// dozen times per seed, and a seed stays quick on the MongoDB test server.
const MODEL_SEEDS: u64 = 4;
const MODEL_STEPS: usize = 300;

macro_rules! suite {
    ($module:ident, $factory:expr) => {
        mod $module {
            use super::*;
            suite!(@tests $factory;
                append_then_read, any_value_any_time, rollover_keeps_chain_and_seals,
                neighbors_across_boundaries_and_gaps, older_points_follow_the_append_rule,
                many_series_in_one_call, series_registry, reopen_keeps_everything,
                heads_report_last_point, raw_buckets_set_once_per_slot,
                counter_slots_accumulate, rollup_slots_match_the_reference,
                preallocated_slots_read_as_absent, partitions_are_listed_and_dropped,
                name_tokens_are_stable, raw_totals_sum_in_write_order,
                bucket_reads_select_documents_overlapping_the_range,
                merges_in_one_call_apply_in_order,
                rollup_shells_take_merges_and_keep_negative_zero,
                name_tokens_count_from_zero_per_namespace, unknown_series_are_refused,
                stats_count_series_and_segments, a_read_in_a_gap_opens_only_its_neighbours,
                derived_rollups_equal_the_raw_slots, one_retention_call_drops_each_expiry,
                series_selected_by_tags_and_matchers,
                series_lookup_and_count_register_nothing, fields_listed_once_each,
                tag_keys_and_values_listed, stale_markers_come_back_bit_for_bit,
                deleted_points_never_come_back, databases_are_created_listed_and_dropped,
                databases_keep_series_apart, retention_policies_are_kept_per_database,
                a_databases_default_policy_bounds_its_raw_points, many_series_are_read_at_once);

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn model_check() {
                for seed in 0..4 {
                    tickertape_conformance::model_check(&$factory, seed, 150).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn matches_the_reference() {
                for seed in 0..MODEL_SEEDS {
                    tickertape_conformance::matches_the_reference(&$factory, seed, MODEL_STEPS)
                        .await;
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

suite!(reference, Reference);
suite!(embedded, Embedded);
suite!(mongodb, Mongo);
