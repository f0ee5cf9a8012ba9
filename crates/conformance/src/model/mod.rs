//! The model check over every operation: a real backend and a fresh reference backend
//! (`crates/reference`, the contract as code) are driven with the same random sequence of
//! operations, and every answer of the real one must equal the reference's.
//!
//! What "equal" means where the contract leaves freedom:
//! - series ids: the trait promises stable, distinct ids, not which ones, so the check
//!   keeps a one-to-one map from the real backend's ids to the reference's;
//! - value segments: where a backend cuts its segments is its own affair, so reads are
//!   compared as the points in `[start, end)` plus the two neighbours
//!   ([`select_range`] of the decoded segments), bit for bit;
//! - floats everywhere bit for bit (every value drawn is finite, so NaN never appears);
//! - derived rollups of value segments: bit for bit, whether or not the store has caught
//!   up (compactions are among the operations).
//!
//! Times span the whole `i64` range for segments (near `i64::MIN`, around the epoch, near
//! `i64::MAX`) and start at [`MIN_BUCKET_TIME`] for buckets. Sizes are small: one seed of
//! a few hundred steps must stay quick on the MongoDB test server.
//!
//! Reads of many series at once (`read_points`, `read_segment_rollups`) are compared
//! series by series (`batched.rs`). Deletes of points (`delete_points`) are among the operations; removing series is not
//! (it would retire ids the check maps): `deletes.rs` tests it.

mod batched;
mod buckets;
mod rollups;

use crate::StoreFactory;
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::{
    Backend, BackendError, BucketFamily, DeleteRange, NameKind, SeriesAppend,
};
use tickertape_backend::{NameStore, SeriesCatalog, ValueStore};
use tickertape_core::query::select_range;
use tickertape_core::rollup::{Resolution, MIN_BUCKET_TIME};
use tickertape_core::segment::{collect_points, Segment};
use tickertape_core::{MatchOp, Point, SeriesId, SeriesKey, SeriesSelector, TagMatcher};
use tickertape_reference::ReferenceBackend;

const S: i64 = 1_000_000_000;
const H: i64 = 3_600 * S;
const D: i64 = 24 * H;

/// Where segment series start, and jump to now and then: the far past, around the epoch,
/// the far future.
const SEGMENT_ANCHORS: [i64; 5] = [i64::MIN + 1, -1_000, 0, 1_000_000, i64::MAX - 1_000];
/// Where bucket times start and jump to; a few hours of room after the last one.
const BUCKET_ANCHORS: [i64; 4] = [MIN_BUCKET_TIME, -2 * D - 7, 0, i64::MAX - 6 * H];
/// The measurement token of the rollups `write_with_rollups` derives from appends.
const DERIVED_MEASUREMENT: u64 = 9;
/// Bucket series of that rollup: this plus the index of the appended series' key.
const DERIVED_SERIES_BASE: u64 = 100;

/// Raw families (1-minute and 10-second slots) and rollups of measurement 7, plus the
/// derived 1-minute rollup of measurement 9.
fn families() -> [BucketFamily; 5] {
    [
        BucketFamily::raw(7, 60 * S).expect("1m is a valid interval"),
        BucketFamily::raw(8, 10 * S).expect("10s is a valid interval"),
        BucketFamily::rollup(7, Resolution::MINUTE),
        BucketFamily::rollup(7, Resolution::HOUR),
        BucketFamily::rollup(DERIVED_MEASUREMENT, Resolution::MINUTE),
    ]
}

/// Keys the check registers, a few at a time, some more than once.
fn keys() -> Vec<SeriesKey> {
    let key = |m: &str, host: &str, field: &str| {
        SeriesKey::new(m, vec![("host".into(), host.into())], field)
    };
    vec![
        key("cpu", "a", "u"),
        key("cpu", "b", "u"),
        key("cpu", "a", "s"),
        key("mem", "a", "free"),
        key("mem", "$x.y", "used"),
        key("cpu", "c d", "u"),
    ]
}

const NAMES: [&str; 8] = [
    "cpu",
    "mem",
    "$set",
    "a.b",
    "with space",
    "ünï",
    "",
    "host-1",
];

/// A series registered on both backends.
#[derive(Clone, Copy, Debug)]
struct Registered {
    key: usize,
    real: SeriesId,
    reference: SeriesId,
}

struct Check {
    seed: u64,
    step: usize,
    rng: StdRng,
    /// `None` only while the real store is closed for a reopen.
    real: Option<Arc<dyn Backend>>,
    reference: ReferenceBackend,
    keys: Vec<SeriesKey>,
    registered: Vec<Registered>,
    /// Times written into buckets (raw slots and rollup points), to read around them.
    bucket_times: Vec<i64>,
    /// The last rollup point of each bucket series, so merges arrive in time order.
    rollup_last: BTreeMap<u64, i64>,
}

/// Drives the backend of `f` and a fresh reference with the same `steps` random
/// operations from `seed`, and compares every answer (see the module docs).
pub async fn matches_the_reference(f: &dyn StoreFactory, seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let capacity = rng.gen_range(2..=5);
    let store = f.create(capacity).await;
    let real = store.open().await;
    let mut check = Check {
        seed,
        step: 0,
        rng,
        real: Some(real),
        reference: ReferenceBackend::new(capacity).expect("a valid capacity"),
        keys: keys(),
        registered: Vec::new(),
        bucket_times: Vec::new(),
        rollup_last: BTreeMap::new(),
    };
    rollups::offer(check.real());
    rollups::offer(&check.reference);
    check.resolve().await;
    for step in 0..steps {
        check.step = step;
        match check.rng.gen_range(0..34) {
            0..=1 => check.resolve().await,
            2..=6 => check.append().await,
            7..=9 => check.read_segments().await,
            10 => check.read_points().await,
            11..=12 => check.heads().await,
            13..=16 => check.write_buckets().await,
            17..=20 => check.read_buckets().await,
            21..=22 => check.write_with_rollups().await,
            23 => check.preallocate().await,
            24..=25 => check.partitions().await,
            26..=27 => check.names().await,
            28 => check.unknown_series().await,
            29 => check.read_segment_rollup().await,
            30 => check.read_segment_rollups().await,
            31 => check.compact().await,
            32 => check.delete_points().await,
            _ => {
                // Reopen: the real backend is closed (the embedded store opens only once at
                // a time) and opened again; the reference keeps its state, so everything
                // acknowledged must still be there.
                check.real = None;
                check.real = Some(store.open().await);
                check.reference = check.reference.reopen();
                rollups::offer(check.real());
            }
        }
    }
}

/// Every point of `series`, one per time.
async fn all_points(b: &dyn Backend, series: SeriesId) -> Vec<Point> {
    let segments = b.read_segments(series, i64::MIN, i64::MAX).await;
    let points = collect_points(&segments.expect("read")).expect("decode");
    select_range(&points, i64::MIN, i64::MAX, false)
}

impl Check {
    fn real(&self) -> &dyn Backend {
        self.real
            .as_deref()
            .expect("the real store is open between steps")
    }

    fn context(&self, what: &str) -> String {
        format!(
            "seed {} step {} ({what}), {} vs reference",
            self.seed,
            self.step,
            self.real().kind()
        )
    }

    fn value(&mut self) -> f64 {
        match self.rng.gen_range(0..8) {
            0 => 0.0,
            1 => -0.0,
            2 => self.rng.gen_range(-5..5) as f64,
            3 => 0.1 * self.rng.gen_range(-50..50) as f64,
            _ => self.rng.gen_range(-1e6..1e6),
        }
    }

    /// Registers 1–4 keys (repeats included) on both and checks the ids map one-to-one;
    /// then `find_series` and the series count of `stats`.
    async fn resolve(&mut self) {
        let picked: Vec<usize> = (0..self.rng.gen_range(1..=4))
            .map(|_| self.rng.gen_range(0..self.keys.len()))
            .collect();
        let keys: Vec<SeriesKey> = picked.iter().map(|&i| self.keys[i].clone()).collect();
        let real = self
            .real()
            .resolve_series(&keys)
            .await
            .expect("resolve real");
        let reference = self.reference.resolve_series(&keys).await.expect("resolve");
        assert_eq!(real.len(), keys.len(), "{}", self.context("resolve"));
        for ((&key, real), reference) in picked.iter().zip(real).zip(reference) {
            let known = self.registered.iter().find(|r| r.key == key);
            match known {
                Some(r) => assert_eq!(
                    (r.real, r.reference),
                    (real, reference),
                    "{}: key {} changed id",
                    self.context("resolve"),
                    self.keys[key]
                ),
                None => {
                    let taken = self.registered.iter().any(|r| r.real == real);
                    assert!(!taken, "{}: id {real} reused", self.context("resolve"));
                    self.registered.push(Registered {
                        key,
                        real,
                        reference,
                    });
                }
            }
        }
        self.find_series().await;
    }

    async fn find_series(&mut self) {
        let host = ["a", "b", "$x.y"].choose(&mut self.rng).copied();
        let mut selector = SeriesSelector {
            measurement: ["cpu", "mem"]
                .choose(&mut self.rng)
                .copied()
                .unwrap_or("cpu")
                .into(),
            field: None,
            tags: host
                .map(|h| ("host".into(), h.into()))
                .into_iter()
                .collect(),
            matchers: Vec::new(),
        };
        // Sometimes a matcher too: a missing `host` counts as empty, regexes are anchored.
        let matcher = [
            None,
            Some((MatchOp::NotEqual, "a")),
            Some((MatchOp::Regex, "a|\\$x\\.y")),
            Some((MatchOp::Regex, ".*")),
            Some((MatchOp::NotRegex, "b?")),
        ]
        .choose(&mut self.rng)
        .copied()
        .flatten();
        if let Some((op, pattern)) = matcher {
            selector
                .matchers
                .push(TagMatcher::new("host", op, pattern).expect("valid matcher"));
        }
        let real = self.real().find_series(&selector).await.expect("find real");
        let reference = self.reference.find_series(&selector).await.expect("find");
        let context = self.context(&format!("find_series {selector:?}"));
        assert!(
            real.windows(2).all(|w| w[0].id < w[1].id),
            "{context}: id order"
        );
        let as_reference = |id: SeriesId| self.registered.iter().find(|r| r.real == id);
        let mut real: Vec<(SeriesId, SeriesKey)> = real
            .into_iter()
            .map(|s| {
                (
                    as_reference(s.id).map_or(SeriesId(0), |r| r.reference),
                    s.key,
                )
            })
            .collect();
        real.sort_by_key(|(id, _)| *id);
        let reference: Vec<(SeriesId, SeriesKey)> =
            reference.into_iter().map(|s| (s.id, s.key)).collect();
        assert_eq!(real, reference, "{context}");
        let stats = self.real().stats().await.expect("stats");
        let want = self.reference.stats().await.expect("stats").series;
        assert_eq!(stats.series, want, "{}", self.context("stats.series"));
    }

    fn pick_registered(&mut self) -> Option<Registered> {
        self.registered.choose(&mut self.rng).copied()
    }

    /// Points for `series` from around its last stored time: sometimes starting at or
    /// before it (an out-of-order prefix), sometimes jumping ahead to the next anchor.
    async fn batch_for(&mut self, series: Registered) -> Option<Vec<Point>> {
        let head = self
            .reference
            .heads(&[series.reference])
            .await
            .expect("heads")[0];
        let mut t = match head.map(|h| h.last.time) {
            None => *SEGMENT_ANCHORS.choose(&mut self.rng)?,
            Some(last) if self.rng.gen_ratio(1, 8) => SEGMENT_ANCHORS
                .into_iter()
                .find(|&a| a > last)
                .unwrap_or(last),
            Some(last) => last.saturating_add(self.rng.gen_range(-6..3)),
        }
        .max(i64::MIN + 1);
        let mut points = Vec::new();
        for _ in 0..self.rng.gen_range(1..=6) {
            if t == i64::MAX {
                break;
            }
            points.push(Point::new(t, self.value()));
            t = t.saturating_add(self.rng.gen_range(1..4));
        }
        (!points.is_empty()).then_some(points)
    }

    async fn appends(&mut self) -> Vec<(Registered, Vec<Point>)> {
        let mut out = Vec::new();
        for _ in 0..self.rng.gen_range(1..=3) {
            let Some(series) = self.pick_registered() else {
                break;
            };
            if let Some(points) = self.batch_for(series).await {
                out.push((series, points));
            }
        }
        out
    }

    async fn append(&mut self) {
        let planned = self.appends().await;
        let make = |real: bool| {
            planned
                .iter()
                .map(|(s, pts)| {
                    let id = if real { s.real } else { s.reference };
                    SeriesAppend::new(id, pts.clone()).expect("increasing points")
                })
                .collect::<Vec<_>>()
        };
        // Both store every point (the last write of a time wins); the reads compare them.
        let context = self.context("append");
        self.real()
            .append(make(true))
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        self.reference.append(make(false)).await.expect("append");
    }

    /// A lone append to a series never registered fails with `UnknownSeries` on both.
    async fn unknown_series(&mut self) {
        let id = SeriesId(1_000_000 + self.step as u64);
        let append = || vec![SeriesAppend::new(id, vec![Point::new(1, 1.0)]).expect("one point")];
        let context = self.context("append to an unknown series");
        match self.real().append(append()).await {
            Err(BackendError::UnknownSeries(got)) => assert_eq!(got, id, "{context}"),
            other => panic!("{context}: {other:?}"),
        }
        let reference = self.reference.append(append()).await;
        assert!(matches!(reference, Err(BackendError::UnknownSeries(_))));
    }

    /// Deletes the points of 1–2 series in a range around one's points (sometimes all of
    /// them) on both, then compares every point of those series and their heads.
    async fn delete_points(&mut self) {
        let picked: Vec<Registered> = (0..self.rng.gen_range(1..=2))
            .filter_map(|_| self.pick_registered())
            .collect();
        let Some(first) = picked.first().copied() else {
            return;
        };
        let everything = self
            .reference
            .read_segments(first.reference, i64::MIN, i64::MAX);
        let all = collect_points(&everything.await.expect("read")).expect("decode");
        let times: Vec<i64> = all.iter().map(|p| p.time).collect();
        let range = match self.range_around(&times, &SEGMENT_ANCHORS) {
            (i64::MIN, i64::MAX) => DeleteRange::all(),
            (start, end) => match DeleteRange::new(Some(start), Some(end)) {
                Ok(range) => range,
                Err(_) => return,
            },
        };
        let context = self.context(&format!("delete_points {range:?}"));
        let real: Vec<SeriesId> = picked.iter().map(|r| r.real).collect();
        let reference: Vec<SeriesId> = picked.iter().map(|r| r.reference).collect();
        self.real()
            .delete_points(&real, range)
            .await
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        self.reference
            .delete_points(&reference, range)
            .await
            .expect("delete");
        for r in picked {
            let got = all_points(self.real(), r.real).await;
            let want = all_points(&self.reference, r.reference).await;
            crate::assert_bits_eq(&got, &want, &context);
            let head = |h: Vec<Option<tickertape_backend::SeriesHead>>| h[0].map(|h| h.last.time);
            assert_eq!(
                head(self.real().heads(&[r.real]).await.expect("heads")),
                head(self.reference.heads(&[r.reference]).await.expect("heads")),
                "{context}: head"
            );
        }
    }

    /// A random half-open range around `times`: their points ±1, the anchors and the ends
    /// of time; sometimes empty (`start == end`), sometimes everything.
    fn range_around(&mut self, times: &[i64], anchors: &[i64]) -> (i64, i64) {
        if self.rng.gen_ratio(1, 8) {
            return (i64::MIN, i64::MAX);
        }
        let bound = |rng: &mut StdRng| match rng.gen_range(0..4) {
            0 => *anchors.choose(rng).unwrap_or(&0),
            1 => *[i64::MIN, i64::MAX].choose(rng).unwrap_or(&0),
            _ => times
                .choose(rng)
                .map_or(0, |t| t.saturating_add(rng.gen_range(-1..=1))),
        };
        let a = bound(&mut self.rng);
        let b = if self.rng.gen_ratio(1, 8) {
            a
        } else {
            bound(&mut self.rng)
        };
        (a.min(b), a.max(b))
    }

    /// Segments read as points: `[start, end)` and its neighbours, bit for bit, as the
    /// reference reads them; and the reference's answer is what the contract says.
    async fn read_segments(&mut self) {
        let Some(series) = self.pick_registered() else {
            return;
        };
        let everything = self
            .reference
            .read_segments(series.reference, i64::MIN, i64::MAX);
        let all = collect_points(&everything.await.expect("read")).expect("decode");
        let times: Vec<i64> = all.iter().map(|p| p.time).collect();
        let (start, end) = self.range_around(&times, &SEGMENT_ANCHORS);
        let context = self.context(&format!("read_segments [{start}, {end})"));
        let real = self.real().read_segments(series.real, start, end).await;
        let real = real.expect("read real");
        let by_prev_end = real.windows(2).all(|w| w[0].prev_end <= w[1].prev_end);
        assert!(by_prev_end, "{context}: segments not sorted by prev_end");
        let reference = self
            .reference
            .read_segments(series.reference, start, end)
            .await
            .expect("read");
        let neighbours = |segments: &[Segment]| {
            let points = collect_points(segments).expect("decode");
            select_range(&points, start, end, true)
        };
        let want = neighbours(&reference);
        let contract = select_range(&all, start, end, true);
        // `Segment::may_overlap` needs `prev_end < end`, which the first segment's
        // `prev_end = i64::MIN` never is for `end == i64::MIN`: the empty range at the
        // start of time reads no neighbour after it on a backend that keeps value segments'
        // chain (the reference, MongoDB); one that makes a segment for the read (the
        // embedded store) may give the neighbour the contract names. Elsewhere the
        // reference gives exactly the points in range and both neighbours.
        let got = neighbours(&real);
        if end == i64::MIN && bits(&got) == bits(&contract) {
            return;
        }
        crate::assert_bits_eq(&got, &want, &context);
        if end != i64::MIN {
            crate::assert_bits_eq(&want, &contract, &format!("{context}: the reference"));
        }
    }

    async fn heads(&mut self) {
        let picked: Vec<Registered> = (0..self.rng.gen_range(1..=3))
            .filter_map(|_| self.pick_registered())
            .collect();
        let real_ids: Vec<SeriesId> = picked.iter().map(|r| r.real).collect();
        let reference_ids: Vec<SeriesId> = picked.iter().map(|r| r.reference).collect();
        let real = self.real().heads(&real_ids).await.expect("heads real");
        let reference = self.reference.heads(&reference_ids).await.expect("heads");
        let same = real.len() == reference.len()
            && real.iter().zip(&reference).all(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.last.bit_eq(&b.last),
                (a, b) => a.is_none() && b.is_none(),
            });
        assert!(same, "{}: {real:?} vs {reference:?}", self.context("heads"));
    }

    /// Tokens are compared as issued: from 0 per namespace, in first-seen order.
    async fn names(&mut self) {
        let namespace = *NameKind::ALL.choose(&mut self.rng).expect("namespaces");
        let names: Vec<String> = (0..self.rng.gen_range(1..=5))
            .filter_map(|_| NAMES.choose(&mut self.rng).map(|n| n.to_string()))
            .collect();
        let real = self
            .real()
            .tokenize(namespace, &names)
            .await
            .expect("tokenize real");
        let reference = self
            .reference
            .tokenize(namespace, &names)
            .await
            .expect("tokenize");
        let context = self.context(&format!("tokenize {namespace} {names:?}"));
        assert_eq!(real, reference, "{context}");
        let tokens: Vec<u64> = (0..self.rng.gen_range(1..=4))
            .map(|_| self.rng.gen_range(0..10))
            .collect();
        let real = self
            .real()
            .names_of(namespace, &tokens)
            .await
            .expect("names_of real");
        let reference = self
            .reference
            .names_of(namespace, &tokens)
            .await
            .expect("names_of");
        let context = self.context(&format!("names_of {namespace} {tokens:?}"));
        assert_eq!(real, reference, "{context}");
    }
}

/// Points as (time, value bits), for an exact comparison without a panic.
fn bits(points: &[Point]) -> Vec<(i64, u64)> {
    points.iter().map(|p| (p.time, p.value.to_bits())).collect()
}
