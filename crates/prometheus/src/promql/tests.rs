//! The evaluator end to end over series held in memory.

use super::*;
use crate::mapping::Labels;
use tickertape_core::model::STALE_NAN_BITS;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    let mut l: Labels = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.sort();
    l
}

/// What a store would answer: the series the matchers select, samples in the range.
fn run(store: &[RawSeries], query: &str, grid: Grid) -> Result<Value, PromqlError> {
    run_with(store, query, grid, &QueryBudget::unlimited())
}

/// [`run`] under `budget`.
fn run_with(
    store: &[RawSeries],
    query: &str,
    grid: Grid,
    budget: &QueryBudget,
) -> Result<Value, PromqlError> {
    let expr = parse(query)?;
    let mut data = Fetched::new();
    for sel in selections(&expr, &grid)? {
        let mut series: Vec<RawSeries> = store
            .iter()
            .filter(|s| matches_all(&s.labels, &sel.matchers))
            .map(|s| RawSeries {
                labels: s.labels.clone(),
                samples: s
                    .samples
                    .iter()
                    .copied()
                    .filter(|&(t, _)| t >= sel.start && t <= sel.end)
                    .collect(),
            })
            .collect();
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        data.insert(sel.id, series);
    }
    evaluate(&expr, &grid, &data, budget)
}

/// A counter of `job`/`instance` rising `per_step` every 15 s for an hour.
fn counter(job: &str, instance: &str, per_step: f64) -> RawSeries {
    RawSeries {
        labels: labels(&[
            ("__name__", "requests_total"),
            ("job", job),
            ("instance", instance),
        ]),
        samples: (0..=240)
            .map(|i| (i * 15_000, i as f64 * per_step))
            .collect(),
    }
}

fn store() -> Vec<RawSeries> {
    vec![
        counter("api", "a", 15.0),
        counter("api", "b", 30.0),
        counter("db", "a", 1.5),
    ]
}

fn vector(v: Value) -> Vec<Series> {
    match v {
        Value::Vector(v) => v,
        other => panic!("not a vector: {other:?}"),
    }
}

#[test]
fn grafana_test_query_is_a_scalar() {
    assert_eq!(
        run(&[], "1+1", Grid::instant(4000)).unwrap(),
        Value::Scalar(vec![2.0])
    );
}

#[test]
fn rate_of_a_steady_counter_is_its_slope_without_the_name() {
    let out = vector(
        run(
            &store(),
            "rate(requests_total{job=\"api\"}[1m])",
            Grid::instant(1_800_000),
        )
        .unwrap(),
    );
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].labels, labels(&[("job", "api"), ("instance", "a")]));
    assert!((out[0].values[0].unwrap() - 1.0).abs() < 1e-12);
    assert!((out[1].values[0].unwrap() - 2.0).abs() < 1e-12);
}

#[test]
fn sum_by_over_a_range_grid() {
    let grid = Grid {
        start: 600_000,
        end: 900_000,
        step: 60_000,
    };
    let out = vector(run(&store(), "sum by (job) (rate(requests_total[2m]))", grid).unwrap());
    let api = out
        .iter()
        .find(|s| s.labels == labels(&[("job", "api")]))
        .unwrap();
    assert_eq!(api.values.len(), 6);
    assert!(api.values.iter().all(|v| (v.unwrap() - 3.0).abs() < 1e-9));
}

#[test]
fn a_stale_marker_ends_the_series_for_lookback() {
    let mut s = counter("api", "a", 1.0);
    s.samples.truncate(5); // 0..=60 s
    s.samples.push((75_000, f64::from_bits(STALE_NAN_BITS)));
    let grid = Grid {
        start: 60_000,
        end: 90_000,
        step: 15_000,
    };
    let out = vector(run(&[s], "requests_total", grid).unwrap());
    assert_eq!(out[0].values, vec![Some(4.0), None, None]);
}

#[test]
fn arithmetic_and_comparison_between_vectors() {
    let out = vector(
        run(&store(), "requests_total{instance=\"b\"} / ignoring(instance) group_left requests_total{instance=\"a\", job=\"api\"} > bool 1", Grid::instant(60_000))
            .unwrap(),
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].values[0], Some(1.0));
    assert_eq!(out[0].labels, labels(&[("job", "api"), ("instance", "b")]));
}

#[test]
fn unsupported_syntax_is_named() {
    let err = run(&store(), "requests_total @ 100", Grid::instant(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the @ modifier is not supported by tickertape"
    );
    let err = run(&store(), "rate(requests_total[5m:1m])", Grid::instant(0)).unwrap_err();
    assert!(err.to_string().contains("subqueries"), "{err}");
    assert!(matches!(parse("sum("), Err(PromqlError::BadData(_))));
    let err = parse("holt_winters(requests_total[5m], 0.5, 0.5)").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the function holt_winters() is not supported by tickertape"
    );
}

#[test]
fn topk_and_histogram_quantile() {
    let out = vector(run(&store(), "topk(1, requests_total)", Grid::instant(60_000)).unwrap());
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].labels,
        labels(&[
            ("__name__", "requests_total"),
            ("job", "api"),
            ("instance", "b")
        ])
    );
    let bucket = |le: &str, n: f64| RawSeries {
        labels: labels(&[("__name__", "d_bucket"), ("le", le)]),
        samples: vec![(0, n)],
    };
    let h = [bucket("0.1", 10.0), bucket("1", 30.0), bucket("+Inf", 40.0)];
    let out = vector(run(&h, "histogram_quantile(0.5, d_bucket)", Grid::instant(0)).unwrap());
    assert_eq!(out[0].labels, Labels::new());
    assert!((out[0].values[0].unwrap() - 0.55).abs() < 1e-12);
}

/// Every series' values per step are charged as they are made: a range query over three
/// series of 241 steps holds 723 values per selector, and each node's output counts.
#[test]
fn evaluation_is_charged_to_the_budget_and_stops_at_it() {
    let grid = Grid {
        start: 0,
        end: 3_600_000,
        step: 15_000,
    };
    let steps = grid.len();
    let exact = QueryBudget::new(3 * steps, usize::MAX);
    assert!(run_with(&store(), "requests_total", grid, &exact).is_ok());
    assert_eq!(exact.points(), 3 * steps);
    let short = QueryBudget::new(3 * steps - 1, usize::MAX);
    assert_eq!(
        run_with(&store(), "requests_total", grid, &short),
        Err(PromqlError::Budget(Exhausted::Points {
            limit: 3 * steps - 1
        }))
    );
    // rate() makes three series, sum() one more: 4 series of every step.
    let budget = QueryBudget::unlimited();
    assert!(run_with(&store(), "sum(rate(requests_total[5m]))", grid, &budget).is_ok());
    assert_eq!(budget.points(), 4 * steps);
    // count_values() of values that change at every step: a series per value, refused
    // at the budget instead of building steps × steps values.
    let budget = QueryBudget::new(100_000, usize::MAX);
    assert!(matches!(
        run_with(
            &store(),
            "count_values(\"v\", requests_total)",
            grid,
            &budget
        ),
        Err(PromqlError::Budget(Exhausted::Points { .. }))
    ));
}

#[test]
fn a_cancelled_evaluation_stops() {
    let budget = QueryBudget::unlimited();
    budget.cancel();
    assert_eq!(
        run_with(
            &store(),
            "rate(requests_total[5m])",
            Grid::instant(60_000),
            &budget
        ),
        Err(PromqlError::Budget(Exhausted::Cancelled))
    );
}
