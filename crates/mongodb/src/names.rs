//! The name store (docs/design.md#the-name-store): `tokenize` and `names_of` on the `names` collection.
//!
//! Documents `{_id: {ns, lv}, ns, lv, l: [names…]}`, at most [`NAMES_PER_DOCUMENT`] names
//! each; a name's token is `lv + its index in l`. Per namespace the documents are
//! `lv = 0, CAP, 2·CAP …`, and only the newest takes names.
//!
//! Adding names is one atomic conditional `$push` on the newest document: "there is room
//! for all of them" (`l.<CAP − k>` does not exist) and "none of them is in it yet"
//! (`l: {$nin: …}`). A miss means another writer pushed in between or the document is
//! full: the caller re-reads, and opens the next document (insert of `lv + CAP`; a
//! duplicate key means someone else did) when the newest is full.
//!
//! One race is left: a name pushed into document `d` while another writer, who had not
//! seen it yet, pushes it into `d + 1` (the `$nin` sees only one document). Every reader
//! therefore takes a name's *smallest* token. That is stable: names enter in token order
//! (a document fills before the next exists), so when any push of a name completes, its
//! smallest token already exists, and later duplicates can only be larger.

use std::collections::{BTreeMap, HashMap, HashSet};

use mongodb::bson::{doc, Bson, Document};
use tickertape_backend::{BackendError, NameKind, Result, TokenRequest, NAMES_PER_DOCUMENT};

use crate::bulk;
use crate::error::{corrupt, map_err};
use crate::find::find_all;
use crate::layout::{need_i64, NAMES};
use crate::Shared;

/// `NAMES_PER_DOCUMENT` as stored integers.
const CAP: i64 = NAMES_PER_DOCUMENT as i64;

/// Rounds of "look up, push the missing" before giving up. Each failed round means another
/// writer added names to the same document in between; a round that finds the newest
/// document full opens the next one, so this is reached only under pathological
/// contention.
const MAX_ROUNDS: usize = 1_000;

/// Names per lookup query (`l: {$in: …}`), keeping the command well below 16 MiB for
/// names up to a few KiB.
const LOOKUP_CHUNK: usize = 1_000;

/// The `_id` of the name document of `namespace` with least value `lv`.
fn name_doc_id(namespace: NameKind, lv: i64) -> Document {
    doc! { "ns": namespace.code(), "lv": lv }
}

impl Shared {
    pub(crate) async fn tokenize_names(
        &self,
        namespace: NameKind,
        names: &[String],
    ) -> Result<Vec<u64>> {
        let mut request = TokenRequest::new(names);
        for _ in 0..MAX_ROUNDS {
            let missing = request.missing();
            if missing.is_empty() {
                return request.finish();
            }
            let found = self.lookup_names(namespace, &missing).await?;
            for (name, token) in &found {
                request.found(name, *token);
            }
            let still_missing: Vec<&str> = missing
                .into_iter()
                .filter(|n| !found.contains_key(*n))
                .collect();
            if !still_missing.is_empty() {
                self.push_names(namespace, &still_missing).await?;
            }
        }
        Err(BackendError::Unavailable(format!(
            "mongodb: could not add {namespace} names after {MAX_ROUNDS} attempts \
             (too many writers adding names at once)"
        )))
    }

    /// The smallest token of each of `names` that has one.
    async fn lookup_names(
        &self,
        namespace: NameKind,
        names: &[&str],
    ) -> Result<HashMap<String, u64>> {
        let mut tokens: HashMap<String, u64> = HashMap::new();
        for chunk in names.chunks(LOOKUP_CHUNK) {
            let wanted: HashSet<&str> = chunk.iter().copied().collect();
            let docs = find_all(
                self.db
                    .collection::<Document>(NAMES)
                    .find(doc! { "ns": namespace.code(), "l": { "$in": chunk.to_vec() } }),
                "look up names",
            )
            .await?;
            for d in &docs {
                let (lv, list) = parse_name_doc(d)?;
                for (i, name) in list.iter().enumerate() {
                    let Bson::String(name) = name else { continue };
                    if !wanted.contains(name.as_str()) {
                        continue;
                    }
                    let token = token(lv, i)?;
                    let entry = tokens.entry(name.clone()).or_insert(token);
                    *entry = (*entry).min(token);
                }
            }
        }
        Ok(tokens)
    }

    /// One attempt to push `names` into the newest document of `namespace`: as many as fit,
    /// in one conditional update; opens the next document when the newest is full.
    /// Whether it worked is learnt by looking the names up again.
    async fn push_names(&self, namespace: NameKind, names: &[&str]) -> Result<()> {
        let Some((lv, len)) = self.newest_name_doc(namespace).await? else {
            return self.open_name_doc(namespace, 0).await;
        };
        let room = CAP - len;
        if room <= 0 {
            return self.open_name_doc(namespace, lv + CAP).await;
        }
        let take = names.len().min(room as usize);
        let batch: Vec<&str> = names[..take].to_vec();
        let filter = doc! {
            "_id": name_doc_id(namespace, lv),
            format!("l.{}", CAP - take as i64): { "$exists": false },
            "l": { "$nin": batch.clone() },
        };
        self.db
            .collection::<Document>(NAMES)
            .update_one(filter, doc! { "$push": { "l": { "$each": batch } } })
            .await
            .map_err(|e| map_err("add names", e))?;
        Ok(())
    }

    /// `(lv, number of names)` of the newest document of `namespace`, found through the
    /// `_id` index: `_id`s `{ns, lv}` of one namespace are a contiguous range.
    async fn newest_name_doc(&self, namespace: NameKind) -> Result<Option<(i64, i64)>> {
        let newest = self
            .db
            .collection::<Document>(NAMES)
            .find_one(doc! { "_id": {
                "$gte": name_doc_id(namespace, i64::MIN),
                "$lte": name_doc_id(namespace, i64::MAX),
            }})
            .sort(doc! { "_id": -1 })
            .await
            .map_err(|e| map_err("read newest name document", e))?;
        newest
            .map(|d| parse_name_doc(&d).map(|(lv, l)| (lv, l.len() as i64)))
            .transpose()
    }

    /// Inserts the empty document `lv` of `namespace`; a duplicate key means another writer
    /// opened it first, which is as good.
    async fn open_name_doc(&self, namespace: NameKind, lv: i64) -> Result<()> {
        let document = doc! {
            "_id": name_doc_id(namespace, lv),
            "ns": namespace.code(),
            "lv": lv,
            "l": [],
        };
        bulk::insert(&self.db, &self.write_concern, NAMES, vec![document]).await?;
        Ok(())
    }

    pub(crate) async fn names_of_tokens(
        &self,
        namespace: NameKind,
        tokens: &[u64],
    ) -> Result<Vec<Option<String>>> {
        let lv_of = |t: u64| i64::try_from(t - t % NAMES_PER_DOCUMENT as u64).ok();
        let ids: Vec<Bson> = tokens
            .iter()
            .filter_map(|&t| lv_of(t))
            .collect::<HashSet<_>>()
            .into_iter()
            .map(|lv| Bson::Document(name_doc_id(namespace, lv)))
            .collect();
        let docs = find_all(
            self.db
                .collection::<Document>(NAMES)
                .find(doc! { "_id": { "$in": ids } }),
            "read names",
        )
        .await?;
        let mut lists: BTreeMap<i64, Vec<Bson>> = BTreeMap::new();
        for d in &docs {
            let (lv, l) = parse_name_doc(d)?;
            lists.insert(lv, l.clone());
        }
        Ok(tokens
            .iter()
            .map(|&t| {
                let lv = lv_of(t)?;
                let index = usize::try_from(t % NAMES_PER_DOCUMENT as u64).ok()?;
                match lists.get(&lv)?.get(index)? {
                    Bson::String(name) => Some(name.clone()),
                    _ => None,
                }
            })
            .collect())
    }
}

/// `lv` and `l` of a name document.
fn parse_name_doc(d: &Document) -> Result<(i64, &Vec<Bson>)> {
    let lv = need_i64(d, "lv")?;
    let l = d
        .get_array("l")
        .map_err(|_| corrupt("name document without list `l`"))?;
    if lv < 0 || lv % CAP != 0 || l.len() as i64 > CAP {
        return Err(corrupt(format!(
            "name document lv {lv} with {} names",
            l.len()
        )));
    }
    Ok((lv, l))
}

fn token(lv: i64, index: usize) -> Result<u64> {
    u64::try_from(lv)
        .ok()
        .and_then(|lv| lv.checked_add(index as u64))
        .ok_or_else(|| corrupt(format!("token {lv} + {index} out of range")))
}
