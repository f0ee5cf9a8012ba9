//! What is MongoDB's own about registration and connections: several clients (handles)
//! agree on series ids, a database keeps its partition width and block size, write
//! concerns are used, and an unreachable or lost server is `Unavailable`. Appends, range
//! reads, heads, rollups and stats are checked on every backend by the conformance suite.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tickertape_backend::{Backend, BackendError, SeriesCatalog, ValueStore};
use tickertape_core::SeriesKey;
use tickertape_mongodb::{MongoBackend, MongoOptions};

#[tokio::test]
async fn a_second_client_sees_the_same_series_ids() {
    let db = fresh_db("ids");
    let backend = open(&db, 4).await;
    let a = key("cpu", "a", "user");
    let b = key("cpu", "b", "user");
    // Tag order and odd characters do not matter / do not break field names.
    let odd = SeriesKey::new(
        "m$e.a",
        vec![("z.$".into(), "1".into()), ("a".into(), "x,y=z".into())],
        "f.$x",
    );
    let ids = backend
        .resolve_series(&[a.clone(), b.clone(), a.clone(), odd.clone()])
        .await
        .unwrap();
    assert_eq!(ids[0], ids[2]);
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[3], ids[0]);
    let again = open(&db, 4).await;
    let reordered = SeriesKey::new(
        "m$e.a",
        vec![("a".into(), "x,y=z".into()), ("z.$".into(), "1".into())],
        "f.$x",
    );
    assert_eq!(
        again.resolve_series(&[odd, reordered, b]).await.unwrap(),
        vec![ids[3], ids[3], ids[1]]
    );
}

#[tokio::test]
async fn concurrent_registration_yields_one_id() {
    let db = fresh_db("reg");
    let handles: Vec<MongoBackend> = futures::future::join_all((0..4).map(|_| open(&db, 4))).await;
    let keys: Vec<SeriesKey> = (0..6)
        .map(|i| key("mem", &format!("h{i}"), "free"))
        .collect();
    let results = futures::future::join_all(handles.iter().map(|h| h.resolve_series(&keys))).await;
    let first = results[0].as_ref().unwrap().clone();
    for r in &results {
        assert_eq!(r.as_ref().unwrap(), &first);
    }
    // Every registered series accepts points.
    handles[1]
        .append(first.iter().map(|&s| append(s, [1, 2])).collect())
        .await
        .unwrap();
    for &s in &first {
        assert_eq!(times(&read_all(&handles[2], s).await), vec![1, 2]);
    }
    assert_eq!(handles[0].stats().await.unwrap().series, 6);
}

#[tokio::test]
async fn a_database_keeps_its_partition_width_and_block_size() {
    let db = fresh_db("layout");
    let _first = open(&db, 4).await;
    for (partition_ns, block_points) in [(1_000, 4), (MongoOptions::new("").partition_ns, 8)] {
        let mut opts = options(&db, block_points);
        opts.partition_ns = partition_ns;
        let err = MongoBackend::connect(opts).await.err().expect("refused");
        assert!(matches!(err, BackendError::Invalid(_)), "{err}");
    }
}

#[tokio::test]
async fn write_concern_options_are_used() {
    let db = fresh_db("wc");
    let mut opts = options(&db, 4);
    opts.w = Some("1".into());
    opts.journal = Some(false);
    let backend = MongoBackend::connect(opts).await.unwrap();
    let s = backend.resolve_series(&[key("a", "b", "c")]).await.unwrap()[0];
    backend.append(vec![append(s, 1..=9)]).await.unwrap();
    assert_eq!(read_all(&backend, s).await.len(), 9);
    // A write concern no deployment can meet is an error, never a stored write.
    let mut opts = options(&db, 4);
    opts.w = Some("noSuchTagSet".into());
    if let Ok(strict) = MongoBackend::connect(opts).await {
        let result = strict.append(vec![append(s, [10])]).await;
        assert!(
            result.is_err(),
            "an unsatisfiable write concern reported success"
        );
    }
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_quickly() {
    // A free port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut opts = MongoOptions::new(format!("mongodb://127.0.0.1:{port}/x"));
    opts.server_selection_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let err = MongoBackend::connect(opts)
        .await
        .err()
        .expect("no server there");
    assert!(started.elapsed() < Duration::from_secs(5));
    match err {
        BackendError::Unavailable(message) => {
            assert!(
                message.starts_with(&format!(
                    "cannot reach MongoDB at mongodb://127.0.0.1:{port}/x: "
                )),
                "{message}"
            )
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    let err = MongoBackend::connect(MongoOptions::new("http://nope"))
        .await
        .err()
        .expect("bad uri");
    assert!(matches!(err, BackendError::Invalid(_)), "{err}");
}

/// A TCP relay to the test server that can be cut, to lose the server mid-run.
struct Relay {
    port: u16,
    tasks: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Relay {
    async fn start(upstream: String) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let tasks: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let conns = tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let conn = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                conns.lock().unwrap().push(conn);
            }
        });
        tasks.lock().unwrap().push(accept);
        Relay { port, tasks }
    }

    fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_lost_server_makes_calls_unavailable() {
    let uri = server_uri();
    let hosts = uri.split("://").nth(1).unwrap_or("");
    let upstream = hosts.split(['/', '?', ',']).next().unwrap_or("").to_owned();
    let relay = Relay::start(upstream).await;
    let db = fresh_db("lost");
    // Direct connection: the server advertises its own address, which bypasses the relay.
    let mut opts = MongoOptions::new(format!(
        "mongodb://127.0.0.1:{}/{db}?directConnection=true",
        relay.port
    ));
    opts.block_points = 4;
    opts.server_selection_timeout = Duration::from_millis(800);
    let backend = MongoBackend::connect(opts).await.unwrap();
    let s = backend
        .resolve_series(&[key("lost", "a", "v")])
        .await
        .unwrap()[0];
    backend.append(vec![append(s, [1, 2])]).await.unwrap();
    relay.cut();
    let started = Instant::now();
    for _ in 0..2 {
        let err = backend.append(vec![append(s, [3, 4])]).await.unwrap_err();
        assert!(matches!(err, BackendError::Unavailable(_)), "{err}");
        let err = backend.read_segments(s, 0, 10).await.unwrap_err();
        assert!(matches!(err, BackendError::Unavailable(_)), "{err}");
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}
