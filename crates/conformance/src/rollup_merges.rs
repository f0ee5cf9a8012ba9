//! Rollup slots through the store (docs/design.md#rollups-at-several-resolutions): after any sequence of `Merge`
//! writes a slot holds exactly what `RollupUpdate::apply_to` computes, bit for bit —
//! however a series' points are split into batches and calls, with several merges to one
//! document or one slot in a call, into pre-allocated shells, and with signed zeros.

use crate::buckets::{awkward_value, read, rollup, write, H, MEASUREMENT, S};
use crate::StoreFactory;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use tickertape_backend::BucketRange;
use tickertape_backend::DocumentStart;
use tickertape_backend::{
    Backend, BucketRead, BucketWrite, BucketWriteOutcome, SlotChange, SlotValue,
};
use tickertape_core::query::Summary;
use tickertape_core::rollup::{rollup_updates, Resolution, RollupUpdate};
use tickertape_core::{Point, SeriesId};

/// The write the engine makes for one rollup update.
pub fn merge_write(series: SeriesId, u: &RollupUpdate, batch: &[Point]) -> BucketWrite {
    BucketWrite::rollup(MEASUREMENT, series, u, batch).expect("a valid rollup write")
}

/// What the store must hold: every rollup slot as `apply_to` leaves it, by
/// `(series, resolution ns, bucket start, slot)`.
#[derive(Default)]
struct Reference(BTreeMap<(SeriesId, i64, i64, u32), Summary>);

impl Reference {
    /// Applies `batch`'s updates for `series` to the reference and returns the writes
    /// the engine makes for them, in order.
    fn merge(
        &mut self,
        series: SeriesId,
        batch: &[Point],
        resolutions: &[Resolution],
    ) -> Vec<BucketWrite> {
        let updates = rollup_updates(batch, resolutions).expect("rollup updates");
        for u in &updates {
            let key = (series, u.resolution.nanos(), u.bucket_start, u.slot);
            let after = u.apply_to(self.0.get(&key), batch);
            self.0.insert(key, after);
        }
        updates
            .iter()
            .map(|u| merge_write(series, u, batch))
            .collect()
    }

    /// Every stored slot of `series` at `r` equals the reference, and no other is stored.
    async fn check(&self, b: &dyn Backend, series: SeriesId, r: Resolution, context: &str) {
        let mut got = BTreeMap::new();
        for d in read(b, rollup(r), series, i64::MIN, i64::MAX).await {
            assert!(d.totals.is_none(), "rollup documents have no raw totals");
            for (slot, v) in &d.slots {
                let SlotValue::Summary(s) = v else {
                    panic!("{context}: rollup slot {slot} read back as a value")
                };
                got.insert((series, r.nanos(), d.bucket_start, *slot), s.to_bits());
            }
        }
        let want: BTreeMap<_, _> = self
            .0
            .iter()
            .filter(|(k, _)| k.0 == series && k.1 == r.nanos())
            .map(|(k, s)| (*k, s.to_bits()))
            .collect();
        assert_eq!(got, want, "{context}: {series:?} at {r}");
    }
}

/// How many values a merge write adds to its slot.
fn merged_values(write: &BucketWrite) -> usize {
    match write.change() {
        SlotChange::Merge { values, .. } => values.len(),
        other => panic!("a rollup write is a merge, not {}", other.name()),
    }
}

fn assert_applied(out: &[BucketWriteOutcome], context: &str) {
    assert!(
        out.iter().all(|o| *o == BucketWriteOutcome::Applied),
        "{context}: {out:?}"
    );
}

/// Random points, split at random into batches and calls (some batches long enough to
/// merge many values into one slot), merged at two resolutions, some into a pre-allocated
/// shell: every slot equals the reference, for several seeds.
pub async fn rollup_slots_match_the_reference(f: &dyn StoreFactory) {
    let resolutions = [Resolution::MINUTE, Resolution::HOUR];
    let series = SeriesId(9);
    for seed in 0..3 {
        let store = f.create(8).await;
        let b = store.open().await;
        let mut rng = StdRng::seed_from_u64(seed);
        b.preallocate(
            DocumentStart::new(rollup(Resolution::HOUR), 0).expect("a document start"),
            &[series],
        )
        .await
        .expect("shell");
        let mut reference = Reference::default();
        let mut t = -H / 2;
        let mut long_merges = 0;
        for call in 0..25 {
            let mut writes = Vec::new();
            for _ in 0..rng.gen_range(1..=3) {
                let n = rng.gen_range(1..=if call % 7 == 0 { 90 } else { 12 });
                let batch: Vec<Point> = (0..n)
                    .map(|_| {
                        t += rng.gen_range(1..=if n > 40 { 2 } else { 80 }) * S / 2;
                        Point::new(t, awkward_value(&mut rng))
                    })
                    .collect();
                let merges = reference.merge(series, &batch, &resolutions);
                long_merges += merges.iter().filter(|w| merged_values(w) > 32).count();
                writes.extend(merges);
            }
            assert_applied(
                &write(&*b, writes).await,
                &format!("seed {seed} call {call}"),
            );
        }
        assert!(
            long_merges > 0,
            "seed {seed}: no merge of more than 32 values"
        );
        assert!(t > 0, "seed {seed}: no merge landed in the shell");
        for r in resolutions {
            reference
                .check(&*b, series, r, &format!("seed {seed}"))
                .await;
        }
    }
}

/// One call carries runs of merges to one document — the same slot several times in a
/// run, runs of two documents interleaved, a shell — and every slot ends as `apply_to`
/// in the call's order.
pub async fn merges_in_one_call_apply_in_order(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let minute = [Resolution::MINUTE];
    let (eight, nine) = (SeriesId(8), SeriesId(9));
    b.preallocate(
        DocumentStart::new(rollup(Resolution::MINUTE), 0).expect("a document start"),
        &[nine],
    )
    .await
    .expect("shell");
    let mut rng = StdRng::seed_from_u64(7);
    let mut reference = Reference::default();
    for call in 0..8 {
        // Points from a minute of hour 0 on (spilling into hour 1 now and then), 1-3 s
        // apart, so that batches of one call share slots.
        let batch = |rng: &mut StdRng| -> Vec<Point> {
            let mut t = [0, 1, 2, 58][rng.gen_range(0..4)] * 60 * S;
            let step = rng.gen_range(1..=3) * S;
            (0..rng.gen_range(1..=if call % 3 == 0 { 90 } else { 20 }))
                .map(|_| {
                    t += step;
                    Point::new(t, awkward_value(rng))
                })
                .collect()
        };
        // Two batches of series 8 back to back (the same slots merged twice in one run),
        // then 9, 8, 9: the documents interleave.
        let mut writes = Vec::new();
        for series in [eight, eight, nine, eight, nine] {
            let points = batch(&mut rng);
            writes.extend(reference.merge(series, &points, &minute));
        }
        assert_applied(&write(&*b, writes).await, &format!("call {call}"));
    }
    for series in [eight, nine] {
        reference
            .check(&*b, series, Resolution::MINUTE, "one call")
            .await;
    }
}

/// A slot's first value of -0.0 stays -0.0, in a fresh document and in a shell; a rollup
/// shell is a document with no slots until a merge lands in it, and pre-allocating over a
/// document with slots changes nothing.
pub async fn rollup_shells_take_merges_and_keep_negative_zero(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let minute = rollup(Resolution::MINUTE);
    let (shelled, fresh) = (SeriesId(1), SeriesId(2));
    let p = Point::new(H + 5 * S, -0.0);
    let merge = |series| {
        let updates = rollup_updates(&[p], &[Resolution::MINUTE]).expect("updates");
        merge_write(series, &updates[0], &[p])
    };
    assert_applied(&write(&*b, vec![merge(fresh)]).await, "fresh");
    let created = b
        .preallocate(
            DocumentStart::new(minute, H).expect("a document start"),
            &[shelled, fresh, shelled],
        )
        .await
        .expect("preallocate");
    assert_eq!(created, 1, "the fresh series' document existed");
    let shell = read(&*b, minute, shelled, H, 2 * H).await;
    assert_eq!(shell.len(), 1);
    assert!(shell[0].slots.is_empty() && shell[0].totals.is_none());
    assert_applied(&write(&*b, vec![merge(shelled)]).await, "shell");
    for series in [shelled, fresh] {
        let got = read(&*b, minute, series, 0, 3 * H).await;
        assert_eq!(got.len(), 1, "{series:?}");
        assert_eq!(got[0].bucket_start, H);
        let [(0, SlotValue::Summary(s))] = got[0].slots.as_slice() else {
            panic!("{series:?}: one summary in slot 0: {:?}", got[0].slots)
        };
        assert_eq!(s.to_bits(), Summary::of(p).to_bits(), "{series:?}");
    }
    assert_eq!(
        b.preallocate(
            DocumentStart::new(minute, H).expect("a document start"),
            &[shelled]
        )
        .await
        .expect("again"),
        0
    );
    let totals_only = b
        .read_buckets(
            BucketRange {
                family: minute,
                series: shelled,
                start: H,
                end: 2 * H,
            },
            BucketRead::TotalsOnly,
        )
        .await
        .expect("totals only");
    assert_eq!(totals_only.len(), 1);
    assert!(totals_only[0].slots.is_empty());
}
