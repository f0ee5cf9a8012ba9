//! Fuzzes the segment block codec (`docs/format/segment-block.md`) two ways with one input:
//!
//! 1. as a block: `decode_block` must return, never panic, and whatever it accepts must
//!    survive an encode/decode round trip bit for bit;
//! 2. as points (16 bytes each: time then value bits, little endian): the round trip must
//!    return them bit for bit;
//! 3. as a time column and a value column (`decode_time_column`, `decode_value_column`,
//!    the embedded store's rollup blocks): the first byte is the format version, the next
//!    two the entry count; they must return, never panic, never take more bytes than
//!    given, and what they accept must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickertape_core::codec::{
    decode_block, decode_time_column, decode_value_column, encode_block, encode_time_column,
    encode_value_column, FORMAT_VERSION,
};
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
    if let [version, a, b, rest @ ..] = data {
        columns(*version, usize::from(u16::from_le_bytes([*a, *b])), rest);
    }
});

fn columns(version: u8, n: usize, bytes: &[u8]) {
    if let Ok((times, used)) = decode_time_column(bytes, version, n) {
        assert!(used <= bytes.len() && times.len() == n);
        let again = encode_time_column(Vec::new(), &times);
        let (back, _) =
            decode_time_column(&again, FORMAT_VERSION, n).expect("encoded times decode");
        assert_eq!(back, times);
    }
    if let Ok((values, used)) = decode_value_column(bytes, version, n) {
        assert!(used <= bytes.len() && values.len() == n);
        let again = encode_value_column(Vec::new(), &values);
        let (back, _) =
            decode_value_column(&again, FORMAT_VERSION, n).expect("encoded values decode");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }
}

fn assert_round_trip(points: &[Point]) {
    let block = encode_block(points);
    let back = decode_block(&block).expect("an encoded block decodes");
    assert_eq!(back.len(), points.len());
    for (a, b) in points.iter().zip(&back) {
        assert!(a.bit_eq(b), "{a:?} came back as {b:?}");
    }
}
