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

/// Documents a reply of a query's read may carry: more than any one read asks for, so a
/// reply is cut by the server's own 16 MiB bound instead of the driver's default first
/// batch of 101 documents, and a read of many series at once is one command a
/// collection rather than a `find` and its `getMore`s.
const QUERY_BATCH_DOCUMENTS: u32 = 1_000_000;

/// [`find_all`] for a query's reads (ranges, neighbours, rollups, heads, bounds): every
/// document in the first reply as far as 16 MiB allow.
pub(crate) async fn find_all_at_once(
    find: Find<'_, Document>,
    what: &str,
) -> Result<Vec<Document>> {
    find_all(find.batch_size(QUERY_BATCH_DOCUMENTS), what).await
}
