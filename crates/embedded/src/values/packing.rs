//! When parts are packed (`pack.rs`): the days of a week that is over go into one pack,
//! the weeks of a four-week period that has been over for a week into one, so a store
//! keeps at most a few files per four weeks of data, and about one per day only for the
//! current week. "Over" is measured against the store's newest partition (data time,
//! not the clock), so a store loaded with old data packs it the same way.
//!
//! Which files of a period are packed together, from their live bytes:
//! - the period's files are one pack or one part: nothing (unless the pack is mostly
//!   dead, below);
//! - the rest amount to a quarter or more of the largest file's live bytes (a week of
//!   days, four weeks of packs), or the largest is a pack with at least as many dead bytes
//!   as live: everything into one pack;
//! - otherwise, once [`MAX_SMALL`] small files gather beside the largest (a late write,
//!   a retention drop rewriting a day of an old period): the small ones into one pack.
//!
//! So each byte is copied about twice on its way into a four-week pack, and a pack that
//! retention empties a day at a time is rewritten each time it halves: a bounded number
//! of copies in all, never one per drop.

use super::background::Background;
use super::manifest;
use super::pack::Pack;
use super::part::Part;
use crate::writer::storage;
use redb::Durability;
use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_backend::Result;

/// Partitions in a period of the first tier (a week of days) and of the second (four weeks).
const WEEK: i128 = 7;
const FOUR_WEEKS: i128 = 28;
/// Small files beside a period's largest that get packed together.
const MAX_SMALL: usize = 4;

/// What the plan sees of a part: its partition and the file it is in.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub id: u64,
    pub start: i64,
    pub len: u64,
    /// Its pack, with the pack's live and dead bytes.
    pub pack: Option<(u64, u64, u64)>,
}

/// The groups of parts (by id) to pack, each into one new pack. `parts` are the
/// partitions' single parts (partitions with several are merged first), `width` the
/// partition width.
pub fn plan(parts: &[Seen], width: i64) -> Vec<Vec<u64>> {
    let Some(newest) = parts.iter().map(|p| p.start).max() else {
        return Vec::new();
    };
    let (newest, width) = (i128::from(newest), i128::from(width));
    // (tier, period) → its parts.
    let mut periods: BTreeMap<(u8, i128), Vec<Seen>> = BTreeMap::new();
    for part in parts {
        let start = i128::from(part.start);
        let four_weeks = start.div_euclid(FOUR_WEEKS * width);
        let week = start.div_euclid(WEEK * width);
        if (four_weeks + 1) * FOUR_WEEKS * width <= newest - WEEK * width {
            periods.entry((2, four_weeks)).or_default().push(*part);
        } else if (week + 1) * WEEK * width <= newest {
            periods.entry((1, week)).or_default().push(*part);
        }
    }
    periods
        .into_values()
        .filter_map(|parts| group_to_pack(&parts))
        .collect()
}

/// A file of a period: a pack or a part of its own, its live and dead bytes, its parts.
struct File {
    live: u64,
    dead: u64,
    parts: Vec<u64>,
}

/// The parts of one period to pack together, by the rules of the module's comment.
fn group_to_pack(parts: &[Seen]) -> Option<Vec<u64>> {
    let mut packs: BTreeMap<u64, File> = BTreeMap::new();
    let mut files = Vec::new();
    for part in parts {
        match part.pack {
            Some((id, live, dead)) => packs
                .entry(id)
                .or_insert(File {
                    live,
                    dead,
                    parts: Vec::new(),
                })
                .parts
                .push(part.id),
            None => files.push(File {
                live: part.len,
                dead: 0,
                parts: vec![part.id],
            }),
        }
    }
    files.extend(packs.into_values());
    files.sort_by_key(|f| std::cmp::Reverse(f.live));
    let (largest, rest) = files.split_first()?;
    let rest_bytes: u64 = rest.iter().map(|f| f.live).sum();
    let all = || files.iter().flat_map(|f| f.parts.clone()).collect();
    if largest.dead > 0 && largest.dead >= largest.live {
        return Some(all());
    }
    if rest.is_empty() {
        return None;
    }
    if rest_bytes.saturating_mul(4) >= largest.live {
        return Some(all());
    }
    (rest.len() >= MAX_SMALL).then(|| rest.iter().flat_map(|f| f.parts.clone()).collect())
}

impl Background {
    /// Packs what [`plan`] says, one pack at a time.
    pub(super) fn pack_due(&mut self) -> Result<()> {
        let by = self.values.partitioning;
        let (seen, by_id) = {
            let view = self.values.view();
            let mut seen = Vec::new();
            let mut by_id = BTreeMap::new();
            for parts in view.parts.values() {
                let [part] = parts.as_slice() else { continue };
                seen.push(Seen {
                    id: part.meta.id,
                    start: part.meta.start,
                    len: part.len(),
                    pack: part.pack().map(|p| (p.id, p.live_bytes(), p.dead_bytes())),
                });
                by_id.insert(part.meta.id, part.clone());
            }
            (seen, by_id)
        };
        for group in plan(&seen, by.width()) {
            let parts: Vec<Arc<Part>> = group
                .iter()
                .filter_map(|id| by_id.get(id))
                .cloned()
                .collect();
            self.pack(&parts)?;
        }
        Ok(())
    }

    /// Writes `parts` into one new pack, records their new places in one durable
    /// transaction, then puts the packed parts in the view in place of the old ones.
    fn pack(&mut self, parts: &[Arc<Part>]) -> Result<()> {
        let started = std::time::Instant::now();
        let id = self.next_id();
        let dir = self.dir();
        let (placed, packed) = Pack::write(&dir, id, &self.files(), parts)?;
        let mut txn = self.db.begin_write().map_err(storage)?;
        txn.set_durability(Durability::Immediate);
        manifest::place_in_pack(&txn, id, &placed)?;
        txn.commit().map_err(storage)?;
        let ids: Vec<u64> = parts.iter().map(|p| p.meta.id).collect();
        let gone = {
            let mut view = self.values.view_mut();
            let gone = view.remove_parts(&ids);
            for part in packed {
                view.place_part(part);
            }
            gone
        };
        for part in gone {
            part.retire();
        }
        tracing::debug!(
            pack = id,
            parts = ids.len(),
            bytes = placed.iter().map(|p| p.2).sum::<u64>(),
            ms = started.elapsed().as_millis() as u64,
            "packed parts"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests;
