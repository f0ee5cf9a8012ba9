//! `Engine::write_samples`: decoded series (Prometheus remote write) through the same
//! pipeline as line protocol — series cache, limits, schema, append rules, rollups.

use std::sync::Arc;
use tickertape_core::model::{is_stale_marker, STALE_NAN_BITS};
use tickertape_core::schema::Schema;
use tickertape_core::time::Precision;
use tickertape_core::{Point, SeriesKey, SeriesSelector};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};
use tickertape_engine::{Engine, EngineError, SeriesLimits, SeriesRef, SeriesSamples, WriteReport};
use tickertape_reference::ReferenceBackend;

const MS: i64 = 1_000_000;

fn stale() -> f64 {
    f64::from_bits(STALE_NAN_BITS)
}

fn key(name: &str, job: &str) -> SeriesKey {
    SeriesKey::new(name, vec![("job".into(), job.into())], "value")
}

/// A series of a request: metric name, `job` tag, (time, value) samples.
type Spec<'a> = (&'a str, &'a str, &'a [(i64, f64)]);

fn series<'a>(name: &'a str, job: &'a str, points: &'a [(i64, f64)]) -> Spec<'a> {
    (name, job, points)
}

/// `write_samples` of the series `specs` describe.
async fn write(
    e: &Engine,
    specs: &[Spec<'_>],
    precision: Precision,
) -> Result<WriteReport, EngineError> {
    let points: Vec<Vec<Point>> = specs
        .iter()
        .map(|s| s.2.iter().map(|&(t, v)| Point::new(t, v)).collect())
        .collect();
    let samples: Vec<SeriesSamples> = specs
        .iter()
        .zip(&points)
        .map(|(&(measurement, job, _), points)| SeriesSamples {
            series: SeriesRef {
                measurement,
                tags: vec![("job", job)],
                field: "value",
            },
            points,
        })
        .collect();
    e.write_samples(&samples, precision).await
}

/// The stored points of every series of `measurement`, stale markers included, by key.
async fn stored(e: &Engine, measurement: &str) -> Vec<(SeriesKey, Vec<(i64, u64)>)> {
    let selector = SeriesSelector {
        measurement: measurement.into(),
        ..Default::default()
    };
    let mut infos = e.find_series_limited(&selector).await.unwrap();
    infos.sort_by(|a, b| a.key.cmp(&b.key));
    let points = e.read_raw(&infos, i64::MIN, i64::MAX).await.unwrap();
    infos
        .into_iter()
        .zip(points)
        .map(|(info, ps)| {
            (
                info.key,
                ps.iter().map(|p| (p.time, p.value.to_bits())).collect(),
            )
        })
        .collect()
}

fn embedded() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let backend = EmbeddedBackend::open(EmbeddedOptions::new(dir.path())).unwrap();
    (dir, Engine::new(Arc::new(backend)))
}

#[tokio::test]
async fn samples_are_stored_bit_for_bit_at_their_times_in_nanoseconds() {
    let (_dir, e) = embedded();
    let report = write(
        &e,
        &[
            series(
                "up",
                "a",
                &[(1_000, 1.0), (2_000, f64::NAN), (3_000, stale())],
            ),
            series("up", "b", &[(1_000, -0.0)]),
            series("up", "c", &[]),
        ],
        Precision::Milliseconds,
    )
    .await
    .unwrap();
    assert_eq!((report.accepted, report.rejected), (3, 0), "{report:?}");
    assert_eq!((report.points_written, report.points_rejected), (4, 0));
    let got = stored(&e, "up").await;
    assert_eq!(got.len(), 2, "a series without samples is not registered");
    assert_eq!(got[0].0, key("up", "a"));
    assert_eq!(
        got[0].1,
        vec![
            (1_000 * MS, 1f64.to_bits()),
            (2_000 * MS, f64::NAN.to_bits()),
            (3_000 * MS, STALE_NAN_BITS),
        ]
    );
    assert_eq!(got[1].1, vec![(1_000 * MS, (-0.0f64).to_bits())]);
}

#[tokio::test]
async fn a_time_past_the_nanosecond_range_refuses_its_series_only() {
    let (_dir, e) = embedded();
    let too_late = i64::MAX / 1_000;
    let report = write(
        &e,
        &[
            series("up", "a", &[(1_000, 1.0)]),
            series("up", "b", &[(1_000, 1.0), (too_late, 2.0)]),
        ],
        Precision::Milliseconds,
    )
    .await
    .unwrap();
    assert_eq!((report.accepted, report.rejected), (1, 1));
    assert_eq!((report.points_written, report.points_rejected), (1, 2));
    let error = &report.errors[0];
    assert_eq!(error.line, 2, "numbered from 1 in request order");
    assert!(
        error.message.contains("up{job=b}#value")
            && error.message.contains(&too_late.to_string())
            && error.message.contains("out of range"),
        "{}",
        error.message
    );
    let got = stored(&e, "up").await;
    assert_eq!(got.len(), 1, "nothing of the refused series is stored");
}

#[tokio::test]
async fn series_limits_refuse_new_series_per_series() {
    let e = Engine::new(Arc::new(ReferenceBackend::default())).with_series_limits(SeriesLimits {
        max_series: 2,
        max_series_per_database: 0,
        max_series_per_measurement: 0,
    });
    let report = write(
        &e,
        &[
            series("up", "a", &[(1, 1.0)]),
            series("up", "b", &[(1, 1.0), (2, 2.0)]),
            series("up", "c", &[(1, 1.0), (2, 2.0)]),
            series("up", "a", &[(2, 2.0)]),
        ],
        Precision::Milliseconds,
    )
    .await
    .unwrap();
    assert_eq!((report.accepted, report.rejected), (3, 1), "{report:?}");
    assert_eq!(report.points_rejected, 2);
    assert_eq!(report.errors[0].line, 3);
    assert!(
        report.errors[0].message.contains("--max-series is 2")
            && report.errors[0].message.contains("up{job=c}#value"),
        "{}",
        report.errors[0].message
    );
    assert_eq!(stored(&e, "up").await.len(), 2);
}

/// A series' samples may come in any order; of two at one time the later in the request
/// wins (the one rule of every store).
#[tokio::test]
async fn unordered_samples_are_sorted_and_the_last_of_a_time_wins() {
    let (_dir, e) = embedded();
    let report = write(
        &e,
        &[series("up", "a", &[(30, 3.0), (10, 1.0), (30, 4.0)])],
        Precision::Milliseconds,
    )
    .await
    .unwrap();
    assert_eq!((report.accepted, report.points_written), (1, 3));
    let got = stored(&e, "up").await;
    assert_eq!(
        got[0].1,
        vec![(10 * MS, 1f64.to_bits()), (30 * MS, 4f64.to_bits())]
    );
}

/// A series written as line protocol and as samples is one series, whichever came
/// first: the cache keeps the two spellings apart, the store resolves both to one id.
#[tokio::test]
async fn line_protocol_and_samples_of_one_series_meet_in_the_store() {
    for samples_first in [false, true] {
        let (_dir, e) = embedded();
        let lines = "up,job=a value=1 1000000\n";
        let samples = [series("up", "a", &[(2, 2.0)])];
        if samples_first {
            write(&e, &samples, Precision::Milliseconds).await.unwrap();
        }
        let r = e.write_lines(lines, Precision::Nanoseconds).await.unwrap();
        assert_eq!(r.rejected, 0);
        if !samples_first {
            write(&e, &samples, Precision::Milliseconds).await.unwrap();
        }
        let got = stored(&e, "up").await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].1.len(), 2);
    }
}

/// The measurement's schema applies: a counter takes increments only, and a bucket
/// measurement leaves stale markers out of its slots (they count as written).
#[tokio::test]
async fn the_schema_applies_to_samples() {
    let config =
        "[measurements.hits]\nkind = \"counter\"\nlayout = \"buckets\"\ninterval = \"1s\"\n\
                  [measurements.temp]\nlayout = \"buckets\"\ninterval = \"1s\"\n";
    let e = Engine::new(Arc::new(ReferenceBackend::default()))
        .with_schema(Schema::from_toml(config).expect("config"));
    let report = write(
        &e,
        &[
            series("hits", "x", &[(1_000, 1.0)]),
            series("temp", "x", &[(1_000, 20.0), (2_000, stale())]),
        ],
        Precision::Milliseconds,
    )
    .await
    .unwrap();
    assert_eq!((report.accepted, report.rejected), (1, 1), "{report:?}");
    assert!(report.errors[0].message.contains("is a counter"));
    assert_eq!(report.points_written, 2);
    let got = stored(&e, "temp").await;
    assert_eq!(got[0].1.len(), 1);
    assert!(got[0]
        .1
        .iter()
        .all(|&(_, bits)| !is_stale_marker(f64::from_bits(bits))));
}
