//! [`MongoTokens`]: a store's API tokens, hashed, in the `api_tokens` collection, one
//! document per token: `{_id: <SHA-256 hex>, name, scopes: [..], created}`.
//!
//! Writes go through the store's database handle, so they carry its write concern: a
//! token `add_token` returned for is as durable as an acknowledged point.

use crate::error::map_err;
use crate::Shared;
use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use std::sync::Arc;
use tickertape_backend::tokens::check_token_id;
use tickertape_backend::{BackendError, TokenStore};
use tickertape_core::auth::{Scope, Scopes, TokenHash, TokenRecord};

pub(crate) const API_TOKENS: &str = "api_tokens";

/// The tokens of one store's database; from [`crate::MongoBackend::token_store`].
pub struct MongoTokens {
    pub(crate) shared: Arc<Shared>,
}

impl MongoTokens {
    fn collection(&self) -> mongodb::Collection<Document> {
        self.shared.collection(API_TOKENS)
    }
}

fn to_document(token: &TokenRecord) -> Document {
    let scopes: Vec<&str> = token.scopes.iter().map(Scope::as_str).collect();
    doc! {
        "_id": token.hash.as_str(),
        "name": &token.name,
        "scopes": scopes,
        "created": token.created,
    }
}

fn from_document(document: &Document) -> Result<TokenRecord, BackendError> {
    let corrupt =
        |what: &str| BackendError::Corrupt(format!("{API_TOKENS} document {document}: {what}"));
    let hash = document
        .get_str("_id")
        .map_err(|_| corrupt("no string _id"))
        .and_then(|h| TokenHash::try_from(h.to_string()).map_err(|e| corrupt(&e.to_string())))?;
    let scopes = document
        .get_array("scopes")
        .map_err(|_| corrupt("no scopes array"))?
        .iter()
        .map(|s| {
            s.as_str()
                .ok_or_else(|| corrupt("a scope that is not a string"))
                .and_then(|s| s.parse::<Scope>().map_err(|e| corrupt(&e.to_string())))
        })
        .collect::<Result<Vec<Scope>, _>>()?;
    Ok(TokenRecord {
        name: document.get_str("name").unwrap_or_default().to_string(),
        scopes: Scopes::new(scopes).map_err(|e| corrupt(&e.to_string()))?,
        hash,
        created: document.get_i64("created").unwrap_or_default(),
    })
}

#[async_trait]
impl TokenStore for MongoTokens {
    async fn tokens(&self) -> Result<Vec<TokenRecord>, BackendError> {
        let documents: Vec<Document> = self
            .collection()
            .find(doc! {})
            .sort(doc! { "created": 1, "_id": 1 })
            .await
            .map_err(|e| map_err("list tokens", e))?
            .try_collect()
            .await
            .map_err(|e| map_err("list tokens", e))?;
        documents.iter().map(from_document).collect()
    }

    async fn add_token(&self, token: TokenRecord) -> Result<(), BackendError> {
        self.collection()
            .replace_one(doc! { "_id": token.hash.as_str() }, to_document(&token))
            .upsert(true)
            .await
            .map_err(|e| map_err("add a token", e))?;
        Ok(())
    }

    async fn revoke_token(&self, id: &str) -> Result<usize, BackendError> {
        check_token_id(id)?;
        // Every hash that starts with `id`: hex digits sort below 'g'.
        let range = doc! { "_id": { "$gte": id, "$lt": format!("{id}g") } };
        let deleted = self
            .collection()
            .delete_many(range)
            .await
            .map_err(|e| map_err("revoke a token", e))?;
        Ok(deleted.deleted_count as usize)
    }
}
