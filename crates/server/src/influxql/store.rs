//! The engine as InfluxQL's [`Store`]: what the evaluator reads, asked of the engine of
//! the statement's database, with the engine's errors kept as their cause.

use tickertape_backend::NameQuery;
use tickertape_core::{QueryBudget, SeriesKey, SeriesSelector};
use tickertape_engine::{Engine, EngineError, Listing, Query};
use tickertape_influxql::eval::{Names, Read, ReadError, SeriesPoints, Store};

/// One database's engine, read by InfluxQL's evaluator.
pub struct EngineStore<'e>(pub &'e Engine);

impl Store for EngineStore<'_> {
    fn now_nanos(&self) -> i64 {
        self.0.now_nanos()
    }

    async fn read(&self, read: Read, budget: &QueryBudget) -> Result<Vec<SeriesPoints>, ReadError> {
        let query = Query {
            step: read.windows.map(|(width, _)| width),
            agg: read.windows.map(|(_, agg)| agg),
            neighbors: read.neighbors,
            ..Query::raw(read.selector, read.start, read.end)
        };
        let answers = self
            .0
            .query_with(&query, budget)
            .await
            .map_err(read_error)?;
        Ok(answers
            .into_iter()
            .map(|a| SeriesPoints {
                key: a.key,
                points: a.points,
            })
            .collect())
    }

    async fn series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesKey>, ReadError> {
        let found = self.0.list_series(selector).await.map_err(read_error)?;
        Ok(found.into_iter().map(|s| s.key).collect())
    }

    async fn measurements(&self, limit: usize) -> Result<Names, ReadError> {
        names(self.0.list_measurements(&first(limit)).await)
    }

    async fn fields(&self, measurement: &str, limit: usize) -> Result<Names, ReadError> {
        names(self.0.list_fields_of(measurement, &first(limit)).await)
    }

    async fn tag_keys(&self, measurement: &str, limit: usize) -> Result<Names, ReadError> {
        names(self.0.list_tag_keys(measurement, &first(limit)).await)
    }

    async fn tag_values(
        &self,
        measurement: &str,
        key: &str,
        limit: usize,
    ) -> Result<Names, ReadError> {
        names(
            self.0
                .list_tag_values(measurement, key, &first(limit))
                .await,
        )
    }

    async fn yield_now(&self) {
        tokio::task::yield_now().await;
    }
}

/// Every name, up to `limit`.
fn first(limit: usize) -> NameQuery {
    NameQuery::new("", limit)
}

fn names(listing: Result<Listing, EngineError>) -> Result<Names, ReadError> {
    let Listing { names, truncated } = listing.map_err(read_error)?;
    Ok(Names { names, truncated })
}

/// An engine error as the evaluator tells them apart: a limit (worded by the statement
/// that met it) or anything else, the engine's error kept as the cause.
pub fn read_error(e: EngineError) -> ReadError {
    match e {
        EngineError::OverLimit(over) => ReadError::OverLimit {
            what: over.what(),
            source: Box::new(EngineError::OverLimit(over)),
        },
        other => ReadError::Failed(Box::new(other)),
    }
}
