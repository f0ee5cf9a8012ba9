//! Fuzzes the segment block codec (`docs/format/segment-block.md`) two ways with one input:
//!
//! 1. as a block: `decode_block` must return, never panic, and whatever it accepts must
//!    survive an encode/decode round trip bit for bit;
//! 2. as points (16 bytes each: time then value bits, little endian): the round trip must
//!    return them bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickertape_core::codec::{decode_block, encode_block};
use tickertape_core::Point;

fuzz_target!(|data: &[u8]| {
    if let Ok(points) = decode_block(data) {
        assert_round_trip(&points);
    }
    let points: Vec<Point> = data
        .chunks_exact(16)
        .map(|c| {
            let (time, value) = c.split_at(8);
            Point::new(
                i64::from_le_bytes(time.try_into().expect("8 bytes")),
                f64::from_bits(u64::from_le_bytes(value.try_into().expect("8 bytes"))),
            )
        })
        .collect();
    assert_round_trip(&points);
});

fn assert_round_trip(points: &[Point]) {
    let block = encode_block(points);
    let back = decode_block(&block).expect("an encoded block decodes");
    assert_eq!(back.len(), points.len());
    for (a, b) in points.iter().zip(&back) {
        assert!(a.bit_eq(b), "{a:?} came back as {b:?}");
    }
}
