//! Opening the parts a store is made of: those the manifest names, in files of their own
//! or packed (`pack.rs`); every other file in `parts/` is the leftover of a crash.

use super::files::OpenFiles;
use super::manifest;
use super::pack::{Pack, Placement};
use super::part::{part_path, Part, PARTS_DIR};
use crate::writer::storage;
use redb::Database;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use tickertape_backend::Result;

/// The parts of a store, as its open finds them.
pub struct OpenedParts {
    pub parts: Vec<Arc<Part>>,
    /// The next free part (and pack) id.
    pub next_id: u64,
}

/// Reads the parts the manifest names (opening them through `files`), deletes files it
/// does not name (leftovers of a crash), and returns the parts and the next free id.
pub fn open_parts(db: &Database, store: &Path, files: &Arc<OpenFiles>) -> Result<OpenedParts> {
    let dir = store.join(PARTS_DIR);
    std::fs::create_dir_all(&dir)
        .map_err(|e| storage(format!("cannot create {}: {e}", dir.display())))?;
    let places = manifest::part_places(db)?;
    let own: BTreeSet<u64> = places
        .iter()
        .filter(|(_, place)| place.is_none())
        .map(|(id, _)| *id)
        .collect();
    let mut packs: BTreeMap<u64, Vec<Placement>> = BTreeMap::new();
    for &(id, place) in &places {
        if let Some((pack, base, len)) = place {
            packs.entry(pack).or_default().push((id, base, len));
        }
    }
    let mut next = places.iter().map(|(id, _)| id + 1).max().unwrap_or(1);
    next = next.max(packs.keys().last().map_or(1, |id| id + 1));
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| storage(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries {
        let path = entry.map_err(storage)?.path();
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split('.').next())
            .and_then(|n| n.parse::<u64>().ok());
        let named = match (id, path.extension().and_then(|e| e.to_str())) {
            (Some(id), Some("part")) => own.contains(&id),
            (Some(id), Some("pack")) => packs.contains_key(&id),
            _ => false,
        };
        if let Some(id) = id {
            next = next.max(id + 1);
        }
        if named {
            continue;
        }
        tracing::info!(file = %path.display(), "deleting a file no manifest entry names (left by a crash)");
        std::fs::remove_file(&path)
            .map_err(|e| storage(format!("cannot delete {}: {e}", path.display())))?;
    }
    let mut parts = Vec::with_capacity(places.len());
    for &id in &own {
        parts.push(Arc::new(Part::open(&part_path(&dir, id), files)?));
    }
    for (id, placed) in packs {
        let pack_file = super::pack::pack_path(&dir, id);
        let bytes = std::fs::metadata(&pack_file)
            .map_err(|e| storage(format!("cannot stat {}: {e}", pack_file.display())))?
            .len();
        let live = placed.iter().map(|p| p.2).sum();
        let pack = Pack::new(&dir, id, files, bytes, (placed.len(), live));
        parts.extend(Pack::open_parts(&pack, &placed)?);
    }
    Ok(OpenedParts {
        parts,
        next_id: next,
    })
}
