//! Request bodies, read in one place: within `--max-body-bytes` (as sent, and once
//! decoded: a small gzip body can expand enormously), their `Content-Encoding` undone,
//! every refusal a [`RequestError`] that each API answers in its own shape.
//!
//! Which encodings a route takes is its protocol's: line protocol, OTLP and forms come
//! plain or gzipped ([`Codings::Gzip`]); Prometheus' remote write and read are always
//! snappy ([`Codings::Snappy`]). Anything else is refused with 415, naming what is taken,
//! before the body is read: storing a `br` body as if it were text would store garbage.

use crate::error::RequestError;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use std::io::Read;

/// The encodings a route's body may come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Codings {
    /// None (`identity`) or gzip (`gzip`, and `x-gzip`, its old name): decoded here.
    Gzip,
    /// Snappy's block format, as Prometheus' remote write and read send it; a body
    /// without the header is taken as snappy too (some agents leave it out). The
    /// protocol's decoder undoes it, so the body is handed on as sent.
    Snappy,
}

impl Codings {
    fn taken(self) -> &'static str {
        match self {
            Self::Gzip => "gzip, x-gzip or identity (no Content-Encoding)",
            Self::Snappy => "snappy (Prometheus' remote protocols)",
        }
    }
}

/// What to do with the body as sent.
#[derive(Debug, PartialEq, Eq)]
enum Coding {
    AsSent,
    Gunzip,
}

/// The coding `headers` name, if `codings` takes it: the header's list with `identity`
/// left out must be empty or one coding taken.
fn coding_of(headers: &HeaderMap, codings: Codings) -> Result<Coding, RequestError> {
    let Some(value) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(Coding::AsSent);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    if text.trim().is_empty() {
        return Ok(Coding::AsSent);
    }
    let named: Vec<String> = text
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    let coding = match (codings, named.as_slice()) {
        (Codings::Gzip, []) => Some(Coding::AsSent),
        (Codings::Gzip, [one]) if one == "gzip" || one == "x-gzip" => Some(Coding::Gunzip),
        (Codings::Snappy, [one]) if one == "snappy" => Some(Coding::AsSent),
        _ => None,
    };
    coding.ok_or_else(|| RequestError::Encoding {
        given: text.trim().to_owned(),
        taken: codings.taken(),
    })
}

/// The body of `request`, read within the body limit and decoded as `codings` allows.
/// The encoding is checked before anything is read.
pub(crate) async fn read(
    request: Request,
    state: &AppState,
    codings: Codings,
) -> Result<Bytes, RequestError> {
    let limit = state.config.max_body_bytes;
    let coding = coding_of(request.headers(), codings)?;
    // `Bytes` reads within the router's `DefaultBodyLimit`, which is `limit`.
    let raw = Bytes::from_request(request, state)
        .await
        .map_err(|rejection| match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => RequestError::TooLarge(limit),
            _ => RequestError::BadBody(format!("cannot read the body: {}", rejection.body_text())),
        })?;
    if raw.len() > limit {
        return Err(RequestError::TooLarge(limit));
    }
    match coding {
        Coding::AsSent => Ok(raw),
        Coding::Gunzip => gunzip(&raw, limit).map(Bytes::from),
    }
}

/// Decompresses, refusing output beyond `limit`.
fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, RequestError> {
    let mut out = Vec::new();
    let mut decoder = flate2::read::GzDecoder::new(body).take(limit as u64 + 1);
    decoder
        .read_to_end(&mut out)
        .map_err(|e| RequestError::BadBody(format!("body is not valid gzip: {e}")))?;
    if out.len() > limit {
        return Err(RequestError::TooLarge(limit));
    }
    Ok(out)
}

/// A body of data (line protocol, OTLP), plain or gunzipped ([`Codings::Gzip`]).
pub struct Body(pub Bytes);

impl FromRequest<AppState> for Body {
    type Rejection = RequestError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, RequestError> {
        read(request, state, Codings::Gzip).await.map(Self)
    }
}

/// A body of Prometheus' remote write or read, still snappy-compressed
/// ([`Codings::Snappy`]).
pub struct SnappyBody(pub Bytes);

impl FromRequest<AppState> for SnappyBody {
    type Rejection = RequestError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, RequestError> {
        read(request, state, Codings::Snappy).await.map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::io::Write;

    fn with(encoding: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_str(encoding).expect("a header value"),
        );
        headers
    }

    #[test]
    fn each_route_takes_its_protocols_encodings() {
        let none = HeaderMap::new();
        assert_eq!(coding_of(&none, Codings::Gzip), Ok(Coding::AsSent));
        assert_eq!(coding_of(&none, Codings::Snappy), Ok(Coding::AsSent));
        for gzip in ["gzip", "x-gzip", " GZIP ", "identity, gzip"] {
            assert_eq!(coding_of(&with(gzip), Codings::Gzip), Ok(Coding::Gunzip));
        }
        assert_eq!(
            coding_of(&with("identity"), Codings::Gzip),
            Ok(Coding::AsSent)
        );
        assert_eq!(
            coding_of(&with("snappy"), Codings::Snappy),
            Ok(Coding::AsSent)
        );
        for (refused, codings) in [
            ("br", Codings::Gzip),
            ("deflate", Codings::Gzip),
            ("snappy", Codings::Gzip),
            ("gzip, gzip", Codings::Gzip),
            ("gzip", Codings::Snappy),
            ("br", Codings::Snappy),
        ] {
            let e = coding_of(&with(refused), codings).expect_err(refused);
            assert_eq!(e.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{refused}");
            let message = e.to_string();
            assert!(message.contains(refused), "{message}");
            assert!(message.contains(codings.taken()), "{message}");
        }
    }

    #[test]
    fn gzip_is_bounded_once_decoded() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&[b'a'; 10_000]).expect("compress");
        let small = encoder.finish().expect("compress");
        assert_eq!(gunzip(&small, 10_000).map(|v| v.len()), Ok(10_000));
        assert_eq!(gunzip(&small, 9_999), Err(RequestError::TooLarge(9_999)));
        assert!(matches!(
            gunzip(b"not gzip", 100),
            Err(RequestError::BadBody(_))
        ));
    }
}
