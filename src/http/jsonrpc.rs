//! JSON-RPC 2.0 on `POST /`: decode, call the core, encode.
//!
//! Checks, in order: the body limit; JSON (a body that does not parse is -32700, or
//! -32005 when its `Content-Type` is not JSON at all); the envelope (-32600); the
//! `A2A-Version` (-32009); the method (-32601); its params (-32602, naming the field).
//! Errors go back with HTTP 200, as the SDKs expect, except an oversized body (413).

use super::sse::{self, Envelope};
use super::{body, version, AppState};
use crate::core::Core;
use a2ad_actors::messages::Subscription;
use a2ad_protocol::jsonrpc::{error_body, parse_params, parse_request, success_body};
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;

pub async fn handle(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
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
    if let Err(e) = version::check(&req) {
        return error_response(&id, &e);
    }
    // Authentication comes later; until then every caller is the anonymous owner.
    let owner = Owner::anonymous();
    match dispatch(&state.core, &req, &owner, &id, &rpc.method, rpc.params).await {
        Ok(Reply::Body(body)) => json_response(StatusCode::OK, body),
        Ok(Reply::Stream(subscription)) => {
            sse::sse_response(&req, subscription, Envelope::JsonRpc(id), state.stream_keep_alive)
        }
        Err(e) => error_response(&id, &e),
    }
}

/// A method's answer: one JSON-RPC response, or a stream of them.
enum Reply {
    Body(Vec<u8>),
    Stream(Subscription),
}

/// Runs one method and encodes its result.
async fn dispatch(
    core: &Core,
    req: &HttpRequest,
    owner: &Owner,
    id: &Value,
    method: &str,
    params: Value,
) -> Result<Reply, A2aError> {
    Ok(Reply::Body(match method {
        "SendMessage" => success_body(id, core.send_message(owner, parse_params(params)?).await?),
        "GetTask" => success_body(id, core.get_task(owner, parse_params(params)?).await?),
        "ListTasks" => success_body(id, core.list_tasks(owner, parse_params(params)?).await?),
        "CancelTask" => success_body(id, core.cancel_task(owner, parse_params(params)?).await?),
        "SendStreamingMessage" => {
            return Ok(Reply::Stream(core.send_streaming_message(owner, parse_params(params)?).await?));
        }
        "SubscribeToTask" => {
            let last_event_id = sse::last_event_id(req)?;
            return Ok(Reply::Stream(core.subscribe_to_task(owner, parse_params(params)?, last_event_id).await?));
        }
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => return Err(Core::push_unsupported()),
        "GetExtendedAgentCard" => return Err(Core::extended_card_unsupported()),
        other => {
            let shown: String = other.chars().filter(|c| !c.is_control()).take(64).collect();
            return Err(A2aError::new(ErrorCode::MethodNotFound, format!("Method not found: {shown}")));
        }
    }))
}

fn error_response(id: &Value, error: &A2aError) -> HttpResponse {
    // JSON-RPC errors travel with 200; only a refused body keeps its HTTP status, since
    // the request was never read as JSON-RPC.
    let status = match error.code {
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::OK,
    };
    json_response(status, error_body(id, error))
}

fn json_response(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status).content_type("application/json").body(body)
}
