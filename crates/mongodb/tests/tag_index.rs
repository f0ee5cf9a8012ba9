//! `find_series` as an index query (`docs/format/mongodb.md`, "Finding series"): the tag
//! pairs `k.p` and the index `measurement_tags_field`, and the backfill that gives `k.p` to
//! series documents of a store written before it existed; the `tag_values` entries the
//! pickers' listings read, backfilled the same way. That the answers equal the
//! reference's for random matchers is the conformance suite's model check.

mod common;

use common::*;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Client;
use tickertape_backend::{NameQuery, SeriesCatalog, ValueStore};
use tickertape_core::{MatchOp, SeriesId, SeriesKey, SeriesSelector, TagMatcher};
use tickertape_mongodb::{uri_with_database, MongoBackend};

/// `cpu{dc=d<i % 3>, host=h<i>}` for field `usage`, and `mem{…}#free` for the first few.
fn keys(n: usize) -> Vec<SeriesKey> {
    let key = |m: &str, i: usize, f: &str| {
        let tags = vec![
            ("host".into(), format!("h{i:03}")),
            ("dc".into(), format!("d{}", i % 3)),
        ];
        SeriesKey::new(m, tags, f)
    };
    (0..n)
        .map(|i| key("cpu", i, "usage"))
        .chain((0..5).map(|i| key("mem", i, "free")))
        .collect()
}

fn selector(tags: &[(&str, &str)], matchers: &[(MatchOp, &str)]) -> SeriesSelector {
    SeriesSelector {
        measurement: "cpu".into(),
        field: None,
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        matchers: matchers
            .iter()
            .map(|(op, p)| TagMatcher::new("host", *op, *p).expect("valid matcher"))
            .collect(),
    }
}

async fn raw_collection(db: &str, name: &str) -> mongodb::Collection<Document> {
    let uri = uri_with_database(&server_uri(), db);
    let client = Client::with_uri_str(&uri).await.expect("client");
    client.database(db).collection::<Document>(name)
}

/// Every stage of an explained plan, whatever the server nests it in (`inputStage`,
/// `inputStages`, 8.0's `queryPlan`).
fn stages(plan: &Document, out: &mut Vec<Document>) {
    if plan.contains_key("stage") {
        out.push(plan.clone());
    }
    for (_, value) in plan {
        match value {
            Bson::Document(d) => stages(d, out),
            Bson::Array(a) => a.iter().for_each(|v| {
                if let Bson::Document(d) = v {
                    stages(d, out)
                }
            }),
            _ => {}
        }
    }
}

fn examined(explained: &Document, what: &str) -> i64 {
    let stats = explained
        .get_document("executionStats")
        .expect("executionStats");
    match stats.get(what) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{what}: {other:?}"),
    }
}

/// A tag equality, with and without a field, is an index scan of the tag index that
/// examines only the matching documents. (The test server, secantusdb, plans only plain
/// equalities and ranges on an index, not `$all` or `$elemMatch`, so selectors with several
/// equalities or a regex are checked for their answers only.)
#[tokio::test]
async fn a_tag_equality_is_an_index_scan() {
    let db = fresh_db("tag_ixscan");
    let b = open(&db, 8).await;
    b.resolve_series(&keys(60)).await.expect("register");
    let mut by_host = selector(&[("host", "h007")], &[]);
    for field in [None, Some("usage")] {
        by_host.field = field.map(str::to_owned);
        let explained = b.explain_find_series(&by_host).await.expect("explain");
        let planner = explained
            .get_document("queryPlanner")
            .expect("queryPlanner");
        let mut found = Vec::new();
        stages(
            planner.get_document("winningPlan").expect("winningPlan"),
            &mut found,
        );
        let names: Vec<&str> = found
            .iter()
            .filter_map(|s| s.get_str("stage").ok())
            .collect();
        assert!(!names.contains(&"COLLSCAN"), "{names:?}: {explained}");
        let scan = found
            .iter()
            .find(|s| s.get_str("stage") == Ok("IXSCAN"))
            .unwrap_or_else(|| panic!("no IXSCAN: {explained}"));
        assert_eq!(scan.get_str("indexName"), Ok("measurement_tags_field"));
        assert_eq!(examined(&explained, "totalDocsExamined"), 1, "{explained}");
        let found = b.find_series(&by_host).await.expect("find");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key.tag("host"), Some("h007"));
    }
    b.drop_database().await.expect("drop");
}

/// Each selector shape the query can take — one or several equalities, a regex with or
/// without a literal prefix, matchers a missing tag satisfies, a field — answers exactly
/// the series `SeriesSelector::matches`, in id order.
#[tokio::test]
async fn every_selector_shape_answers_exactly() {
    let db = fresh_db("tag_shapes");
    let b = open(&db, 8).await;
    let keys = keys(40);
    let ids = b.resolve_series(&keys).await.expect("register");
    use MatchOp::*;
    let cases = [
        selector(&[("dc", "d1")], &[]),
        selector(&[("dc", "d1"), ("host", "h004")], &[]),
        selector(&[("dc", "d1"), ("host", "h005")], &[]),
        selector(&[("dc", "d1"), ("dc", "d2")], &[]),
        selector(&[], &[(Regex, "h00.*")]),
        selector(&[], &[(Regex, "h01[0-4]")]),
        selector(&[], &[(Regex, "h001|h03.")]),
        selector(&[], &[(Regex, ".*")]),
        selector(&[], &[(NotEqual, "h001")]),
        selector(&[], &[(NotEqual, "")]),
        selector(&[], &[(NotRegex, "h0[0-2].")]),
        selector(&[("dc", "d2")], &[(Regex, "h0.5"), (NotRegex, "h025")]),
        selector(&[("rack", "r1")], &[]),
        selector(&[], &[(Regex, "")]),
    ];
    for mut case in cases {
        for field in [None, Some("usage"), Some("free")] {
            case.field = field.map(str::to_owned);
            let expected: Vec<SeriesId> = keys
                .iter()
                .zip(&ids)
                .filter(|(k, _)| case.matches(k))
                .map(|(_, id)| *id)
                .collect();
            let found: Vec<SeriesId> = b
                .find_series(&case)
                .await
                .expect("find")
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(found, expected, "{case:?}");
        }
    }
    b.drop_database().await.expect("drop");
}

/// A store written before `k.p` and `tag_values` existed: series documents in the old
/// shape — one inserted with the driver, as the old code wrote it, and more than one batch
/// of registered ones with `k.p` removed —, no `tag_values` collection and no marks. Two
/// handles connecting at once both backfill; afterwards every document has its pairs, is
/// found by tag, has its tags listed, and still takes points.
#[tokio::test]
async fn old_series_documents_are_backfilled_at_connect() {
    let db = fresh_db("tag_backfill");
    let b = open(&db, 8).await;
    let registered = b.resolve_series(&keys(1100)).await.expect("register");
    drop(b);

    let series = raw_collection(&db, "series").await;
    let counters = raw_collection(&db, "counters").await;
    let n = counters
        .find_one_and_update(doc! { "_id": "series" }, doc! { "$inc": { "n": 1_i64 } })
        .return_document(mongodb::options::ReturnDocument::After)
        .await
        .expect("issue an id")
        .expect("counter");
    let old_id = n.get_i64("n").expect("n");
    series
        .insert_one(doc! {
            "_id": old_id,
            "ck": r#"["cpu",[["dc","d9"],["host","old"]],"usage"]"#,
            "k": { "m": "cpu", "t": [["dc", "d9"], ["host", "old"]], "f": "usage" },
        })
        .await
        .expect("insert old series document");
    series
        .update_many(doc! {}, doc! { "$unset": { "k.p": "" } })
        .await
        .expect("strip k.p");
    let meta = raw_collection(&db, "meta").await;
    meta.delete_many(doc! { "_id": { "$in": ["tag_pairs", "tag_values"] } })
        .await
        .expect("remove the marks");
    raw_collection(&db, "tag_values")
        .await
        .drop()
        .await
        .expect("drop tag_values");

    let (first, second) = tokio::join!(
        MongoBackend::connect(options(&db, 8)),
        MongoBackend::connect(options(&db, 8)),
    );
    let (first, _second) = (first.expect("connect"), second.expect("connect"));
    let missing = series
        .count_documents(doc! { "k.p": { "$exists": false } })
        .await
        .expect("count");
    assert_eq!(missing, 0, "every series document has k.p");

    let old = first
        .find_series(&selector(&[("host", "old")], &[]))
        .await
        .expect("find");
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].id, SeriesId(old_id as u64));
    assert_eq!(old[0].key.tag("dc"), Some("d9"));
    let by_dc = first
        .find_series(&selector(&[("dc", "d2")], &[(MatchOp::Regex, "h1.*")]))
        .await
        .expect("find");
    let expected: Vec<SeriesId> = keys(1100)
        .iter()
        .zip(&registered)
        .filter(|(k, _)| k.measurement == "cpu" && k.tag("dc") == Some("d2"))
        .filter(|(k, _)| k.tag("host").is_some_and(|h| h.starts_with("h1")))
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(
        by_dc.iter().map(|s| s.id).collect::<Vec<_>>(),
        expected,
        "registered series after the backfill"
    );
    // The pickers' listings find the old series' tags and every registered one's.
    let list = |prefix: &str, limit| NameQuery::new(prefix, limit);
    let dcs = first
        .list_tag_values("cpu", "dc", &list("", 10))
        .await
        .expect("list");
    assert_eq!(dcs, ["d0", "d1", "d2", "d9"]);
    let hosts = first
        .list_tag_values("cpu", "host", &list("", 2000))
        .await
        .expect("list");
    assert_eq!(hosts.len(), 1101, "1100 registered hosts and the old one");
    let hosts = first
        .list_tag_values("cpu", "host", &list("h10", 3))
        .await
        .expect("list");
    assert_eq!(hosts, ["h100", "h1000", "h1001"]);
    let keys = first
        .list_tag_keys("cpu", &list("", 10))
        .await
        .expect("list");
    assert_eq!(keys, ["dc", "host"]);
    first
        .append(vec![append(old[0].id, [5, 6])])
        .await
        .expect("append to the old series");
    assert_eq!(times(&read_all(&first, old[0].id).await), vec![5, 6]);
    first.drop_database().await.expect("drop");
}
