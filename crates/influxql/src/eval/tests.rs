//! The evaluator over a store in memory: statements answered without a server or an
//! engine, through nothing but [`Store`] — the boundary the server implements.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tickertape_core::query::aggregate_windows;
use tickertape_core::{Point, QueryBudget, SeriesKey, SeriesSelector};

use super::*;
use crate::Statement;

/// Series in memory; `refuse` makes every read fail as a store over its limit does.
#[derive(Default)]
struct MemoryStore {
    series: Vec<(SeriesKey, Vec<Point>)>,
    refuse: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("the query selects too many series (a limit)")]
struct TooMany;

impl MemoryStore {
    fn with(mut self, host: &str, points: &[(i64, f64)]) -> Self {
        let key = SeriesKey::new("cpu", vec![("host".into(), host.into())], "usage");
        let points = points.iter().map(|&(t, v)| Point::new(t, v)).collect();
        self.series.push((key, points));
        self.series.sort_by(|a, b| a.0.cmp(&b.0));
        self
    }

    fn picked<'s>(
        &'s self,
        selector: &'s SeriesSelector,
    ) -> impl Iterator<Item = &'s (SeriesKey, Vec<Point>)> + 's {
        self.series.iter().filter(move |(k, _)| selector.matches(k))
    }

    fn names(&self, of: impl Fn(&SeriesKey) -> Vec<String>) -> Result<Names, ReadError> {
        let mut names: Vec<String> = self.series.iter().flat_map(|(k, _)| of(k)).collect();
        names.sort();
        names.dedup();
        Ok(Names {
            names,
            truncated: false,
        })
    }
}

impl Store for MemoryStore {
    fn now_nanos(&self) -> i64 {
        1_000_000_000_000
    }

    async fn read(&self, read: Read, budget: &QueryBudget) -> Result<Vec<SeriesPoints>, ReadError> {
        if self.refuse {
            return Err(ReadError::OverLimit {
                what: "the query selects too many series".into(),
                source: Box::new(TooMany),
            });
        }
        assert!(!read.neighbors, "no statement here reads neighbours");
        let mut out = Vec::new();
        for (key, points) in self.picked(&read.selector) {
            let points = match read.windows {
                Some((width, agg)) => aggregate_windows(points, read.start, read.end, width, agg),
                None => points
                    .iter()
                    .filter(|p| p.time >= read.start && p.time < read.end)
                    .copied()
                    .collect(),
            };
            budget
                .charge_points(points.len())
                .map_err(|e| ReadError::Failed(Box::new(e)))?;
            out.push(SeriesPoints {
                key: key.clone(),
                points,
            });
        }
        Ok(out)
    }

    async fn series(&self, selector: &SeriesSelector) -> Result<Vec<SeriesKey>, ReadError> {
        Ok(self.picked(selector).map(|(k, _)| k.clone()).collect())
    }

    async fn measurements(&self, _limit: usize) -> Result<Names, ReadError> {
        self.names(|k| vec![k.measurement.clone()])
    }

    async fn fields(&self, _measurement: &str, _limit: usize) -> Result<Names, ReadError> {
        self.names(|k| vec![k.field.clone()])
    }

    async fn tag_keys(&self, _measurement: &str, _limit: usize) -> Result<Names, ReadError> {
        self.names(|k| k.tags.iter().map(|(t, _)| t.clone()).collect())
    }

    async fn tag_values(
        &self,
        _measurement: &str,
        key: &str,
        _limit: usize,
    ) -> Result<Names, ReadError> {
        self.names(|k| k.tag(key).map(str::to_string).into_iter().collect())
    }

    async fn yield_now(&self) {}
}

/// Runs a future whose every await is ready at once, as the memory store's are.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut context) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the memory store never waits"),
    }
}

fn answer(store: &MemoryStore, text: &str) -> StatementResult {
    let budget = QueryBudget::new(1_000_000, 1_000_000);
    match crate::parse_statement(text) {
        Ok(Statement::Select(select)) => ready(run_select(store, &select, &budget)),
        Ok(other) => ready(run_show(store, &other)),
        Err(e) => panic!("{text}: {e}"),
    }
}

fn rows(series: &Series) -> Vec<Vec<Cell>> {
    series.values.iter().map(|row| row.to_vec()).collect()
}

const S: i64 = 1_000_000_000;

fn two_hosts() -> MemoryStore {
    MemoryStore::default()
        .with("a", &[(0, 1.0), (5 * S, 3.0), (12 * S, 10.0)])
        .with("b", &[(S, 100.0), (21 * S, 200.0)])
}

#[test]
fn a_grouped_mean_is_computed_from_the_stores_windows() {
    let store = two_hosts();
    let q = r#"SELECT mean("usage") FROM "cpu" WHERE time >= 0 AND time < 30s GROUP BY time(10s), "host""#;
    let answer = answer(&store, q).expect("answers");
    assert_eq!(answer.len(), 2);
    assert_eq!(answer[0].tags, [("host".to_string(), "a".to_string())]);
    assert_eq!(answer[0].columns, ["time", "mean"]);
    assert_eq!(
        rows(&answer[0]),
        [
            vec![Cell::Time(0), Cell::Float(2.0)],
            vec![Cell::Time(10 * S), Cell::Float(10.0)],
            vec![Cell::Time(20 * S), Cell::Null],
        ]
    );
    assert_eq!(
        rows(&answer[1])[2],
        [Cell::Time(20 * S), Cell::Float(200.0)]
    );
}

#[test]
fn raw_points_of_both_series_merge_in_time_order() {
    let store = two_hosts();
    let answer = answer(
        &store,
        r#"SELECT "usage", "host" FROM "cpu" WHERE time < 10s"#,
    )
    .expect("answers");
    let times: Vec<Cell> = rows(&answer[0]).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(times, [Cell::Time(0), Cell::Time(S), Cell::Time(5 * S)]);
    assert_eq!(rows(&answer[0])[1][2], Cell::Text("b".into()));
}

#[test]
fn show_statements_read_the_stores_listings() {
    let store = two_hosts();
    let answer =
        answer(&store, r#"SHOW TAG VALUES FROM "cpu" WITH KEY = "host""#).expect("answers");
    assert_eq!(
        rows(&answer[0]),
        [
            vec![Cell::Text("host".into()), Cell::Text("a".into())],
            vec![Cell::Text("host".into()), Cell::Text("b".into())],
        ]
    );
}

#[test]
fn a_store_over_its_limit_is_answered_with_the_ways_to_narrow_a_select() {
    let store = MemoryStore {
        refuse: true,
        ..two_hosts()
    };
    let error = answer(&store, r#"SELECT "usage" FROM "cpu""#).expect_err("refused");
    assert_eq!(
        error,
        "the query selects too many series: narrow it with tag conditions in WHERE, a \
         shorter time range or a larger GROUP BY time() interval"
    );
}
