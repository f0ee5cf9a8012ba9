//! A fold pass: which slices it looks at (the marked ones, or every slice of every value
//! collection to verify or compact), the marks it clears or notes as seen, and the
//! series of a slice grouped into rounds (`fold`) by the rollups their measurements keep.

use std::collections::{BTreeMap, HashMap};

use mongodb::bson::{doc, Document};
use tickertape_backend::Result;
use tickertape_core::rollup::Resolution;

use super::fold::SERIES_PER_ROUND;
use super::names::value_collection;
use super::write::{now_ms, pending_id, PENDING};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::{get_i64, need_i64};
use crate::Shared;

/// How long a pass holds a fold mark's lease (`l`), Unix ms: past it, another handle may
/// fold the slice (the holder died, or takes that long).
const FOLD_LEASE_MS: i64 = 30_000;

/// What a pass looks at, and how eagerly it folds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Slices marked pending, their series with documents waiting.
    Pending,
    /// Every series of every slice: rollups made where missing (after a start or a
    /// new rollup plan), raw folds by the usual rules.
    Verify,
    /// Every series of every slice, every series folded to its final form.
    Compact,
}

/// What a pass leaves behind in one slice.
#[derive(Default)]
pub(super) struct Left {
    /// Points in live documents the rollups do not cover.
    pub(super) uncovered: u64,
    /// Documents still holding `d` (waiting for a fold or for deletion).
    pub(super) waiting: u64,
    /// The earliest time (Unix ms) one of them will be due for work (a fresh document's
    /// seal, a superseded one's delete); until then, and unless a writer marks the slice
    /// again, a pass has nothing to do there.
    pub(super) due: Option<i64>,
}

impl Left {
    pub(super) fn due_at(&mut self, ms: i64) {
        self.due = Some(self.due.map_or(ms, |d| d.min(ms)));
    }

    fn add(&mut self, other: Left) {
        self.uncovered += other.uncovered;
        self.waiting += other.waiting;
        if let Some(d) = other.due {
            self.due_at(d);
        }
    }
}

/// One slice of one value collection: the unit a fold pass works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Slice {
    /// The value collection's start.
    pub collection: i64,
    /// The slice's start.
    pub start: i64,
}

impl Slice {
    pub(crate) fn collection_name(&self) -> String {
        value_collection(self.collection)
    }
}

impl Shared {
    pub(crate) fn slice_of(&self, time: i64) -> Slice {
        let start = self.layout.partitioning.start_of(time);
        Slice {
            collection: self.layout.periods.values().start_of(start),
            start,
        }
    }

    /// The filter of a slice's documents: no document spans two slices, so its last
    /// time alone places it.
    pub(super) fn in_slice(&self, slice: Slice) -> Document {
        let end = self.layout.partitioning.end_of(slice.start);
        match end > i128::from(i64::MAX) {
            true => doc! { "$gte": slice.start },
            false => doc! { "$gte": slice.start, "$lt": end as i64 },
        }
    }

    /// One pass over `scope`; sets the lag gauge from what it leaves.
    pub(crate) async fn fold_pass(&self, scope: Scope) -> Result<()> {
        let _one = self.fold_lock.lock().await;
        self.lag.pass_begins();
        // (slice, its mark's `g`, its (series, measurement) when already listed)
        type Target = (Slice, Option<i64>, Option<Vec<(i64, i64)>>);
        let mut targets: Vec<Target> = Vec::new();
        let now = now_ms();
        match scope {
            Scope::Pending => {
                let marks =
                    find_all(self.collection(PENDING).find(doc! {}), "read fold marks").await?;
                for m in &marks {
                    let Ok(id) = m.get_document("_id") else {
                        continue;
                    };
                    let Some(collection) = id
                        .get_str("c")
                        .ok()
                        .and_then(super::PartitionName::parse)
                        .filter(|p| p.resolution.is_none())
                    else {
                        continue;
                    };
                    let Some(start) = get_i64(id, "p")? else {
                        continue;
                    };
                    let slice = Slice {
                        collection: collection.start,
                        start,
                    };
                    let g = need_i64(m, "g").ok();
                    // Looked at since its last mark, and nothing there due yet.
                    let idle = g.is_some()
                        && get_i64(m, "seen")? == g
                        && get_i64(m, "due")?.is_some_and(|due| due > now);
                    if !idle {
                        targets.push((slice, g, None));
                    }
                }
            }
            Scope::Verify | Scope::Compact => {
                for p in self.partitions().await? {
                    if p.resolution.is_some() {
                        continue;
                    }
                    let listed = find_all(
                        self.collection(&p.collection())
                            .find(doc! {})
                            .projection(doc! { "s": 1, "m": 1, "hi": 1 }),
                        "list series to fold",
                    )
                    .await?;
                    let mut by_slice: BTreeMap<Slice, Vec<(i64, i64)>> = BTreeMap::new();
                    for d in &listed {
                        let slice = self.slice_of(need_i64(d, "hi")?);
                        by_slice
                            .entry(slice)
                            .or_default()
                            .push((need_i64(d, "s")?, need_i64(d, "m")?));
                    }
                    targets.extend(by_slice.into_iter().map(|(s, l)| (s, None, Some(l))));
                }
            }
        }
        let mut uncovered = 0;
        for (slice, mark, listed) in targets {
            let id = pending_id(&slice.collection_name(), slice.start);
            if mark.is_some() && !self.lease_mark(&id, now).await? {
                // Another handle folds this slice now.
                continue;
            }
            let left = self.fold_slice(slice, scope, listed, None).await?;
            uncovered += left.uncovered;
            let released = match mark {
                Some(g) if left.waiting == 0 => {
                    self.collection(PENDING)
                        .delete_one(doc! { "_id": id.clone(), "g": g })
                        .await
                        .map_err(|e| map_err("clear fold mark", e))?
                        .deleted_count
                        > 0
                }
                None if left.waiting > 0 => {
                    self.mark_pending(&[(slice.collection_name(), slice.start)])
                        .await?;
                    true
                }
                None => true,
                Some(g) if left.uncovered == 0 => {
                    // Until `due`, passes skip this mark; a writer's mark moves `g` and
                    // ends that at once.
                    let due = left.due.unwrap_or(0);
                    self.collection(PENDING)
                        .update_one(
                            doc! { "_id": id.clone(), "g": g },
                            doc! { "$set": { "seen": g, "due": due }, "$unset": { "l": "" } },
                        )
                        .await
                        .map_err(|e| map_err("note a fold mark seen", e))?
                        .matched_count
                        > 0
                }
                Some(_) => false,
            };
            if !released {
                self.collection(PENDING)
                    .update_one(doc! { "_id": id }, doc! { "$unset": { "l": "" } })
                    .await
                    .map_err(|e| map_err("release a fold mark", e))?;
            }
        }
        self.lag.pass_ended(uncovered);
        Ok(())
    }

    /// Takes the lease of the fold mark `id` (`l`: until when a handle folds its slice)
    /// unless another handle holds it: one handle folds a slice at a time, so two
    /// handles' passes do not fold the same documents over and over (each finding the
    /// other's output beside its own, both waiting again). A lease outlives a handle
    /// that died holding it by [`FOLD_LEASE_MS`] at most.
    async fn lease_mark(&self, id: &Document, now: i64) -> Result<bool> {
        let taken = self
            .collection(PENDING)
            .update_one(
                doc! {
                    "_id": id.clone(),
                    "$or": [ { "l": { "$exists": false } }, { "l": { "$lt": now } } ],
                },
                doc! { "$set": { "l": now + FOLD_LEASE_MS } },
            )
            .await
            .map_err(|e| map_err("lease a fold mark", e))?;
        Ok(taken.matched_count > 0)
    }

    /// One slice, alone, and only measurement `m`'s series in it (retention's last fold
    /// before its deletes): rollups made to cover every point.
    pub(crate) async fn fold_measurement_slice(&self, slice: Slice, m: i64) -> Result<()> {
        let _one = self.fold_lock.lock().await;
        self.fold_slice(slice, Scope::Verify, None, Some(m))
            .await
            .map(|_| ())
    }

    /// Folds the series of one slice: those `listed` (series, measurement), else those
    /// with documents waiting (`Pending`) or all (of measurement `only`, if given).
    /// Series whose measurements keep the same rollups fold in rounds together.
    async fn fold_slice(
        &self,
        slice: Slice,
        scope: Scope,
        listed: Option<Vec<(i64, i64)>>,
        only: Option<i64>,
    ) -> Result<Left> {
        let listed = match listed {
            Some(listed) => listed,
            None => {
                let mut filter = match scope {
                    Scope::Pending => doc! { "d": { "$exists": true }, "hi": self.in_slice(slice) },
                    Scope::Verify | Scope::Compact => doc! { "hi": self.in_slice(slice) },
                };
                if let Some(m) = only {
                    filter.insert("m", m);
                }
                let found = find_all(
                    self.collection(&slice.collection_name())
                        .find(filter)
                        .projection(doc! { "s": 1, "m": 1 }),
                    "list series to fold",
                )
                .await?;
                found
                    .iter()
                    .map(|d| Ok((need_i64(d, "s")?, need_i64(d, "m")?)))
                    .collect::<Result<Vec<_>>>()?
            }
        };
        let measurement_of: BTreeMap<i64, i64> = listed.into_iter().collect();
        let mut kept: HashMap<i64, Vec<Resolution>> = HashMap::new();
        let mut groups: BTreeMap<Vec<Resolution>, Vec<i64>> = BTreeMap::new();
        for (&s, &m) in &measurement_of {
            let resolutions = match kept.get(&m) {
                Some(r) => r.clone(),
                None => {
                    let r = match self.measurement_name(m as u64).await? {
                        Some(name) => self.rollups.kept(&name, self.layout.partitioning),
                        None => Vec::new(),
                    };
                    kept.insert(m, r.clone());
                    r
                }
            };
            groups.entry(resolutions).or_default().push(s);
        }
        let mut left = Left::default();
        for (resolutions, series) in groups {
            for chunk in series.chunks(SERIES_PER_ROUND) {
                let round = self
                    .fold_round(slice, chunk, &measurement_of, &resolutions, scope)
                    .await?;
                left.add(round);
            }
        }
        Ok(left)
    }
}
