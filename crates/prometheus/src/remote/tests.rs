use super::*;
use crate::STALE_NAN_BITS;
use proptest::prelude::*;

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.into(),
        value: value.into(),
    }
}

fn request() -> WriteRequest {
    WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![label("__name__", "up"), label("job", "node")],
            samples: vec![
                Sample {
                    value: 1.0,
                    timestamp: 1_700_000_000_000,
                },
                Sample {
                    value: f64::from_bits(STALE_NAN_BITS),
                    timestamp: 1_700_000_015_000,
                },
            ],
            exemplars: Vec::new(),
        }],
        metadata: vec![MetricMetadata {
            r#type: MetricType::Gauge as i32,
            metric_family_name: "up".into(),
            help: "Whether the target is up.".into(),
            unit: String::new(),
        }],
    }
}

/// Samples compared by bits, so a NaN equals itself.
fn sample_bits(request: &WriteRequest) -> Vec<Vec<(i64, u64)>> {
    request
        .timeseries
        .iter()
        .map(|s| {
            s.samples
                .iter()
                .map(|p| (p.timestamp, p.value.to_bits()))
                .collect()
        })
        .collect()
}

#[test]
fn a_write_request_comes_back_with_its_stale_marker_bit_for_bit() {
    let sent = request();
    let body = encode_request(&sent).unwrap();
    let got = decode_write_request(&body, MAX_DECODED_BYTES).unwrap();
    assert_eq!(got.timeseries[0].labels, sent.timeseries[0].labels);
    assert_eq!(got.metadata, sent.metadata);
    assert_eq!(sample_bits(&got), sample_bits(&sent));
    assert_eq!(got.timeseries[0].samples[1].value.to_bits(), STALE_NAN_BITS);
}

/// The field numbers are the wire contract with Prometheus: bytes written by hand from
/// `prompb/types.proto` decode to the fields they name.
#[test]
fn field_numbers_are_prometheus_ones() {
    // Sample: value = 1 (double, 1.0), timestamp = 2 (int64, 5).
    let sample = [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x05];
    assert_eq!(
        Sample::decode(&sample[..]).unwrap(),
        Sample {
            value: 1.0,
            timestamp: 5
        }
    );
    // LabelMatcher: type = 1 (RE), name = 2 ("a"), value = 3 ("b").
    let matcher = [0x08, 0x02, 0x12, 0x01, b'a', 0x1a, 0x01, b'b'];
    let m = LabelMatcher::decode(&matcher[..]).unwrap();
    assert_eq!(m.r#type, MatchType::Re as i32);
    assert_eq!((m.name.as_str(), m.value.as_str()), ("a", "b"));
    // Query: start = 1, end = 2, matchers = 3, hints = 4 (step_ms = 1 inside).
    let mut query = vec![0x08, 0x01, 0x10, 0x02, 0x1a, matcher.len() as u8];
    query.extend_from_slice(&matcher);
    query.extend_from_slice(&[0x22, 0x02, 0x08, 0x3c]);
    let q = Query::decode(query.as_slice()).unwrap();
    assert_eq!((q.start_timestamp_ms, q.end_timestamp_ms), (1, 2));
    assert_eq!(q.matchers, vec![m]);
    assert_eq!(q.hints.map(|h| h.step_ms), Some(60));
    // WriteRequest: timeseries = 1, metadata = 3; TimeSeries: labels = 1, samples = 2;
    // a histogram (field 4, unknown here) is skipped.
    let series = [
        0x0a, 0x06, 0x0a, 0x01, b'n', 0x12, 0x01, b'v', 0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0xf0,
        0x3f, 0x10, 0x05, 0x22, 0x02, 0x18, 0x01,
    ];
    let mut write = vec![0x0a, series.len() as u8];
    write.extend_from_slice(&series);
    write.extend_from_slice(&[0x1a, 0x04, 0x12, 0x02, b'u', b'p']);
    let w = WriteRequest::decode(write.as_slice()).unwrap();
    assert_eq!(w.timeseries[0].labels, vec![label("n", "v")]);
    assert_eq!(w.timeseries[0].samples.len(), 1);
    assert_eq!(w.metadata[0].metric_family_name, "up");
}

#[test]
fn a_metadata_only_request_decodes_with_no_series() {
    let sent = WriteRequest {
        timeseries: Vec::new(),
        ..request()
    };
    let got = decode_write_request(&encode_request(&sent).unwrap(), MAX_DECODED_BYTES).unwrap();
    assert!(got.timeseries.is_empty());
    assert_eq!(got.metadata.len(), 1);
}

#[test]
fn a_read_request_and_response_round_trip() {
    let sent = ReadRequest {
        queries: vec![Query {
            start_timestamp_ms: 1_000,
            end_timestamp_ms: 2_000,
            matchers: vec![LabelMatcher {
                r#type: MatchType::Nre as i32,
                name: "job".into(),
                value: "a|b".into(),
            }],
            hints: Some(ReadHints {
                step_ms: 15_000,
                func: "rate".into(),
                grouping: vec!["job".into()],
                by: true,
                ..ReadHints::default()
            }),
        }],
        accepted_response_types: vec![ResponseType::Samples as i32],
    };
    let got = decode_read_request(&encode_request(&sent).unwrap(), MAX_DECODED_BYTES).unwrap();
    assert_eq!(got, sent);

    let response = ReadResponse {
        results: vec![QueryResult {
            timeseries: request().timeseries,
        }],
    };
    let body = encode_read_response(&response);
    let protobuf = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let decoded = ReadResponse::decode(protobuf.as_slice()).unwrap();
    assert_eq!(decoded.encode_to_vec(), response.encode_to_vec());
}

#[test]
fn an_empty_or_non_snappy_body_is_refused_saying_so() {
    let e = decode_write_request(b"", MAX_DECODED_BYTES).unwrap_err();
    assert_eq!(e, RemoteError::Empty("WriteRequest"));
    assert!(e.to_string().contains("empty"), "{e}");
    // A varint of 11 bytes has no end: no snappy header.
    let e = decode_write_request(&[0xff; 11], MAX_DECODED_BYTES).unwrap_err();
    assert!(matches!(e, RemoteError::NotSnappy(_)), "{e:?}");
    assert!(
        e.to_string().contains("not in snappy's block format"),
        "{e}"
    );
    let mut framed = snap::write::FrameEncoder::new(Vec::new());
    std::io::Write::write_all(&mut framed, &request().encode_to_vec()).unwrap();
    let framed = framed.into_inner().unwrap();
    let e = decode_write_request(&framed, MAX_DECODED_BYTES).unwrap_err();
    assert_eq!(e, RemoteError::FramedSnappy);
}

#[test]
fn corrupt_snappy_is_refused() {
    // Header: 16 bytes to come; then a copy from 5 bytes back when none were written.
    let e = decode_write_request(&[0x10, 0x01, 0x05], MAX_DECODED_BYTES).unwrap_err();
    assert!(matches!(e, RemoteError::Corrupt(_)), "{e:?}");
    assert!(e.to_string().contains("truncated or corrupt"), "{e}");
}

#[test]
fn a_truncated_body_is_refused_at_every_cut() {
    let body = encode_request(&request()).unwrap();
    for cut in 1..body.len() {
        let e = decode_write_request(&body[..cut], MAX_DECODED_BYTES).unwrap_err();
        assert!(
            matches!(e, RemoteError::Corrupt(_) | RemoteError::NotSnappy(_)),
            "cut at {cut}: {e:?}"
        );
    }
}

#[test]
fn an_oversized_decoded_size_is_refused_before_decoding() {
    // A header announcing 64 MiB and nothing after it: refused on the header alone.
    let mut header = Vec::new();
    let mut n: u64 = 64 << 20;
    while n >= 0x80 {
        header.push((n as u8) | 0x80);
        n >>= 7;
    }
    header.push(n as u8);
    let e = decode_write_request(&header, MAX_DECODED_BYTES).unwrap_err();
    assert_eq!(
        e,
        RemoteError::TooLarge {
            size: 64 << 20,
            limit: MAX_DECODED_BYTES
        }
    );
    assert!(
        e.to_string()
            .contains("67108864 bytes, over the limit of 33554432 bytes"),
        "{e}"
    );
    // A real body just over a small limit, and the same body at exactly the limit.
    let body = encode_request(&request()).unwrap();
    let size = request().encoded_len();
    let e = decode_write_request(&body, size - 1).unwrap_err();
    assert!(matches!(e, RemoteError::TooLarge { .. }), "{e:?}");
    assert!(decode_write_request(&body, size).is_ok());
}

#[test]
fn garbage_protobuf_is_refused_naming_the_message() {
    // Valid snappy around bytes that are no protobuf (a field with wire type 7).
    let body = snap::raw::Encoder::new()
        .compress_vec(&[0x0f, 0xff, 0xff])
        .unwrap();
    let e = decode_write_request(&body, MAX_DECODED_BYTES).unwrap_err();
    assert!(
        matches!(
            e,
            RemoteError::Protobuf {
                message: "WriteRequest",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("not a valid protobuf WriteRequest: "),
        "{e}"
    );
    let e = decode_read_request(&body, MAX_DECODED_BYTES).unwrap_err();
    assert!(e.to_string().contains("ReadRequest"), "{e}");
}

fn arb_label() -> impl Strategy<Value = Label> {
    (".{0,12}", ".{0,12}").prop_map(|(name, value)| Label { name, value })
}

fn arb_series() -> impl Strategy<Value = TimeSeries> {
    (
        prop::collection::vec(arb_label(), 0..6),
        prop::collection::vec((any::<u64>(), any::<i64>()), 0..20),
    )
        .prop_map(|(labels, samples)| TimeSeries {
            labels,
            samples: samples
                .into_iter()
                .map(|(bits, timestamp)| Sample {
                    value: f64::from_bits(bits),
                    timestamp,
                })
                .collect(),
            exemplars: Vec::new(),
        })
}

proptest! {
    /// Whatever is encoded decodes to the same series, values bit for bit (NaNs of
    /// every pattern, the stale marker among them).
    #[test]
    fn encode_then_decode_is_the_identity(
        timeseries in prop::collection::vec(arb_series(), 0..8),
        names in prop::collection::vec(".{0,8}", 0..3),
    ) {
        let sent = WriteRequest {
            timeseries,
            metadata: names
                .into_iter()
                .map(|metric_family_name| MetricMetadata {
                    metric_family_name,
                    ..MetricMetadata::default()
                })
                .collect(),
        };
        let got = decode_write_request(&encode_request(&sent).unwrap(), MAX_DECODED_BYTES).unwrap();
        prop_assert_eq!(sample_bits(&got), sample_bits(&sent));
        let labels = |r: &WriteRequest| r.timeseries.iter().map(|s| s.labels.clone()).collect::<Vec<_>>();
        prop_assert_eq!(labels(&got), labels(&sent));
        prop_assert_eq!(got.metadata, sent.metadata);
    }

    /// No body, however broken, panics the decoder.
    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_write_request(&bytes, 1 << 16);
        let _ = decode_read_request(&bytes, 1 << 16);
    }
}
