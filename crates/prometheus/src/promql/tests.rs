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
                history: None,
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
        history: None,
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
    assert!(matches!(parse("sum("), Err(PromqlError::BadData(_))));
    let err = parse("no_such_function(requests_total)").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the function no_such_function() is not supported by tickertape"
    );
    // The parser's messages about a renamed function use the name the query used.
    let err = parse("holt_winters(requests_total, 0.5, 0.5)").unwrap_err();
    assert!(err.to_string().contains("holt_winters"), "{err}");
    assert!(!err.to_string().contains("double_exponential"), "{err}");
}

fn range(start: i64, end: i64, step: i64) -> Grid {
    Grid { start, end, step }
}

/// The values of the only series of `query`.
fn values_of(query: &str, grid: Grid) -> Vec<Option<f64>> {
    let out = vector(run(&store(), query, grid).unwrap());
    assert_eq!(out.len(), 1, "{query}: {out:?}");
    out[0].values.clone()
}

/// `job="db"` rises 1.5 every 15 s: 0.1 per second.
const DB: &str = "requests_total{job=\"db\"}";

#[test]
fn at_pins_a_selector_at_every_step_and_offset_adds_in_either_order() {
    let at_60 = format!("{DB} @ 60");
    assert_eq!(values_of(&at_60, Grid::instant(1_800_000)), [Some(6.0)]);
    assert_eq!(
        values_of(&at_60, range(600_000, 720_000, 60_000)),
        [Some(6.0); 3]
    );
    for q in [
        format!("{DB} @ 60 offset 30s"),
        format!("{DB} offset 30s @ 60"),
    ] {
        assert_eq!(values_of(&q, Grid::instant(0)), [Some(3.0)], "{q}");
    }
    // start() and end() are the query's.
    let grid = range(600_000, 720_000, 60_000);
    assert_eq!(values_of(&format!("{DB} @ start()"), grid), [Some(60.0); 3]);
    assert_eq!(values_of(&format!("{DB} @ end()"), grid), [Some(72.0); 3]);
    // A range selector's window ends at the pinned time.
    let q = format!("sum_over_time({DB}[30s] @ 60)");
    assert_eq!(values_of(&q, Grid::instant(3_000_000)), [Some(13.5)]);
    // predict_linear predicts from the step's time, its window pinned.
    let q = format!("predict_linear({DB}[1m] @ 60, 0)");
    let v = values_of(&q, Grid::instant(120_000))[0].unwrap();
    assert!((v - 12.0).abs() < 1e-9, "{v}");
}

#[test]
fn a_subquery_evaluates_at_multiples_of_its_step() {
    // Inner steps 540, 555, 570, 585, 600 s: 1.5 × (36 + … + 40).
    let q = format!("sum_over_time({DB}[1m:15s])");
    assert_eq!(values_of(&q, Grid::instant(600_000)), [Some(285.0)]);
    // At 610 s the window 550..=610 s holds the steps 555..=600 only: 1.5 × (37 + … + 40).
    assert_eq!(values_of(&q, Grid::instant(610_000)), [Some(231.0)]);
    // Without a step: one minute, the steps 300, 360, …, 600 s.
    let q = format!("count_over_time({DB}[5m:])");
    assert_eq!(values_of(&q, Grid::instant(600_000)), [Some(6.0)]);
    // offset and @ move the subquery as they move a selector.
    let q = format!("last_over_time({DB}[1m:15s] offset 5m)");
    assert_eq!(values_of(&q, Grid::instant(600_000)), [Some(30.0)]);
    let q = format!("last_over_time({DB}[1m:15s] @ 100)");
    assert_eq!(values_of(&q, range(0, 1_200_000, 600_000)), [Some(9.0); 3]);
    // Nested, over a range query: the peak rate over 5 minutes of 1-minute rates.
    let q = "max_over_time(rate(requests_total{job=\"api\"}[1m])[5m:1m])";
    let out = vector(run(&store(), q, range(600_000, 900_000, 60_000)).unwrap());
    assert_eq!(out.len(), 2);
    for (s, slope) in out.iter().zip([1.0, 2.0]) {
        assert_eq!(s.values.len(), 6);
        assert!(
            s.values.iter().all(|v| (v.unwrap() - slope).abs() < 1e-9),
            "{s:?}"
        );
    }
}

#[test]
fn an_instant_subquery_answers_its_samples() {
    let q = format!("{DB}[1m:30s]");
    let Value::Matrix(m) = run(&store(), &q, Grid::instant(600_000)).unwrap() else {
        panic!("not a matrix");
    };
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].labels, store()[2].labels);
    assert_eq!(
        m[0].samples,
        [(540_000, 54.0), (570_000, 57.0), (600_000, 60.0)]
    );
}

#[test]
fn selections_reach_back_over_subqueries_and_at() {
    let expr = parse(&format!(
        "rate({DB}[1m])[5m:1m] offset 10m + on() group_left {DB} @ 100"
    ));
    // Not a valid query (a range vector in arithmetic): build the parts one by one.
    assert!(expr.is_err());
    let expr = parse(&format!("max_over_time(rate({DB}[1m])[5m:1m] offset 10m)")).unwrap();
    let s = selections(&expr, &range(3_600_000, 7_200_000, 60_000)).unwrap();
    assert_eq!((s[0].start, s[0].end), (2_640_000, 6_600_000));
    let expr = parse(&format!("{DB} @ 100 offset 10s")).unwrap();
    let s = selections(&expr, &range(3_600_000, 7_200_000, 60_000)).unwrap();
    assert_eq!((s[0].start, s[0].end), (90_000 - LOOKBACK_MS, 90_000));
    // An @ on the subquery pins everything inside it.
    let expr = parse(&format!("max_over_time(rate({DB}[1m])[5m:1m] @ 1000)")).unwrap();
    let s = selections(&expr, &range(3_600_000, 7_200_000, 60_000)).unwrap();
    assert_eq!((s[0].start, s[0].end), (640_000, 1_000_000));
}

#[test]
fn holt_winters_under_both_names() {
    let a = values_of(
        &format!("holt_winters({DB}[2m], 0.5, 0.5)"),
        Grid::instant(600_000),
    );
    let b = values_of(
        &format!("double_exponential_smoothing({DB}[2m], 0.5, 0.5)"),
        Grid::instant(600_000),
    );
    // A line stays a line: the last value.
    assert_eq!(a, [Some(60.0)]);
    assert_eq!(a, b);
    let err = run(
        &store(),
        &format!("holt_winters({DB}[2m], 1, 0.5)"),
        Grid::instant(600_000),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("invalid smoothing factor"),
        "{err}"
    );
}

/// A subquery's own steps are charged before it is evaluated: one of billions of steps
/// is refused at once, whether or not it selects anything.
#[test]
fn a_subquery_is_charged_its_steps_before_it_runs() {
    let budget = QueryBudget::new(1_000_000, usize::MAX);
    for q in [
        "sum_over_time(vector(1)[1000d:1ms])",
        "max_over_time(rate(nothing_here[5m])[1000d:1ms])",
        "max_over_time(max_over_time(requests_total[10m:1ms])[10m:1s])",
    ] {
        let budget = QueryBudget::new(1_000_000, usize::MAX);
        assert_eq!(
            run_with(&store(), q, Grid::instant(3_600_000), &budget),
            Err(PromqlError::Budget(Exhausted::Points { limit: 1_000_000 })),
            "{q}"
        );
    }
    // Within the budget, the inner steps count beside the series they make.
    let q = format!("sum_over_time({DB}[1m:15s])");
    assert!(run_with(&store(), &q, Grid::instant(600_000), &budget).is_ok());
    // 5 inner steps, 5 values of the selector, 1 of sum_over_time.
    assert_eq!(budget.points(), 11);
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
        history: None,
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
