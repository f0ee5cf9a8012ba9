//! Draining a query: the one place a `find`'s cursor is read to the end, with both of its
//! failure points (the query itself, the batches fetched after it) reported alike.

use futures::TryStreamExt;
use mongodb::action::Find;
use mongodb::bson::Document;
use tickertape_backend::Result;

use crate::error::map_err;

/// Every document `find` yields, in the cursor's order (the caller sets filter,
/// projection and sort on `find`); an error says `what` was being read.
pub(crate) async fn find_all(find: Find<'_, Document>, what: &str) -> Result<Vec<Document>> {
    find.await
        .map_err(|e| map_err(what, e))?
        .try_collect()
        .await
        .map_err(|e| map_err(what, e))
}
