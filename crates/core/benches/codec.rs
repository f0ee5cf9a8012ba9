//! Encode and decode speed of the segment block codec on one sealed segment (160 points,
//! the default segment capacity) of the devops workload, rounded to 2 decimals and at full
//! precision.
//!
//!     cargo bench -p tickertape-core --bench codec
//!
//! Results and the command that produced them go in `docs/BENCHMARKS.md`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tickertape_core::codec::{decode_block, encode_block};
use tickertape_core::Point;

/// The default segment capacity: the most points that fit 4 KiB of BSON.
const SEGMENT_POINTS: usize = 160;

/// The devops "cpu" random walk (TSBS-like, as `tickertape-bench` generates it; start
/// uniform in [0, 100], steps uniform in [-1, 1], clamped, 10 s apart), from a seeded
/// splitmix64 so runs compare.
fn devops_walk(seed: u64, n: usize, round_to_cents: bool) -> Vec<Point> {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut v = uniform() * 100.0;
    (0..n as i64)
        .map(|i| {
            v = (v + uniform() * 2.0 - 1.0).clamp(0.0, 100.0);
            let value = if round_to_cents {
                (v * 100.0).round() / 100.0
            } else {
                v
            };
            Point::new(1_451_606_400_000_000_000 + i * 10_000_000_000, value)
        })
        .collect()
}

fn bench_codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("segment_block");
    group.throughput(Throughput::Elements(SEGMENT_POINTS as u64));
    for (name, rounded) in [("rounded", true), ("full", false)] {
        let points = devops_walk(7, SEGMENT_POINTS, rounded);
        let block = encode_block(&points);
        group.bench_with_input(BenchmarkId::new("encode", name), &points, |b, points| {
            b.iter(|| encode_block(black_box(points)))
        });
        group.bench_with_input(BenchmarkId::new("decode", name), &block, |b, block| {
            b.iter(|| decode_block(black_box(block)).expect("valid block"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_codec);
criterion_main!(benches);
