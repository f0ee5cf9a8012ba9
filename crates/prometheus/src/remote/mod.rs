//! Remote write and remote read (Prometheus 2.x, protocol 0.1.0): protobuf messages in
//! snappy's block format.
//!
//! - `messages`: the messages, field numbers as in Prometheus' `prompb/*.proto`.
//! - [`decode_write_request`], [`decode_read_request`]: a request body (snappy block
//!   format, then protobuf), refused with a [`RemoteError`] that says what is wrong.
//! - [`encode_read_response`]: a read's answer, protobuf then snappy.
//! - `borrowed`: the write path's own decoder, labels borrowed from the decompressed
//!   body ([`decompress_write_request`], then [`BorrowedWriteRequest::parse`]); each
//!   series' labels become a stored series by `mapping::series_of`.

mod borrowed;
mod messages;
#[cfg(test)]
mod tests;

pub use borrowed::{BorrowedWriteRequest, Labels};
pub use messages::{
    Exemplar, Label, LabelMatcher, MatchType, MetricMetadata, MetricType, Query, QueryResult,
    ReadHints, ReadRequest, ReadResponse, ResponseType, Sample, TimeSeries, WriteRequest,
};

use prost::Message;
use thiserror::Error;

/// The largest decoded (decompressed) body accepted by default: Prometheus' own limit
/// for remote-read requests, and far above the ~1-2 MB a remote-write batch of 2,000
/// samples decodes to. Checked against the size snappy's header announces, before
/// anything is allocated, so a small body cannot make the server allocate gigabytes.
pub const MAX_DECODED_BYTES: usize = 32 * 1024 * 1024;

/// Why a remote-write or remote-read body cannot be decoded. Every case is the sender's
/// fault (a 400): retrying the same body cannot succeed.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("the body is empty: expected a snappy-compressed protobuf {0}")]
    Empty(&'static str),
    #[error(
        "the body is in snappy's framed (stream) format: remote write and read use the \
         block format (Content-Encoding: snappy)"
    )]
    FramedSnappy,
    #[error("the body is not in snappy's block format: {0}")]
    NotSnappy(String),
    #[error("the snappy body is truncated or corrupt: {0}")]
    Corrupt(String),
    #[error("the decoded body would be {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: u64, limit: usize },
    #[error("not a valid protobuf {message}: {reason}")]
    Protobuf {
        message: &'static str,
        reason: String,
    },
}

/// Decodes a remote-write body: snappy block format, then a protobuf `WriteRequest`.
/// `max_decoded` bounds the decompressed size ([`MAX_DECODED_BYTES`] is Prometheus').
pub fn decode_write_request(body: &[u8], max_decoded: usize) -> Result<WriteRequest, RemoteError> {
    decode_message(body, max_decoded, "WriteRequest")
}

/// Decompresses a remote-write body (snappy block format) for
/// [`BorrowedWriteRequest::parse`], refusing what [`decode_write_request`] refuses
/// before it reads the protobuf.
pub fn decompress_write_request(body: &[u8], max_decoded: usize) -> Result<Vec<u8>, RemoteError> {
    decompress(body, max_decoded, "WriteRequest")
}

/// Decodes a remote-read body: snappy block format, then a protobuf `ReadRequest`.
pub fn decode_read_request(body: &[u8], max_decoded: usize) -> Result<ReadRequest, RemoteError> {
    decode_message(body, max_decoded, "ReadRequest")
}

/// Decodes a remote-read answer (the samples response type), as Prometheus' client
/// does: what tests read `/api/v1/read`'s answers with.
pub fn decode_read_response(body: &[u8], max_decoded: usize) -> Result<ReadResponse, RemoteError> {
    decode_message(body, max_decoded, "ReadResponse")
}

/// Encodes a read's answer: protobuf, then snappy's block format.
///
/// Snappy's block format holds at most 4 GiB; the caller bounds a response far below
/// that (`--max-query-points`). A larger one is encoded as an empty body, which the
/// client refuses as corrupt: an error it reports, never a silently empty answer.
pub fn encode_read_response(response: &ReadResponse) -> Vec<u8> {
    let protobuf = response.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&protobuf)
        .unwrap_or_default()
}

/// Compresses a protobuf in snappy's block format, as Prometheus' client does: what a
/// test or a load generator sends to `/api/v1/write` and `/api/v1/read`. Fails only for
/// a message over snappy's 4 GiB block limit.
pub fn encode_request(message: &impl Message) -> Result<Vec<u8>, RemoteError> {
    let protobuf = message.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&protobuf)
        .map_err(|_| RemoteError::TooLarge {
            size: protobuf.len() as u64,
            limit: u32::MAX as usize,
        })
}

/// Decompresses `body` and decodes it as message `M`.
fn decode_message<M: Message + Default>(
    body: &[u8],
    max_decoded: usize,
    name: &'static str,
) -> Result<M, RemoteError> {
    let decoded = decompress(body, max_decoded, name)?;
    M::decode(decoded.as_slice()).map_err(|e| RemoteError::Protobuf {
        message: name,
        reason: e.to_string(),
    })
}

/// The stream identifier chunk that starts every snappy framed stream.
const FRAMED_STREAM_START: &[u8] = b"\xff\x06\x00\x00sNaPpY";

/// Decompresses a snappy block, refusing a decoded size over `max_decoded` before
/// allocating for it.
fn decompress(body: &[u8], max_decoded: usize, name: &'static str) -> Result<Vec<u8>, RemoteError> {
    if body.is_empty() {
        return Err(RemoteError::Empty(name));
    }
    if body.starts_with(FRAMED_STREAM_START) {
        return Err(RemoteError::FramedSnappy);
    }
    let size = snap::raw::decompress_len(body).map_err(|e| header_error(e, max_decoded))?;
    if size > max_decoded {
        return Err(RemoteError::TooLarge {
            size: size as u64,
            limit: max_decoded,
        });
    }
    let mut out = vec![0; size];
    let written = snap::raw::Decoder::new()
        .decompress(body, &mut out)
        .map_err(body_error)?;
    out.truncate(written);
    Ok(out)
}

/// A snappy header (the decoded length, a varint) that cannot be read.
fn header_error(e: snap::Error, max_decoded: usize) -> RemoteError {
    match e {
        // Past snappy's own 4 GiB maximum: certainly past ours.
        snap::Error::TooBig { given, .. } => RemoteError::TooLarge {
            size: given,
            limit: max_decoded,
        },
        other => RemoteError::NotSnappy(other.to_string()),
    }
}

/// A snappy body whose header was read but whose data does not decode to it.
fn body_error(e: snap::Error) -> RemoteError {
    RemoteError::Corrupt(e.to_string())
}
