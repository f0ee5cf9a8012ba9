//! What one write-ahead log frame carries: the points of a write and the bucket writes
//! that went with it (raw bucket slots and the rollups derived in the writer), so that
//! replaying the log redoes both. Layout in `docs/format/embedded.md`:
//!
//! ```text
//! version u8 (1) · appends: count, then per append: series, n, times, values
//!                · writes: count, then per bucket write: table, series, start, slots,
//!                  slot_ns, rollup, slot, change
//! ```
//!
//! Integers are LEB128 varints (signed ones zigzagged; times as the first time then
//! deltas), floats their 8 IEEE bytes little endian, so every value comes back bit for bit.

use crate::buckets::{Target, ValidWrite};
use tickertape_backend::{BackendError, Result, SeriesAppend, SlotChange};
use tickertape_core::query::Summary;
use tickertape_core::{Point, SeriesId};

const VERSION: u8 = 1;

/// The decoded frame: appends (points strictly increasing per append) and bucket writes,
/// in the order the writer applied them.
#[derive(Debug, Default, PartialEq)]
pub struct Record {
    pub appends: Vec<(SeriesId, Vec<Point>)>,
    pub writes: Vec<ValidWrite>,
}

pub fn encode(appends: &[SeriesAppend], writes: &[ValidWrite]) -> Vec<u8> {
    let points: usize = appends.iter().map(|a| a.points().len()).sum();
    let mut out = Vec::with_capacity(16 + points * 10 + writes.len() * 48);
    out.push(VERSION);
    put_u(&mut out, appends.len() as u64);
    for a in appends {
        put_u(&mut out, a.series().0);
        put_u(&mut out, a.points().len() as u64);
        let mut previous = 0i64;
        for p in a.points() {
            put_i(&mut out, p.time.wrapping_sub(previous));
            previous = p.time;
        }
        for p in a.points() {
            out.extend_from_slice(&p.value.to_bits().to_le_bytes());
        }
    }
    put_u(&mut out, writes.len() as u64);
    for w in writes {
        encode_write(&mut out, w);
    }
    out
}

fn encode_write(out: &mut Vec<u8>, w: &ValidWrite) {
    let t = &w.target;
    put_u(out, t.table.len() as u64);
    out.extend_from_slice(t.table.as_bytes());
    put_u(out, t.key.0);
    put_i(out, t.key.1);
    put_u(out, u64::from(t.slots));
    put_i(out, t.slot_ns);
    out.push(u8::from(t.rollup));
    put_u(out, u64::from(w.slot));
    match &w.change {
        SlotChange::Set(v) => {
            out.push(0);
            put_f(out, *v);
        }
        SlotChange::Add(v) => {
            out.push(1);
            put_f(out, *v);
        }
        SlotChange::Merge { summary, values } => {
            out.push(2);
            put_u(out, summary.count);
            for v in [summary.sum, summary.min, summary.max] {
                put_f(out, v);
            }
            for p in [summary.first, summary.last] {
                put_i(out, p.time);
                put_f(out, p.value);
            }
            put_u(out, values.len() as u64);
            for &v in values {
                put_f(out, v);
            }
        }
    }
}

/// Decodes a payload [`encode`] made. The frame's CRC matched, so a failure here means a
/// format this version does not know or a bug: `Corrupt`, naming the frame.
pub fn decode(lsn: u64, payload: &[u8]) -> Result<Record> {
    let bad = |what: &str| BackendError::Corrupt(format!("write-ahead log frame {lsn}: {what}"));
    let mut r = Reader(payload);
    if r.byte()? != VERSION {
        return Err(bad("unknown record version"));
    }
    let mut record = Record::default();
    for _ in 0..r.len(payload.len())? {
        let series = SeriesId(r.u()?);
        let n = r.len(payload.len())?;
        let mut times = Vec::with_capacity(n);
        let mut previous = 0i64;
        for _ in 0..n {
            previous = previous.wrapping_add(r.i()?);
            times.push(previous);
        }
        let mut points = Vec::with_capacity(n);
        for time in times {
            points.push(Point::new(time, r.f()?));
        }
        record.appends.push((series, points));
    }
    for _ in 0..r.len(payload.len())? {
        record.writes.push(decode_write(&mut r)?);
    }
    if !r.0.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(record)
}

fn decode_write(r: &mut Reader<'_>) -> Result<ValidWrite> {
    let table_len = r.len(usize::MAX)?;
    let table = String::from_utf8(r.take(table_len)?.to_vec())
        .map_err(|_| corrupt("a bucket table name is not UTF-8"))?;
    let key = (r.u()?, r.i()?);
    let slots = u32::try_from(r.u()?).map_err(|_| corrupt("slot count"))?;
    let slot_ns = r.i()?;
    let rollup = r.byte()? != 0;
    let slot = u32::try_from(r.u()?).map_err(|_| corrupt("slot"))?;
    let change = match r.byte()? {
        0 => SlotChange::Set(r.f()?),
        1 => SlotChange::Add(r.f()?),
        2 => {
            let count = r.u()?;
            let (sum, min, max) = (r.f()?, r.f()?, r.f()?);
            let first = Point::new(r.i()?, r.f()?);
            let last = Point::new(r.i()?, r.f()?);
            let n = r.len(usize::MAX)?;
            let values = (0..n).map(|_| r.f()).collect::<Result<Vec<f64>>>()?;
            let summary = Summary {
                count,
                sum,
                min,
                max,
                first,
                last,
            };
            SlotChange::Merge { summary, values }
        }
        _ => return Err(corrupt("unknown slot change")),
    };
    Ok(ValidWrite {
        target: Target {
            table,
            key,
            slots,
            slot_ns,
            rollup,
        },
        slot,
        change,
    })
}

fn corrupt(what: &str) -> BackendError {
    BackendError::Corrupt(format!("write-ahead log record: {what}"))
}

fn put_u(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_i(out: &mut Vec<u8>, v: i64) {
    put_u(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_f(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_bits().to_le_bytes());
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(corrupt("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt("varint too long"))
    }

    fn i(&mut self) -> Result<i64> {
        let u = self.u()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn f(&mut self) -> Result<f64> {
        let bytes = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        Ok(f64::from_bits(u64::from_le_bytes(word)))
    }

    /// A count of items, each at least one byte long: never more than `bound`, so a bad
    /// count cannot make a huge allocation.
    fn len(&mut self, bound: usize) -> Result<usize> {
        usize::try_from(self.u()?)
            .ok()
            .filter(|&n| n <= bound)
            .ok_or_else(|| corrupt("count out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn write(change: SlotChange) -> ValidWrite {
        ValidWrite {
            target: Target {
                table: "bk.3.roll.60000000000.0".into(),
                key: (7, -86_400_000_000_000),
                slots: 60,
                slot_ns: 60_000_000_000,
                rollup: true,
            },
            slot: 59,
            change,
        }
    }

    proptest! {
        #[test]
        fn any_record_comes_back_bit_for_bit(
            times in proptest::collection::btree_set(any::<i64>(), 1..50),
            values in proptest::collection::vec(any::<u64>(), 50),
            series in any::<u64>(),
        ) {
            let points: Vec<Point> = times
                .iter()
                .zip(&values)
                .map(|(&t, &v)| Point::new(t, f64::from_bits(v)))
                .collect();
            let append = SeriesAppend::new(SeriesId(series), points.clone()).unwrap();
            let summary = Summary::of(points[0]);
            let writes = vec![
                write(SlotChange::Set(f64::from_bits(values[0]))),
                write(SlotChange::Add(-0.0)),
                write(SlotChange::Merge { summary, values: vec![1.5, f64::NAN] }),
            ];
            let decoded = decode(1, &encode(&[append], &writes)).unwrap();
            prop_assert_eq!(decoded.appends.len(), 1);
            prop_assert_eq!(decoded.appends[0].0, SeriesId(series));
            let bits = |ps: &[Point]| ps.iter().map(|p| (p.time, p.value.to_bits())).collect::<Vec<_>>();
            prop_assert_eq!(bits(&decoded.appends[0].1), bits(&points));
            prop_assert_eq!(decoded.writes.len(), 3);
            prop_assert_eq!(&decoded.writes[0].target, &writes[0].target);
            prop_assert_eq!(format!("{:?}", decoded.writes[2].change), format!("{:?}", writes[2].change));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(1, &bytes);
        }
    }
}
