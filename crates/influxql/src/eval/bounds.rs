//! A `SELECT`'s time range where its WHERE leaves `GROUP BY time()`'s bounds open, set as
//! InfluxDB sets them, from the data.

use crate::Fill;

use super::select::Plan;
use super::store::{Read, Store};

impl Plan<'_> {
    /// `GROUP BY time()`'s bounds where WHERE leaves them open, as InfluxDB sets them:
    /// without a lower bound the windows start at the statement's earliest point; without
    /// an upper bound they end now — or, under `fill(none)`, which answers no empty
    /// window, after the latest point. One point is looked up per series, under the
    /// request's budget; the windows are then held to the window limit as any are. No
    /// point: nothing to answer.
    pub(super) async fn open_bounds<S: Store>(
        &mut self,
        store: &S,
        measurements: &[String],
    ) -> Result<(), String> {
        if self.window().is_none() {
            return Ok(());
        }
        let now = store.now_nanos().saturating_add(1);
        if self.condition.range.end == i64::MAX {
            let latest = match self.select.fill {
                Some(Fill::None) => self.edge_point(store, measurements, false).await?,
                _ => None,
            };
            self.condition.range.end = latest.map_or(now, |t| t.saturating_add(1));
        }
        if self.condition.range.start == i64::MIN {
            let earliest = self.edge_point(store, measurements, true).await?;
            self.condition.range.start = earliest.unwrap_or(self.condition.range.end);
        }
        Ok(())
    }

    /// The earliest (`first`) or latest point time of the statement's series inside its
    /// range: an empty range at one end of time whose neighbour is each series' edge point.
    async fn edge_point<S: Store>(
        &self,
        store: &S,
        measurements: &[String],
        first: bool,
    ) -> Result<Option<i64>, String> {
        let range = self.condition.range;
        let mut edge: Option<i64> = None;
        for m in measurements {
            let selector = self.condition.selector(m, None);
            let read = Read {
                neighbors: true,
                ..match first {
                    true => Read::raw(selector, i64::MIN, i64::MIN + 1),
                    false => Read::raw(selector, i64::MAX - 1, i64::MAX),
                }
            };
            let answers = store.read(read, self.budget).await;
            for answer in answers.map_err(|e| e.in_select())? {
                if !self.condition.matches(&answer.key) {
                    continue;
                }
                for p in answer
                    .points
                    .iter()
                    .filter(|p| p.time >= range.start && p.time < range.end)
                {
                    edge = Some(match (edge, first) {
                        (None, _) => p.time,
                        (Some(e), true) => e.min(p.time),
                        (Some(e), false) => e.max(p.time),
                    });
                }
            }
        }
        Ok(edge)
    }
}
