//! Folding, off the write path: a series' documents in a partition merged into as few
//! as `block_points` allows, and its rollups derived from the points held.
//!
//! A pass looks at the partitions marked pending (or, to verify or compact, at all),
//! and per series decides:
//! - **rollups**: when the rollup documents do not cover exactly the series' live
//!   documents, extend them with the new documents' points (when every new point is later
//!   than what they summarise: the common case, cheap) or recompute them from all points.
//! - **raw fold**: when `fold_docs` fresh documents wait, or one has waited `seal_idle`,
//!   or a late point overlaps summarised ones (or on `compact`), merge every live
//!   document into new ones that reuse the lowest `_id`s, each rewritten only if its
//!   version `u` is still the one read; the rest are marked superseded (`x`) and deleted
//!   after a grace, so a reader that saw a rewritten document's old version still finds
//!   their points.
//!
//! Every write is conditional on the version read, so two folds (two handles) racing on
//! a series leave duplicates at worst, which readers merge; a point is never lost.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::Result;
use tickertape_core::rollup::{summarize_slots, Resolution};
use tickertape_core::segment::NO_PREVIOUS;

use super::doc::{folded, id, meta_projection, parse_meta, parse_points, Meta};
use super::merge::{merge, points, Written};
use super::names::{rollup_collection, PartitionName};
use super::rollup_doc::{extend, RollupDoc};
use super::write::{now_ms, PENDING};
use crate::bulk::{self, Update};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::need_i64;
use crate::options::FaultPoint;
use crate::Shared;

/// Series planned and written together.
const SERIES_PER_ROUND: usize = 200;

/// How long a superseded document stays readable after the fold that replaced it: far
/// longer than any one read of a partition takes.
pub(crate) const SUPERSEDED_GRACE_MS: i64 = 60_000;

/// What a pass looks at, and how eagerly it folds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Partitions marked pending, their series with documents waiting.
    Pending,
    /// Every series of every partition: rollups made where missing (after a start or a
    /// new rollup plan), raw folds by the usual rules.
    Verify,
    /// Every series of every partition, every series folded to its final form.
    Compact,
}

/// What a pass leaves behind in one partition.
#[derive(Default)]
struct Left {
    /// Points in live documents the rollups do not cover.
    uncovered: u64,
    /// Documents still holding `d` (waiting for a fold or for deletion).
    waiting: u64,
}

/// What to do with one series in one round.
struct Plan {
    series: i64,
    live: Vec<Meta>,
    superseded: Vec<Meta>,
    fold_raw: bool,
    rollups: RollupWork,
}

enum RollupWork {
    None,
    /// Extend the stored documents with these (uncovered) documents' points.
    Extend(Vec<RollupDoc>, Vec<Meta>),
    Full,
}

impl Shared {
    /// One pass over `scope`; sets the lag gauge from what it leaves.
    pub(crate) async fn fold_pass(&self, scope: Scope) -> Result<()> {
        let _one = self.fold_lock.lock().await;
        self.lag.pass_begins();
        let targets: Vec<(String, Option<i64>)> = match scope {
            Scope::Pending => {
                let marks =
                    find_all(self.collection(PENDING).find(doc! {}), "read fold marks").await?;
                marks
                    .iter()
                    .filter_map(|m| {
                        Some((m.get_str("_id").ok()?.to_owned(), need_i64(m, "g").ok()))
                    })
                    .collect()
            }
            Scope::Verify | Scope::Compact => self
                .partitions(None)
                .await?
                .into_iter()
                .filter(|p| p.resolution.is_none())
                .map(|p| (p.collection(), None))
                .collect(),
        };
        let mut uncovered = 0;
        for (collection, mark) in targets {
            let left = self.fold_partition(&collection, scope).await?;
            uncovered += left.uncovered;
            match mark {
                Some(g) if left.waiting == 0 => {
                    self.collection(PENDING)
                        .delete_one(doc! { "_id": &collection, "g": g })
                        .await
                        .map_err(|e| map_err("clear fold mark", e))?;
                }
                None if left.waiting > 0 => self.mark_pending(&collection).await?,
                _ => {}
            }
        }
        self.lag.pass_ended(uncovered);
        Ok(())
    }

    /// One partition, alone (retention's last fold before a drop).
    pub(crate) async fn fold_one(&self, collection: &str, scope: Scope) -> Result<()> {
        let _one = self.fold_lock.lock().await;
        self.fold_partition(collection, scope).await.map(|_| ())
    }

    async fn fold_partition(&self, collection: &str, scope: Scope) -> Result<Left> {
        let Some(name) = PartitionName::parse(collection).filter(|p| p.resolution.is_none()) else {
            return Ok(Left::default());
        };
        let resolutions = match self.measurement_name(name.token).await? {
            Some(m) => self.rollups.kept(&m, self.layout.partitioning),
            None => Vec::new(),
        };
        let filter = match scope {
            Scope::Pending => doc! { "d": { "$exists": true } },
            Scope::Verify | Scope::Compact => doc! {},
        };
        let found = find_all(
            self.collection(collection)
                .find(filter)
                .projection(doc! { "s": 1 }),
            "list series to fold",
        )
        .await?;
        let series: BTreeSet<i64> = found
            .iter()
            .map(|d| need_i64(d, "s"))
            .collect::<Result<_>>()?;
        let series: Vec<i64> = series.into_iter().collect();
        let mut left = Left::default();
        for chunk in series.chunks(SERIES_PER_ROUND) {
            let round = self.fold_round(&name, chunk, &resolutions, scope).await?;
            left.uncovered += round.uncovered;
            left.waiting += round.waiting;
        }
        Ok(left)
    }

    /// Plans, reads and writes one round of series.
    async fn fold_round(
        &self,
        name: &PartitionName,
        series: &[i64],
        resolutions: &[Resolution],
        scope: Scope,
    ) -> Result<Left> {
        let collection = name.collection();
        let metas = find_all(
            self.collection(&collection)
                .find(doc! { "s": { "$in": series.to_vec() } })
                .projection(meta_projection()),
            "read value documents to fold",
        )
        .await?;
        let mut by_series: BTreeMap<i64, Vec<Meta>> = BTreeMap::new();
        for d in &metas {
            let meta = parse_meta(d)?;
            by_series.entry(meta.series).or_default().push(meta);
        }
        let mut stored: HashMap<(i64, i64), RollupDoc> = HashMap::new();
        for r in resolutions {
            let docs = find_all(
                self.collection(&rollup_collection(name.token, r.nanos(), name.start))
                    .find(doc! { "_id": { "$in": series.to_vec() } }),
                "read rollups to fold",
            )
            .await?;
            for d in &docs {
                let doc = RollupDoc::parse(d)?;
                stored.insert((r.nanos(), doc.series), doc);
            }
        }
        let now = now_ms();
        let plans: Vec<Plan> = by_series
            .into_iter()
            .map(|(s, docs)| self.plan(s, docs, resolutions, &mut stored, scope, now))
            .collect();
        let points = self.read_points_of(&collection, &plans).await?;
        self.write_round(name, resolutions, plans, &points, now)
            .await
    }

    fn plan(
        &self,
        series: i64,
        docs: Vec<Meta>,
        resolutions: &[Resolution],
        stored: &mut HashMap<(i64, i64), RollupDoc>,
        scope: Scope,
        now: i64,
    ) -> Plan {
        let (mut live, superseded): (Vec<Meta>, Vec<Meta>) =
            docs.into_iter().partition(|m| m.superseded.is_none());
        live.sort_by_key(|m| m.w);
        let versions: Vec<(i64, i64)> = {
            let mut v: Vec<_> = live.iter().map(Meta::version).collect();
            v.sort_unstable();
            v
        };
        let docs: Vec<Option<RollupDoc>> = resolutions
            .iter()
            .map(|r| stored.remove(&(r.nanos(), series)))
            .collect();
        let rolled = docs
            .iter()
            .all(|d| d.as_ref().is_some_and(|d| d.covers == versions));
        // The rollups can be extended only if they all cover the same documents, all
        // of which are still live, and every new point is later than what they hold.
        let covers: Option<BTreeSet<(i64, i64)>> = match docs.first() {
            Some(Some(first))
                if docs
                    .iter()
                    .all(|d| d.as_ref().is_some_and(|d| d.covers == first.covers)) =>
            {
                Some(first.covers.iter().copied().collect())
            }
            _ => None,
        };
        let high = docs
            .first()
            .and_then(|d| d.as_ref())
            .map_or(NO_PREVIOUS, |d| d.high);
        let uncovered: Vec<Meta> = live
            .iter()
            .filter(|m| covers.as_ref().is_none_or(|c| !c.contains(&m.version())))
            .copied()
            .collect();
        let extendable = covers
            .as_ref()
            .is_some_and(|c| c.iter().all(|v| versions.binary_search(v).is_ok()))
            && uncovered.iter().all(|m| m.lo > high);
        let waiting: Vec<&Meta> = live.iter().filter(|m| m.pending).collect();
        let idle_since = now - self.schedule.seal_idle.as_millis() as i64;
        let fold_raw = match scope {
            Scope::Compact => live.len() > 1 || !waiting.is_empty(),
            Scope::Pending | Scope::Verify => {
                waiting.len() >= self.schedule.docs
                    || waiting.iter().any(|m| m.at.is_none_or(|a| a <= idle_since))
                    || (!waiting.is_empty() && !uncovered.iter().all(|m| m.lo > high))
            }
        };
        let rollups = match (rolled || resolutions.is_empty(), fold_raw, extendable) {
            (true, false, _) => RollupWork::None,
            (_, true, _) | (false, false, false) => RollupWork::Full,
            (false, false, true) => {
                RollupWork::Extend(docs.into_iter().flatten().collect(), uncovered)
            }
        };
        let rollups = match resolutions.is_empty() {
            true => RollupWork::None,
            false => rollups,
        };
        Plan {
            series,
            live,
            superseded,
            fold_raw,
            rollups,
        }
    }

    /// The points of every document the plans read: all live ones of a series folded or
    /// rolled up in full, the uncovered ones of a series whose rollups are extended.
    async fn read_points_of(
        &self,
        collection: &str,
        plans: &[Plan],
    ) -> Result<HashMap<(i64, i64), Vec<Written>>> {
        let mut ids: Vec<Bson> = Vec::new();
        for plan in plans {
            let wanted: Vec<&Meta> = match (&plan.rollups, plan.fold_raw) {
                (_, true) | (RollupWork::Full, _) => plan.live.iter().collect(),
                (RollupWork::Extend(_, new), false) => new.iter().collect(),
                (RollupWork::None, false) => Vec::new(),
            };
            ids.extend(
                wanted
                    .into_iter()
                    .map(|m| Bson::Document(id(m.series, m.w))),
            );
        }
        let mut out = HashMap::new();
        for chunk in ids.chunks(500) {
            let docs = find_all(
                self.collection(collection)
                    .find(doc! { "_id": { "$in": chunk.to_vec() } }),
                "read value documents to fold",
            )
            .await?;
            for d in &docs {
                let meta = parse_meta(d)?;
                out.insert((meta.series, meta.w), parse_points(d)?);
            }
        }
        Ok(out)
    }

    async fn write_round(
        &self,
        name: &PartitionName,
        resolutions: &[Resolution],
        plans: Vec<Plan>,
        read: &HashMap<(i64, i64), Vec<Written>>,
        now: i64,
    ) -> Result<Left> {
        let block = self.layout.block_points;
        let pieces_of = |plan: &Plan, metas: &[Meta]| -> Vec<Vec<Written>> {
            metas
                .iter()
                .filter_map(|m| read.get(&(plan.series, m.w)).cloned())
                .collect()
        };
        let outputs: usize = plans
            .iter()
            .filter(|p| p.fold_raw)
            .map(|p| merge(pieces_of(p, &p.live)).len().div_ceil(block))
            .sum();
        let mut next_u = match outputs {
            0 => 0,
            n => self.issue_writes(n as i64).await? - n as i64 + 1,
        };
        let start = name.start;
        let end = self.layout.partitioning.clamped_end_of(start);
        let mut rollups: Vec<Vec<Update>> = resolutions.iter().map(|_| Vec::new()).collect();
        let mut replaces: Vec<(i64, Update)> = Vec::new();
        let mut supersede: Vec<(i64, Update)> = Vec::new();
        let mut deletes: Vec<Document> = Vec::new();
        let mut left = Left::default();
        for plan in &plans {
            let merged = match plan.fold_raw || matches!(plan.rollups, RollupWork::Full) {
                true => merge(pieces_of(plan, &plan.live)),
                false => Vec::new(),
            };
            let mut versions: Vec<(i64, i64)> = plan.live.iter().map(Meta::version).collect();
            if plan.fold_raw {
                let chunks: Vec<&[Written]> = merged.chunks(block).collect();
                versions.clear();
                for (chunk, input) in chunks.iter().zip(&plan.live) {
                    let u = next_u;
                    next_u += 1;
                    versions.push((input.w, u));
                    replaces.push((
                        plan.series,
                        Update {
                            q: doc! { "_id": id(plan.series, input.w), "u": input.u },
                            u: folded(plan.series, input.w, u, chunk),
                            conditional: true,
                        },
                    ));
                }
                for input in plan.live.iter().skip(chunks.len()) {
                    supersede.push((
                        plan.series,
                        Update {
                            q: doc! { "_id": id(plan.series, input.w), "u": input.u },
                            u: doc! { "$set": { "x": now, "d": plan.series } },
                            conditional: false,
                        },
                    ));
                    left.waiting += 1;
                }
            }
            versions.sort_unstable();
            match &plan.rollups {
                RollupWork::None => {}
                RollupWork::Full => {
                    let all = points(&merged);
                    for (i, r) in resolutions.iter().enumerate() {
                        let doc = RollupDoc {
                            series: plan.series,
                            covers: versions.clone(),
                            high: all.last().map_or(NO_PREVIOUS, |p| p.time),
                            slots: summarize_slots(&all, start, end, *r),
                        };
                        rollups[i].push(rollup_upsert(&doc));
                    }
                }
                RollupWork::Extend(docs, new) => {
                    let fresh = points(&merge(pieces_of(plan, new)));
                    for (i, (r, stored)) in resolutions.iter().zip(docs).enumerate() {
                        let mut slots = stored.slots.clone();
                        extend(&mut slots, &fresh, *r);
                        let doc = RollupDoc {
                            series: plan.series,
                            covers: versions.clone(),
                            high: fresh
                                .last()
                                .map_or(stored.high, |p| p.time.max(stored.high)),
                            slots,
                        };
                        rollups[i].push(rollup_upsert(&doc));
                    }
                }
            }
            if !plan.fold_raw {
                left.waiting += plan.live.iter().filter(|m| m.pending).count() as u64;
            }
            for m in &plan.superseded {
                match m.superseded.is_some_and(|x| x <= now - SUPERSEDED_GRACE_MS) {
                    true => {
                        deletes.push(doc! { "_id": id(m.series, m.w), "u": m.u, "x": m.superseded })
                    }
                    false => left.waiting += 1,
                }
            }
        }
        for (r, updates) in resolutions.iter().zip(rollups) {
            if !updates.is_empty() {
                let collection = rollup_collection(name.token, r.nanos(), start);
                bulk::update(&self.db, &self.write_concern, &collection, updates).await?;
            }
        }
        self.fault(FaultPoint::AfterRollups)?;
        let collection = name.collection();
        let (series, updates): (Vec<i64>, Vec<Update>) = replaces.into_iter().unzip();
        let applied = bulk::update(&self.db, &self.write_concern, &collection, updates).await?;
        // A series another fold got to first keeps its other documents as they are.
        let lost: BTreeSet<i64> = series
            .iter()
            .zip(&applied)
            .filter(|(_, ok)| !**ok)
            .map(|(s, _)| *s)
            .collect();
        self.fault(FaultPoint::AfterReplace)?;
        let updates: Vec<Update> = supersede
            .into_iter()
            .filter(|(s, _)| !lost.contains(s))
            .map(|(_, u)| u)
            .collect();
        bulk::update(&self.db, &self.write_concern, &collection, updates).await?;
        bulk::delete(&self.db, &self.write_concern, &collection, deletes).await?;
        for plan in plans.iter().filter(|p| lost.contains(&p.series)) {
            left.uncovered += plan.live.iter().map(|m| m.n as u64).sum::<u64>();
        }
        Ok(left)
    }
}

/// An upsert that replaces a series' rollup document whatever it held.
fn rollup_upsert(doc: &RollupDoc) -> Update {
    Update {
        q: doc! { "_id": doc.series },
        u: doc.to_document(),
        conditional: true,
    }
}
