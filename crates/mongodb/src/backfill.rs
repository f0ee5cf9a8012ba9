//! Series documents written before `k.p` existed get it at `connect`, so that the index
//! `measurement_tags_field` finds them (`docs/format/mongodb.md`, "Finding series").
//!
//! Safe with several handles connecting at once: each walks the documents without `k.p`
//! in `_id` order, in bounded batches, and sets `k.p` only where it is still missing
//! (`k.p` follows from `k.t`, so two handles would write the same value anyway). When a
//! handle's walk ends, every document that lacked `k.p` when it started has it, whoever
//! wrote it; the `meta` document `tag_pairs` then spares later connects the walk.

use mongodb::bson::{doc, Document};
use tickertape_backend::Result;

use crate::bulk::{self, Update};
use crate::error::map_err;
use crate::find::find_all;
use crate::layout::{self, META, SERIES};
use crate::Shared;

/// Documents read and updated per round trip.
const BATCH: usize = 1000;

/// `_id` of the `meta` document that says the backfill is done.
const DONE: &str = "tag_pairs";

impl Shared {
    /// Gives `k.p` to every series document without it; returns how many this handle
    /// updated (another handle may have updated some of those it found).
    pub(crate) async fn backfill_tag_pairs(&self) -> Result<u64> {
        if self.backfill_done().await? {
            return Ok(0);
        }
        let mut after = i64::MIN;
        let mut updated = 0_u64;
        loop {
            let docs = self.without_tag_pairs(after).await?;
            let Some(last) = docs.last() else { break };
            after = layout::need_i64(last, "_id")?;
            let statements = docs.iter().map(set_tag_pairs).collect::<Result<Vec<_>>>()?;
            let applied = bulk::update(&self.db, &self.write_concern, SERIES, statements).await?;
            updated += applied.iter().filter(|&&a| a).count() as u64;
            if docs.len() < BATCH {
                break;
            }
        }
        let done = doc! { "_id": DONE, "v": 1_i64 };
        bulk::insert(&self.db, &self.write_concern, META, vec![done]).await?;
        if updated > 0 {
            tracing::info!(
                updated,
                "series documents given their tag pairs (k.p) for the tag index"
            );
        }
        Ok(updated)
    }

    async fn backfill_done(&self) -> Result<bool> {
        let found = self
            .collection(META)
            .find_one(doc! { "_id": DONE })
            .await
            .map_err(|e| map_err("read backfill state", e))?;
        Ok(found.is_some())
    }

    /// The next batch of documents after `_id` `after` that lack `k.p`, in `_id` order.
    async fn without_tag_pairs(&self, after: i64) -> Result<Vec<Document>> {
        find_all(
            self.collection(SERIES)
                .find(doc! { "_id": { "$gt": after }, "k.p": { "$exists": false } })
                .projection(doc! { "_id": 1, "k": 1 })
                .sort(doc! { "_id": 1 })
                .limit(BATCH as i64),
            "find series documents without tag pairs",
        )
        .await
    }
}

/// `$set` of `k.p` on one document, only if it still lacks it. A conditional statement
/// (`bulk`'s upsert trick): its outcome says whether this handle set it. Series documents
/// are never deleted, so the document exists and the upsert never inserts.
fn set_tag_pairs(document: &Document) -> Result<Update> {
    let id = layout::need_i64(document, "_id")?;
    let key = layout::parse_key(document)?;
    Ok(Update {
        q: doc! { "_id": id, "k.p": { "$exists": false } },
        u: doc! { "$set": { "k.p": layout::tag_pairs(&key.tags) } },
        conditional: true,
    })
}
