//! Databases: the backend's list (`DatabaseCatalog`: created, listed sorted, dropped,
//! durable), and the engine's namespaces over each backend (series kept apart).

use crate::StoreFactory;
use std::sync::Arc;
use tickertape_backend::{DeleteRange, NameQuery};
use tickertape_core::database::DatabaseName;
use tickertape_core::retention_policy::{PolicySpec, RetentionPolicies};
use tickertape_core::time::ManualClock;
use tickertape_core::time::Precision;
use tickertape_core::{Point, SeriesSelector};
use tickertape_engine::{Engine, EngineError, Query, SeriesRef, SeriesSamples};

fn name(text: &str) -> DatabaseName {
    DatabaseName::new(text).expect("a valid database name")
}

/// Creating is idempotent, the list is sorted, a drop answers whether the name was there,
/// and the list survives reopening.
pub async fn databases_are_created_listed_and_dropped(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    assert_eq!(b.databases().await.expect("list"), Vec::new());
    for text in ["telegraf", "app", "a.b-c_d"] {
        assert!(
            b.create_database(&name(text)).await.expect("create"),
            "{text} is new"
        );
    }
    assert!(
        !b.create_database(&name("app")).await.expect("create again"),
        "creating an existing database changes nothing"
    );
    let want = vec![name("a.b-c_d"), name("app"), name("telegraf")];
    assert_eq!(b.databases().await.expect("list"), want);
    drop(b);
    let b = store.open().await;
    assert_eq!(b.databases().await.expect("list after reopen"), want);
    assert!(b.drop_database(&name("app")).await.expect("drop"));
    assert!(!b.drop_database(&name("app")).await.expect("drop again"));
    assert!(!b.drop_database(&name("never")).await.expect("drop unknown"));
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.databases().await.expect("list after drop"),
        vec![name("a.b-c_d"), name("telegraf")]
    );
}

/// Each database's retention policies, the default database's (never listed) too: absent
/// until set, replaced whole, durable across reopening, kept apart per database, removed
/// with `None` and with the database; setting them never lists a database.
pub async fn retention_policies_are_kept_per_database(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let b = store.open().await;
    let (app, default) = (name("app"), name("tickertape"));
    assert_eq!(b.retention_policies(&app).await.expect("read"), None);
    assert!(b.create_database(&app).await.expect("create"));
    let mut week = RetentionPolicies::autogen(0);
    let spec = PolicySpec {
        name: "week".into(),
        duration_ns: 7 * 86_400_000_000_000,
        shard_group_duration_ns: None,
        replica_n: 1,
    };
    week.create(&spec, true).expect("a valid policy");
    let forever = RetentionPolicies::autogen(0);
    b.set_retention_policies(&app, Some(&forever))
        .await
        .expect("set");
    b.set_retention_policies(&app, Some(&week))
        .await
        .expect("replace");
    b.set_retention_policies(&default, Some(&forever))
        .await
        .expect("set the default's");
    assert_eq!(b.databases().await.expect("list"), vec![app.clone()]);
    drop(b);
    let b = store.open().await;
    assert_eq!(
        b.retention_policies(&app).await.expect("read"),
        Some(week.clone())
    );
    assert_eq!(
        b.retention_policies(&default).await.expect("read"),
        Some(forever)
    );
    assert_eq!(
        b.databases().await.expect("list"),
        vec![app.clone()],
        "policies never list a database"
    );
    b.set_retention_policies(&default, None)
        .await
        .expect("remove");
    assert!(b.drop_database(&app).await.expect("drop"));
    drop(b);
    let b = store.open().await;
    assert_eq!(b.retention_policies(&default).await.expect("read"), None);
    assert_eq!(
        b.retention_policies(&app).await.expect("read"),
        None,
        "dropped with the database"
    );
    assert!(b.create_database(&app).await.expect("create again"));
    assert_eq!(b.retention_policies(&app).await.expect("read"), None);
}

const DAY: i64 = 86_400_000_000_000;

/// The default retention policy's duration is its database's raw retention on every
/// store: the retention pass drops that database's old raw points and keeps another
/// database's (which has no policy set, and no defaults), and a policy made forever
/// again drops nothing more.
pub async fn a_databases_default_policy_bounds_its_raw_points(f: &dyn StoreFactory) {
    /// The days of `cpu`'s points in `engine`'s database.
    async fn days(engine: &Engine) -> Vec<i64> {
        let selector = SeriesSelector {
            measurement: "cpu".into(),
            ..SeriesSelector::default()
        };
        let answers = engine
            .query(&Query::raw(selector, 0, 1_000 * DAY))
            .await
            .expect("query");
        answers
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.time / DAY))
            .collect()
    }
    let store = f.create(8).await;
    let clock = Arc::new(ManualClock::new(100 * DAY));
    let backend = store.open().await;
    let root = Engine::with_clock(backend.clone(), clock.clone());
    assert!(root.create_database("app").await.expect("create"));
    let app = root.database(Some("app")).await.expect("app exists");
    let body = format!("cpu,host=a v=1 {}\ncpu,host=a v=2 {}\n", DAY, 99 * DAY);
    write(&root, &body).await;
    write(&app, &body).await;
    let week = PolicySpec {
        name: "month".into(),
        duration_ns: 30 * DAY,
        shard_group_duration_ns: None,
        replica_n: 1,
    };
    app.change_retention_policies(|p| p.create(&week, true))
        .await
        .expect("a valid policy");
    // Retention drops whole partitions of what the store has flushed.
    backend.compact().await.expect("compact");
    let report = root.apply_retention(false).await.expect("retention");
    assert!(
        report.dropped.iter().all(|p| p.measurement.contains("app")),
        "{report:?}"
    );
    assert_eq!(days(&app).await, vec![99]);
    assert_eq!(days(&root).await, vec![1, 99]);
    let forever = tickertape_core::retention_policy::PolicyChange {
        duration_ns: Some(0),
        ..Default::default()
    };
    app.change_retention_policies(|p| p.alter("month", &forever))
        .await
        .expect("forever");
    clock.advance(365 * DAY);
    root.apply_retention(false).await.expect("retention");
    assert_eq!(days(&app).await, vec![99]);
    assert_eq!(days(&root).await, vec![1, 99]);
}

/// Two databases holding a measurement of the same name answer apart through every
/// engine path (write, remote-write samples, query, listings, fields, cardinality,
/// delete), on the store as it is and after reopening; dropping one removes its series
/// and nothing of the other; the default database is where unnamed requests go, so a
/// store's existing series stay in it.
pub async fn databases_keep_series_apart(f: &dyn StoreFactory) {
    let store = f.create(8).await;
    let root = Engine::new(store.open().await);
    let err = root.database(Some("app")).await.err();
    assert!(
        matches!(&err, Some(EngineError::UnknownDatabase(n)) if n == "app"),
        "{err:?}"
    );
    assert!(matches!(
        root.database(Some("no/slash")).await.err(),
        Some(EngineError::BadQuery(_))
    ));
    write(
        &root,
        "cpu,host=a usage=1 1000\ncpu,host=b usage=1 1000\nmem,host=a free=5 1000\n",
    )
    .await;
    assert!(root.create_database("app").await.expect("create"));
    assert!(!root.create_database("app").await.expect("create again"));
    assert!(!root
        .create_database("tickertape")
        .await
        .expect("the default exists"));
    let app = root.database(Some("app")).await.expect("app exists");
    write(&app, "cpu,host=a usage=2 1000\ncpu,host=c usage=2 2000\n").await;
    let points = [Point::new(3000, 7.0)];
    let samples = [SeriesSamples {
        series: SeriesRef {
            measurement: "disk",
            tags: vec![("host", "z")],
            field: "used",
        },
        points: &points,
    }];
    let report = app
        .write_samples(&samples, Precision::Nanoseconds)
        .await
        .expect("samples");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let named = root
        .database(Some("tickertape"))
        .await
        .expect("the default by name");
    assert_eq!(named.database_name().as_str(), "tickertape");

    assert_apart(&root, &app).await;
    drop((root, app, named));
    let root = Engine::new(store.open().await);
    let app = root.database(Some("app")).await.expect("app after reopen");
    assert_apart(&root, &app).await;

    let cpu = SeriesSelector {
        measurement: "cpu".into(),
        ..SeriesSelector::default()
    };
    let deleted = app.delete(&cpu, DeleteRange::all()).await.expect("delete");
    assert_eq!(deleted.series_removed, 2);
    assert_eq!(values(&app, "cpu").await, Vec::<String>::new());
    assert_eq!(values(&root, "cpu").await, ["a=1", "b=1"], "untouched");

    write(&app, "cpu,host=d usage=3 1000\n").await;
    let dropped = root.drop_database("app").await.expect("drop");
    assert_eq!(dropped.series_removed, 2, "cpu,host=d and disk_used");
    assert!(matches!(
        root.database(Some("app")).await.err(),
        Some(EngineError::UnknownDatabase(_))
    ));
    assert_eq!(measurements(&root).await, ["cpu", "mem"]);
    assert!(root.create_database("app").await.expect("create anew"));
    let app = root.database(Some("app")).await.expect("app again");
    assert_eq!(
        measurements(&app).await,
        Vec::<String>::new(),
        "a new database is empty"
    );
    assert_eq!(values(&root, "cpu").await, ["a=1", "b=1"]);
}

/// What the default database and `app` hold before the delete.
async fn assert_apart(root: &Engine, app: &Engine) {
    assert_eq!(values(root, "cpu").await, ["a=1", "b=1"], "default");
    assert_eq!(values(app, "cpu").await, ["a=2", "c=2"], "app");
    assert_eq!(measurements(root).await, ["cpu", "mem"]);
    assert_eq!(measurements(app).await, ["cpu", "disk"]);
    let fields = app.list_fields().await.expect("fields");
    assert_eq!(
        fields,
        [
            ("cpu".into(), "usage".into()),
            ("disk".into(), "used".into())
        ]
    );
    let hosts = |e: Engine| async move {
        e.list_tag_values("cpu", "host", &NameQuery::new("", 10))
            .await
            .expect("tag values")
            .names
    };
    assert_eq!(hosts(root.clone()).await, ["a", "b"]);
    // A default-database name spelled like `app`'s stored one reads nothing of it.
    let crafted = "\u{10FFFF}app\u{1F}cpu";
    assert_eq!(values(root, crafted).await, Vec::<String>::new());
    let every = NameQuery::new("", 10);
    let values_of = root.list_tag_values(crafted, "host", &every).await;
    assert_eq!(values_of.expect("tag values").names, Vec::<String>::new());
    assert_eq!(hosts(app.clone()).await, ["a", "c"]);
    let c = app.cardinality(10).await.expect("cardinality");
    assert_eq!(
        (c.database.as_str(), c.series, c.series_in_all_databases),
        ("app", 3, 6)
    );
    assert_eq!(
        c.series_by_database,
        [("app".into(), 3), ("tickertape".into(), 3)]
    );
    let names: Vec<String> = root
        .list_databases()
        .await
        .expect("databases")
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(names, ["app", "tickertape"]);
}

async fn write(engine: &Engine, body: &str) {
    let report = engine
        .write_lines(body, Precision::Nanoseconds)
        .await
        .expect("write");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

/// `host=value` of every point of `measurement`'s series.
async fn values(engine: &Engine, measurement: &str) -> Vec<String> {
    let selector = SeriesSelector {
        measurement: measurement.into(),
        ..SeriesSelector::default()
    };
    let answers = engine
        .query(&Query::raw(selector, 0, 10_000))
        .await
        .expect("query");
    let mut out = Vec::new();
    for series in answers {
        assert_eq!(
            series.key.measurement, measurement,
            "the user's name comes back"
        );
        let host = series.key.tag("host").unwrap_or_default().to_string();
        out.extend(series.points.iter().map(|p| format!("{host}={}", p.value)));
    }
    out
}

async fn measurements(engine: &Engine) -> Vec<String> {
    engine
        .list_measurements(&NameQuery::new("", 100))
        .await
        .expect("measurements")
        .names
}
