use super::*;
use proptest::prelude::*;

#[test]
fn text_format_families() {
    let body = r#"# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# A comment that is not metadata.
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9
metric_without_timestamp_and_labels 12.47
something_weird{problem="division by zero"} +Inf -3982045
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.5",} 4773
rpc_duration_seconds_sum 1.7560473e+07
nan_value NaN
"#;
    let samples = parse(body, Format::Text).unwrap();
    assert_eq!(samples.len(), 12);
    assert_eq!(samples[0].name, "http_requests_total");
    assert_eq!(
        samples[0].series,
        r#"http_requests_total{method="post",code="200"}"#
    );
    assert_eq!(samples[3].series, "metric_without_timestamp_and_labels");
    assert_eq!(samples[0].labels[1], ("code", "200".into()));
    assert_eq!(samples[0].timestamp_ms, Some(1_395_066_363_000));
    assert_eq!(samples[2].labels[0].1, r"C:\DIR\FILE.TXT");
    assert_eq!(samples[2].labels[1].1, "Cannot find file:\n\"FILE.TXT\"");
    assert_eq!(samples[3].timestamp_ms, None);
    assert_eq!(samples[4].value, f64::INFINITY);
    assert_eq!(samples[4].timestamp_ms, Some(-3_982_045));
    assert_eq!(samples[6].labels[0].1, "+Inf");
    assert_eq!(samples[9].labels, vec![("quantile", "0.5".into())]);
    assert!(samples[11].value.is_nan());
}

#[test]
fn openmetrics_families() {
    let body = "# TYPE acme_http_router_request_seconds summary
# UNIT acme_http_router_request_seconds seconds
# HELP acme_http_router_request_seconds Latency though all of ACME's HTTP request router.
acme_http_router_request_seconds_sum{path=\"/api/v1\",method=\"GET\"} 9036.32
acme_http_router_request_seconds_count{path=\"/api/v1\",method=\"GET\"} 807283.0
acme_http_router_request_seconds_created{path=\"/api/v1\",method=\"GET\"} 1605281325.0
# TYPE foo histogram
foo_bucket{le=\"0.01\"} 0
foo_bucket{le=\"+Inf\"} 17 # {trace_id=\"KOO5S4vxi0o\"} 0.67 1520879607.789
foo_count 17 1520879607.789
# EOF
";
    let samples = parse(body, Format::OpenMetrics).unwrap();
    assert_eq!(samples.len(), 6);
    assert_eq!(samples[2].name, "acme_http_router_request_seconds_created");
    assert_eq!(samples[4].value, 17.0);
    assert_eq!(samples[4].timestamp_ms, None);
    assert_eq!(samples[5].timestamp_ms, Some(1_520_879_607_789));
}

#[test]
fn openmetrics_needs_eof_and_nothing_after() {
    let e = parse("a 1\n", Format::OpenMetrics).unwrap_err();
    assert!(e.message.contains("# EOF"), "{e}");
    let e = parse("a 1\n# EOF\nb 2\n", Format::OpenMetrics).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(parse("a 1\n# EOF", Format::OpenMetrics).is_ok());
    let e = parse(
        "# TYPE size gauge\n# UNIT size bytes\n# EOF\n",
        Format::OpenMetrics,
    )
    .unwrap_err();
    assert!(e.message.contains("unit not a suffix"), "{e}");
    assert!(parse("# UNIT size_bytes bytes\n# EOF\n", Format::OpenMetrics).is_ok());
    let e = parse("g 1 # {a=\"b\"} 1\n# EOF\n", Format::OpenMetrics).unwrap_err();
    assert!(e.message.contains("does not support exemplars"), "{e}");
    let e = parse("# random comment\na 1\n# EOF\n", Format::OpenMetrics).unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn errors_name_their_line() {
    let cases = [
        ("a{b=\"c\" 1", "'}'"),
        ("a{b=\"c\"} one", "invalid value"),
        ("a 1 12.5", "invalid timestamp"),
        ("a{b=\"c\",b=\"d\"} 1", "given twice"),
        ("a{1b=\"c\"} 1", "invalid label name"),
        ("a{b=\"c} 1", "not closed"),
        ("a", "no value"),
        ("# TYPE a histogramm", "invalid metric type"),
        ("a 1 2 3", "unexpected text"),
        ("0a 1", "invalid metric name"),
        ("a{b=\"c\"} 1 # {x=\"y\"} 1", "unexpected text"),
    ];
    for (text, expected) in cases {
        let body = format!("ok 1\n{text}\n");
        let e = parse(&body, Format::Text).expect_err(text);
        assert_eq!(e.line, 2, "{text}");
        assert!(e.message.contains(expected), "{text}: {e}");
    }
}

#[test]
fn content_types() {
    assert_eq!(
        Format::of_content_type("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        Format::OpenMetrics
    );
    assert_eq!(
        Format::of_content_type("text/plain; version=0.0.4"),
        Format::Text
    );
    assert_eq!(Format::of_content_type(""), Format::Text);
}

/// A sample written the way client libraries write it.
fn written() -> impl Strategy<Value = (String, Vec<(String, String)>, f64, Option<i64>)> {
    (
        "[a-zA-Z_:][a-zA-Z0-9_:]{0,8}",
        proptest::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,5}", "\\PC{0,6}", 0..4),
        prop_oneof![
            any::<f64>().prop_filter("not NaN", |v| !v.is_nan()),
            Just(f64::INFINITY)
        ],
        proptest::option::of(-1_000_000_000_000i64..4_000_000_000_000),
    )
        .prop_map(|(name, labels, value, ts)| {
            (
                name,
                labels
                    .into_iter()
                    .filter(|(k, _)| k != "__name__")
                    .collect(),
                value,
                ts,
            )
        })
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

proptest! {
    /// No input panics; any error names a line of the body.
    #[test]
    fn never_panics(body in "\\PC{0,200}|[a-z{}=\", #\\\\\n0-9.+-]{0,200}", om in any::<bool>()) {
        let format = if om { Format::OpenMetrics } else { Format::Text };
        if let Err(e) = parse(&body, format) {
            prop_assert!(e.line <= body.split('\n').count());
        }
    }

    /// What a client library writes reads back the same.
    #[test]
    fn written_samples_read_back(samples in proptest::collection::vec(written(), 0..8)) {
        let mut body = String::new();
        for (name, labels, value, ts) in &samples {
            body.push_str(name);
            if !labels.is_empty() {
                let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
                body.push_str(&format!("{{{}}}", inner.join(",")));
            }
            body.push_str(&format!(" {value:?}"));
            if let Some(ts) = ts {
                body.push_str(&format!(" {ts}"));
            }
            body.push('\n');
        }
        let parsed = parse(&body, Format::Text).unwrap();
        prop_assert_eq!(parsed.len(), samples.len());
        for (got, (name, labels, value, ts)) in parsed.iter().zip(&samples) {
            prop_assert_eq!(got.name, name.as_str());
            let got_labels: Vec<(String, String)> = got.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            prop_assert_eq!(&got_labels, labels);
            prop_assert_eq!(got.value.to_bits(), value.to_bits());
            prop_assert_eq!(got.timestamp_ms, *ts);
        }
    }
}
