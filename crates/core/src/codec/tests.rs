//! Block-level tests: lossless round trips, hostile input, and sizes on the reference
//! workload.

use super::*;
use proptest::prelude::*;

/// The devops "cpu" workload `tickertape-bench` generates (TSBS-like): a random walk
/// started uniformly in [0, 100], steps uniform in [-1, 1], clamped to [0, 100], one point
/// every 10 s from 2016-01-01. `decimals` rounds the emitted values (the walk itself stays
/// unrounded), as `gen.py --round` does.
pub(super) fn devops_walk(seed: u64, n: usize, decimals: Option<i32>) -> Vec<Point> {
    const START_NS: i64 = 1_451_606_400_000_000_000;
    const INTERVAL_NS: i64 = 10_000_000_000;
    let mut rng = SplitMix64(seed);
    let mut v = rng.uniform() * 100.0;
    (0..n as i64)
        .map(|i| {
            v = (v + rng.uniform() * 2.0 - 1.0).clamp(0.0, 100.0);
            let value = match decimals {
                Some(d) => (v * 10f64.powi(d)).round() / 10f64.powi(d),
                None => v,
            };
            Point::new(START_NS + i * INTERVAL_NS, value)
        })
        .collect()
}

/// splitmix64: a tiny seeded generator, so sizes are reproducible without dependencies.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn assert_round_trip(points: &[Point]) -> Vec<u8> {
    let block = encode_block(points);
    let back = decode_block(&block).expect("a block we encoded decodes");
    assert_eq!(back.len(), points.len());
    for (i, (a, b)) in points.iter().zip(&back).enumerate() {
        assert!(
            a.bit_eq(b),
            "point {i}: wrote ({}, {:#x}), read ({}, {:#x})",
            a.time,
            a.value.to_bits(),
            b.time,
            b.value.to_bits()
        );
    }
    block
}

/// Bytes per point of the encoded block, averaged over several seeds.
fn bytes_per_point(n: usize, decimals: Option<i32>) -> f64 {
    let seeds = 1..=20u64;
    let total: usize = seeds
        .clone()
        .map(|seed| assert_round_trip(&devops_walk(seed, n, decimals)).len())
        .sum();
    total as f64 / (n * seeds.count()) as f64
}

#[test]
fn empty_and_single_points() {
    assert_eq!(encode_block(&[]), vec![FORMAT_VERSION, 0]);
    assert_round_trip(&[]);
    assert_round_trip(&[Point::new(0, 0.0)]);
    assert_round_trip(&[Point::new(i64::MIN, f64::NAN)]);
    assert_round_trip(&[Point::new(i64::MAX, -0.0)]);
}

#[test]
fn special_floats_and_extreme_times() {
    let specials = [
        f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001), // signalling NaN
        f64::from_bits(0xFFF8_DEAD_BEEF_0001), // negative NaN with payload
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        5e-324,
        -f64::MIN_POSITIVE / 3.0,
        f64::MAX,
        f64::MIN,
        1.5,
    ];
    let times = [i64::MIN, i64::MAX, 0, -1, i64::MIN, i64::MAX, 1, 1, 1];
    let points: Vec<Point> = specials
        .iter()
        .cycle()
        .zip(times.iter().cycle())
        .take(100)
        .map(|(&v, &t)| Point::new(t, v))
        .collect();
    assert_round_trip(&points);
}

#[test]
fn decimal_values_that_look_alike_stay_distinct() {
    // 0.1 + 0.2 is not the double nearest 0.3: the decimal encoding must not fold them.
    let points: Vec<Point> = [0.3, 0.1 + 0.2, 0.30000000000000004, 1e-12, 123456.789]
        .iter()
        .enumerate()
        .map(|(i, &v)| Point::new(i as i64, v))
        .collect();
    assert_round_trip(&points);
}

#[test]
fn regular_timestamps_cost_under_a_bit_per_point() {
    let points: Vec<Point> = (0..1000)
        .map(|i| Point::new(1_451_606_400_000_000_000 + i * 10_000_000_000, 1.0))
        .collect();
    let block = assert_round_trip(&points);
    assert!(block.len() < 1000 / 8, "{} bytes", block.len());
}

#[test]
fn devops_walk_sizes() {
    let rounded = bytes_per_point(160, Some(2));
    let full = bytes_per_point(160, None);
    let rounded_1000 = bytes_per_point(1000, Some(2));
    let full_1000 = bytes_per_point(1000, None);
    eprintln!(
        "bytes/point: rounded {rounded:.3} (1000 pts: {rounded_1000:.3}), \
         full {full:.3} (1000 pts: {full_1000:.3})"
    );
    assert!(rounded < 1.5, "rounded: {rounded} B/point");
    assert!(full < 7.0, "full precision: {full} B/point");
    assert!(rounded_1000 < 1.5 && full_1000 < 7.0);
}

#[test]
fn the_densest_blocks_respect_the_point_bound() {
    for n in [1, 2, 3, 33, 1000, 100_000] {
        let points: Vec<Point> = (0..n).map(|i| Point::new(i * 10, 0.0)).collect();
        let block = assert_round_trip(&points);
        assert!(
            n as usize <= block.len() * MAX_POINTS_PER_BYTE,
            "{n} points in {} bytes",
            block.len()
        );
    }
}

#[test]
fn large_segments_round_trip() {
    assert_round_trip(&devops_walk(3, 100_000, None));
    assert_round_trip(&devops_walk(4, 100_000, Some(2)));
}

#[test]
fn a_huge_count_is_refused_before_allocating() {
    let mut block = vec![FORMAT_VERSION];
    write_varint(&mut block, u64::MAX);
    assert!(decode_block(&block).is_err());
    let mut block = vec![FORMAT_VERSION];
    write_varint(&mut block, 1 << 40);
    block.extend_from_slice(&[0; 64]);
    assert!(decode_block(&block).is_err());
}

#[test]
fn bad_headers_are_refused() {
    assert!(decode_block(&[]).is_err());
    assert!(decode_block(&[FORMAT_VERSION + 1, 0]).is_err());
    assert!(decode_block(&[FORMAT_VERSION]).is_err());
    assert!(decode_block(&[FORMAT_VERSION, 0x80]).is_err());
    assert!(decode_block(&[FORMAT_VERSION, 0, 0]).is_err());
    let eleven = [
        FORMAT_VERSION,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0xFF,
        0x7F,
    ];
    assert!(decode_block(&eleven).is_err());
}

#[test]
fn varint_round_trips() {
    for v in [0, 1, 127, 128, 300, u64::MAX >> 1, u64::MAX] {
        let mut out = Vec::new();
        write_varint(&mut out, v);
        assert_eq!(read_varint(&out), Ok((v, &[][..])));
    }
}

/// Times and values drawn to reach every encoding: arbitrary bits, regular and jittered
/// clocks, decimals, and runs of repeats.
fn points_strategy() -> impl Strategy<Value = Vec<Point>> {
    let any_point =
        (any::<i64>(), any::<u64>()).prop_map(|(t, v)| Point::new(t, f64::from_bits(v)));
    let arbitrary = prop::collection::vec(any_point, 0..500);
    let shaped = (
        any::<i64>(),
        prop_oneof![Just(0i64), Just(10_000_000_000), any::<i64>()],
        prop::collection::vec((-3i64..=3, -1000i64..=1000, 0u8..4), 0..500),
    )
        .prop_map(|(start, step, steps)| {
            let mut t = start;
            steps
                .into_iter()
                .map(|(jitter, cents, kind)| {
                    t = t.wrapping_add(step).wrapping_add(jitter * 1_000_000);
                    let value = match kind {
                        0 => cents as f64 / 100.0,
                        1 => cents as f64,
                        2 => cents as f64 / 7.0,
                        _ => f64::from(cents as f32 / 3.0),
                    };
                    Point::new(t, value)
                })
                .collect()
        });
    prop_oneof![arbitrary, shaped]
}

proptest! {
    // Each case takes microseconds: run more than the default 256.
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn round_trip_is_lossless(points in points_strategy()) {
        assert_round_trip(&points);
    }

    #[test]
    fn random_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_block(&bytes);
        if let Some(first) = bytes.first_mut() {
            *first = FORMAT_VERSION;
        }
        let _ = decode_block(&bytes);
    }

    #[test]
    fn truncated_blocks_are_refused(points in points_strategy(), cut in any::<prop::sample::Index>()) {
        let block = encode_block(&points);
        let len = cut.index(block.len());
        prop_assert!(decode_block(&block[..len]).is_err());
    }

    #[test]
    fn flipped_bits_never_panic(points in points_strategy(), flips in prop::collection::vec(any::<prop::sample::Index>(), 1..8)) {
        let mut block = encode_block(&points);
        for flip in flips {
            let bit = flip.index(block.len() * 8);
            block[bit / 8] ^= 1 << (bit % 8);
        }
        if let Ok(decoded) = decode_block(&block) {
            // Whatever decodes must itself survive a round trip.
            assert_round_trip(&decoded);
        }
    }
}

fn from_hex(hex: &str) -> Vec<u8> {
    let hex = hex.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("test data is hex"))
        .collect()
}

fn assert_bit_eq(read: &[Point], expected: &[Point]) {
    assert_eq!(read.len(), expected.len());
    for (i, (a, b)) in read.iter().zip(expected).enumerate() {
        assert!(a.bit_eq(b), "point {i}: read {a:?}, expected {b:?}");
    }
}

/// Blocks written by format versions 1 (a 7-bit width before every group) and 2 (widths
/// repeated in one bit, a 1-bit mode), captured from the encoders of those versions,
/// still decode to the points they were made of.
#[test]
fn older_versions_still_decode() {
    let mut float_keys = devops_walk(7, 70, Some(2));
    float_keys.extend(devops_walk(8, 40, None));
    float_keys[90].time += 3;
    let mut decimal = devops_walk(9, 100, Some(2));
    decimal[40].time -= 7;
    let blocks = [
        (1, include_str!("testdata/v1-float-keys.hex"), &float_keys),
        (1, include_str!("testdata/v1-decimal.hex"), &decimal),
        (2, include_str!("testdata/v2-float-keys.hex"), &float_keys),
        (2, include_str!("testdata/v2-decimal.hex"), &decimal),
    ];
    for (version, hex, points) in blocks {
        let block = from_hex(hex);
        assert_eq!(block[0], version);
        assert_bit_eq(&decode_block(&block).unwrap(), points);
    }
    assert_ne!(
        encode_block(&decimal),
        from_hex(include_str!("testdata/v2-decimal.hex"))
    );
}

#[test]
fn columns_round_trip_alone_and_refuse_short_input() {
    let walk = devops_walk(11, 500, Some(2));
    let times: Vec<i64> = walk.iter().map(|p| p.time).collect();
    let values: Vec<f64> = walk
        .iter()
        .map(|p| p.value)
        .chain([f64::NAN, -0.0])
        .collect();
    let out = encode_time_column(vec![7], &times);
    let out = encode_value_column(out, &values);
    let (back_times, used) = decode_time_column(&out[1..], FORMAT_VERSION, times.len()).unwrap();
    assert_eq!(back_times, times);
    let rest = &out[1 + used..];
    let (back_values, used) = decode_value_column(rest, FORMAT_VERSION, values.len()).unwrap();
    assert_eq!(used, rest.len());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back_values), bits(&values));
    assert!(decode_value_column(&rest[..rest.len() - 1], FORMAT_VERSION, values.len()).is_err());
    assert!(decode_value_column(rest, 9, values.len()).is_err());
    assert!(decode_time_column(&[], FORMAT_VERSION, 1 << 40).is_err());
    assert_eq!(
        decode_time_column(&[], FORMAT_VERSION, 0),
        Ok((Vec::new(), 0))
    );
}
