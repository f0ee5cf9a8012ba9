//! Draining a query: the one place a `find`'s cursor is read to the end, with both of its
//! failure points (the query itself, the batches fetched after it) reported alike.

use futures::TryStreamExt;
use mongodb::action::Find;
use mongodb::bson::Document;
use tickertape_backend::Result;

use crate::error::map_err;

/// Documents a reply may carry: more than any one read here asks for, so a reply is cut
/// by the server's own 16 MiB bound instead of the driver's default first batch of 101
/// documents. One reply is one command less, and one read of the collection as it is:
/// a cursor continued by `getMore` may miss a document a fold moved in between (the
/// superseded documents' grace is what protects those reads).
const BATCH_DOCUMENTS: u32 = 1_000_000;

/// Every document `find` yields, in the cursor's order (the caller sets filter,
/// projection and sort on `find`); an error says `what` was being read.
pub(crate) async fn find_all(find: Find<'_, Document>, what: &str) -> Result<Vec<Document>> {
    find.batch_size(BATCH_DOCUMENTS)
        .await
        .map_err(|e| map_err(what, e))?
        .try_collect()
        .await
        .map_err(|e| map_err(what, e))
}
