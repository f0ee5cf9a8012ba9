//! `Engine::delete` over the reference backend: a selection resolved to series and their
//! points deleted on each layout, the report, and series written again after a delete
//! (the backend side is the conformance suite's `deleted_points_never_come_back`).

use std::sync::Arc;
use tickertape_backend::DeleteRange;
use tickertape_core::query::Aggregate;
use tickertape_core::rollup::ResolutionOrRaw;
use tickertape_core::schema::Schema;
use tickertape_core::time::{Precision, NANOS_PER_SECOND};
use tickertape_core::{Point, SeriesSelector, TagCondition};
use tickertape_engine::{DeleteReport, Engine, EngineError, Query};
use tickertape_reference::ReferenceBackend;

const S: i64 = NANOS_PER_SECOND;

fn engine(config: &str) -> Engine {
    Engine::new(Arc::new(ReferenceBackend::default()))
        .with_schema(Schema::from_toml(config).expect("config"))
}

fn selector(measurement: &str, tags: &[&str]) -> SeriesSelector {
    let mut s = SeriesSelector {
        measurement: measurement.into(),
        ..SeriesSelector::default()
    };
    for t in tags {
        s.add_condition(TagCondition::parse(t).expect("a tag condition"));
    }
    s
}

/// Every series' points (times in s), by series.
async fn stored(e: &Engine, measurement: &str) -> Vec<(String, Vec<i64>)> {
    let q = Query::raw(selector(measurement, &[]), i64::MIN, i64::MAX);
    let answer = e.query(&q).await.expect("query");
    answer
        .into_iter()
        .map(|s| {
            (
                s.key.to_string(),
                s.points.iter().map(|p| p.time / S).collect(),
            )
        })
        .collect()
}

async fn sum(e: &Engine, q: &Query) -> Vec<Point> {
    e.query(q).await.expect("query")[0].points.clone()
}

fn range(start: i64, end: i64) -> DeleteRange {
    DeleteRange::new(Some(start * S), Some(end * S)).expect("a range")
}

#[tokio::test]
async fn value_series_lose_the_range_and_leave_when_empty() {
    let e = engine("");
    let body: String = (1..=6)
        .map(|t| {
            format!(
                "cpu,host=a u={t},s={t} {}\ncpu,host=b u={t} {}\n",
                t * S,
                t * S
            )
        })
        .collect();
    e.write_lines(&body, Precision::Nanoseconds)
        .await
        .expect("write");

    let report = e
        .delete(&selector("cpu", &["host:a"]), range(2, 5))
        .await
        .expect("delete");
    assert_eq!(
        report,
        DeleteReport {
            series_matched: 2,
            series_removed: 0
        }
    );
    // A range holding every point of a series empties it: it leaves the catalog too.
    let report = e
        .delete(&selector("cpu", &["host:b"]), range(0, 100))
        .await
        .expect("delete");
    assert_eq!(
        report,
        DeleteReport {
            series_matched: 1,
            series_removed: 1
        }
    );
    assert_eq!(
        stored(&e, "cpu").await,
        vec![
            ("cpu{host=a}#s".to_owned(), vec![1, 5, 6]),
            ("cpu{host=a}#u".to_owned(), vec![1, 5, 6]),
        ]
    );
    // The same line again registers the series anew (the engine forgot the old id).
    e.write_lines(&format!("cpu,host=b u=9 {}", 9 * S), Precision::Nanoseconds)
        .await
        .expect("write again");
    let found = e
        .list_series(&selector("cpu", &["host:b"]))
        .await
        .expect("list");
    assert_eq!(found.len(), 1);
    assert_eq!(
        stored(&e, "cpu").await[2],
        ("cpu{host=b}#u".to_owned(), vec![9])
    );
    // The series given twice (Prometheus' overlapping match[]) counts once.
    let twice = e
        .list_series(&selector("cpu", &["host:a"]))
        .await
        .expect("list");
    let doubled: Vec<_> = twice.iter().chain(&twice).cloned().collect();
    let report = e
        .delete_series(doubled, DeleteRange::all())
        .await
        .expect("delete");
    assert_eq!(
        report,
        DeleteReport {
            series_matched: 2,
            series_removed: 2
        }
    );
}

#[tokio::test]
async fn bucket_series_are_deleted_whole_only_and_start_anew() {
    let e = engine(
        "[measurements.bkt]\nlayout = \"buckets\"\ninterval = \"10s\"\nrollups = [\"1m\"]\n",
    );
    let body: String = (0..12)
        .map(|i| format!("bkt,k=a v={i} {}\n", i * 10 * S))
        .collect();
    e.write_lines(&body, Precision::Nanoseconds)
        .await
        .expect("write");

    let refused = e.delete(&selector("bkt", &[]), range(0, 30)).await;
    match refused {
        Err(EngineError::BadQuery(message)) => {
            assert!(
                message.contains("bkt") && message.contains("whole"),
                "{message}"
            )
        }
        other => panic!("a range over buckets must be refused: {other:?}"),
    }
    assert_eq!(stored(&e, "bkt").await[0].1.len(), 12, "nothing deleted");

    let report = e
        .delete(&selector("bkt", &[]), DeleteRange::all())
        .await
        .expect("delete");
    assert_eq!(
        report,
        DeleteReport {
            series_matched: 1,
            series_removed: 1
        }
    );
    assert!(stored(&e, "bkt").await.is_empty());
    // The same slots written again: a new series, whose raw slots and rollups hold only
    // the new values (the old documents belong to the removed id), also once rebuilt.
    let again: String = (0..3)
        .map(|i| format!("bkt,k=a v=100 {}\n", i * 10 * S))
        .collect();
    let report = e
        .write_lines(&again, Precision::Nanoseconds)
        .await
        .expect("write");
    assert_eq!(report.rejected, 0, "{report:?}");
    let mut q = Query::raw(selector("bkt", &[]), 0, 60 * S);
    q.agg = Some(Aggregate::Sum);
    assert_eq!(sum(&e, &q).await, vec![Point::new(0, 300.0)]);
    e.rebuild_rollups("bkt", 0, 120 * S).await.expect("rebuild");
    assert_eq!(sum(&e, &q).await, vec![Point::new(0, 300.0)]);
    q.resolution = Some(ResolutionOrRaw::Raw);
    assert_eq!(sum(&e, &q).await, vec![Point::new(0, 300.0)]);
}
