//! Registration, appends, refusals, range reads, heads and stats, on both protocols.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tickertape_backend::{AppendOutcome, Backend, BackendError};
use tickertape_core::{Point, SeriesId, SeriesKey, SeriesSelector};
use tickertape_mongodb::{MongoBackend, MongoOptions, SegmentProtocol};

#[tokio::test]
async fn series_ids_are_stable_and_unique_per_key() {
    let db = fresh_db("ids");
    let backend = open(&db, SegmentProtocol::Reserve, 4).await;
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
    let again = open(&db, SegmentProtocol::Reserve, 4).await;
    let reordered = SeriesKey::new(
        "m$e.a",
        vec![("a".into(), "x,y=z".into()), ("z.$".into(), "1".into())],
        "f.$x",
    );
    assert_eq!(
        again.resolve_series(&[odd, reordered, b]).await.unwrap(),
        vec![ids[3], ids[3], ids[1]]
    );

    let found = backend
        .find_series(&SeriesSelector {
            measurement: "cpu".into(),
            field: None,
            tags: vec![("host".into(), "b".into())],
        })
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, ids[1]);
    assert_eq!(found[0].key, key("cpu", "b", "user"));
    let all = backend
        .find_series(&SeriesSelector {
            measurement: "cpu".into(),
            field: Some("user".into()),
            tags: vec![],
        })
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![ids[0], ids[1]]
    );
}

#[tokio::test]
async fn concurrent_registration_yields_one_id() {
    let db = fresh_db("reg");
    let handles: Vec<MongoBackend> =
        futures::future::join_all((0..4).map(|_| open(&db, SegmentProtocol::Conditional, 4))).await;
    let keys: Vec<SeriesKey> = (0..6)
        .map(|i| key("mem", &format!("h{i}"), "free"))
        .collect();
    let results = futures::future::join_all(handles.iter().map(|h| h.resolve_series(&keys))).await;
    let first = results[0].as_ref().unwrap().clone();
    for r in &results {
        assert_eq!(r.as_ref().unwrap(), &first);
    }
    // Every registered series accepts points.
    let outcomes = handles[1]
        .append(first.iter().map(|&s| append(s, [1, 2])).collect())
        .await
        .unwrap();
    assert!(outcomes.iter().all(|o| o.refused == 0));
    assert_eq!(handles[0].stats().await.unwrap().series, 6);
}

async fn appends_and_reads(protocol: SegmentProtocol) {
    let db = fresh_db(&format!("rw_{protocol}"));
    let backend = open(&db, protocol, 4).await;
    let ids = backend
        .resolve_series(&[key("cpu", "a", "u"), key("cpu", "b", "u")])
        .await
        .unwrap();
    let (a, b) = (ids[0], ids[1]);

    // A point at the epoch and negative times survive (holes are null, not 0).
    let out = backend
        .append(vec![append(a, [-5, 0, 3]), append(b, [10])])
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            AppendOutcome {
                refused: 0,
                last_time: None
            };
            2
        ]
    );
    assert_eq!(times(&read_all(&backend, a).await), vec![-5, 0, 3]);

    // Straddling the segment boundary, then more than a whole segment in one batch.
    backend
        .append(vec![append(a, [4, 5]), append(b, 11..=20)])
        .await
        .unwrap();
    assert_eq!(times(&read_all(&backend, a).await), vec![-5, 0, 3, 4, 5]);
    assert_eq!(
        times(&read_all(&backend, b).await),
        (10..=20).collect::<Vec<_>>()
    );

    // Refusals form a prefix; the rest is stored.
    let out = backend.append(vec![append(a, [0, 5, 6, 7])]).await.unwrap();
    assert_eq!(
        out,
        vec![AppendOutcome {
            refused: 2,
            last_time: Some(5)
        }]
    );
    let out = backend.append(vec![append(a, [1, 2])]).await.unwrap();
    assert_eq!(
        out,
        vec![AppendOutcome {
            refused: 2,
            last_time: Some(7)
        }]
    );
    // Two appends of one series in one call apply in order.
    let out = backend
        .append(vec![append(a, [8, 9]), append(a, [9, 10]), append(b, [21])])
        .await
        .unwrap();
    assert_eq!(out[0].refused, 0);
    assert_eq!(
        out[1],
        AppendOutcome {
            refused: 1,
            last_time: Some(9)
        }
    );
    let all = read_all(&backend, a).await;
    assert_eq!(times(&all), vec![-5, 0, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert!(all
        .iter()
        .all(|p| p.value.to_bits() == (p.time as f64 * 0.5).to_bits()));

    // Values are stored bit for bit.
    let c = backend
        .resolve_series(&[key("cpu", "c", "u")])
        .await
        .unwrap()[0];
    let odd = vec![
        Point::new(1, f64::NAN),
        Point::new(2, -0.0),
        Point::new(3, f64::INFINITY),
        Point::new(4, f64::MIN_POSITIVE),
    ];
    backend
        .append(vec![
            tickertape_backend::SeriesAppend::new(c, odd.clone()).expect("in order")
        ])
        .await
        .unwrap();
    let back = read_all(&backend, c).await;
    assert_eq!(back.len(), 4);
    assert!(back
        .iter()
        .zip(&odd)
        .all(|(x, y)| x.bit_eq(y) || (x.value.is_nan() && y.value.is_nan() && x.time == y.time)));

    // Heads and stats.
    let heads = backend.heads(&[a, b, SeriesId(999_999)]).await.unwrap();
    assert_eq!(heads[0].map(|h| (h.last.time, h.count)), Some((10, 10)));
    assert_eq!(heads[1].map(|h| (h.last.time, h.count)), Some((21, 12)));
    assert_eq!(heads[2], None);
    let stats = backend.stats().await.unwrap();
    assert_eq!(stats.series, 3);
    assert!(stats.segments >= 6, "{stats:?}");
    assert!(stats.bytes > 0);
    backend.drop_database().await.unwrap();
}

#[tokio::test]
async fn appends_and_reads_reserve() {
    appends_and_reads(SegmentProtocol::Reserve).await;
}

#[tokio::test]
async fn appends_and_reads_conditional() {
    appends_and_reads(SegmentProtocol::Conditional).await;
}

/// Every range — inside a gap, across boundaries, before and after all points — yields
/// its points and both neighbours; full segments are sealed.
async fn ranges_select_neighbours(protocol: SegmentProtocol) {
    let db = fresh_db(&format!("ranges_{protocol}"));
    let backend = open(&db, protocol, 4).await;
    let s = backend
        .resolve_series(&[key("disk", "a", "free")])
        .await
        .unwrap()[0];
    let all: Vec<i64> = (1..=14).map(|i| i * 10).collect();
    for chunk in all.chunks(3) {
        backend
            .append(vec![append(s, chunk.iter().copied())])
            .await
            .unwrap();
    }
    let segments = backend.read_segments(s, i64::MIN, i64::MAX).await.unwrap();
    assert_chain(&segments);
    // Both protocols split batches at segment boundaries: 3 full segments and the active one.
    assert_eq!(segments.len(), 4);
    assert_eq!(sealed_count(&segments), 3, "full segments are sealed");
    for full in &segments[..3] {
        assert_eq!(full.points().unwrap().len(), 4);
    }
    for start in (0..=150).step_by(5) {
        for end in (start..=150).step_by(5) {
            let got = times(&read_range(&backend, s, start, end).await);
            let before = all.iter().rev().find(|&&t| t < start);
            let after = all.iter().find(|&&t| t >= end);
            for t in all
                .iter()
                .filter(|&&t| t >= start && t < end)
                .chain(before)
                .chain(after)
            {
                assert!(got.contains(t), "[{start}, {end}) misses {t}: {got:?}");
            }
        }
    }
    // A range inside a gap reads only the segment(s) around the gap.
    let gap = backend.read_segments(s, 41, 49).await.unwrap();
    assert!(gap.len() <= 2, "{gap:?}");
    assert!(backend.read_segments(s, 10, 5).await.unwrap().is_empty());
}

#[tokio::test]
async fn ranges_select_neighbours_reserve() {
    ranges_select_neighbours(SegmentProtocol::Reserve).await;
}

#[tokio::test]
async fn ranges_select_neighbours_conditional() {
    ranges_select_neighbours(SegmentProtocol::Conditional).await;
}

#[tokio::test]
async fn unknown_series_are_refused() {
    for protocol in PROTOCOLS {
        let db = fresh_db("invalid");
        let backend = open(&db, protocol, 4).await;
        let err = backend
            .append(vec![append(SeriesId(77), [1])])
            .await
            .unwrap_err();
        assert!(
            matches!(err, BackendError::UnknownSeries(SeriesId(77))),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_database_keeps_its_protocol_and_capacity() {
    let db = fresh_db("layout");
    let _first = open(&db, SegmentProtocol::Reserve, 4).await;
    for (protocol, capacity) in [
        (SegmentProtocol::Conditional, 4),
        (SegmentProtocol::Reserve, 8),
    ] {
        let err = MongoBackend::connect(options(&db, protocol, capacity))
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, BackendError::Invalid(_)), "{err}");
    }
}

#[tokio::test]
async fn write_concern_options_are_used() {
    let db = fresh_db("wc");
    let mut opts = options(&db, SegmentProtocol::Conditional, 4);
    opts.w = Some("1".into());
    opts.journal = Some(false);
    let backend = MongoBackend::connect(opts).await.unwrap();
    let s = backend.resolve_series(&[key("a", "b", "c")]).await.unwrap()[0];
    backend.append(vec![append(s, 1..=9)]).await.unwrap();
    assert_eq!(read_all(&backend, s).await.len(), 9);
    // A write concern no deployment can meet is an error, never a stored write.
    let mut opts = options(&db, SegmentProtocol::Conditional, 4);
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
    opts.protocol = SegmentProtocol::Reserve;
    opts.segment_capacity = 4;
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
