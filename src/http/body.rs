//! Reading a request body under the configured limit.

use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::web::BytesMut;
use actix_web::{http::header, web, HttpRequest};
use futures_util::StreamExt as _;

/// How much of an oversized body we read and discard before answering, so that a client
/// still writing its body reads our error instead of a reset connection.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// The whole body, or PayloadTooLarge once it passes `limit` bytes.
pub async fn read_limited(req: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<BytesMut, A2aError> {
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let mut body = BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
    let mut seen = 0usize;
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| A2aError::new(ErrorCode::InvalidRequest, "Could not read the request body"))?;
        seen += chunk.len();
        if seen > limit {
            if seen > DRAIN_LIMIT {
                break;
            }
            continue;
        }
        body.extend_from_slice(&chunk);
    }
    if seen > limit {
        return Err(A2aError::new(
            ErrorCode::PayloadTooLarge,
            format!("Request body is larger than the limit of {limit} bytes"),
        )
        .with_meta("limitBytes", limit.to_string()));
    }
    Ok(body)
}

/// Whether the request says its body is JSON (or says nothing).
pub fn declares_json(req: &HttpRequest) -> bool {
    let Some(value) = req.headers().get(header::CONTENT_TYPE) else {
        return true;
    };
    let essence = value.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence.is_empty() || essence == "application/json" || essence.ends_with("+json")
}
