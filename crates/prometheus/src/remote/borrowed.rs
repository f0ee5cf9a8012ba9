//! The write path's own decoder of a `WriteRequest`: every sample goes into one flat
//! vector, and a series' labels are read from its bytes when asked, as `&str` slices of
//! the decoded buffer.
//!
//! Why not prost here: Prometheus sends one sample per series per request, and decoding
//! into [`WriteRequest`](super::WriteRequest) costs two `String`s per label, two `Vec`s
//! per series, and as many frees — measured, allocation was about half of a remote-write
//! ingest's CPU time. This reads the same wire format (field numbers of Prometheus'
//! `prompb/types.proto`) with no allocation per label or series; a property test holds it
//! to prost's answers. Fields it does not store (metadata, exemplars, histograms, unknown
//! ones) are not stored. Metadata and exemplars, which the messages declare, are still
//! checked with prost (they are rare, so that costs nothing), so that a body this accepts
//! is one prost accepts; histograms and unknown fields are skipped by wire type.

use super::{Exemplar, MetricMetadata, RemoteError, Sample};
use prost::Message;

/// A decoded remote-write request, borrowing its labels from the decoded buffer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BorrowedWriteRequest<'a> {
    /// Every series' samples (milliseconds), series after series, as sent.
    samples: Vec<Sample>,
    /// Per series: its protobuf `TimeSeries` (whose labels are read on demand, so that
    /// no vector of every label of the request is built), and the end of its samples in
    /// `samples` (each series' start where the previous one's ended).
    series: Vec<(&'a [u8], usize)>,
}

impl<'a> BorrowedWriteRequest<'a> {
    /// Reads a protobuf `WriteRequest` (already decompressed): its series and samples.
    /// Labels are checked when read ([`labels`](Self::labels)).
    pub fn parse(protobuf: &'a [u8]) -> Result<Self, RemoteError> {
        let mut out = Self::default();
        let mut r = Reader(protobuf);
        while let Some((field, wire)) = r.key()? {
            match (field, wire) {
                (1, LEN) => {
                    let series = r.bytes()?;
                    out.parse_series(series)?;
                }
                (3, LEN) => check_with_prost::<MetricMetadata>(r.bytes()?, "metadata")?,
                (1, _) => return Err(invalid("WriteRequest.timeseries is not a message")),
                (3, VARINT | FIXED64 | FIXED32) => {
                    return Err(invalid("WriteRequest.metadata is not a message"))
                }
                _ => r.skip(wire)?,
            }
        }
        Ok(out)
    }

    /// How many series the request holds.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Every sample of the request, series after series.
    pub fn all_samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The range of series `i`'s samples in [`all_samples`](Self::all_samples).
    pub fn sample_range(&self, i: usize) -> std::ops::Range<usize> {
        let start = match i.checked_sub(1) {
            Some(previous) => self.series[previous].1,
            None => 0,
        };
        start..self.series[i].1
    }

    /// Series `i`'s samples.
    pub fn samples(&self, i: usize) -> &[Sample] {
        &self.samples[self.sample_range(i)]
    }

    /// Series `i`'s labels, as sent; a label that is not UTF-8 or not a valid `Label`
    /// is an error (the request is invalid).
    pub fn labels(&self, i: usize) -> Labels<'a> {
        Labels(Reader(self.series[i].0))
    }

    fn parse_series(&mut self, bytes: &'a [u8]) -> Result<(), RemoteError> {
        let mut r = Reader(bytes);
        while let Some((field, wire)) = r.key()? {
            match (field, wire) {
                (1, LEN) => drop(r.bytes()?),
                (2, LEN) => {
                    let sample = parse_sample(r.bytes()?)?;
                    self.samples.push(sample);
                }
                (3, LEN) => check_with_prost::<Exemplar>(r.bytes()?, "exemplar")?,
                (1 | 2, _) => return Err(invalid("TimeSeries.labels/samples is not a message")),
                (3, VARINT | FIXED64 | FIXED32) => {
                    return Err(invalid("TimeSeries.exemplars is not a message"))
                }
                _ => r.skip(wire)?,
            }
        }
        self.series.push((bytes, self.samples.len()));
        Ok(())
    }
}

/// The labels of one series, read from its `TimeSeries` as they are asked for.
pub struct Labels<'a>(Reader<'a>);

impl<'a> Iterator for Labels<'a> {
    type Item = Result<(&'a str, &'a str), RemoteError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            // The structure was checked by `parse`; only the labels' contents are new.
            let (field, wire) = match self.0.key() {
                Ok(Some(key)) => key,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            let bytes = match wire == LEN {
                true => self.0.bytes(),
                false => self.0.skip(wire).map(|()| &[][..]),
            };
            match (field, bytes) {
                (1, Ok(label)) => return Some(parse_label(label)),
                (_, Ok(_)) => continue,
                (_, Err(e)) => return Some(Err(e)),
            }
        }
    }
}

fn parse_label(bytes: &[u8]) -> Result<(&str, &str), RemoteError> {
    let (mut name, mut value) = ("", "");
    let mut r = Reader(bytes);
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => name = utf8(r.bytes()?, "name")?,
            (2, LEN) => value = utf8(r.bytes()?, "value")?,
            (1 | 2, _) => return Err(invalid("Label.name/value is not a string")),
            _ => r.skip(wire)?,
        }
    }
    Ok((name, value))
}

fn parse_sample(bytes: &[u8]) -> Result<Sample, RemoteError> {
    let mut sample = Sample::default();
    let mut r = Reader(bytes);
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, FIXED64) => sample.value = f64::from_bits(r.fixed64()?),
            // int64: the varint is the value's two's complement.
            (2, VARINT) => sample.timestamp = r.varint()? as i64,
            (1 | 2, _) => return Err(invalid("Sample.value/timestamp has the wrong wire type")),
            _ => r.skip(wire)?,
        }
    }
    Ok(sample)
}

/// Decodes a message this decoder does not keep, only to refuse what prost refuses.
fn check_with_prost<M: Message + Default>(bytes: &[u8], what: &str) -> Result<(), RemoteError> {
    M::decode(bytes)
        .map(drop)
        .map_err(|e| invalid(format!("a malformed {what}: {e}")))
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

fn invalid(reason: impl Into<String>) -> RemoteError {
    RemoteError::Protobuf {
        message: "WriteRequest",
        reason: reason.into(),
    }
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, RemoteError> {
    std::str::from_utf8(bytes)
        .map_err(|e| invalid(format!("a label {what} is not valid UTF-8: {e}")))
}

/// The unread rest of one message.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next field's number and wire type; `None` at the message's end.
    fn key(&mut self) -> Result<Option<(u64, u8)>, RemoteError> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        // Field numbers are 29 bits: a key past 32 bits is no key (prost refuses it too).
        if key > u64::from(u32::MAX) {
            return Err(invalid(format!("a field key {key} past 32 bits")));
        }
        let field = key >> 3;
        if field == 0 {
            return Err(invalid("a field number 0"));
        }
        Ok(Some((field, (key & 7) as u8)))
    }

    fn varint(&mut self) -> Result<u64, RemoteError> {
        // Keys and most lengths are one byte.
        if let Some((&byte, rest)) = self.0.split_first() {
            if byte < 0x80 {
                self.0 = rest;
                return Ok(u64::from(byte));
            }
        }
        let mut value = 0u64;
        for (i, &byte) in self.0.iter().enumerate().take(10) {
            // The tenth byte holds the 64th bit only: more is past u64 (prost refuses it).
            if i == 9 && byte > 1 {
                return Err(invalid("a varint past 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                self.0 = &self.0[i + 1..];
                return Ok(value);
            }
        }
        Err(invalid("a varint is cut off or longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RemoteError> {
        if n > self.0.len() {
            return Err(invalid(format!(
                "a field of {n} bytes where {} are left",
                self.0.len()
            )));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn bytes(&mut self) -> Result<&'a [u8], RemoteError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| invalid("a length past usize"))?;
        self.take(len)
    }

    fn fixed64(&mut self) -> Result<u64, RemoteError> {
        let bytes = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(array))
    }

    /// Skips a field this decoder does not read. Groups (wire types 3 and 4, deprecated
    /// since proto2 and never sent by Prometheus) are refused.
    fn skip(&mut self, wire: u8) -> Result<(), RemoteError> {
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.take(4).map(drop),
            other => Err(invalid(format!(
                "wire type {other} (groups are not supported)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Exemplar, Label, MetricMetadata, TimeSeries, WriteRequest};
    use super::*;
    use proptest::prelude::*;
    use prost::Message;

    fn arb_request() -> impl Strategy<Value = WriteRequest> {
        let label = (".{0,10}", ".{0,10}").prop_map(|(name, value)| Label { name, value });
        let sample = (any::<u64>(), any::<i64>()).prop_map(|(bits, timestamp)| Sample {
            value: f64::from_bits(bits),
            timestamp,
        });
        let exemplar = (any::<f64>(), any::<i64>()).prop_map(|(value, timestamp)| Exemplar {
            labels: vec![Label {
                name: "trace_id".into(),
                value: "abc".into(),
            }],
            value,
            timestamp,
        });
        let series = (
            prop::collection::vec(label, 0..5),
            prop::collection::vec(sample, 0..5),
            prop::collection::vec(exemplar, 0..2),
        )
            .prop_map(|(labels, samples, exemplars)| TimeSeries {
                labels,
                samples,
                exemplars,
            });
        let metadata = ".{0,6}".prop_map(|metric_family_name| MetricMetadata {
            r#type: 2,
            metric_family_name,
            help: "h".into(),
            unit: String::new(),
        });
        (
            prop::collection::vec(series, 0..6),
            prop::collection::vec(metadata, 0..2),
        )
            .prop_map(|(timeseries, metadata)| WriteRequest {
                timeseries,
                metadata,
            })
    }

    fn bits(samples: &[Sample]) -> Vec<(i64, u64)> {
        samples
            .iter()
            .map(|s| (s.timestamp, s.value.to_bits()))
            .collect()
    }

    proptest! {
        /// The same series, labels and samples (bit for bit) as prost reads.
        #[test]
        fn reads_what_prost_reads(sent in arb_request()) {
            let protobuf = sent.encode_to_vec();
            let got = BorrowedWriteRequest::parse(&protobuf).unwrap();
            prop_assert_eq!(got.len(), sent.timeseries.len());
            for (i, want) in sent.timeseries.iter().enumerate() {
                let labels: Vec<(&str, &str)> = got.labels(i).collect::<Result<_, _>>().unwrap();
                let want_labels: Vec<(&str, &str)> =
                    want.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
                prop_assert_eq!(labels, want_labels);
                prop_assert_eq!(bits(got.samples(i)), bits(&want.samples));
            }
        }

        /// Garbage never panics, and what this decoder accepts prost accepts the same.
        #[test]
        fn garbage_is_refused_or_read_as_prost_reads_it(
            bytes in prop::collection::vec(any::<u8>(), 0..200)
        ) {
            let Ok(got) = BorrowedWriteRequest::parse(&bytes) else {
                return Ok(());
            };
            let labels: Result<Vec<Vec<(&str, &str)>>, _> =
                (0..got.len()).map(|i| got.labels(i).collect()).collect();
            let want = WriteRequest::decode(bytes.as_slice());
            let Ok(labels) = labels else {
                // Labels are checked when read: prost, which checks them at once, refuses.
                prop_assert!(want.is_err());
                return Ok(());
            };
            prop_assert!(want.is_ok(), "prost refuses what was accepted: {:?}", want);
            let want = want.unwrap();
            prop_assert_eq!(got.len(), want.timeseries.len());
            for (i, w) in want.timeseries.iter().enumerate() {
                prop_assert_eq!(bits(got.samples(i)), bits(&w.samples));
                let want_labels: Vec<(&str, &str)> =
                    w.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
                prop_assert_eq!(&labels[i], &want_labels);
            }
        }
    }

    /// Found by the property test above: a key of 5 bytes past 32 bits (11197444817) was
    /// read as field 1399680602, skipped, and the body accepted; prost refuses it.
    #[test]
    fn a_key_past_32_bits_is_refused_as_prost_refuses_it() {
        let mut body = vec![114, 120];
        body.extend(std::iter::repeat_n(0u8, 120));
        body.extend_from_slice(&[
            209, 229, 173, 219, 41, 217, 254, 224, 192, 144, 204, 109, 144, 56, 97,
        ]);
        assert!(WriteRequest::decode(body.as_slice()).is_err());
        let err = BorrowedWriteRequest::parse(&body)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("11197444817")), "accepted");
    }

    /// Also found by it: metadata sent with another wire type than a message's, and a
    /// varint whose tenth byte is past 64 bits, were skipped; prost refuses both.
    #[test]
    fn what_prost_refuses_in_skipped_fields_is_refused() {
        let metadata_as_fixed32 = [0x1d, 0, 0, 0, 0];
        let varint_past_64_bits = [
            73, 0, 0, 0, 0, 0, 0, 0, 0, 144, 0, 128, 128, 128, 128, 128, 128, 128, 128, 128, 2,
        ];
        for body in [&metadata_as_fixed32[..], &varint_past_64_bits[..]] {
            assert!(WriteRequest::decode(body).is_err(), "{body:?}");
            assert!(BorrowedWriteRequest::parse(body).is_err(), "{body:?}");
        }
    }

    #[test]
    fn field_numbers_are_prometheus_ones() {
        // WriteRequest { timeseries: [{ labels: [n="v"], samples: [{1.0, 5}] }],
        // metadata: [{ metric_family_name: "up" }] }, and a histogram (field 4) skipped.
        let series = [
            0x0a, 0x06, 0x0a, 0x01, b'n', 0x12, 0x01, b'v', 0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0,
            0xf0, 0x3f, 0x10, 0x05, 0x22, 0x02, 0x18, 0x01,
        ];
        let mut write = vec![0x0a, series.len() as u8];
        write.extend_from_slice(&series);
        write.extend_from_slice(&[0x1a, 0x04, 0x12, 0x02, b'u', b'p']);
        let got = BorrowedWriteRequest::parse(&write).unwrap();
        assert_eq!(got.len(), 1);
        let labels: Vec<(&str, &str)> = got.labels(0).collect::<Result<_, _>>().unwrap();
        assert_eq!(labels, vec![("n", "v")]);
        assert_eq!(
            got.samples(0),
            &[Sample {
                value: 1.0,
                timestamp: 5
            }]
        );
    }

    #[test]
    fn broken_messages_are_refused_saying_why() {
        let cases: [(&[u8], &str); 5] = [
            (&[0x0a, 0x05, 0x0a], "a field of 5 bytes where 1 are left"),
            (
                &[0x0a, 0x04, 0x12, 0x02, 0x09, 0x01],
                "a field of 8 bytes where 1 are left",
            ),
            (&[0x08, 0x01], "timeseries is not a message"),
            (&[0x00], "field number 0"),
            (&[0x0a, 0x01, 0x1b], "groups are not supported"),
        ];
        for (bytes, says) in cases {
            let e = BorrowedWriteRequest::parse(bytes).unwrap_err();
            assert!(e.to_string().contains(says), "{bytes:?}: {e}");
        }
        // Wrong labels are found when the labels are read: a label value that is not
        // UTF-8, a label cut short, a group inside a label.
        let labels: [(&[u8], &str); 3] = [
            (
                &[0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, 0xff],
                "a label value is not valid UTF-8",
            ),
            (
                &[0x0a, 0x04, 0x0a, 0x02, 0x12, 0x01],
                "a field of 1 bytes where 0 are left",
            ),
            (&[0x0a, 0x03, 0x0a, 0x01, 0x1b], "groups are not supported"),
        ];
        for (bytes, says) in labels {
            let got = BorrowedWriteRequest::parse(bytes).unwrap();
            let e = got.labels(0).collect::<Result<Vec<_>, _>>().unwrap_err();
            assert!(e.to_string().contains(says), "{bytes:?}: {e}");
            assert!(WriteRequest::decode(bytes).is_err(), "prost refuses it too");
        }
    }
}
