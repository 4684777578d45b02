//! JSON-RPC 2.0 on `POST /`: decode, call the core, encode.
//!
//! Checks, in order: the body limit; JSON (a body that does not parse is -32700, or
//! -32005 when its `Content-Type` is not JSON at all); the envelope (-32600); the
//! `A2A-Version` (-32009); the method (-32601); its params (-32602, naming the field).
//! Errors go back with HTTP 200, as the SDKs expect, except an oversized body (413).

use super::caller::caller;
use super::sse::{self, Envelope};
use super::{activate_extensions, body, check_version, echo_extensions, observe, AppState};
use crate::core::{Call, Reply};
use crate::metrics::Binding;
use a2ad_protocol::jsonrpc::{error_body, parse_request, success_body};
use a2ad_protocol::{A2aError, ErrorCode};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;

pub async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    observe::served(&req, Binding::JsonRpc, "unknown");
    let owner = match caller(&req, &state.core) {
        Ok(owner) => owner,
        Err(unauthorized) => return *unauthorized,
    };
    let bytes = match body::read_limited(&req, payload, state.body_limit).await {
        Ok(bytes) => bytes,
        Err(e) => return error_response(&Value::Null, &e),
    };
    let decoded: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) if !body::declares_json(&req) => {
            let e = A2aError::new(ErrorCode::ContentTypeNotSupported, "Request body must be JSON (application/json)");
            return error_response(&Value::Null, &e);
        }
        Err(_) => return error_response(&Value::Null, &A2aError::of(ErrorCode::ParseError)),
    };
    let rpc = match parse_request(decoded) {
        Ok(rpc) => rpc,
        Err((id, e)) => return error_response(&id, &e),
    };
    let id = rpc.response_id();
    observe::served(&req, Binding::JsonRpc, crate::metrics::method_label(&rpc.method));
    if let Err(e) = check_version(&req) {
        return error_response(&id, &e);
    }
    let activated = match activate_extensions(&req, &state.core) {
        Ok(activated) => activated,
        Err(e) => return error_response(&id, &e),
    };
    let call = sse::last_event_id(&req).and_then(|last| Call::from_method(&rpc.method, rpc.params, last));
    let reply = match call {
        Ok(call) => state.core.execute(&owner, call).await,
        Err(e) => Err(e),
    };
    let mut response = match reply {
        Ok(Reply::Result(body)) => json_response(StatusCode::OK, success_body(&id, body)),
        Ok(Reply::Stream(subscription)) => {
            sse::sse_response(&req, subscription, Envelope::JsonRpc(id), state.stream_keep_alive)
        }
        Err(e) => return error_response(&id, &e),
    };
    echo_extensions(&activated, &mut response);
    response
}

fn error_response(id: &Value, error: &A2aError) -> HttpResponse {
    crate::core::report(error);
    // JSON-RPC errors travel with 200; only a refused body keeps its HTTP status, since
    // the request was never read as JSON-RPC.
    let status = match error.code {
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::OK,
    };
    let mut response = json_response(status, error_body(id, error));
    super::retry_after(error, &mut response);
    observe::failed(&mut response, error);
    response
}

fn json_response(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status).content_type("application/json").body(body)
}
