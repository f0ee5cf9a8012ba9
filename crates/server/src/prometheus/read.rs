//! Remote read: `POST /prometheus/api/v1/read`, a snappy-compressed protobuf
//! `ReadRequest` in, the samples of each query's series out (the "samples" response
//! type, which every Prometheus 2.x accepts). The body is snappy as the protocol says
//! (`crate::body`); another `Content-Encoding` is answered 415.

use super::error::PromError;
use super::select::fetch;
use crate::body::SnappyBody;
use crate::budget::on_blocking_thread;
use crate::database::PromDatabase;
use crate::error::RequestError;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use promql_parser::label::{MatchOp, Matcher};
use prost::Message;
use regex::Regex;
use std::sync::Arc;
use tickertape_prometheus::remote::{
    decode_read_request, encode_read_response, Label, LabelMatcher, MatchType, QueryResult,
    ReadResponse, Sample, TimeSeries, MAX_DECODED_BYTES,
};

pub(crate) async fn read(
    PromDatabase(engine): PromDatabase,
    body: Result<SnappyBody, RequestError>,
) -> Result<Response, PromError> {
    let SnappyBody(body) = body?;
    let request = decode_read_request(&body, MAX_DECODED_BYTES)
        .map_err(|e| PromError::bad_data(e.to_string()))?;
    // One budget for all the queries of the request, and its answer.
    let budget = Arc::new(engine.budget());
    let _cancel = budget.cancel_on_drop();
    let mut results = Vec::with_capacity(request.queries.len());
    for query in &request.queries {
        let matchers = query
            .matchers
            .iter()
            .map(matcher)
            .collect::<Result<Vec<_>, _>>()?;
        let series = fetch(
            &engine,
            &matchers,
            query.start_timestamp_ms,
            query.end_timestamp_ms,
            &budget,
        )
        .await?;
        results.push(QueryResult {
            timeseries: series
                .into_iter()
                .filter(|s| !s.samples.is_empty())
                .map(|s| TimeSeries {
                    labels: s
                        .labels
                        .into_iter()
                        .map(|(name, value)| Label { name, value })
                        .collect(),
                    samples: s
                        .samples
                        .into_iter()
                        .map(|(timestamp, value)| Sample { value, timestamp })
                        .collect(),
                    ..TimeSeries::default()
                })
                .collect(),
        });
    }
    let response = ReadResponse { results };
    // Charged before it is encoded: the protobuf's size is known from the message.
    budget.charge_bytes(response.encoded_len())?;
    let body = on_blocking_thread(&budget, move |_| encode_read_response(&response)).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-protobuf"),
            (header::CONTENT_ENCODING, "snappy"),
        ],
        body,
    )
        .into_response())
}

/// A remote-read matcher as PromQL's (regexes anchored, as Prometheus anchors them).
fn matcher(m: &LabelMatcher) -> Result<Matcher, PromError> {
    let regex = || {
        Regex::new(&format!("^(?:{})$", m.value)).map_err(|e| {
            PromError::bad_data(format!(
                "matcher {}=~{:?}: invalid regex: {e}",
                m.name, m.value
            ))
        })
    };
    let op = match MatchType::try_from(m.r#type) {
        Ok(MatchType::Eq) => MatchOp::Equal,
        Ok(MatchType::Neq) => MatchOp::NotEqual,
        Ok(MatchType::Re) => MatchOp::Re(regex()?),
        Ok(MatchType::Nre) => MatchOp::NotRe(regex()?),
        Err(_) => {
            return Err(PromError::bad_data(format!(
                "matcher on {}: unknown matcher type {}",
                m.name, m.r#type
            )))
        }
    };
    Ok(Matcher::new(op, &m.name, &m.value))
}
