//! Finding series: the selectors queries use (equalities, `!=`, `=~`, `!~`, a missing tag
//! counting as empty) and the lookups and counts a writer checks its series limits with.

use crate::StoreFactory;
use tickertape_backend::{Backend, NameQuery};
use tickertape_core::{MatchOp, SeriesKey, SeriesSelector, TagMatcher};

fn host_key(measurement: &str, host: Option<&str>, field: &str) -> SeriesKey {
    let tags = host
        .map(|h| {
            vec![
                ("host".to_owned(), h.to_owned()),
                ("dc".to_owned(), "x".to_owned()),
            ]
        })
        .unwrap_or_default();
    SeriesKey::new(measurement, tags, field)
}

/// Each selector selects exactly the series whose keys it matches, in id order, after a
/// reopen too (the embedded store rebuilds its index from the catalog on disk).
pub async fn series_selected_by_tags_and_matchers(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let keys = vec![
        host_key("cpu", Some("h001"), "u"),
        host_key("cpu", Some("h002"), "u"),
        host_key("cpu", Some("h100"), "u"),
        host_key("cpu", Some("h001"), "s"),
        host_key("cpu", None, "u"),
        host_key("mem", Some("h001"), "u"),
    ];
    let matcher = |op, pattern: &str| TagMatcher::new("host", op, pattern).expect("valid");
    let cases: Vec<(SeriesSelector, Vec<usize>)> = vec![
        (selector(None, &[], vec![]), vec![0, 1, 2, 3, 4]),
        (selector(Some("u"), &[], vec![]), vec![0, 1, 2, 4]),
        (selector(None, &[("host", "h001")], vec![]), vec![0, 3]),
        (
            selector(None, &[("dc", "x")], vec![matcher(MatchOp::Regex, "h00.*")]),
            vec![0, 1, 3],
        ),
        (
            selector(Some("u"), &[], vec![matcher(MatchOp::NotEqual, "h001")]),
            vec![1, 2, 4],
        ),
        (
            selector(None, &[], vec![matcher(MatchOp::NotRegex, "h0.*")]),
            vec![2, 4],
        ),
        (
            selector(None, &[], vec![matcher(MatchOp::Regex, "")]),
            vec![4],
        ),
        (
            selector(None, &[], vec![matcher(MatchOp::Regex, "h1.*|")]),
            vec![2, 4],
        ),
        (selector(None, &[("host", "nope")], vec![]), vec![]),
        (selector(Some("nope"), &[], vec![]), vec![]),
    ];
    for round in ["before reopen", "after reopen"] {
        let b = store.open().await;
        let ids = b.resolve_series(&keys).await.expect("resolve");
        for (sel, want) in &cases {
            let found = b.find_series(sel).await.expect("find");
            let got: Vec<SeriesKey> = found.iter().map(|s| s.key.clone()).collect();
            let mut want_ids: Vec<_> = want.iter().map(|&i| ids[i]).collect();
            want_ids.sort();
            let got_ids: Vec<_> = found.iter().map(|s| s.id).collect();
            assert_eq!(got_ids, want_ids, "{round}: {sel:?} selected {got:?}");
        }
    }
}

fn selector(
    field: Option<&str>,
    tags: &[(&str, &str)],
    matchers: Vec<TagMatcher>,
) -> SeriesSelector {
    SeriesSelector {
        measurement: "cpu".into(),
        field: field.map(str::to_owned),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        matchers,
    }
}

/// `lookup_series` names the registered keys and registers nothing; `count_series`
/// counts in all and per measurement.
pub async fn series_lookup_and_count_register_nothing(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let b = store.open().await;
    let known = [
        host_key("cpu", Some("a"), "u"),
        host_key("mem", None, "free"),
    ];
    let ids = b.resolve_series(&known).await.expect("resolve");
    let new = host_key("cpu", Some("b"), "u");
    let got = b
        .lookup_series(&[new.clone(), known[1].clone(), known[0].clone()])
        .await
        .expect("lookup");
    assert_eq!(got, vec![None, Some(ids[1]), Some(ids[0])]);
    assert_eq!(
        b.lookup_series(std::slice::from_ref(&new))
            .await
            .expect("lookup"),
        vec![None]
    );
    let measurements = ["cpu".to_owned(), "disk".to_owned(), "mem".to_owned()];
    let count = b.count_series(&measurements).await.expect("count");
    assert_eq!((count.total, count.per_measurement), (2, vec![1, 0, 1]));
    b.resolve_series(&[new]).await.expect("resolve");
    let count = b.count_series(&measurements[..1]).await.expect("count");
    assert_eq!((count.total, count.per_measurement), (3, vec![2]));
}

/// `list_fields` names each (measurement, field) pair of the registered series once,
/// sorted, before and after a reopen; `list_measurements` and `list_fields_of` answer a
/// search box over the same names (prefix, sorted, each once, the first `limit`).
pub async fn fields_listed_once_each(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let mut b = store.open().await;
    assert_eq!(b.list_fields().await.expect("list"), Vec::new());
    assert!(measurements(&*b, "", 10).await.is_empty());
    let keys = [
        host_key("mem", None, "free"),
        host_key("cpu", Some("a"), "u"),
        host_key("cpu", Some("b"), "u"),
        host_key("cpu", Some("a"), "s"),
        host_key("cpu", Some("a"), "steal"),
        host_key("cpx", Some("a"), "u"),
    ];
    b.resolve_series(&keys).await.expect("resolve");
    let want: Vec<(String, String)> = [
        ("cpu", "s"),
        ("cpu", "steal"),
        ("cpu", "u"),
        ("cpx", "u"),
        ("mem", "free"),
    ]
    .iter()
    .map(|(m, f)| (m.to_string(), f.to_string()))
    .collect();
    for pass in ["before reopen", "after reopen"] {
        assert_eq!(b.list_fields().await.expect("list"), want, "{pass}");
        assert_eq!(
            measurements(&*b, "", 10).await,
            ["cpu", "cpx", "mem"],
            "{pass}"
        );
        assert_eq!(measurements(&*b, "cp", 10).await, ["cpu", "cpx"], "{pass}");
        assert_eq!(measurements(&*b, "", 2).await, ["cpu", "cpx"], "{pass}");
        assert!(measurements(&*b, "d", 10).await.is_empty(), "{pass}");
        assert_eq!(
            fields_of(&*b, "cpu", "", 10).await,
            ["s", "steal", "u"],
            "{pass}"
        );
        assert_eq!(
            fields_of(&*b, "cpu", "s", 10).await,
            ["s", "steal"],
            "{pass}"
        );
        assert_eq!(fields_of(&*b, "cpu", "", 1).await, ["s"], "{pass}");
        assert_eq!(fields_of(&*b, "mem", "", 10).await, ["free"], "{pass}");
        assert!(fields_of(&*b, "disk", "", 10).await.is_empty(), "{pass}");
        drop(b);
        b = store.open().await;
    }
}

async fn measurements(b: &dyn Backend, prefix: &str, limit: usize) -> Vec<String> {
    let query = NameQuery::new(prefix, limit);
    b.list_measurements(&query)
        .await
        .expect("list measurements")
}

async fn fields_of(b: &dyn Backend, measurement: &str, prefix: &str, limit: usize) -> Vec<String> {
    let query = NameQuery::new(prefix, limit);
    b.list_fields_of(measurement, &query)
        .await
        .expect("list fields of a measurement")
}

async fn keys(b: &dyn Backend, prefix: &str, limit: usize) -> Vec<String> {
    let query = NameQuery::new(prefix, limit);
    b.list_tag_keys("cpu", &query).await.expect("list tag keys")
}

async fn values(b: &dyn Backend, key: &str, prefix: &str, limit: usize) -> Vec<String> {
    let query = NameQuery::new(prefix, limit);
    b.list_tag_values("cpu", key, &query)
        .await
        .expect("list tag values")
}

/// `list_tag_keys` and `list_tag_values` answer a search box: the names of one measurement
/// starting with the prefix, sorted, each once, the first `limit`; other measurements'
/// names never leak in; the same after a reopen.
pub async fn tag_keys_and_values_listed(f: &dyn StoreFactory) {
    let store = f.create(4).await;
    let mut b = store.open().await;
    assert_eq!(keys(&*b, "", 10).await, Vec::<String>::new());
    let registered = [
        host_key("cpu", Some("h10"), "u"),
        host_key("cpu", Some("h02"), "u"),
        host_key("cpu", Some("h02"), "s"),
        host_key("cpu", Some("web1"), "u"),
        host_key("cpu", None, "u"),
        SeriesKey::new("cpu", vec![("rack".into(), "r1".into())], "u"),
        SeriesKey::new(
            "mem",
            vec![("host".into(), "h01".into()), ("zone".into(), "z".into())],
            "u",
        ),
    ];
    b.resolve_series(&registered).await.expect("resolve");
    for pass in ["before reopen", "after reopen"] {
        assert_eq!(keys(&*b, "", 10).await, ["dc", "host", "rack"], "{pass}");
        assert_eq!(keys(&*b, "h", 10).await, ["host"], "{pass}");
        assert_eq!(keys(&*b, "", 1).await, ["dc"], "{pass}");
        assert_eq!(
            values(&*b, "host", "", 10).await,
            ["h02", "h10", "web1"],
            "{pass}"
        );
        assert_eq!(values(&*b, "host", "h", 10).await, ["h02", "h10"], "{pass}");
        assert_eq!(values(&*b, "host", "", 2).await, ["h02", "h10"], "{pass}");
        assert!(values(&*b, "host", "x", 10).await.is_empty(), "{pass}");
        assert!(values(&*b, "zone", "", 10).await.is_empty(), "{pass}");
        assert_eq!(values(&*b, "dc", "", 10).await, ["x"], "{pass}");
        let other = NameQuery::new("", 10);
        let missing = b
            .list_tag_values("disk", "host", &other)
            .await
            .expect("list");
        assert!(missing.is_empty(), "{pass}");
        drop(b);
        b = store.open().await;
    }
}
