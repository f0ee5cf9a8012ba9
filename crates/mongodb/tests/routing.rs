//! Routing proof from the commands the store sends (every command on a sharded collection names its shard key). Every command the
//! backend sends during a mixed load — registration in two measurements, ingest across a
//! day-partition boundary, late points, a fold (`compact`), rollups kept and read,
//! retention, every query kind, bucket writes and reads — is recorded with the driver's
//! command monitoring (as in `tests/requests.rs`). For each command on a collection the
//! sharding plan gives a shard key (`shard_key_of`), the filter it sends decides whether a
//! `mongos` could route it to one shard (or the shards holding the series named):
//! **targeted** when the filter (or, for an insert, every inserted document) fixes the
//! shard key's fields; otherwise a **scatter**, allowed only if it is on [`SCATTERS`], the
//! documented list below with its reasons. The counts, by command and collection kind,
//! are printed (run with `--nocapture`) and go into `docs/BENCHMARKS.md`.
//!
//! What this proves is what the filters say: no `mongos` runs here, so the routing itself
//! is the server's documented rule applied to these filters (docs/format/mongodb.md,
//! "Sharding").

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use common::*;
use mongodb::bson::{Bson, Document};
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use tickertape_backend::{
    Backend, BucketFamily, BucketRange, BucketRead, BucketStore, BucketWrite, DocumentStart,
    NameKind, NameQuery, NameStore, SeriesAppend, SeriesCatalog, SlotChange, ValueStore,
};
use tickertape_core::partition::DEFAULT_PARTITION_NS;
use tickertape_core::rollup::Resolution;
use tickertape_core::{Point, SeriesSelector};
use tickertape_mongodb::options::ConfigureClient;
use tickertape_mongodb::shard_key_of;

const DAY: i64 = DEFAULT_PARTITION_NS;
const HOUR: i64 = 3_600_000_000_000;
const MINUTE: i64 = 60_000_000_000;
const SECOND: i64 = 1_000_000_000;
/// 2024-01-01T00:00:00Z.
const DAY0: i64 = 19_723 * DAY;

/// The scatters the store sends by design: (command, collection kind, filter shape as
/// [`shape`] writes it, why). Any other untargeted command on a sharded collection fails
/// the test.
const SCATTERS: &[(&str, &str, &str, &str)] = &[
    (
        "createIndexes",
        "sv",
        "-",
        "DDL, not a routed data command: a new value collection's indexes, once per \
         collection and handle",
    ),
    (
        "createIndexes",
        "sr",
        "-",
        "DDL: a new rollup collection's index, once per collection and handle",
    ),
    (
        "drop",
        "sv",
        "-",
        "DDL: a value collection retention has emptied (drop_raw_before)",
    ),
    (
        "drop",
        "sr",
        "-",
        "DDL: a rollup collection retention has emptied (drop_segment_rollup_before)",
    ),
    (
        "drop",
        "bk",
        "-",
        "DDL: retention drops a whole bucket partition",
    ),
    (
        "find",
        "sv",
        "{d: $exists, hi: $gte $lt}",
        "the fold pass's work list: the series with documents waiting in a slice marked \
         pending (an index scan of the `d` index on each shard), once per marked slice and \
         pass",
    ),
    (
        "find",
        "sv",
        "{}",
        "the verify/compact listing of a collection's series (projection {s, m, hi}): a \
         pass over every series of every collection, at start and in admin compact; and \
         retention's check that it left a collection empty (limit 1) before dropping it",
    ),
    (
        "find",
        "sr",
        "{}",
        "retention's check that it left a rollup collection empty (limit 1) before \
         dropping it",
    ),
    (
        "find",
        "sv",
        "{m, hi: $lt}",
        "retention: one measurement's documents of the expired slices (projection hi), a \
         range of the {m, hi} index on each shard, once per collection and pass",
    ),
    (
        "find",
        "sv",
        "{hi: $gte $lt, m}",
        "retention's last fold of one measurement's slice before its deletes: the series \
         of the measurement in the slice",
    ),
    (
        "delete",
        "sv",
        "{m, hi: $lt}",
        "retention: one measurement's documents of the expired slices, a range of the \
         {m, hi} index on each shard",
    ),
    (
        "find",
        "sr",
        "{m, p: $lt}",
        "rollup retention: one measurement's rollup documents of the expired slices, a \
         range of the {m, p} index",
    ),
    (
        "delete",
        "sr",
        "{m, p: $lt}",
        "rollup retention: one measurement's rollup documents of the expired slices",
    ),
    (
        "count",
        "sv",
        "-",
        "stats(): a collection's metadata count (estimatedDocumentCount, no query, no \
         scan), when a collection went between the listing and the one aggregate of \
         every count ($collStats in $unionWith, sent on the unsharded series collection)",
    ),
];

/// One recorded command on a collection with a shard key.
#[derive(Clone, Debug)]
struct Sent {
    command: String,
    collection: String,
    /// `sv`, `sr` or `bk`.
    kind: &'static str,
    shape: String,
    targeted: bool,
}

/// Commands recorded; a find's cursor id mapped to its record, for the `getMore`s after it.
#[derive(Default)]
struct Recorder {
    sent: Mutex<Vec<Sent>>,
    /// Commands on collections without a shard key, by command and collection.
    unsharded: Mutex<BTreeMap<(String, String), usize>>,
    started: Mutex<HashMap<i32, Sent>>,
    cursors: Mutex<HashMap<i64, Sent>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Recorder {
    fn hook(self: &Arc<Self>) -> ConfigureClient {
        let recorder = self.clone();
        ConfigureClient(Arc::new(move |options: &mut ClientOptions| {
            let recorder = recorder.clone();
            options.command_event_handler =
                Some(EventHandler::callback(move |event: CommandEvent| {
                    recorder.on(event)
                }));
        }))
    }

    fn on(&self, event: CommandEvent) {
        match event {
            CommandEvent::Started(started) => {
                let name = started.command_name.as_str();
                let command = &started.command;
                if name == "getMore" {
                    let id = command.get_i64("getMore").unwrap_or_default();
                    let collection = command.get_str("collection").unwrap_or_default();
                    let sent = match lock(&self.cursors).get(&id) {
                        Some(find) => Sent {
                            command: "getMore".into(),
                            ..find.clone()
                        },
                        None => panic!("getMore of cursor {id} on {collection}: no find seen"),
                    };
                    lock(&self.sent).push(sent);
                    return;
                }
                let Ok(collection) = command.get_str(name) else {
                    return; // not a collection command: hello, listCollections, dbStats, …
                };
                let (Some(key), _) = shard_key_of(collection) else {
                    *lock(&self.unsharded)
                        .entry((name.to_owned(), collection.to_owned()))
                        .or_default() += 1;
                    return;
                };
                let kind = kind_of(collection);
                let (shape, targeted) = classify(name, command, &key, kind);
                let sent = Sent {
                    command: name.to_owned(),
                    collection: collection.to_owned(),
                    kind,
                    shape,
                    targeted,
                };
                if matches!(name, "find" | "aggregate") {
                    lock(&self.started).insert(started.request_id, sent.clone());
                }
                lock(&self.sent).push(sent);
            }
            CommandEvent::Succeeded(done) => {
                let Some(sent) = lock(&self.started).remove(&done.request_id) else {
                    return;
                };
                let id = done
                    .reply
                    .get_document("cursor")
                    .and_then(|c| c.get_i64("id"))
                    .unwrap_or(0);
                if id != 0 {
                    lock(&self.cursors).insert(id, sent);
                }
            }
            CommandEvent::Failed(failed) => {
                lock(&self.started).remove(&failed.request_id);
            }
            _ => {}
        }
    }
}

fn kind_of(collection: &str) -> &'static str {
    match collection.split('.').next() {
        Some("sv") => "sv",
        Some("sr") => "sr",
        _ => "bk",
    }
}

/// The filters a command sends (for an insert, its documents), its shape, and whether
/// every one fixes the shard key.
fn classify(name: &str, command: &Document, key: &Document, kind: &str) -> (String, bool) {
    let statements = |field: &str, filter: &str| -> Vec<Document> {
        command
            .get_array(field)
            .map(|a| {
                a.iter()
                    .filter_map(Bson::as_document)
                    .map(|s| s.get_document(filter).cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    };
    let filters: Vec<Document> = match name {
        "find" => vec![command.get_document("filter").cloned().unwrap_or_default()],
        "update" => statements("updates", "q"),
        "delete" => statements("deletes", "q"),
        "findAndModify" => vec![command.get_document("query").cloned().unwrap_or_default()],
        "aggregate" => vec![command
            .get_array("pipeline")
            .ok()
            .and_then(|p| p.first())
            .and_then(Bson::as_document)
            .and_then(|s| s.get_document("$match").ok())
            .cloned()
            .unwrap_or_default()],
        "count" | "distinct" => match command.get_document("query") {
            Ok(q) => vec![q.clone()],
            Err(_) => return ("-".into(), false),
        },
        "insert" => {
            let docs: Vec<Document> = command
                .get_array("documents")
                .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
                .unwrap_or_default();
            assert!(!docs.is_empty(), "an insert without documents: {command}");
            let all = docs.iter().all(|d| key.keys().all(|k| d.contains_key(k)));
            let fields: Vec<&str> = key.keys().map(String::as_str).collect();
            return (format!("documents with {}", fields.join(", ")), all);
        }
        // DDL and metadata (createIndexes, drop, listIndexes, …): not routed by a filter.
        _ => return ("-".into(), false),
    };
    assert!(!filters.is_empty(), "{name} without statements: {command}");
    let shapes: Vec<String> = filters.iter().map(shape).collect();
    let mut distinct = shapes.clone();
    distinct.sort();
    distinct.dedup();
    let targeted = filters.iter().all(|f| fixes_key(f, key, kind));
    (distinct.join(" | "), targeted)
}

/// `{s, lo: $lt, hi: $gte}`: the filter's fields and operators, without values.
fn shape(filter: &Document) -> String {
    let fields: Vec<String> = filter
        .iter()
        .map(|(k, v)| match v {
            Bson::Document(d) if d.keys().next().is_some_and(|o| o.starts_with('$')) => {
                let ops: Vec<&str> = d.keys().map(String::as_str).collect();
                format!("{k}: {}", ops.join(" "))
            }
            _ => k.clone(),
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn is_operator(v: &Bson) -> bool {
    matches!(v, Bson::Document(d) if d.keys().next().is_some_and(|o| o.starts_with('$')))
}

/// The shard key's fields fixed by `filter`: equality or `$in` for a hashed key; for the
/// ranged `{_id: 1}` of buckets also a range bounded on both sides within one series.
fn fixes_key(filter: &Document, key: &Document, kind: &str) -> bool {
    key.keys().all(|field| {
        let Some(v) = filter.get(field) else {
            return false;
        };
        if !is_operator(v) {
            return true;
        }
        let Bson::Document(ops) = v else {
            return false;
        };
        if ops.len() == 1 && matches!(ops.get("$in"), Some(Bson::Array(_))) {
            return true;
        }
        if ops.len() == 1 && ops.contains_key("$eq") {
            return true;
        }
        if kind != "bk" {
            return false;
        }
        let low = ops.get("$gte").or_else(|| ops.get("$gt"));
        let high = ops.get("$lt").or_else(|| ops.get("$lte"));
        match (low, high) {
            (Some(Bson::Document(lo)), Some(Bson::Document(hi))) => {
                lo.get("s").is_some() && lo.get("s") == hi.get("s")
            }
            _ => false,
        }
    })
}

fn documented(sent: &Sent) -> Option<&'static str> {
    listed(&sent.command, sent.kind, &sent.shape)
}

/// The reason [`SCATTERS`] gives; a `getMore` goes where its `find` went.
fn listed(command: &str, kind: &str, shape: &str) -> Option<&'static str> {
    let command = match command {
        "getMore" => "find",
        other => other,
    };
    SCATTERS
        .iter()
        .find(|(c, k, s, _)| *c == command && *k == kind && *s == shape)
        .map(|(_, _, _, why)| *why)
}

fn points_every(start: i64, end: i64, step: i64, base: f64) -> Vec<Point> {
    (0..)
        .map(|i| start + i * step)
        .take_while(|&t| t < end)
        .map(|t| Point::new(t, base + (t - start) as f64 / step as f64))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_on_a_sharded_collection_is_targeted_or_a_documented_scatter() {
    let db = fresh_db("routing");
    let recorder = Arc::new(Recorder::default());
    // Documents of 2 points: reads of a series and the fold's listings span more than a
    // first batch (101 documents), so their cursors go on with `getMore`.
    let mut opts = options(&db, 2);
    opts.configure_client = Some(recorder.hook());
    let b = connect(opts).await;
    let kept = vec![Resolution::HOUR, Resolution::DAY];
    let plan = kept.clone();
    b.derive_segment_rollups(Arc::new(move |_: &str| plan.clone()));

    // Registration: two measurements, tags host and region.
    let keys: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|h| {
            tickertape_core::SeriesKey::new(
                "cpu",
                vec![("host".into(), (*h).into()), ("region".into(), "eu".into())],
                "usage",
            )
        })
        .chain(["a", "b"].iter().map(|h| key("mem", h, "free")))
        .collect();
    let series = b.resolve_series(&keys).await.expect("register");
    assert_eq!(
        b.lookup_series(&keys).await.expect("lookup"),
        series.iter().map(|&s| Some(s)).collect::<Vec<_>>()
    );

    // Ingest: 22:00 to 02:00 across midnight, in three bodies; then late points at 10:00
    // of the first day, and a replaced one.
    let bodies = [
        (DAY0 + 22 * HOUR, DAY0 + 23 * HOUR),
        (DAY0 + 23 * HOUR, DAY0 + DAY + HOUR),
        (DAY0 + DAY + HOUR, DAY0 + DAY + 2 * HOUR),
        (DAY0 + 10 * HOUR, DAY0 + 10 * HOUR + 5 * MINUTE),
    ];
    for (start, end) in bodies {
        let appends: Vec<SeriesAppend> = series
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                SeriesAppend::new(s, points_every(start, end, MINUTE, k as f64))
                    .expect("increasing")
            })
            .collect();
        b.append(appends).await.expect("append");
    }
    b.append(vec![SeriesAppend::new(
        series[0],
        vec![Point::new(DAY0 + 22 * HOUR, -1.0)],
    )
    .expect("one point")])
        .await
        .expect("replace");

    // The fold, with the rollups kept.
    b.compact().await.expect("compact");

    // Every query kind.
    for &s in &series {
        let all = read_all(&b, s).await;
        assert_eq!(all.len(), 4 * 60 + 5, "series {s}");
        read_range(&b, s, DAY0 + 23 * HOUR, DAY0 + DAY + 30 * MINUTE).await;
        // An empty range between the late points and the evening: its two neighbours.
        let gap = read_range(&b, s, DAY0 + 15 * HOUR, DAY0 + 16 * HOUR).await;
        assert_eq!(
            times(&gap),
            [DAY0 + 10 * HOUR + 4 * MINUTE, DAY0 + 22 * HOUR]
        );
        read_range(&b, s, DAY0 + 15 * HOUR, DAY0 + 15 * HOUR).await;
        read_range(&b, s, DAY0 - DAY, DAY0).await;
        read_range(&b, s, DAY0 + 3 * DAY, DAY0 + 4 * DAY).await;
    }
    let heads = b.heads(&series).await.expect("heads");
    assert!(heads.iter().all(Option::is_some));
    for &r in &kept {
        let w = r.nanos();
        for &s in &series {
            let slots = b
                .read_segment_rollup(s, r, DAY0, DAY0 + 2 * DAY)
                .await
                .expect("rollup");
            assert!(!slots.is_empty(), "rollup {r} of {s}");
            b.read_segment_rollup(s, r, (DAY0 + 23 * HOUR).div_euclid(w) * w, DAY0 + DAY + w)
                .await
                .expect("rollup");
        }
    }
    // A resolution not kept: summarised from raw points.
    b.read_segment_rollup(series[0], Resolution::MINUTE, DAY0, DAY0 + DAY)
        .await
        .expect("rollup 1m");
    let selector = SeriesSelector {
        measurement: "cpu".into(),
        field: None,
        tags: vec![("region".into(), "eu".into())],
        matchers: Vec::new(),
    };
    assert_eq!(b.find_series(&selector).await.expect("find").len(), 3);
    let any = NameQuery::new("", 100);
    b.list_fields().await.expect("fields");
    b.list_measurements(&any).await.expect("measurements");
    b.list_fields_of("cpu", &any).await.expect("fields of");
    b.list_tag_keys("cpu", &any).await.expect("tag keys");
    b.list_tag_values("cpu", "host", &any)
        .await
        .expect("tag values");
    b.count_series(&["cpu".into(), "mem".into()])
        .await
        .expect("count");
    let names = vec!["cpu".to_owned(), "disk".to_owned()];
    let tokens = b
        .tokenize(NameKind::Measurement, &names)
        .await
        .expect("tokenize");
    b.names_of(NameKind::Measurement, &tokens)
        .await
        .expect("names_of");
    b.stats().await.expect("stats");

    // Buckets: raw 1 s slots of two series, written and read back.
    let family = BucketFamily::raw(tokens[0], SECOND).expect("family");
    let writes: Vec<BucketWrite> = series[..2]
        .iter()
        .flat_map(|&s| {
            (0..3).map(move |i| {
                BucketWrite::new(family, s, DAY0 + HOUR, i, SlotChange::Set(i as f64))
                    .expect("write")
            })
        })
        .collect();
    let shell = DocumentStart::new(family, DAY0 + 2 * HOUR).expect("document start");
    b.preallocate(shell, &series[..2])
        .await
        .expect("preallocate");
    let adds = vec![
        BucketWrite::new(family, series[1], DAY0 + 2 * HOUR, 7, SlotChange::Add(2.0))
            .expect("write"),
    ];
    b.write_buckets(adds).await.expect("add");
    b.write_buckets(writes).await.expect("write buckets");
    let range = BucketRange {
        family,
        series: series[0],
        start: DAY0,
        end: DAY0 + DAY,
    };
    let stored = b
        .read_buckets(range, BucketRead::Full)
        .await
        .expect("read buckets");
    assert_eq!(stored.len(), 2, "the written document and the shell");
    let totals = b
        .read_buckets(
            BucketRange {
                series: series[1],
                ..range
            },
            BucketRead::TotalsOnly,
        )
        .await
        .expect("read totals");
    assert_eq!(totals.len(), 2);

    // Retention: the first day's raw points and its hourly rollups.
    b.drop_raw_before("cpu", DAY0 + DAY, true)
        .await
        .expect("dry run");
    let dropped = b
        .drop_raw_before("cpu", DAY0 + DAY, false)
        .await
        .expect("drop raw");
    assert_eq!(dropped, [(DAY0, DAY0 + DAY)]);
    let dropped = b
        .drop_segment_rollup_before("cpu", Resolution::HOUR, DAY0 + DAY, false)
        .await
        .expect("drop rollups");
    assert_eq!(dropped, [(DAY0, DAY0 + DAY)]);
    b.drop_partition(stored_partition(family))
        .await
        .expect("drop buckets");
    assert_eq!(read_all(&b, series[0]).await.len(), 2 * 60);

    let sent = std::mem::take(&mut *lock(&recorder.sent));
    report(&sent, &lock(&recorder.unsharded));
    let undocumented: Vec<String> = sent
        .iter()
        .filter(|s| !s.targeted && documented(s).is_none())
        .map(|s| format!("{} {} {}", s.command, s.collection, s.shape))
        .collect();
    assert!(
        undocumented.is_empty(),
        "untargeted commands off the documented scatter list: {undocumented:#?}"
    );
    assert!(sent.iter().any(|s| s.kind == "bk" && s.targeted));
    assert!(
        sent.iter().any(|s| s.command == "getMore"),
        "no cursor went on"
    );
    assert!(sent.iter().any(|s| s.kind == "sr" && s.targeted));
    b.drop_database().await.expect("drop");
}

fn stored_partition(family: BucketFamily) -> tickertape_backend::Partition {
    tickertape_backend::Partition::of_document(family, DAY0 + HOUR).expect("partition")
}

/// Prints per command and collection kind: targeted / scattered as documented, then the
/// scatters' shapes and reasons, then the commands on unsharded collections.
fn report(sent: &[Sent], unsharded: &BTreeMap<(String, String), usize>) {
    let mut by: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    let mut scatters: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    let mut targeted_shapes: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for s in sent {
        let counts = by.entry((&s.command, s.kind)).or_default();
        if s.targeted {
            counts.0 += 1;
            *targeted_shapes
                .entry((&s.command, s.kind, &s.shape))
                .or_default() += 1;
        } else {
            counts.1 += 1;
            *scatters.entry((&s.command, s.kind, &s.shape)).or_default() += 1;
        }
    }
    let total = sent.len();
    let targeted = sent.iter().filter(|s| s.targeted).count();
    println!("routing: {total} commands on sharded collections, {targeted} targeted, {} scattered as documented", total - targeted);
    println!("| command | collection | targeted | scattered (documented) |");
    println!("|---|---|---|---|");
    for ((command, kind), (t, x)) in &by {
        println!("| {command} | {kind} | {t} | {x} |");
    }
    println!("targeted filters:");
    for ((command, kind, shape), n) in &targeted_shapes {
        println!("  {n} × {command} {kind} {shape}");
    }
    println!("scatters:");
    for ((command, kind, shape), n) in &scatters {
        let why = listed(command, kind, shape).unwrap_or("NOT DOCUMENTED");
        println!("  {n} × {command} {kind} {shape}: {why}");
    }
    let mut plain: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for ((command, collection), n) in unsharded {
        *plain.entry((command, collection)).or_default() += n;
    }
    println!(
        "unsharded collections: {}",
        plain
            .iter()
            .map(|((c, coll), n)| format!("{n} × {c} {coll}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
