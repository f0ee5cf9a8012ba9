//! The protobuf messages of remote write and read (package `prometheus`, Prometheus 2.x's
//! `prompb/remote.proto` and `prompb/types.proto`), written out with prost's derive so no
//! `protoc` or build script is needed. Field numbers are the wire contract: they must
//! match Prometheus' files exactly; names are free.
//!
//! Left out, and skipped as unknown fields when they arrive: a series' native histograms
//! (field 4 of `TimeSeries`, experimental in 2.x) and the chunked ("streamed XOR chunks")
//! read response, which tickertape does not offer (the samples response is the one every
//! Prometheus 2.x accepts).

/// A remote-write request: series with their samples, and metric metadata (sent in
/// requests of their own when `send_metadata` is on).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    // Tag 2 is reserved in Prometheus' file.
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// One series: its labels (`__name__` among them) and samples in time order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Decoded (Prometheus sends them with `send_exemplars`) but not stored.
    #[prost(message, repeated, tag = "3")]
    pub exemplars: Vec<Exemplar>,
}

#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// One sample: `timestamp` in milliseconds since the Unix epoch.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// An exemplar: labels (a trace id, typically), a value and a time in milliseconds.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// The metadata of one metric family (its type, help text and unit).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct MetricMetadata {
    #[prost(enumeration = "MetricType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    // Tag 3 is unused in Prometheus' file.
    #[prost(string, tag = "4")]
    pub help: String,
    #[prost(string, tag = "5")]
    pub unit: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Unknown = 0,
    Counter = 1,
    Gauge = 2,
    Histogram = 3,
    GaugeHistogram = 4,
    Summary = 5,
    Info = 6,
    StateSet = 7,
}

/// A remote-read request: one or more queries, and the response types the client takes.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ReadRequest {
    #[prost(message, repeated, tag = "1")]
    pub queries: Vec<Query>,
    #[prost(enumeration = "ResponseType", repeated, tag = "2")]
    pub accepted_response_types: Vec<i32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ResponseType {
    /// One `ReadResponse` holding every query's samples.
    Samples = 0,
    /// Chunks streamed one message at a time (not offered by tickertape).
    StreamedXorChunks = 1,
}

/// One query of a read: the series the matchers select, samples in
/// `[start_timestamp_ms, end_timestamp_ms]` (milliseconds, both ends included).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Query {
    #[prost(int64, tag = "1")]
    pub start_timestamp_ms: i64,
    #[prost(int64, tag = "2")]
    pub end_timestamp_ms: i64,
    #[prost(message, repeated, tag = "3")]
    pub matchers: Vec<LabelMatcher>,
    #[prost(message, optional, tag = "4")]
    pub hints: Option<ReadHints>,
}

/// A label matcher; `type` is a [`MatchType`] (`EQ` when absent on the wire).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LabelMatcher {
    #[prost(enumeration = "MatchType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MatchType {
    Eq = 0,
    Neq = 1,
    Re = 2,
    Nre = 3,
}

/// What the query around a read's selector asks (a hint: a store may ignore it).
/// Times in milliseconds.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ReadHints {
    #[prost(int64, tag = "1")]
    pub step_ms: i64,
    #[prost(string, tag = "2")]
    pub func: String,
    #[prost(int64, tag = "3")]
    pub start_ms: i64,
    #[prost(int64, tag = "4")]
    pub end_ms: i64,
    #[prost(string, repeated, tag = "5")]
    pub grouping: Vec<String>,
    #[prost(bool, tag = "6")]
    pub by: bool,
    #[prost(int64, tag = "7")]
    pub range_ms: i64,
}

/// The samples response: one result per query, in the order of the queries.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadResponse {
    #[prost(message, repeated, tag = "1")]
    pub results: Vec<QueryResult>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryResult {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}
