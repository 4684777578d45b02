//! Reading a request body: declared as JSON, under the configured limit, in time.
//!
//! Nothing is allocated for a body before it arrives: the buffer grows with the chunks
//! read (a declared `Content-Length` is a claim, not a reservation), up to the binding's
//! limit. A body must arrive within `body-timeout`, extended by one second for every
//! `body-min-rate` bytes received (Apache's `mod_reqtimeout` rule), so that a sender
//! trickling a byte a second is closed with 408 instead of holding its connection and
//! buffer for as long as it likes, while a large body on a slow but honest link still
//! gets through.

use a2ad_protocol::strict_json::decode_request_body;
use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::web::BytesMut;
use actix_web::{http::header, web, HttpRequest};
use futures_util::StreamExt as _;
use std::time::Duration;
use tokio::time::Instant;

/// How much of an oversized body we read and discard before answering, so that a client
/// still writing its body reads our error instead of a reset connection.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

/// How fast a body must arrive (`body-timeout`, `body-min-rate`).
#[derive(Debug, Clone, Copy)]
pub struct BodyPace {
    /// The time any body gets, however small.
    pub timeout: Duration,
    /// Bytes per second that earn one more second each.
    pub min_rate: usize,
}

impl BodyPace {
    /// When a body of which `received` bytes arrived since `started` must be complete.
    fn deadline(&self, started: Instant, received: usize) -> Instant {
        let earned = Duration::from_secs_f64(received as f64 / self.min_rate.max(1) as f64);
        started + self.timeout + earned
    }
}

/// The whole body; PayloadTooLarge once it passes `limit` bytes, RequestTimeout when it
/// falls behind `pace`.
pub async fn read_limited(mut payload: web::Payload, limit: usize, pace: BodyPace) -> Result<BytesMut, A2aError> {
    let started = Instant::now();
    let mut body = BytesMut::new();
    let mut seen = 0usize;
    loop {
        let next = tokio::time::timeout_at(pace.deadline(started, seen), payload.next()).await;
        let Ok(next) = next else {
            return Err(A2aError::of(ErrorCode::RequestTimeout)
                .with_meta("receivedBytes", seen.to_string())
                .with_meta("timeoutSeconds", pace.timeout.as_secs().to_string()));
        };
        let Some(chunk) = next else { break };
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

/// Refuses a request whose `Content-Type` is not JSON (`application/json`, or any
/// `application/…+json` such as `application/a2a+json`), or that has a body and no type:
/// browsers send `text/plain`, form types or an untyped body without a CORS preflight,
/// so only a JSON type proves the request came from a client that may call us. A POST
/// without a body needs no type (the Python SDK's `:subscribe` sends none).
pub fn require_json(req: &HttpRequest) -> Result<(), A2aError> {
    let essence = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?").split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    match essence {
        Some(e) if e == "application/json" || (e.starts_with("application/") && e.ends_with("+json")) => Ok(()),
        Some(e) => Err(A2aError::new(
            ErrorCode::UnsupportedMediaType,
            format!("Request body must be JSON (Content-Type: application/json), not `{}`", truncated(&e)),
        )),
        None if has_body(req) => Err(A2aError::new(
            ErrorCode::UnsupportedMediaType,
            "Request body must be JSON: the request has a body and no Content-Type (send application/json)",
        )),
        None => Ok(()),
    }
}

/// Whether the request carries a body: a non-zero `Content-Length`, or a chunked one.
fn has_body(req: &HttpRequest) -> bool {
    let headers = req.headers();
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).map(str::trim);
    headers.contains_key(header::TRANSFER_ENCODING) || length.is_some_and(|l| l != "0")
}

/// A JSON request body, `None` when it is empty or only white space: the content type is
/// checked before anything is read, then the body is read under `limit` and `pace` and
/// parsed strictly (a key named twice is refused, see [`decode_request_body`]).
pub async fn read_json(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
    pace: BodyPace,
) -> Result<Option<serde_json::Value>, A2aError> {
    require_json(req)?;
    let bytes = read_limited(payload, limit, pace).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    decode_request_body(&bytes).map(Some)
}

/// A caller's header value, cut short for an error message.
fn truncated(value: &str) -> &str {
    let end = value.char_indices().nth(64).map_or(value.len(), |(i, _)| i);
    &value[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn only_json_types_are_taken() {
        let with = |t: &str| require_json(&TestRequest::default().insert_header(("Content-Type", t)).to_http_request());
        assert!(with("application/json").is_ok());
        assert!(with("Application/JSON; charset=utf-8").is_ok());
        assert!(with("application/a2a+json").is_ok());
        for refused in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "text/json+x"] {
            assert_eq!(with(refused).unwrap_err().code, ErrorCode::UnsupportedMediaType, "{refused}");
        }
        assert!(require_json(&TestRequest::default().to_http_request()).is_ok(), "no body, no type");
        let untyped = TestRequest::default().insert_header(("Content-Length", "2")).to_http_request();
        assert_eq!(require_json(&untyped).unwrap_err().code, ErrorCode::UnsupportedMediaType);
    }

    #[test]
    fn the_deadline_grows_with_what_arrived() {
        let pace = BodyPace { timeout: Duration::from_secs(10), min_rate: 1000 };
        let start = Instant::now();
        assert_eq!(pace.deadline(start, 0), start + Duration::from_secs(10));
        assert_eq!(pace.deadline(start, 5000), start + Duration::from_secs(15));
    }
}
