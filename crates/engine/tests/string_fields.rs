//! Lines with string fields (Telegraf's `system` and `http_response` inputs, Home
//! Assistant): their numbers are stored and their strings skipped and counted
//! (`StringFields::Skip`, the default), or the line is refused with its number
//! (`StringFields::Refuse`); a field key given twice keeps its last value.

use std::collections::BTreeMap;
use std::sync::Arc;
use tickertape_core::schema::Schema;
use tickertape_core::time::Precision;
use tickertape_core::SeriesSelector;
use tickertape_engine::{Engine, Query, StringFields};
use tickertape_reference::ReferenceBackend;

/// Telegraf's `system` input, string field included, and its `http_response` input.
const SYSTEM: &str = r#"system,host=h1 load1=0.5,load5=0.4,n_cpus=2i,uptime_format="1 day, 2:03" 1700000000000000000"#;
const HTTP_RESPONSE: &str = r#"http_response,server=http://127.0.0.1,method=GET response_time=0.012,http_response_code=200i,result_code=0i,result="success",content_length=612i 1700000000000000000"#;

fn engine() -> Engine {
    Engine::new(Arc::new(ReferenceBackend::default()))
}

/// Every stored series of `measurement`: field → its points as (time, value).
async fn stored(engine: &Engine, measurement: &str) -> BTreeMap<String, Vec<(i64, f64)>> {
    let selector = SeriesSelector {
        measurement: measurement.into(),
        ..Default::default()
    };
    let answer = engine
        .query(&Query::raw(selector, i64::MIN, i64::MAX))
        .await
        .expect("query");
    answer
        .into_iter()
        .map(|s| {
            let points = s.points.iter().map(|p| (p.time, p.value)).collect();
            (s.key.field, points)
        })
        .collect()
}

fn fields(pairs: &[(&str, f64)]) -> BTreeMap<String, Vec<(i64, f64)>> {
    const T: i64 = 1_700_000_000_000_000_000;
    pairs
        .iter()
        .map(|&(f, v)| (f.to_string(), vec![(T, v)]))
        .collect()
}

#[tokio::test]
async fn numbers_are_stored_and_strings_skipped_and_counted() {
    let e = engine();
    let body = format!("{SYSTEM}\n{HTTP_RESPONSE}\n");
    let r = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    assert_eq!((r.accepted, r.rejected), (2, 0), "{r:?}");
    assert_eq!((r.points_written, r.points_rejected), (7, 0));
    assert_eq!(r.string_fields_skipped, 2);
    assert_eq!(
        stored(&e, "system").await,
        fields(&[("load1", 0.5), ("load5", 0.4), ("n_cpus", 2.0)])
    );
    assert_eq!(
        stored(&e, "http_response").await,
        fields(&[
            ("content_length", 612.0),
            ("http_response_code", 200.0),
            ("response_time", 0.012),
            ("result_code", 0.0),
        ])
    );
}

#[tokio::test]
async fn a_line_of_strings_only_is_accepted_and_stores_nothing() {
    let e = engine();
    let body = "status,host=h1 state=\"on\",mode=\"auto\" 1\nstatus,host=h1 level=3 2\n";
    let r = e.write_lines(body, Precision::Nanoseconds).await.unwrap();
    assert_eq!(
        (r.accepted, r.rejected, r.points_written),
        (2, 0, 1),
        "{r:?}"
    );
    assert_eq!(r.string_fields_skipped, 2);
    let status = stored(&e, "status").await;
    assert_eq!(status.keys().collect::<Vec<_>>(), ["level"]);
    assert_eq!(status["level"], [(2, 3.0)]);
}

#[tokio::test]
async fn refuse_keeps_the_old_refusal_by_line_number_and_stores_the_rest() {
    let e = engine().with_string_fields(StringFields::Refuse);
    let body = format!("cpu,host=a usage=1 1\n{SYSTEM}\ncpu,host=a usage=2 2\n");
    let r = e.write_lines(&body, Precision::Nanoseconds).await.unwrap();
    assert_eq!(
        (r.accepted, r.rejected, r.points_written),
        (2, 1, 2),
        "{r:?}"
    );
    assert_eq!(r.string_fields_skipped, 0);
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].line, 2);
    assert!(
        r.errors[0]
            .message
            .starts_with("field \"uptime_format\" is a string; tickertape stores numbers"),
        "{}",
        r.errors[0].message
    );
    assert!(stored(&e, "system").await.is_empty(), "refused whole");
    assert_eq!(stored(&e, "cpu").await["usage"], [(1, 1.0), (2, 2.0)]);
}

#[tokio::test]
async fn strings_of_a_line_refused_otherwise_are_not_counted_as_skipped() {
    // A counter measurement takes mode=inc only: a plain write refuses the line whole.
    let e = engine().with_schema(
        Schema::from_toml(
            "[measurements.hits]\nlayout = \"buckets\"\ninterval = \"1s\"\nkind = \"counter\"\nrollups = []\n",
        )
            .expect("schema"),
    );
    let body =
        "hits,page=a n=1,referrer=\"x\" 60000000000\nhits,page=a referrer=\"y\" 60000000000\n";
    let r = e.write_lines(body, Precision::Nanoseconds).await.unwrap();
    assert_eq!((r.accepted, r.rejected), (1, 1), "{r:?}");
    assert_eq!(r.errors[0].line, 1);
    assert!(r.errors[0].message.contains("counter"), "{r:?}");
    // The second line had nothing to store: accepted, its string skipped.
    assert_eq!(r.string_fields_skipped, 1);
}

#[tokio::test]
async fn a_field_given_twice_keeps_its_last_value() {
    let e = engine();
    let body = "m,host=a v=1,w=5,v=2 1\nm,host=a v=3,v=\"text\" 2\nm,host=a v=\"text\",v=4 3\n";
    let r = e.write_lines(body, Precision::Nanoseconds).await.unwrap();
    assert_eq!(
        (r.accepted, r.rejected, r.points_written),
        (3, 0, 3),
        "{r:?}"
    );
    // Line 2's last `v` is a string: skipped, as any string value.
    assert_eq!(r.string_fields_skipped, 1);
    let m = stored(&e, "m").await;
    assert_eq!(m["v"], [(1, 2.0), (3, 4.0)]);
    assert_eq!(m["w"], [(1, 5.0)]);
}
