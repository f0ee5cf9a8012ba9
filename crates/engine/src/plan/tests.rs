//! Which plan for which query and schema.

use super::*;
use tickertape_core::schema::Schema;
use tickertape_core::time::NANOS_PER_SECOND;
use tickertape_core::SeriesSelector;

const S: i64 = NANOS_PER_SECOND;
const M: i64 = 60 * S;
const H: i64 = 60 * M;

const CONFIG: &str = r#"
[measurements.seg]
rollups = ["1m", "5m", "1h", "1d"]

[measurements.followers]
rollups = ["1m", "5m", "1h", "1d"]
change_only = true

[measurements.bkt]
layout = "buckets"
interval = "10s"
rollups = ["1m", "1h"]

[measurements.bare]
layout = "buckets"
interval = "10s"
rollups = []

[measurements.hits]
layout = "buckets"
interval = "1s"
kind = "counter"
rollups = ["1m", "1h"]

[measurements.bare_hits]
layout = "buckets"
interval = "1s"
kind = "counter"
rollups = []
"#;

fn r(text: &str) -> Resolution {
    Resolution::parse(text).unwrap()
}

/// A query of `measurement` over `[start, end)`.
fn query(measurement: &str, start: i64, end: i64) -> Query {
    let selector = SeriesSelector {
        measurement: measurement.into(),
        ..Default::default()
    };
    Query::raw(selector, start, end)
}

fn windowed(measurement: &str, step: i64, agg: Aggregate) -> Query {
    let mut q = query(measurement, 0, 26 * H);
    q.step = Some(step);
    q.agg = Some(agg);
    q
}

fn plan(q: &Query) -> Result<ReadPlan, EngineError> {
    let schema = Schema::from_toml(CONFIG).unwrap();
    ReadPlan::new(q, schema.for_measurement(&q.selector.measurement))
}

fn reduction(agg: Aggregate, source: Source) -> Reduction {
    Reduction {
        agg,
        source,
        hold: false,
        per_second: false,
    }
}

fn windows(step: i64, agg: Aggregate, source: Source) -> ReadPlan {
    ReadPlan::Windows {
        step,
        reduction: reduction(agg, source),
    }
}

fn raw(slot_order: Option<Resolution>) -> Source {
    Source::Raw { slot_order }
}

#[test]
fn raw_queries_read_points() {
    let mut q = query("seg", 0, H);
    assert_eq!(plan(&q).unwrap(), ReadPlan::Points { neighbors: false });
    q.neighbors = true;
    assert_eq!(plan(&q).unwrap(), ReadPlan::Points { neighbors: true });
    let mut q = query("bkt", 0, H);
    q.neighbors = true;
    let err = plan(&q).unwrap_err().to_string();
    assert!(err.contains("neighbors needs value segments"), "{err}");
}

#[test]
fn windows_read_the_coarsest_rollup_that_divides_the_step() {
    // seg keeps the rollups 1m, 5m, 1h, 1d.
    let rollup = |text| Source::Rollup(r(text));
    for (step, source) in [
        (M, rollup("1m")),
        (10 * M, rollup("5m")),
        (7 * M, rollup("1m")),
        (2 * H, rollup("1h")),
        (90 * S, raw(None)),
    ] {
        let q = windowed("seg", step, Aggregate::Last);
        assert_eq!(
            plan(&q).unwrap(),
            windows(step, Aggregate::Last, source),
            "{step}"
        );
    }
}

/// `resolution=raw` reads raw points summed in the order of the rollup it stands in for,
/// so both give the same bits; a forced rollup must divide the step, and one the schema
/// does not keep is stood in for by raw points the same way.
#[test]
fn forced_resolutions() {
    let mut q = windowed("seg", 10 * M, Aggregate::Sum);
    q.resolution = Some(ResolutionOrRaw::Raw);
    let expected = windows(10 * M, Aggregate::Sum, raw(Some(r("5m"))));
    assert_eq!(plan(&q).unwrap(), expected);
    q.resolution = Some(ResolutionOrRaw::Rollup(r("1m")));
    let expected = windows(10 * M, Aggregate::Sum, Source::Rollup(r("1m")));
    assert_eq!(plan(&q).unwrap(), expected);
    q.resolution = Some(ResolutionOrRaw::Rollup(r("1h")));
    let err = plan(&q).unwrap_err().to_string();
    assert!(err.contains("resolution 1h does not divide"), "{err}");

    let mut q = windowed("bkt", H, Aggregate::Avg);
    q.resolution = Some(ResolutionOrRaw::Rollup(r("5m")));
    let expected = windows(H, Aggregate::Avg, raw(Some(r("5m"))));
    assert_eq!(plan(&q).unwrap(), expected, "5m is not kept for bkt");

    // Without a step: the coarsest rollup with a whole slot in the range.
    let mut q = query("seg", 30 * S, 2 * H + 10 * S);
    q.agg = Some(Aggregate::Max);
    let expected = ReadPlan::Range(reduction(Aggregate::Max, Source::Rollup(r("1h"))));
    assert_eq!(plan(&q).unwrap(), expected);
    q.resolution = Some(ResolutionOrRaw::Raw);
    let expected = ReadPlan::Range(reduction(Aggregate::Max, raw(Some(r("1h")))));
    assert_eq!(plan(&q).unwrap(), expected);
    let mut q = query("seg", 10 * S, 50 * S);
    q.agg = Some(Aggregate::Max);
    let expected = ReadPlan::Range(reduction(Aggregate::Max, raw(None)));
    assert_eq!(plan(&q).unwrap(), expected, "no whole slot in the range");
}

/// A counter reads only `sum` (and `display`) from its rollups and document totals;
/// every other aggregate from its raw slots, in the rollup's slot order all the same.
#[test]
fn counters_read_only_sums_from_rollups() {
    for agg in [Aggregate::Max, Aggregate::Count, Aggregate::Avg] {
        let q = windowed("hits", M, agg);
        assert_eq!(plan(&q).unwrap(), windows(M, agg, raw(Some(r("1m")))));
        let q = windowed("bare_hits", H, agg);
        assert_eq!(plan(&q).unwrap(), windows(H, agg, raw(None)), "no totals");
        let mut q = query("hits", 0, 3 * H);
        q.agg = Some(agg);
        assert_eq!(
            plan(&q).unwrap(),
            ReadPlan::Range(reduction(agg, raw(None)))
        );
        q.resolution = Some(ResolutionOrRaw::Rollup(r("1m")));
        let expected = ReadPlan::Range(reduction(agg, raw(Some(r("1m")))));
        assert_eq!(plan(&q).unwrap(), expected, "even when a rollup is forced");
    }
    let q = windowed("hits", M, Aggregate::Sum);
    let expected = windows(M, Aggregate::Sum, Source::Rollup(r("1m")));
    assert_eq!(plan(&q).unwrap(), expected);

    let mut q = query("hits", 0, 2 * H);
    q.step = Some(M);
    q.display = Some(CounterDisplay::AvgPerSec);
    let mut expected = reduction(Aggregate::Sum, Source::Rollup(r("1m")));
    expected.per_second = true;
    let expected = ReadPlan::Windows {
        step: M,
        reduction: expected,
    };
    assert_eq!(plan(&q).unwrap(), expected);
    let mut q = query("seg", 0, H);
    q.display = Some(CounterDisplay::Total);
    let err = plan(&q).unwrap_err().to_string();
    assert!(err.contains("display applies to counters"), "{err}");
}

/// Windows of exactly one raw document (10 s slots: an hour) answer from the documents'
/// totals, for the aggregates the totals give, when no rollup is in play.
#[test]
fn whole_documents_answer_from_their_totals() {
    let totals = |agg, per_second| {
        ReadPlan::WindowsFromTotals(Totals {
            interval_ns: 10 * S,
            period: H,
            agg,
            per_second,
        })
    };
    for agg in [
        Aggregate::Avg,
        Aggregate::Sum,
        Aggregate::Count,
        Aggregate::Min,
        Aggregate::Max,
    ] {
        assert_eq!(plan(&windowed("bare", H, agg)).unwrap(), totals(agg, false));
    }
    for agg in [Aggregate::First, Aggregate::Last] {
        let q = windowed("bare", H, agg);
        assert_eq!(plan(&q).unwrap(), windows(H, agg, raw(None)));
    }
    let mut q = windowed("bare", H, Aggregate::Avg);
    q.resolution = Some(ResolutionOrRaw::Raw);
    assert_eq!(plan(&q).unwrap(), windows(H, Aggregate::Avg, raw(None)));
    let q = windowed("bare", 2 * H, Aggregate::Avg);
    assert_eq!(plan(&q).unwrap(), windows(2 * H, Aggregate::Avg, raw(None)));
    let q = windowed("bkt", H, Aggregate::Avg);
    let expected = windows(H, Aggregate::Avg, Source::Rollup(r("1h")));
    assert_eq!(plan(&q).unwrap(), expected, "a rollup is in play");

    // A counter's sum may come from the totals; its max may not.
    let mut q = query("bare_hits", 0, 3 * H);
    q.step = Some(H);
    q.display = Some(CounterDisplay::AvgPerSec);
    let expected = ReadPlan::WindowsFromTotals(Totals {
        interval_ns: S,
        period: H,
        agg: Aggregate::Sum,
        per_second: true,
    });
    assert_eq!(plan(&q).unwrap(), expected);
}

#[test]
fn latest_value_from_the_head_or_the_partitions() {
    let mut q = query("seg", i64::MIN, i64::MAX);
    q.agg = Some(Aggregate::Last);
    let otherwise = reduction(Aggregate::Last, Source::Rollup(r("1d")));
    assert_eq!(plan(&q).unwrap(), ReadPlan::LatestFromHead(otherwise));
    let mut q = query("bkt", i64::MIN, i64::MAX);
    q.agg = Some(Aggregate::Last);
    let expected = ReadPlan::LatestFromPartitions {
        interval_ns: 10 * S,
    };
    assert_eq!(plan(&q).unwrap(), expected);
    // With a step, `last` is per window like any other aggregate.
    let q = windowed("bkt", H, Aggregate::Last);
    let expected = windows(H, Aggregate::Last, Source::Rollup(r("1h")));
    assert_eq!(plan(&q).unwrap(), expected);
}

/// A change-only measurement holds its value for every aggregate but `count` and `sum`.
#[test]
fn change_only_holds_after_the_rollup_or_raw_choice() {
    for (agg, hold) in [
        (Aggregate::Max, true),
        (Aggregate::First, true),
        (Aggregate::Count, false),
        (Aggregate::Sum, false),
    ] {
        let mut expected = reduction(agg, Source::Rollup(r("1m")));
        expected.hold = hold;
        let q = windowed("followers", M, agg);
        let got = plan(&q).unwrap();
        assert_eq!(
            got,
            ReadPlan::Windows {
                step: M,
                reduction: expected
            }
        );
        let mut q = windowed("followers", M, agg);
        q.resolution = Some(ResolutionOrRaw::Raw);
        expected.source = raw(Some(r("1m")));
        let got = plan(&q).unwrap();
        assert_eq!(
            got,
            ReadPlan::Windows {
                step: M,
                reduction: expected
            }
        );
    }
    let mut q = query("followers", 0, H);
    q.agg = Some(Aggregate::Last);
    let mut otherwise = reduction(Aggregate::Last, Source::Rollup(r("1h")));
    otherwise.hold = true;
    assert_eq!(plan(&q).unwrap(), ReadPlan::LatestFromHead(otherwise));
}

/// `max_points` picks the step (and its rollup); without `agg` a gauge charts averages
/// and a counter its totals.
#[test]
fn max_points_picks_the_step() {
    let mut q = query("seg", 0, 6_000 * S);
    q.max_points = Some(20);
    let expected = windows(5 * M, Aggregate::Avg, Source::Rollup(r("5m")));
    assert_eq!(plan(&q).unwrap(), expected);
    let mut q = query("hits", 0, 3 * H);
    q.max_points = Some(3);
    let expected = windows(H, Aggregate::Sum, Source::Rollup(r("1h")));
    assert_eq!(plan(&q).unwrap(), expected);
}
