//! Retention drops: the raw blocks, or the rollup blocks at one resolution, of
//! measurements in the partitions that end at or before each one's cutoff. A retention
//! pass hands over every measurement at once, so each partition's parts are rewritten
//! once for all of them: with a part holding a day of every measurement, a rewrite per
//! measurement would copy the day once for each of hundreds of metric names.

use super::background::Background;
use super::manifest;
use super::part::{Entry, Part};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tickertape_backend::{DroppedPartitions, Expiry, Result};
use tickertape_core::rollup::Resolution;

/// The blocks a drop removes from a partition: (measurement number, kind), the kind
/// `None` for raw blocks, as part entries name them.
type Doomed = BTreeSet<(u64, Option<Resolution>)>;

impl Background {
    /// Drops (or with `dry_run` lists) what `expiries` name; returns each one's
    /// partitions `[start, end)`, in the order given. The parts of a partition are
    /// rewritten without the doomed blocks — every other block copied as it is — and
    /// swapped in one transaction per partition.
    pub(super) fn drop_expired(
        &mut self,
        expiries: &[Expiry],
        dry_run: bool,
    ) -> Result<Vec<DroppedPartitions>> {
        let numbers = manifest::measurement_numbers_of(
            &self.db,
            expiries.iter().map(|e| e.measurement.as_str()),
        )?;
        let by = self.values.partitioning;
        let mut ranges = vec![Vec::new(); expiries.len()];
        let mut doomed: BTreeMap<i64, Doomed> = BTreeMap::new();
        for (&start, parts) in &self.values.view().parts {
            for (i, (e, number)) in expiries.iter().zip(&numbers).enumerate() {
                // A measurement never flushed has no number and nothing to drop.
                let Some(number) = *number else { continue };
                let kind = e.level.rollup();
                let over = by.end_of(start) <= i128::from(e.cutoff);
                if over && parts.iter().any(|p| p.holds_of(number, kind)) {
                    ranges[i].push((start, by.clamped_end_of(start)));
                    doomed.entry(start).or_default().insert((number, kind));
                }
            }
        }
        if dry_run {
            return Ok(ranges);
        }
        for (start, doomed) in doomed {
            let parts_of = |b: &Background| -> Vec<Arc<Part>> {
                b.values
                    .view()
                    .parts
                    .get(&start)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut parts = parts_of(self);
            if parts.len() > 1 && doomed.iter().any(|(_, kind)| kind.is_none()) {
                // The rollup blocks that stay must cover every point: merge first, so
                // that the partition's one part holds the rollups of all of them.
                self.merge(&parts)?;
                parts = parts_of(self);
            }
            self.drop_blocks(&parts, &doomed)?;
        }
        Ok(ranges)
    }

    /// Rewrites each part holding a doomed block without them (no part when nothing is
    /// left): the new parts are written whole, then one transaction swaps them in.
    fn drop_blocks(&mut self, parts: &[Arc<Part>], doomed: &Doomed) -> Result<()> {
        let dropped = |e: &Entry| doomed.contains(&(e.measurement, e.resolution()));
        let mut added = Vec::new();
        let mut removed = Vec::new();
        let holding = parts
            .iter()
            .filter(|p| doomed.iter().any(|&(m, kind)| p.holds_of(m, kind)));
        for part in holding {
            let id = self.next_id();
            if let Some(kept) = part.rewrite(&self.dir(), id, |e| !dropped(e))? {
                added.push(Arc::new(kept));
            }
            removed.push(part.meta.id);
        }
        self.swap(added, &removed)
    }
}
