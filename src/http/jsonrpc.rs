//! JSON-RPC 2.0 on `POST /`: the HTTP transport of [`crate::rpc`].
//!
//! Here only what is HTTP's: authentication, the content type (JSON only: 415), the body
//! limit and pace (413, 408), the headers that become [`RpcMeta`], and the status. Errors
//! go back with HTTP 200, as the SDKs expect, except those refused before the body was
//! read as JSON-RPC (408, 413, 415), a caller over a rate or concurrency limit (429 +
//! `Retry-After`) and a store that refuses writes (503 + `Retry-After`). A notification
//! (a request without `id`) is run and answered with 204 and no body.

use super::caller::{caller, Refused};
use super::{body, echo_extensions, observe, sse, AppState};
use crate::metrics::Binding;
use crate::rpc::{self, RpcAnswer, RpcMeta, RpcOutcome};
use a2ad_protocol::jsonrpc::error_body;
use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;

pub async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    observe::served(&req, Binding::JsonRpc, "unknown");
    let owner = match caller(&req, &state.core).await {
        Ok(owner) => owner,
        Err(Refused::Unauthorized(plain)) => return unauthenticated(&req, payload, &state, *plain).await,
        Err(Refused::Limited(error)) => return error_response(&Value::Null, &error),
    };
    let decoded = match body::read_json(&req, payload, state.body_limit, state.body_pace).await {
        Ok(Some(decoded)) => decoded,
        Ok(None) => return error_response(&Value::Null, &A2aError::of(ErrorCode::ParseError)),
        Err(e) => return error_response(&Value::Null, &e),
    };
    let method = decoded.get("method").and_then(Value::as_str);
    super::hint_old_client(&req, &state, method.filter(|m| rpc::v03::is_method(m)));
    let answer = rpc::handle(&state.core, &owner, decoded, &request_meta(&req)).await;
    respond(&req, &state, answer)
}

/// The answer to a request without a valid credential: 401 with `WWW-Authenticate`; a
/// 0.1 request gets its JSON-RPC error (-32000) as the body, other callers the plain one.
async fn unauthenticated(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    plain: HttpResponse,
) -> HttpResponse {
    let Ok(bytes) = body::read_limited(payload, state.body_limit, state.body_pace).await else { return plain };
    let Ok(decoded) = serde_json::from_slice::<Value>(&bytes) else { return plain };
    let method = decoded.get("method").and_then(Value::as_str).unwrap_or_default();
    if !rpc::v01::says_v01(method, super::requested_version(req).as_deref()) {
        return plain;
    }
    let id = decoded.get("id").cloned().unwrap_or(Value::Null);
    let body = a2ad_protocol::dialect::v01::authentication_error(&id).to_string();
    let mut response = HttpResponse::Unauthorized().content_type("application/json").body(body);
    if let Some(challenge) = plain.headers().get(actix_web::http::header::WWW_AUTHENTICATE) {
        response.headers_mut().insert(actix_web::http::header::WWW_AUTHENTICATE, challenge.clone());
    }
    response
}

/// What the HTTP headers carry for the JSON-RPC layer.
pub(crate) fn request_meta(req: &HttpRequest) -> RpcMeta {
    let last_event_id = req.headers().get("Last-Event-ID").map(|v| v.to_str().unwrap_or("?").to_owned());
    RpcMeta {
        version: super::requested_version(req),
        extensions: super::requested_extensions(req),
        last_event_id,
        came_to: crate::connection::base_url_of(req),
    }
}

/// Encodes an answer as an HTTP response: JSON, or SSE for a stream.
fn respond(req: &HttpRequest, state: &AppState, answer: RpcAnswer) -> HttpResponse {
    if let Some(method) = &answer.method {
        observe::served(req, Binding::JsonRpc, crate::metrics::method_label(method));
    }
    let mut response = match answer.outcome {
        RpcOutcome::Single(body) => json_response(status_of(answer.error.as_ref()), body),
        RpcOutcome::Stream(stream) => sse::sse_response(req, stream, state),
        RpcOutcome::Silent => HttpResponse::NoContent().finish(),
    };
    if let Some(error) = &answer.error {
        super::finish_error(error, &mut response);
        observe::failed(&mut response, error);
    }
    echo_extensions(&answer.activated, &mut response);
    response
}

fn error_response(id: &Value, error: &A2aError) -> HttpResponse {
    crate::core::report(error);
    let mut response = json_response(status_of(Some(error)), error_body(id, error));
    super::finish_error(error, &mut response);
    observe::failed(&mut response, error);
    response
}

/// JSON-RPC errors travel with 200; only a refused body keeps the table's HTTP status
/// (408, 413, 415), since the request was never read as JSON-RPC, and the rate and
/// concurrency limits answer 429 so that proxies and clients back off, as does a store
/// that refuses writes (503); both with `Retry-After`.
fn status_of(error: Option<&A2aError>) -> StatusCode {
    use ErrorCode::*;
    match error {
        Some(
            e @ A2aError {
                code:
                    PayloadTooLarge | UnsupportedMediaType | RequestTimeout | RateLimited | LimitExceeded | StoreUnavailable,
                ..
            },
        ) => StatusCode::from_u16(e.code.info().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        _ => StatusCode::OK,
    }
}

fn json_response(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status).content_type("application/json").body(body)
}
